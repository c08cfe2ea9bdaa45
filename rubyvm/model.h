/* The Ruby model's public face: what a snapshot of a Ruby process is.
 *
 * Plain C data, no I/O: front ends render it. Errors are data: a frame that
 * cannot be decoded carries a reason, a thread that cannot be walked carries
 * one too, and the snapshot goes on. */
#ifndef CS_RUBYVM_MODEL_H
#define CS_RUBYVM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../dwarf/index.h"
#include "../util/error.h"
#include "../process/memory.h"
#include "../process/target.h"

enum rv_frame_kind { RV_FRAME_RUBY, RV_FRAME_CFUNC };

/* A local variable of a Ruby frame (rv_snapshot_locals). */
struct rv_local {
	char *name;
	char *value;      /* shown as rv_value_show shows it */
	char *class_name; /* NULL when it cannot be told */
	uint64_t object;  /* the VALUE itself; 0 for a block handler */
	bool argument;    /* one of the method's or block's parameters */
	/* a local of an enclosing scope that a block sees: how many
	 * scopes out (0: the frame's own) */
	int outer;
};

struct rv_frame {
	enum rv_frame_kind kind;
	char *label;     /* as Ruby's Thread::Backtrace::Location#label */
	char *path;      /* #path (the caller's for C frames, as Ruby does) */
	char *realpath;  /* #absolute_path (likewise); NULL: none or unknown */
	int lineno;      /* #lineno, 0 when Ruby has none */
	char *qualified; /* "Outer::Inner#meth", "block in Foo.bar" */
	char *stable;    /* qualified with no address in it: anonymous and
			  * singleton owners named by rule (docs/names.md) */
	uint64_t cfp, iseq, pc, cfunc; /* target addresses, 0 if none */
	bool vm_finish; /* VM_FRAME_FLAG_FINISH: the first frame a vm_exec()
			  * call ran (only with rv_options.frame_flags) */
	char *error;    /* NULL, or why this frame is unreliable */
	bool pc_stale;  /* innermost frame whose pc lies outside its iseq (JIT
			  * code does not keep cfp->pc current): lineno is
			  * then what Ruby gives for a frame without a pc */
	/* Its pc and iseq are those of ZJIT's JIT frame record, not the
	 * control frame's own (jit_frames.c). */
	bool jit_record;
	/* A Ruby frame this Ruby's backtraces show as a C method (its label
	 * the method's name, its location the caller's): why, or 0. */
	enum rv_c_like {
		RV_NOT_C_LIKE = 0,
		RV_C_LIKE_C_TRACE,  /* Primitive.attr! :c_trace (3.4) */
		RV_C_LIKE_INTERNAL, /* in an <internal:...> file (4.0) */
	} c_like;
	bool rescue_or_ensure; /* runs a rescue or ensure clause's iseq */
	/* A C method with no Ruby frame below it (at the bottom of a fiber,
	 * say): no path or line, as Location#path and #lineno, but Ruby's
	 * backtrace line names the program (rv_process.progname). */
	bool progname_path;
	/* A control frame whose type or env cannot be believed (shown as a
	 * C frame "?" with its error): it may have been a Ruby frame, so the
	 * C frames it called take no location from older frames. */
	bool opaque;
	bool borrowed; /* the strings belong to the session's frame cache
			  * (rv_options.reuse_frames), not to this frame */
	/* With rv_options.reuse_frames: frames of the session with the same
	 * nonzero names_id have the same kind, label, qualified and stable
	 * names (one
	 * frame cache entry's), so a profiler can tell a stack it has seen
	 * without reading its strings. 0: no such promise. */
	uint64_t names_id;
	/* After rv_snapshot_locals: the frame's locals, its own first, then
	 * those of the scopes around a block; locals_error says why some or
	 * all could not be read. Always owned by the frame. */
	bool locals_read; /* rv_snapshot_locals looked at this frame */
	struct rv_local *locals;
	size_t nlocals;
	char *locals_error;
	/* the frame's self, shown as a local's value is; NULL when its
	 * control frame has none to read */
	char *self_value, *self_class;
	uint64_t self; /* the VALUE itself, when self_value is set */
};

