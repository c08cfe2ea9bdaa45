/* Taking a snapshot of an opened Ruby and building the report from it:
 * the one step the CLI and both debugger commands share. */
#ifndef CS_CORESTACK_SNAPSHOT_H
#define CS_CORESTACK_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>

#include "../process/blocked_call.h"
#include "../process/target.h"
#include "crash.h"
#include "report.h"
#include "ruby_open.h"
#include "thread_tids.h"

/* Native frames unwound for a crash summary when the options set no
 * limit: past any handler's frames into the faulting one. */
#define CS_SNAPSHOT_CRASH_FRAMES 1024

struct cs_snapshot_options {
	bool fibers;              /* every fiber's stack too */
	bool locals;              /* every Ruby frame's locals too */
	bool native;              /* native stacks, merged (--native) */
	bool native_all;          /* and threads without Ruby */
	size_t max_native_frames; /* 0: CS_SNAPSHOT_CRASH_FRAMES */
	/* Warnings about the target's files (a mismatched library) are
	 * looked for and also printed on stderr, where they are seen when
	 * the report goes to a file. */
	bool check_files;
	/* Where Ruby keeps only a pthread_t for a thread, read the tid glibc
	 * records there (libc's debug info; pthread_tid.h). */
	bool glibc_tids;
	/* The pid to report when the target knows none, or -1. */
	int pid_hint;
	/* The kernel threads to match Ruby threads with; NULL: the
	 * target's. *ret (n entries) lives until cs_snapshot_free. */
	struct cs_error *(*kernel_threads)(void *ctx, const struct cs_target *t,
					   const struct rv_process *p,
					   const struct cs_thread ***ret,
					   size_t *n);
	void *kernel_threads_ctx;
	/* Called once the Ruby snapshot is read, before anything else: an
	 * error ends the snapshot with it. May be NULL. */
	struct cs_error *(*check)(void *ctx, const struct rv_process *p);
	void *check_ctx;
};

/* A report and what it points to. The snapshot is the one owner of the
 * objects below; its report (engine/report.h) only borrows them, so that
 * each is freed once, by cs_snapshot_free. What neither owns, the engine
 * does (the target, its tables, the Ruby module): a snapshot is valid
 * while the engine it was taken from is open. */
struct cs_snapshot {
	struct cs_report report;         /* borrows from the fields below */
	struct rv_process *proc;         /* owned: report.ruby */
	struct cs_thread_tids tids;      /* owned: report.tids, tid_errors */
	struct cs_native_stacks *native; /* owned: report.native */
	struct cs_merged_stack *merged;  /* owned: report.merged */
	/* The kernel threads matched: the array is owned, the threads it
	 * points to are the target's (or the kernel_threads callback's). */
	const struct cs_thread **threads;
	size_t nthreads;
	/* report.warnings: the array is owned; its strings are the Ruby
	 * module's, the target's, and the two below. */
	const char **warnings;
	char *native_warning;        /* owned */
	struct cs_error *truncation; /* owned */
	/* owned: a core's whole command line, from Ruby's argv (or NULL;
	 * report.command may then borrow the target's) */
	char *command;
	/* owned: a crash core without --native, the crashed thread's
	 * native stack, for the crash summary alone */
	struct cs_native_stacks *crash_native;
	struct cs_crash *crash; /* owned: report.crash */
	/* owned: the system call each kernel thread of the target is
	 * blocked in, read before a live process runs again, and their tids;
	 * report.blocked points into it per Ruby thread */
	struct cs_blocked_call *calls;
	int64_t *call_tids;
	size_t ncalls;
	const struct cs_blocked_call **blocked; /* owned array */
	/* owned: per Ruby thread, what the descriptor of the IO its I/O wait
	 * is on is (cs_target_describe_fd), or NULL; report.io_what */
	char **io_what;
};

/* Taken by cs_engine_snapshot (engine.h); *ret is always safe to free. */
void cs_snapshot_free(struct cs_snapshot *s);

#endif
