/* ruby-bt: the Ruby stacks of a debugger's inferior, rendered exactly as
 * corestack renders them (render/render.h).
 *
 * The inferior is read one of three ways: a local core file or a local live
 * process directly (the fast path, the same readers as the corestack CLI),
 * or through the debugger (a gx_inferior: remote targets). The
 * debugger keeps a live inferior stopped, so a live process is read without
 * ptrace (gdb is its tracer) and without pausing it again. */
#ifndef CS_GDBEXT_BACKTRACE_H
#define CS_GDBEXT_BACKTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../engine/snapshot.h"
#include "../util/error.h"
#include "debugger_target.h"

enum gx_source_kind { GX_SOURCE_CORE, GX_SOURCE_LIVE, GX_SOURCE_DEBUGGER };

struct gx_source {
	enum gx_source_kind kind;
	const char *core_path; /* GX_SOURCE_CORE */
	/* GX_SOURCE_CORE: where its files are when not at the paths the core
	 * names (struct cs_target_request); NULL: there */
	const char *sysroot, *lib_search_path;
	int pid; /* GX_SOURCE_LIVE */
	/* GX_SOURCE_LIVE: the thread the debugger holds stopped at a fatal
	 * signal (its registers the debugger's), and that signal; NULL:
	 * none */
	const struct cs_thread *stopped;
	const struct cs_siginfo *stop_signal;
	/* GX_SOURCE_LIVE with no thread stopped at a fatal signal: every
	 * thread's registers, the debugger's (nthreads); NULL: unknown */
	const struct cs_thread *threads;
	size_t nthreads;
	const char *executable; /* the debugger's; NULL: as the target names it */
	struct gx_inferior *debugger; /* GX_SOURCE_DEBUGGER */
	/* Where to look for debug files (the debugger's own setting);
	 * NULL-terminated, NULL: /usr/lib/debug. */
	const char *const *debug_dirs;
	/* How the user names a debug directory in this debugger, for the
	 * no-debug-info message; NULL: said generically. */
	const char *debug_dir_advice;
};

/* A kernel thread as the debugger knows it: what tells a Ruby thread that
 * keeps only its pthread_t (Ruby < 3.1) which kernel thread it is. */
struct gx_thread_hint {
	int64_t tid;
	uint64_t fs_base; /* 0: the debugger does not show it (lldb 14 live) */
	uint64_t rsp;     /* 0: unknown */
};

/* Asked only when a Ruby thread has no kernel tid of its own. 0 on failure
 * (then such threads show no tid). *ret is freed by the caller. */
typedef int (*gx_thread_hints_fn)(void *ctx, struct gx_thread_hint **ret,
				  size_t *count);

/* gx_backtrace_request.frame */
#define GX_FRAME_NONE (-2)      /* the whole report */
#define GX_FRAME_INNERMOST (-1) /* the innermost Ruby frame */

struct gx_backtrace_request {
	const char *format;       /* a renderer's name (render/render.h) */
	const int64_t *only_tids; /* show only these kernel threads; NULL: all */
	size_t nonly;
	/* The debugger's name of the one thread asked for ("gdb thread 3"),
	 * or NULL: the text then shows that thread alone, without the
	 * process header, this name next to its tid, and the error for a
	 * thread that runs no Ruby names it. */
	const char *thread_name;
	/* The debugger's name of every kernel thread it knows ("gdb thread
	 * 3" for tid name_tids[i]), shown next to each Ruby thread's tid
	 * when no thread_name is given; nnames 0: none. */
	const int64_t *name_tids;
	const char *const *tid_names;
	size_t nnames;
	gx_thread_hints_fn hints; /* may be NULL */
	void *hints_ctx;
	bool frame_flags; /* read where each vm_exec() began (merging) */
	int locals;       /* every Ruby frame's locals (ruby-bt full) */
	bool locks_only;  /* text: who holds what alone (ruby-locks) */
	/* ruby-locals: only this frame (its index among the frames ruby-bt
	 * shows, innermost 0) of the one thread asked for, with its locals;
	 * GX_FRAME_NONE: the report */
	long frame;
	/* ruby-print: only this VALUE, shown safely with its class */
	int show_value;
	uint64_t value;
	/* ruby-heap: the census of the GC heap instead (rendered as format
	 * says, "text" or "json"), heap_top class rows; or with
	 * heap_retainers ("0x..." or a class name) what keeps that object, or
	 * the heap_top largest instances of that class, alive */
	bool heap;
	size_t heap_top;
	const char *heap_retainers;
	/* ruby-heap --dump: every object into this file, what was written
	 * the output */
	const char *heap_dump;
};

/* Render the report (or, with req->heap, the heap census) into *out
 * (malloc'd, NUL-terminated). An error only
 * when nothing could be shown: no Ruby, no debug info, unreadable VM, or a
 * requested thread that runs no Ruby thread (CS_ERR_NO_THREAD). *complete
 * tells whether every thread and frame was decoded. */
struct cs_error *gx_backtrace(const struct gx_source *src,
			      const struct gx_backtrace_request *req,
			      char **out, int *complete);

/* Open src, take a snapshot of every Ruby thread as gx_backtrace does
 * (req's format and threads aside) and hand it to fn, whose error is the
 * result. */
typedef struct cs_error *(*gx_snapshot_fn)(void *ctx, struct cs_snapshot *s);
struct cs_error *gx_with_snapshot(const struct gx_source *src,
				  const struct gx_backtrace_request *req,
				  gx_snapshot_fn fn, void *ctx);

#endif