enum rv_thread_status {
	RV_STATUS_UNKNOWN,
	RV_STATUS_RUN,
	RV_STATUS_SLEEP,
	RV_STATUS_ABORTING,
	RV_STATUS_DEAD,
};

/* Fibers (rubyvm/fibers.c), from Fiber#inspect's status names. */
enum rv_fiber_status {
	RV_FIBER_UNKNOWN,
	RV_FIBER_CREATED,
	RV_FIBER_RESUMED,
	RV_FIBER_SUSPENDED,
	RV_FIBER_TERMINATED,
};

/* What a blocked thread waits on, from its stack and its own fields. */
enum rv_wait_kind {
	RV_WAIT_NONE,
	RV_WAIT_MUTEX,
	RV_WAIT_QUEUE,
	RV_WAIT_SIZED_QUEUE,
	RV_WAIT_CONDITION_VARIABLE,
	RV_WAIT_SLEEP,
	RV_WAIT_THREAD_JOIN,
	RV_WAIT_THREAD_STOP,
	RV_WAIT_IO,
	RV_WAIT_PROCESS,
	RV_WAIT_RACTOR,
};

struct rv_ractor {
	bool present;  /* 3.x: the ractor was read */
	uint64_t addr; /* rb_ractor_t * */
	uint32_t id;   /* Ractor#inspect's number: 1 for the main ractor */
	char *name;    /* Ractor#name, NULL when nil */
};

struct rv_wait {
	enum rv_wait_kind kind;
	const char *method;   /* the method that tells ("Thread::Queue#pop"),
			     * static, NULL when only a field told */
	uint64_t object;      /* the Mutex being locked (locking_mutex), or 0 */
	bool blocking_region; /* the GVL released for a blocking call */
	/* Whom it waits for (locks.c): the thread holding the mutex (and
	 * the fiber, where the mutex records a fiber), or the thread it
	 * joins; 0 when none or not known. waits_for is that thread's index
	 * in rv_process.threads, -1 when it is not listed. */
	uint64_t mutex;        /* the rb_mutex_t of object */
	uint64_t owner_thread; /* rb_thread_t holding the mutex */
	uint64_t owner_fiber;  /* rb_fiber_t holding it (3.0 to 3.4; 4.0+
				* from owner_serial, once fibers are read) */
	uint64_t owner_serial; /* its holder's ec serial (4.0+: ec_serial) */
	uint64_t joined;       /* rb_thread_t it joins (Thread#join, #value) */
	/* and ractor_main below, for a Ractor#join or #value */
	long waits_for;
	/* 1 + the index in the thread's frames of the method that told the
	 * kind, 0 when a field told */
	size_t frame;
	/* A Queue or SizedQueue waited on (the self of the method that
	 * told), when it is one: its items, the threads waiting to pop, and
	 * a SizedQueue's max and threads waiting to push (-1: not sized). */
	uint64_t queue;
	int64_t queue_items, queue_poppers, queue_max, queue_pushers;
	/* ConditionVariable#wait: the Mutex it will take back (the self of
	 * the Mutex#sleep it sleeps in) and its holder now, 0 for none. */
	uint64_t retake, retake_mutex, retake_owner; /* object, rb_mutex_t */
	long retake_holder; /* its index in rv_process.threads, -1 */
	/* A Monitor being entered (the self of the Monitor#enter or
	 * #synchronize it waits in, where libruby or monitor.so has struct
	 * rb_monitor): its entries so far, the ec serial of its owner (0
	 * where it names its owner by the Thread or Fiber object), that
	 * owner's rb_thread_t and index in rv_process.threads (0: none
	 * known, -1: no listed thread). */
	uint64_t monitor, monitor_serial, monitor_owner_thread;
	int64_t monitor_count;
	long monitor_owner;
	/* An I/O wait's IO (the self of the method that told, when it is a
	 * T_FILE) and, when its rb_io_t is readable, its descriptor
	 * (has_io_fd) and path (IO#path: NULL for nil) (wait_targets.c) */
	uint64_t io;
	bool has_io_fd;
	int64_t io_fd;
	char *io_path;
	/* A process wait's child as Ruby records it, where it does (the
	 * waitpid_state a Process.wait sleeping for SIGCHLD put on the VM's
	 * waiting_pids or waiting_grps), as wait4 takes it: a pid, -1 any
	 * child, 0 or -PGID a group's (wait_targets.c) */
	bool has_child;
	int64_t child;
	/* A Ractor wait's ractor (wait_targets.c): the one taken from or
	 * joined (Ractor#take, #join, #value: the self), the one whose
	 * messages it receives (Ractor.receive: its own; Ractor::Port#receive:
	 * the port's), or its own for Ractor.yield (a taker of it). */
	struct rv_ractor ractor;
	/* A Ractor#join or #value: the joined ractor's main thread, whose end
	 * ends the ractor (rb_thread_t; 0 when not known) */
	uint64_t ractor_main;
};

