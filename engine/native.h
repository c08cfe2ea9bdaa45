/* Native (C) stacks of every thread of a process image: unwound with the
 * DWARF CFI of the loaded modules and symbolized with function, file:line
 * and inlined frames. libdwfl does the unwinding and the lookups; this
 * interface is all the rest of corestack sees of it.
 *
 * Memory and registers come from our own target (the core reader or the
 * paused live process), so a core's missing pages, --sysroot,
 * --lib-search-path and compressed cores work as for the Ruby stacks.
 * Modules whose file on disk has another build-id than the one in memory
 * are left out (their CFI would be wrong): frames in them show no symbol. */
#ifndef CS_CORESTACK_NATIVE_H
#define CS_CORESTACK_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "../process/memory.h"
#include "../process/core.h"
#include "../process/target.h"
#include "../process/module_search.h"

/* Code a JIT generated (jit_regions.h): it has no CFI and no symbols. */
struct cs_jit_region {
	uint64_t start, end;
	const char *jit; /* "yjit", "zjit" or "jit" (static) */
};

/* How a frame was found: by its callee's CFI, as any; past JIT code
 * (past_jit.h), by the JIT code's frame-pointer chain or by the return
 * address above the JIT frame; past a pc that is not code (a call
 * through a bad pointer), by the return address that call left at the
 * stack pointer. */
enum cs_native_found_by {
	CS_FOUND_BY_CFI,
	CS_FOUND_BY_FRAME_POINTER,
	CS_FOUND_BY_SCAN,
	CS_FOUND_BY_RETURN_ADDRESS,
};
/* "cfi", "frame_pointer", "stack_scan", "return_address" */
const char *cs_native_found_by_name(enum cs_native_found_by how);

struct cs_native_frame {
	uint64_t pc;         /* as unwound: a return address past frame 0 */
	uint64_t func_start; /* the function's entry (ELF symbol); 0 unknown */
	char *function;      /* NULL when unknown */
	char *file;          /* NULL when unknown */
	int line;            /* 0 when unknown */
	char *module;        /* basename of the module file; NULL: none */
	int inlined;         /* inlined into the next (outer) frame */
	uint64_t sp;         /* its stack pointer as unwound; 0 unknown */
	/* A signal interrupted it here: pc is the interrupted instruction,
	 * and the frame before its first is the signal trampoline, whose sp
	 * points at the kernel's saved context (signal_frame.h). */
	int interrupted;
	/* It runs in a signal handler: inside the outermost interrupted
	 * frame, the trampoline included. */
	int handler;
	/* It runs JIT code: which JIT's (static; function, file and module
	 * are then NULL) and the region of the JIT's memory it lies in. */
	const char *jit;
	uint64_t jit_start, jit_end;
	enum cs_native_found_by found_by;
	/* Its pc is not code: outside every mapping, or in memory that
	 * cannot run (the innermost frame, or one a signal interrupted,
	 * after a call or jump through a bad pointer). The frame after it
	 * is the one whose call left the return address at its sp. */
	int not_code;
};

struct cs_native_thread {
	int tid;
	struct cs_native_frame *frames; /* innermost first */
	size_t nframes;
	int truncated; /* stopped at the frame limit */
	char *error;   /* NULL, or why the unwind stopped early */
	/* The unwind reached a frame that is not code on this thread's
	 * stack (a corrupt stack, or wrong registers): cut there, error
	 * says where. The stack is then known to be incomplete. */
	int cut;
	/* The unwind reached the thread's first function (_start, clone3,
	 * start_thread) or the conventional end, a return address of 0. */
	int whole;
};

struct cs_native_stacks {
	struct cs_native_thread *threads; /* in the order given */
	size_t nthreads;
	/* Modules whose file the target names could not be used, found by
	 * their build-id (module_search.h); their frames' module is the
	 * basename of the file found. */
	struct cs_module_found *found;
	size_t nfound;
};

/* Unwind threads[0..nthreads) (registers as in a core's NT_PRSTATUS) of
 * the process img describes, reading memory through mem. debug_dirs as
 * for dw_module_open (may be NULL). At most max_frames per thread. A
 * frame whose code lies in one of jits[0..njits) is JIT code, and the
 * unwind goes on past it as past_jit.h says. A module whose file the
 * target names is gone or another build is looked for as search says
 * (NULL: not looked for). */
struct cs_error *
cs_native_unwind(const struct cs_target *img, const struct cs_memory *mem,
		 const struct cs_thread *const *threads, size_t nthreads,
		 const char *const *debug_dirs, size_t max_frames,
		 const struct cs_jit_region *jits, size_t njits,
		 struct cs_module_search *search,
		 struct cs_native_stacks **ret);
void cs_native_destroy(struct cs_native_stacks *s);

/* The thread with that tid, or NULL. */
const struct cs_native_thread *
cs_native_thread_of(const struct cs_native_stacks *s, int64_t tid);

#endif
