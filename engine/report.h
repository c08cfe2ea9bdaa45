/* What a run found, ready to render: process header from the core or the
 * live process, plus the Ruby model's snapshot. Renderers only format; they
 * decide nothing (render.h).
 *
 * A report owns nothing: every pointer in it borrows from whoever built
 * it — the snapshot (engine/snapshot.h) for the Ruby process, tids,
 * native and merged stacks, crash summary, warnings and command line; the
 * engine's target and Ruby for the paths, cwd and siginfo. It is valid
 * while they are, and freeing it is freeing them. */
#ifndef CS_CORESTACK_REPORT_H
#define CS_CORESTACK_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "../rubyvm/model.h"
#include "../process/bundle.h"
#include "../process/core.h"
#include "crash.h"
#include "merge.h"
#include "native.h"

/* Bump on incompatible changes of the JSON output (docs/json-schema.md). */
#define CS_JSON_SCHEMA 1
/* Bump on compatible additions (new fields); 1: fibers; 5: "crash";
 * 6: "gc"; 7: each thread's "exception"; 8: each frame's "stable";
 * 9: the exception's "message" and "message_error", the crash's
 * "exception"; 10: each Ruby frame's "locals" with --locals; 11: the
 * heap's "found_by" and "note", the GC's "library"; 12: each native
 * frame's "jit" and "found_by" with --native; 13: each frame's
 * "jit_frame"; 14: each Ruby frame's "self" with --locals; 15: a
 * document with "error" for unusable input; 16: each stack's
 * "frames_cut"; 17: each frame's "absolute_path", the process's "cwd";
 * 18: the crash's "thread_name"; 19: the process's "modules_found"; 20:
 * the crash's "kind", "fiber", "called_from", "stack" and
 * "abort_message" ("fault" null when unknown), each native frame's
 * "not_code", found_by "return_address"; 21: each thread's "holds",
 * "locks_error", "deadlock", "stuck_behind", waiting_on's "waits_for",
 * "queue" and "retakes", and "deadlocks"; 22: waiting_on's "monitor";
 * 23: crash's "sender_pid" also from the core's own signal; 24: the
 * document of many cores (a directory, --format), its "cores", "groups",
 * "no_crash", "broken", "skipped" and "exit_code"; 25: the process's
 * "bundle"; 26: crash's "entered_from"; 29: crash's
 * "abort_message_error", "handler_running", the crash of a live
 * process; 30: fibers in the wait-for graph (each fiber's "holds",
 * "deadlock", "stuck_behind", "stuck_behind_fiber", waiting_on's
 * "forever" and "waits_for"; a thread's "stuck_behind_fiber"; a held
 * mutex's "fiber"; a deadlock member's "fiber" and "fiber_object");
 * 31: crash kind "bug" (its "signal" null) and "reporting_bug", a
 * crash in progress in a core gcore took; 32: with --native, each
 * thread's "native_tid". */
#define CS_JSON_SCHEMA_MINOR 32

struct cs_report {
	const char *core_path; /* NULL for a live process */
	/* the bundle the core was read from, or NULL (core_path is then the
	 * core's path when it was bundled) */
	const struct cs_bundle *bundle;
	const char *executable;
	const char *vm_module; /* libruby.so, or the executable if static */
	int pid;               /* -1 when unknown */
	const char *command;   /* NULL when unknown */
	const char *cwd;       /* the working directory; NULL when unknown */
	const struct cs_siginfo *siginfo;
	const struct rv_process *ruby;
	const int64_t *tids; /* per Ruby thread: kernel tid or -1 */
	/* per Ruby thread: why its tid is not believed, or NULL; NULL: none */
	char *const *tid_errors;
	/* per Ruby thread: the kernel thread whose native stack holds its
	 * frames (engine/borrowed_stack.h), or -1; NULL: each its own tid */
	const int64_t *native_tids;
	const char *const *warnings;
	size_t nwarnings;
	int complete;
	int64_t crash_tid; /* the thread that took siginfo's signal, or -1 */
	/* --native: every thread's native stack and, per Ruby thread, the
	 * merged one; NULL otherwise. native_all: also threads without Ruby. */
	const struct cs_native_stacks *native;
	const struct cs_merged_stack *merged;
	int native_all;
	/* the crash summary of a core dumped on a fatal signal, or NULL */
	const struct cs_crash *crash;
	/* modules of the native stacks whose file the target names could
	 * not be used, found by their build-id (module_search.h) */
	const struct cs_module_found *modules_found;
	size_t nmodules_found;
	/* per Ruby thread: the system call its kernel thread is blocked in
	 * (process/blocked_call.h), or NULL; NULL: none is known */
	const struct cs_blocked_call *const *blocked;
	/* per Ruby thread: what the descriptor of its I/O wait's IO is, as
	 * the target tells ("pipe:[12]"), or NULL; NULL: none is known */
	const char *const *io_what;
};