struct rv_fiber {
	uint64_t addr;   /* rb_fiber_t * */
	uint64_t object; /* the Fiber VALUE; 0 for a root fiber never asked for */
	enum rv_fiber_status status;
	int blocking;    /* 1 blocking, 0 non-blocking, -1 unknown (2.7) */
	bool is_root;    /* the thread's first fiber */
	bool is_current; /* running on its thread: its stack is the thread's */
	/* Resumed and suspended fibers that are not current, innermost first;
	 * empty for the current one (the thread's frames are its stack). */
	struct rv_frame *frames;
	size_t nframes;
	bool truncated;
	size_t frames_cut; /* past max_frames, as rv_thread's */
	char *error;
	/* A suspended non-blocking fiber blocked through its thread's fiber
	 * scheduler: what it waits on (kind, method, frame; an I/O wait's IO,
	 * a Mutex's or Queue's object), and 1 + the index of the scheduler's
	 * hook frame (io_wait, kernel_sleep, block, ...), 0 when none
	 * (thread_state.c) */
	struct rv_wait wait;
	size_t scheduler_frame;
	/* Blocked without a deadline: the scheduler's block hook given no
	 * timeout (thread_state.c); only such a fiber waits for the holder of
	 * its mutex for ever, an edge of the wait-for graph (locks.c) */
	bool forever;
	/* As rv_thread's (locks.c): 1 + the index of its deadlock, else 0;
	 * in none but waiting for ever on a thread or fiber that does: that
	 * thread's index (-1: none) and 1 + the fiber's index in its fibers
	 * (0: the thread itself) */
	size_t deadlock;
	long stuck_behind;
	size_t stuck_behind_fiber;
};

/* Thread#status with the distinction Ruby keeps internally but prints as
 * "sleep" either way: sleeping with a deadline or wakeup expected
 * (THREAD_STOPPED) and sleeping forever (THREAD_STOPPED_FOREVER). */
enum rv_thread_state {
	RV_STATE_UNKNOWN,
	RV_STATE_RUNNABLE,
	RV_STATE_SLEEPING,
	RV_STATE_SLEEPING_FOREVER,
	RV_STATE_ABORTING,
	RV_STATE_DEAD,
};

/* A mutex a thread holds (th->keeping_mutexes): its rb_mutex_t, and the
 * Mutex object when known (a thread waits on it), else 0; the fiber of
 * the thread that locked it (rb_fiber_t) when the mutex records one,
 * and its ec serial (4.0+), else 0. */
struct rv_held_mutex {
	uint64_t data, object, fiber, serial;
};

/* Threads and fibers that wait for each other for ever: each sleeps for
 * ever (a fiber: blocked through its scheduler without a timeout) on a
 * mutex the next holds or on joining it, the last on the first. */
struct rv_deadlock {
	size_t *threads; /* indexes in rv_process.threads, in wait order */
	/* per member: 1 + the index of the fiber in its thread's fibers, 0
	 * when the member is the thread itself */
	size_t *fibers;
	size_t n;
};

