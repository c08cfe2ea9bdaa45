/* The roots of the GC heap the model reads: where a search for what keeps
 * objects alive starts (rubyvm/heap_roots.c). */
#ifndef CS_RUBYVM_HEAP_ROOTS_H
#define CS_RUBYVM_HEAP_ROOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"

struct rv_session;
struct rv_process;

enum rv_root_kind {
	RV_ROOT_GLOBAL,        /* a global variable: name "$x" */
	RV_ROOT_CONSTANT,      /* a top-level constant (Object's): name */
	RV_ROOT_LOCAL,         /* a frame's local variable: name, frame */
	RV_ROOT_SELF,          /* a frame's self: frame */
	RV_ROOT_VM_STACK,      /* a word of a VM stack */
	RV_ROOT_REGISTER,      /* a thread's register, conservatively: name */
	RV_ROOT_MACHINE_STACK, /* a word of a thread's machine stack, the
				* same */
	RV_ROOT_FIBER_STACK,   /* a word of a suspended fiber's machine
				* stack, the same: thread, fiber */
	RV_ROOT_REGISTERED,    /* what a C global rb_gc_register_address
				* registered holds: name, its address */
	RV_ROOT_MARK_OBJECT,   /* an object rb_gc_register_mark_object
				* registered (vm->mark_object_ary) */
	RV_ROOT_FINALIZER,     /* the procs of an object's finalizers:
				* name, that object's address */
};

struct rv_root {
	enum rv_root_kind kind;
	char *name;  /* NULL for self, stack words and mark objects, or when
		      * unreadable */
	char *frame; /* a local's or self's frame, qualified; else NULL */
	/* a stack root's thread (rb_thread_t) and its index in the
	 * snapshot's threads, and the fiber (rb_fiber_t) whose stack it is
	 * when that is not the thread's running one (else 0) */
	uint64_t thread, fiber;
	size_t thread_index;
};

/* A register's value, as the GC's setjmp keeps it. */
struct rv_register {
	const char *name; /* "rbx" */
	uint64_t value;
};

/* What a thread's kernel thread has now: its stack pointer, and the
 * registers that may hold a VALUE; the machine stack runs from sp up to
 * what Ruby records as its start (rv_thread.machine_stack_start). */
struct rv_native_stack {
	size_t thread_index; /* in the snapshot's threads */
	uint64_t sp;
	struct rv_register regs[16];
	size_t nregs;
};

/* Called for each root value v (no special constant; not always a live
 * object) in the order above; r and its strings are lent for the call.
 * false: out of memory, the walk stops. */
typedef bool rv_root_fn(void *ctx, const struct rv_root *r, uint64_t v);

/* The stacks the roots come from: the snapshot's threads and fibers (read
 * with rv_snapshot_fibers and rv_snapshot_locals; NULL: none), and the
 * machine stacks of those threads whose kernel thread's registers are
 * known (n of them). */
struct rv_root_stacks {
	const struct rv_process *process;
	const struct rv_native_stack *machine;
	size_t nmachine;
};

/* Every root. What could not be read is skipped and the first such
 * problem put in *error (malloc'd, when NULL before). Fails only when out
 * of memory. */
struct cs_error *rv_heap_roots(struct rv_session *s,
			       const struct rv_root_stacks *stacks,
			       rv_root_fn *fn, void *ctx, char **error);

#endif