/* Does kernel thread tid run one of the Ruby threads' code (its own, or
 * one's whose machine stack it runs on)? The kernel thread of a Ruby
 * thread whose code another runs runs none. */
int cs_report_is_ruby_tid(const struct cs_report *r, int64_t tid);
/* The kernel thread whose native stack holds Ruby thread i's frames: its
 * own, or another that runs its code on its stack; -1 when unknown. */
int64_t cs_report_native_tid(const struct cs_report *r, size_t i);
/* Ruby thread i's native stack (--native): NULL when there is none or its
 * tid is not believed. */
const struct cs_native_thread *cs_report_native_of(const struct cs_report *r,
						   size_t i);

struct json;
/* render_crash.c: the crash summary, when there is one. */
void cs_render_crash_text(FILE *out, const struct cs_report *r);
/* shown: per Ruby thread, in the JSON "threads"? NULL: all */
void cs_render_crash_json(struct json *j, const struct cs_report *r,
			  const bool *shown);
/* render_gc.c: the GC state, in the header and as "gc". */
void cs_render_gc_text(FILE *out, const struct cs_report *r);
void cs_render_gc_json(struct json *j, const struct cs_report *r);
/* render_exception.c: a thread's exception, "Class (0x...): "message"",
 * and as "exception" ({"object", "class", "message", "message_error"},
 * null when t is NULL or has none). */
void cs_render_exception_text(FILE *out, const struct rv_thread *t);
void cs_render_exception_json(struct json *j, const struct rv_thread *t);
/* render_locks.c: after a thread's wait, whom it waits for, what it
 * holds, its deadlock ("held by thread 3 "a"; holds mutex 0x...;
 * deadlock 1"); the deadlocks, at the top of the report; in JSON a
 * thread's "holds", "locks_error", "deadlock", "stuck_behind", a wait's
 * "waits_for", and "deadlocks". */
void cs_render_locks_text(FILE *out, const struct rv_process *p, size_t i);
/* whom a wait waits for: " held by fiber 0x... of thread 3 "a"", " of
 * thread 5", " (unlocked)" */
void cs_render_waits_for_text(FILE *out, const struct rv_process *p,
			      const struct rv_wait *w);
void cs_render_deadlocks_text(FILE *out, const struct rv_process *p);
void cs_render_locks_json(struct json *j, const struct rv_process *p, size_t i);
void cs_render_waits_for_json(struct json *j, const struct rv_wait *w);
/* a wait's "queue" (its items, max, waiters) and "retakes" (the mutex a
 * ConditionVariable#wait takes back, and its holder) */
void cs_render_wait_objects_json(struct json *j, const struct rv_wait *w);
void cs_render_deadlocks_json(struct json *j, const struct rv_process *p);
/* A fiber's: after its wait, whom it waits for, the mutexes it holds (of
 * its thread t's: NULL for an orphan), its deadlock or what it is stuck
 * behind; in JSON its "holds", "deadlock", "stuck_behind" and
 * "stuck_behind_fiber". */
void cs_render_fiber_locks_text(FILE *out, const struct rv_process *p,
				const struct rv_thread *t,
				const struct rv_fiber *f);
void cs_render_fiber_locks_json(struct json *j, const struct rv_process *p,
				const struct rv_thread *t,
				const struct rv_fiber *f);
/* render_waits.c: an I/O wait's descriptor and a process wait's child
 * (" on fd 5 (pipe:[12])", " for child 4242"), or for a sleeping thread
 * no Ruby method explains, the system call it is blocked in; in JSON a
 * wait's "child" and "io", and a thread's "system_call". */
void cs_render_wait_target_text(FILE *out, const struct cs_report *r, size_t i);
void cs_render_wait_target_json(struct json *j, const struct cs_report *r,
				size_t i);
void cs_render_system_call_json(struct json *j, const struct cs_report *r,
				size_t i);
/* What a thread or a fiber waits on: ", waiting on queue
 * (Thread::Queue#pop) 0x..." (nothing for none); in JSON its "kind",
 * "method" and "object". */
void cs_render_wait_head_text(FILE *out, const struct rv_wait *w);
void cs_render_wait_head_json(struct json *j, const struct rv_wait *w);
/* A fiber blocked through its thread's fiber scheduler: after its title,
 * what it waits on, whom (a mutex's holder) and the scheduler's hook; in
 * JSON the fiber's "waiting_on" ({"kind", "method", "object", "io",
 * "scheduler", "forever", "waits_for"}). */
void cs_render_fiber_wait_text(FILE *out, const struct rv_process *p,
			       const struct rv_fiber *f);
void cs_render_fiber_wait_json(struct json *j, const struct rv_fiber *f);
/* {"number", "name", "code", "code_name", "fault_address"} */
void cs_render_signal_json(struct json *j, const char *key,
			   const struct cs_siginfo *si);

#endif