struct rv_thread {
	uint64_t addr; /* rb_thread_t * */
	int64_t tid;   /* kernel thread id, -1 when unknown */
	/* M:N threads (3.3+: RUBY_MN_THREADS=1, non-main ractors): parked
	 * with no native thread of its own (rb_thread_t.nt NULL), so no
	 * native stack and no tid, and nothing wrong with that */
	bool off_native;
	uint64_t pthread_id; /* pthread_t when Ruby keeps one, else 0 */
	/* The machine stack Ruby records for what the thread runs
	 * (ec->machine): its base (highest address) and size; 0 if unknown */
	uint64_t machine_stack_start, machine_stack_size;
	char *name; /* Thread#name, NULL when nil */
	bool is_main, holds_gvl;
	enum rv_thread_status status;
	struct rv_frame *frames; /* innermost first */
	size_t nframes;
	bool truncated; /* stopped at max_frames or max_output_bytes */
	/* frames Ruby would show past max_frames; 0 when unknown (the output
	 * budget ran out first) */
	size_t frames_cut;
	char *error;             /* NULL, or why the walk stopped early */
	struct rv_fiber *fibers; /* after rv_snapshot_fibers: root first */
	size_t nfibers;
	enum rv_thread_state state; /* thread_state.c */
	struct rv_wait wait;        /* thread_state.c */
	/* The mutexes it holds, the last locked first (locks.c); a list
	 * that could not be read whole says why in locks_error. */
	struct rv_held_mutex *held;
	size_t nheld;
	char *locks_error;
	/* 1 + the index in rv_process.deadlocks of the deadlock it is in,
	 * else 0; not in one but sleeping for ever on a thread that sleeps
	 * for ever: that thread's index (stuck behind it), else -1 */
	size_t deadlock;
	long stuck_behind;
	/* 1 + the index, in that thread's fibers, of the fiber it is stuck
	 * behind; 0 when it is stuck behind the thread */
	size_t stuck_behind_fiber;
	struct rv_ractor ractor; /* ractors.c */
	/* The exception it is raising or handling (ec->errinfo, $!): the
	 * object and its class's path; 0 / NULL when none (exception.c). */
	uint64_t exception;
	char *exception_class;
	/* Its message as Exception#message gives it unless a class
	 * overrides message or to_s: the mesg ivar's String, or the class
	 * path when mesg is nil or unset. NULL with why in
	 * exception_message_error when it cannot be read. */
	char *exception_message;
	char *exception_message_error;
};

/* The GC as the default GC's object space records it. */
enum rv_gc_phase {
	RV_GC_UNKNOWN,
	RV_GC_NONE,
	RV_GC_MARKING,
	RV_GC_SWEEPING,
	RV_GC_COMPACTING,
};

struct rv_gc_state {
	bool known;             /* the object space was read */
	bool during_gc;         /* objspace->flags.during_gc */
	enum rv_gc_phase phase; /* flags.mode */
	bool count_known;
	uint64_t count; /* GC.count */
	char *error;    /* NULL, or why it is not known */
	/* the GC library the process loaded (RUBY_GC_LIBRARY), or NULL for
	 * the GC built into libruby */
	char *library;
};

/* How suspended fibers were looked for (rv_snapshot_fibers). */
enum rv_fibers_found_by {
	RV_FIBERS_NOT_SEARCHED, /* only the threads' fibers: see fibers_error */
	RV_FIBERS_HEAP_WALK,    /* the GC's page list, page by page */
	RV_FIBERS_MEMORY_SCAN,  /* writable memory searched for Fiber objects */
};

struct rv_process {
	char *ruby_version;
	struct rv_gc_state gc;
	struct rv_thread *threads;
	size_t nthreads;
	char *error; /* NULL, or why the thread list is incomplete */
	/* when a read stopped it: the first address not read */
	bool has_error_address;
	uint64_t error_address;
	/* Filled by rv_snapshot_fibers only. */
	bool fibers_read;
	struct rv_fiber *orphan_fibers; /* whose thread is not in the list */
	size_t norphan_fibers;
	char *fibers_error; /* NULL, or why some fibers may be missing */
	uint64_t heap_pages, heap_bytes; /* GC heap scanned */
	enum rv_fibers_found_by fibers_found_by;
	/* with RV_FIBERS_MEMORY_SCAN: why not the heap walk */
	char *fibers_note;
	/* How this Ruby quotes a label in a backtrace line: path:line:in `m'
	 * (up to 3.3) or path:line:in 'm' (3.4+). */
	bool backtick_quotes;
	/* Cycles of threads waiting for each other for ever (locks.c). */
	struct rv_deadlock *deadlocks;
	size_t ndeadlocks;
	/* vm->progname ($0): the path a backtrace line gives a C method with
	 * no Ruby frame below it (rv_frame.progname_path); NULL if unknown */
	char *progname;
};

/* Threads a snapshot reads at most unless told otherwise; the live
 * target (corestack/live.h) takes as many. */
#define RV_DEFAULT_MAX_THREADS CS_TARGET_MAX_THREADS

struct rv_options {
	size_t max_frames;  /* per stack; default 100000 */
	size_t max_threads; /* default RV_DEFAULT_MAX_THREADS */
	/* Bytes of frames (and their text) one snapshot may build, all
	 * stacks together; default 1 GiB. Front ends tie it to the size of
	 * their input, so that no input makes the model allocate, or work,
	 * more than a bounded multiple of it. */
	size_t max_output_bytes;
	bool frame_flags; /* read each frame's VM_FRAME_FLAG_FINISH */
	/* Keep decoded frames across snapshots (frame_cache.c): for samplers,
	 * which read the same stacks again and again; a one-shot snapshot
	 * only pays for the copies. Frames then borrow the session's strings:
	 * destroy each process before the session's next snapshot. */
	bool reuse_frames;
	/* Leave out who holds what (locks.c): samplers, which show none. */
	bool no_locks;
	/* Find suspended fibers by the memory scan even where the GC heap
	 * can be walked (a diagnostic: both ways compared in tests). */
	bool fibers_by_scan;
	/* Bytes of writable memory the memory scan reads at most; default
	 * RV_DEFAULT_MAX_SCAN_BYTES. */
	uint64_t max_scan_bytes;
};

#define RV_DEFAULT_MAX_SCAN_BYTES ((uint64_t)16 << 30)

struct rv_session;

struct rv_layout;

/* The Ruby model over a target. layout is that of the module holding the VM
 * (libruby.so, or the executable when Ruby is linked statically; see
 * rv_layout_for_module), module_path names it in messages, load_bias is
 * where it is loaded in the target. */
struct cs_error *rv_session_create(const struct cs_memory *target,
				   const struct rv_layout *layout,
				   const char *module_path, uint64_t load_bias,
				   const struct rv_options *opts,
				   struct rv_session **ret);
void rv_session_destroy(struct rv_session *s);
/* Hint the target about reads to come (target.h); NULL for none. */
void rv_session_set_prefetcher(struct rv_session *s,
			       const struct cs_prefetcher *p);
/* Read through another target from now on (a sampler re-attaching to the
 * same process); the layout and the name caches stay. */
void rv_session_set_target(struct rv_session *s, const struct cs_memory *t);
/* The memory the session reads (valid while it lives). */
const struct cs_memory *rv_session_memory(const struct rv_session *s);
/* Where the memory scan for fibers looks (target.h); NULL for nowhere. */
void rv_session_set_regions(struct rv_session *s,
			    const struct cs_writable_regions *r);

/* A Ruby built --with-modular-gc runs the GC RUBY_GC_LIBRARY names, a
 * library of its own, when that is set: true when this one does, with
 * *entry the address of one of the library's functions (the one libruby
 * calls to allocate the object space; 0 if unreadable), which tells the
 * module it is in. */
bool rv_session_gc_library(struct rv_session *s, uint64_t *entry);
/* That library: its path and its layout (rv_layout_for_gc_module), whose
 * GC_* items replace libruby's; layout NULL when it cannot be had, and
 * why then says why (for the report). */
struct cs_error *rv_session_set_gc_module(struct rv_session *s,
					  const struct rv_layout *layout,
					  const char *path, const char *why);

/* Whether libruby's layout has none of the items of the C extension ext
 * (EXT_* in layout.def: "monitor"): then only the extension's own module
 * (EXT.so) describes them. */
bool rv_session_lacks_ext(const struct rv_session *s, const char *ext);
/* That module's layout (rv_layout_for_ext_module) and its load bias: its
 * EXT_* items of ext take the place of libruby's missing ones, its
 * variables at addresses biased by bias. Nothing when libruby has them. */
struct cs_error *rv_session_set_ext_module(struct rv_session *s,
					   const char *ext,
					   const struct rv_layout *layout,
					   uint64_t bias);

/* The target loaded ext's module but it did not describe the
 * extension's items (no debug info, its file unreadable): why, said of
 * what they would have shown. */
struct cs_error *rv_session_note_ext_unread(struct rv_session *s,
					    const char *ext, const char *why);
/* Why, when the target loaded ext's module and still no layout has its
 * items; else NULL. */
const char *rv_session_ext_unread(const struct rv_session *s, const char *ext);

/* Every thread of every ractor with its Ruby stack. Fails only when there
 * is no VM at all (CS_ERR_NOT_RUBY) or it cannot be read. */
struct cs_error *rv_snapshot(struct rv_session *s, struct rv_process **ret);

/* The Ruby's version string as the process holds it (malloc'd), or NULL
 * when unknown; what rv_snapshot puts in rv_process.ruby_version. */
char *rv_ruby_version(struct rv_session *s);
void rv_process_destroy(struct rv_process *p);

/* The process's whole command line, its arguments joined by spaces, from
 * Ruby's own copy of its argv (a core's notes keep only its start): at
 * most RV_MAX_COMMAND bytes, "..." ending one cut there. Fails when Ruby
 * has no copy or it does not read as one. command_line.c */
#define RV_MAX_COMMAND (64 << 10)
struct cs_error *rv_command_line(struct rv_session *s, char **ret);

/* The directories the Ruby loads its files from, as paths in the target:
 * its $LOAD_PATH and the directory of each of its $LOADED_FEATURES (the
 * VM's, or the main and root box's where the VM has boxes), absolute
 * ones only, each once, at most 1024. Where to look for an extension
 * whose file is gone; what cannot be read is left out. *ret is malloc'd
 * (free with rv_load_dirs_free); fails only when memory runs out.
 * load_dirs.c */
struct cs_error *rv_load_dirs(struct rv_session *s, char ***ret, size_t *n);
void rv_load_dirs_free(char **dirs, size_t n);

/* Every fiber of the process, added to a snapshot: each thread's root and
 * current fiber, and every Fiber object found by walking the GC heap. A
 * heap that cannot be walked completely is reported in p->fibers_error;
 * fails only when memory runs out. */
struct cs_error *rv_snapshot_fibers(struct rv_session *s, struct rv_process *p);
const char *rv_fiber_status_name(enum rv_fiber_status st);

/* The locals of every Ruby frame of the snapshot (threads and fibers),
 * names and values, read from each frame's environment while the target
 * stands still. Fails only when memory runs out. */
struct cs_error *rv_snapshot_locals(struct rv_session *s, struct rv_process *p);

/* Any VALUE shown safely (value_show.c): nil, true, false, Integer, Float,
 * Symbol, a String up to a bound, Array and Hash with their sizes and
 * first elements, a class by its path, else as Kernel#to_s ("#<Foo:0x...>");
 * "<unreadable: why>" for what cannot be read, with bounded work. *text
 * and *class_name (NULL when unknown) are malloc'd. Fails only when
 * memory runs out. */
struct cs_error *rv_value_show(struct rv_session *s, uint64_t v, char **text,
			       char **class_name);

const char *rv_thread_status_name(enum rv_thread_status st);
/* "none", "marking", "sweeping", "compacting", "unknown" */
const char *rv_gc_phase_name(enum rv_gc_phase phase);
/* "runnable", "sleeping", "sleeping_forever", "aborting", "dead", "unknown" */
const char *rv_thread_state_name(enum rv_thread_state st);
/* "mutex", "queue", "sized_queue", "condition_variable", "sleep",
 * "thread_join", "thread_stop", "io", "process_wait", "ractor"; NULL for
 * none */
const char *rv_wait_kind_name(enum rv_wait_kind k);
/* The rb_thread_t w waits for: a mutex's holder, the thread joined, or
 * the main thread of the ractor joined; 0 for none. */
uint64_t rv_wait_thread(const struct rv_wait *w);
bool rv_process_complete(const struct rv_process *p);

#endif
