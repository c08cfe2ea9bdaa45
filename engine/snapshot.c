/* One snapshot, from the Ruby model to the report: the order matters —
 * native stacks are unwound before a live process runs again, and the
 * target's warnings are known only once it has been read. */
#include "snapshot.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rubyvm/jit.h"
#include "../util/u64map.h"
#include "../process/crash_signal.h"
#include "abort_msg.h"
#include "crash_scan.h"
#include "engine.h"
#include "jit_regions.h"
#include "pthread_tid.h"

/* Is tid one of the process's kernel threads? */
static bool kernel_thread(const struct cs_snapshot *s, int64_t tid)
{
	for (size_t k = 0; k < s->nthreads; k++)
		if (s->threads[k]->tid == tid)
			return true;
	return false;
}

/* Where Ruby keeps only a pthread_t for a thread, or a tid that is no
 * kernel thread of the process (a forked child's, on some Rubies), the
 * tid glibc records there, per Ruby thread (-1: unknown); NULL when no
 * thread needs it or libc has no debug info. */
static int64_t *glibc_tids_of(const struct cs_snapshot_options *o,
			      const struct cs_engine_request *req,
			      const struct cs_target *t,
			      const struct cs_memory *mem,
			      const struct cs_snapshot *s)
{
	const struct rv_process *p = s->proc;
	bool needed = false;
	for (size_t i = 0; i < p->nthreads; i++)
		needed |=
			p->threads[i].pthread_id &&
			(p->threads[i].tid < 0 ||
			 (s->nthreads && !kernel_thread(s, p->threads[i].tid)));
	struct cs_pthread_tid layout;
	if (!needed || !o->glibc_tids)
		return NULL;
	cs_pthread_tid_layout(t, req->debug_dirs, req->cache_dir, &layout);
	int64_t *tids = layout.known ? calloc(p->nthreads + 1, sizeof(*tids))
				     : NULL;
	for (size_t i = 0; tids && i < p->nthreads; i++)
		tids[i] = cs_pthread_tid_read(&layout, mem,
					      p->threads[i].pthread_id);
	return tids;
}

/* Which threads' native stacks a snapshot unwinds. */
enum unwind_which {
	UNWIND_ALL,
	UNWIND_CRASHED, /* the thread that took the core's signal */
	/* a live thread that may run a fault's handler: the process may
	 * be crashing (thread_may_handle_crash) */
	UNWIND_MAY_HANDLE_CRASH,
};

/* Whether thread kt, of a target with no fatal signal, may be crashing:
 * a live thread that blocks a signal whose handler running means a crash
 * (asked of the target: a core cannot tell), or one whose stack top shows
 * a bug report or a signal handler (crash_scan.h; scan NULL: not
 * looked). */
static bool thread_may_handle_crash(const struct cs_target *t,
				    const struct cs_thread *kt,
				    struct cs_crash_scan *scan,
				    const struct cs_memory *mem)
{
	uint64_t mask;
	return (cs_target_thread_blocked(t, kt->tid, &mask) &&
		cs_mask_blocks_crash_signal(mask)) ||
	       (scan && cs_crash_scan_thread(scan, mem, kt));
}

static bool unwound(const struct cs_target *t, const struct cs_thread *kt,
		    enum unwind_which which, int64_t crash_tid,
		    struct cs_crash_scan *scan, const struct cs_memory *mem)
{
	return which == UNWIND_ALL ||
	       (which == UNWIND_CRASHED
			? kt->tid == crash_tid
			: thread_may_handle_crash(t, kt, scan, mem));
}

/* The native stacks of the threads which names (crash_tid: the crashed
 * thread; *ret left NULL when no thread may run a fault's handler); on
 * failure a warning (the caller owns it) and the Ruby stacks go on
 * alone. */
static char *
unwind_native(const struct cs_snapshot_options *o,
	      const struct cs_engine_request *req, const struct cs_target *t,
	      const struct cs_vm_module *vm, struct rv_session *session,
	      struct cs_module_search *search, const struct rv_process *proc,
	      enum unwind_which which, int64_t crash_tid,
	      struct cs_native_stacks **ret)
{
	const struct cs_memory *mem = rv_session_memory(session);
	const struct cs_thread **threads = cs_target_threads(t);
	if (!threads)
		return strdup("native stacks: out of memory");
	struct cs_crash_scan *scan = which == UNWIND_MAY_HANDLE_CRASH
					     ? cs_crash_scan_new(t, vm)
					     : NULL;
	size_t n = 0;
	for (size_t i = 0; i < cs_target_thread_count(t); i++)
		if (unwound(t, threads[i], which, crash_tid, scan, mem))
			threads[n++] = threads[i];
	cs_crash_scan_free(scan);
	if (n == 0 && which == UNWIND_MAY_HANDLE_CRASH) {
		free(threads);
		return NULL;
	}
	/* where JIT code lies: it has no CFI (native.h) */
	struct rv_jit jit;
	rv_snapshot_jit(session, proc, &jit);
	struct cs_jit_region *jits = NULL;
	size_t njits = 0;
	struct cs_error *err = cs_jit_regions(t, &jit, &jits, &njits);
	if (err) {
		cs_error_destroy(err);
		free(threads);
		return strdup("native stacks: out of memory");
	}
	/* a front end that shows no native frames may set no limit */
	size_t max = o->max_native_frames ? o->max_native_frames
					  : CS_SNAPSHOT_CRASH_FRAMES;
	err = cs_native_unwind(t, mem, threads, n, req->debug_dirs, max, jits,
			       njits, search, ret);
	free(threads);
	free(jits);
	char *msg = NULL;
	if (err && asprintf(&msg, "native stacks: %s", err->message) < 0)
		msg = NULL;
	cs_error_destroy(err);
	return msg;
}

static struct cs_error *kernel_threads(const struct cs_snapshot_options *o,
				       const struct cs_target *t,
				       struct cs_snapshot *s)
{
	if (o->kernel_threads)
		return o->kernel_threads(o->kernel_threads_ctx, t, s->proc,
					 &s->threads, &s->nthreads);
	s->nthreads = cs_target_thread_count(t);
	s->threads = cs_target_threads(t);
	return s->threads ? NULL : &cs_error_nomem;
}

/* The Ruby model's warnings, then the target's: its files, its
 * truncation, the native unwinder's. *files_ok: no file mismatched. */
static struct cs_error *gather_warnings(const struct cs_snapshot_options *o,
					const struct cs_target *t,
					struct cs_ruby *r,
					struct cs_snapshot *s, bool *files_ok)
{
	const struct cs_vm_module *vm = &r->vm;
	size_t nfile = 0;
	if (o->check_files) {
		cs_target_check_files(t);
		nfile = cs_target_warning_count(t);
	}
	s->truncation = cs_target_truncation(t);
	size_t n = vm->nwarnings + nfile + 2;
	if (!(s->warnings = calloc(n, sizeof(*s->warnings))))
		return &cs_error_nomem;
	const char **w = s->warnings;
	size_t k = 0;
	for (size_t i = 0; i < vm->nwarnings; i++)
		w[k++] = vm->warnings[i];
	for (size_t i = 0; i < nfile; i++) {
		const char *msg = cs_target_warning_at(t, i);
		/* Also on stderr: the output may go to a file. */
		fprintf(stderr, "corestack: warning: %s\n", msg);
		w[k++] = msg;
	}
	if (s->truncation)
		w[k++] = s->truncation->message;
	if (s->native_warning)
		w[k++] = s->native_warning;
	s->report.warnings = w;
	s->report.nwarnings = k;
	*files_ok = nfile == 0;
	return NULL;
}

/* Merge each Ruby thread's stack with its native one; *ok: no merged
 * stack is known to be incomplete. */
static struct cs_error *merge_native(struct cs_snapshot *s, bool *ok)
{
	const struct rv_process *p = s->proc;
	*ok = true;
	if (!s->native)
		return NULL;
	if (!(s->merged = calloc(p->nthreads + 1, sizeof(*s->merged))))
		return &cs_error_nomem;
	for (size_t i = 0; i < p->nthreads; i++) {
		/* Registers not believed to be this thread's: no stack of
		 * theirs is merged into its. The stack merged is the one
		 * that runs its code (borrowed_stack.h). */
		const struct cs_native_thread *nt =
			s->tids.errors[i]
				? NULL
				: cs_native_thread_of(s->native,
						      s->tids.native_tids[i]);
		struct cs_error *err =
			cs_merge_stacks(&p->threads[i], nt, &s->merged[i]);
		if (err)
			return err;
		/* a cut native stack is known to be incomplete */
		*ok &= !s->merged[i].error && !(nt && nt->cut);
	}
	return NULL;
}

/* Does Ruby thread t sleep or block (is its system call worth a read)? */
static bool waits(const struct rv_thread *t)
{
	return t->state == RV_STATE_SLEEPING ||
	       t->state == RV_STATE_SLEEPING_FOREVER || t->wait.blocking_region;
}

/* Kernel threads by tid, as 1 + their index in s->calls (tids are > 0:
 * key 0 is the map's). */
static bool index_tids(const struct cs_snapshot *s, struct u64map *m)
{
	for (size_t k = 0; k < s->ncalls; k++)
		if (s->call_tids[k] > 0 &&
		    !u64map_put(m, (uint64_t)s->call_tids[k],
				(void *)(uintptr_t)(k + 1)))
			return false;
	return true;
}

/* The system call each of the target's kernel threads is blocked in,
 * from the registers it gives or, without them, from what /proc says of
 * a waiting one, before a live process runs again: a poll's array is in
 * its memory, its descriptors in /proc. */
static struct cs_error *read_blocked_calls(const struct cs_target *t,
					   struct cs_snapshot *s)
{
	const struct rv_process *p = s->proc;
	if (!(s->io_what = calloc(p->nthreads + 1, sizeof(*s->io_what))))
		return &cs_error_nomem;
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].wait.has_io_fd &&
		    p->threads[i].wait.io_fd >= 0)
			s->io_what[i] = cs_target_describe_fd(
				t, (int)p->threads[i].wait.io_fd);
	bool regs = cs_target_has_registers(t);
	size_t n = cs_target_thread_count(t);
	s->calls = calloc(n + 1, sizeof(*s->calls));
	s->call_tids = calloc(n + 1, sizeof(*s->call_tids));
	if (!s->calls || !s->call_tids)
		return &cs_error_nomem;
	for (size_t i = 0; i < n; i++)
		s->call_tids[i] = cs_target_thread_at(t, i)->tid;
	s->ncalls = n;
	if (regs) {
		for (size_t i = 0; i < n; i++)
			cs_blocked_call_of(t, cs_target_thread_at(t, i),
					   &s->calls[i]);
		return NULL;
	}
	/* without registers each call is a read of /proc: only for the
	 * threads whose Ruby thread waits, or for every thread where Ruby
	 * keeps no tid of a waiting one (2.7) */
	bool all = false;
	for (size_t i = 0; i < p->nthreads && !all; i++)
		all = waits(&p->threads[i]) && p->threads[i].tid <= 0;
	if (all) {
		for (size_t k = 0; k < n; k++)
			cs_blocked_call_of(t, cs_target_thread_at(t, k),
					   &s->calls[k]);
		return NULL;
	}
	struct u64map by_tid = {0};
	if (!index_tids(s, &by_tid)) {
		u64map_free(&by_tid, NULL);
		return &cs_error_nomem;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		int found = 0;
		uintptr_t k = p->threads[i].tid > 0 && waits(&p->threads[i])
				      ? (uintptr_t)u64map_get(
						&by_tid,
						(uint64_t)p->threads[i].tid,
						&found)
				      : 0;
		if (k)
			cs_blocked_call_of(t, cs_target_thread_at(t, k - 1),
					   &s->calls[k - 1]);
	}
	u64map_free(&by_tid, NULL);
	return NULL;
}

/* Each Ruby thread's blocked call: that of the kernel thread that runs
 * its code (its believed tid's, or one on its stack). */
static struct cs_error *match_blocked_calls(struct cs_snapshot *s)
{
	if (!s->ncalls)
		return NULL;
	const struct rv_process *p = s->proc;
	struct u64map by_tid = {0};
	if (!(s->blocked = calloc(p->nthreads + 1, sizeof(*s->blocked))) ||
	    !index_tids(s, &by_tid)) {
		u64map_free(&by_tid, NULL);
		return &cs_error_nomem;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		int found = 0;
		int64_t tid = s->tids.native_tids[i];
		uintptr_t k = tid > 0 && !s->tids.errors[i]
				      ? (uintptr_t)u64map_get(
						&by_tid, (uint64_t)tid, &found)
				      : 0;
		if (k && s->calls[k - 1].known)
			s->blocked[i] = &s->calls[k - 1];
	}
	u64map_free(&by_tid, NULL);
	return NULL;
}

/* The crash summary; it never makes the report partial: what it cannot
 * tell, it says. */
static struct cs_error *find_crash(const struct cs_engine_request *req,
				   const struct cs_target *t,
				   const struct cs_memory *mem,
				   const struct cs_siginfo *si,
				   int64_t crash_tid, struct cs_snapshot *s)
{
	/* its registers: the target's own thread (a front end's list of
	 * kernel threads may carry no registers), else the list's */
	const struct cs_thread *kt = NULL;
	const struct cs_thread **own = cs_target_threads(t);
	for (size_t i = 0; own && i < cs_target_thread_count(t); i++)
		if (own[i]->tid == crash_tid)
			kt = own[i];
	free(own);
	for (size_t i = 0; !kt && i < s->nthreads; i++)
		if (s->threads[i]->tid == crash_tid)
			kt = s->threads[i];
	const struct cs_native_stacks *ns = s->native ? s->native
						      : s->crash_native;
	struct cs_error *err = cs_crash_find(si, crash_tid, kt,
					     cs_native_thread_of(ns, crash_tid),
					     t, mem, s->proc, s->tids.tids,
					     s->tids.errors, &s->crash);
	struct cs_crash *c = s->crash;
	if (err || !c ||
	    (c->fault.si.signo != SIGABRT &&
	     !(c->core_signal && c->core_signal->signo == SIGABRT)))
		return err;
	/* an abort: what the C library said before it (assert, malloc) */
	c->abort_message = cs_abort_message(t, mem, req->debug_dirs,
					    &c->abort_message_error);
	return NULL;
}

/* A core's notes keep the start of the command line: the whole of it from
 * Ruby's copy of its argv, believed when it begins as the notes do. A
 * target that knows none (a debugger's) takes Ruby's copy as it is. */
static const char *command_line(const struct cs_target *t,
				struct rv_session *session,
				struct cs_snapshot *s)
{
	const char *notes = cs_target_command(t);
	if (notes && !t->dump)
		return notes; /* a live process's /proc/PID/cmdline: whole */
	size_t n = notes ? strlen(notes) : 0;
	while (n && notes[n - 1] == ' ') /* the kernel's for the last NUL */
		n--;
	struct cs_error *err =
		!notes || n ? rv_command_line(session, &s->command) : NULL;
	if (err || !s->command) {
		cs_error_destroy(err);
		return notes;
	}
	/* strncmp differs at Ruby's NUL if its copy is the shorter */
	if (notes && strncmp(s->command, notes, n) != 0) {
		free(s->command);
		s->command = NULL;
		return notes;
	}
	return s->command;
}

struct cs_error *cs_engine_snapshot(struct cs_engine *e,
				    const struct cs_snapshot_options *o,
				    struct cs_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	const struct cs_target *t = e->target;
	const struct cs_engine_request *req = &e->request;
	struct cs_ruby *r = &e->ruby;
	struct rv_session *session = r->session;
	const struct cs_memory *mem = rv_session_memory(session);
	struct cs_error *err;
	if ((err = rv_snapshot(session, &s->proc)) ||
	    (o->check && (err = o->check(o->check_ctx, s->proc))) ||
	    (o->fibers && (err = rv_snapshot_fibers(session, s->proc))) ||
	    (o->locals && (err = rv_snapshot_locals(session, s->proc))))
		return cs_ruby_explain(t, err);
	const struct cs_siginfo *si = cs_crash_signal(cs_target_siginfo(t));
	int64_t crash_tid = si ? cs_target_crash_tid(t) : -1;
	if (o->native) /* before a live process runs again */
		s->native_warning = unwind_native(o, req, t, &r->vm, session,
						  e->search, s->proc,
						  UNWIND_ALL, -1, &s->native);
	else if (crash_tid >= 0) /* for the crash summary */
		free(unwind_native(o, req, t, &r->vm, session, e->search,
				   s->proc, UNWIND_CRASHED, crash_tid,
				   &s->crash_native));
	else if (!si) /* no fatal signal: a thread may be crashing */
		free(unwind_native(o, req, t, &r->vm, session, e->search,
				   s->proc, UNWIND_MAY_HANDLE_CRASH, -1,
				   &s->crash_native));
	/* A process crashing, with no fatal signal yet: a thread runs a
	 * fault's handler (Ruby's writes its crash report there, and may hang
	 * in it), or writes Ruby's bug report before it aborts. A live one
	 * stays stopped until the summary has read the handler's signal
	 * frame. */
	bool crashing = false;
	const struct cs_native_stacks *ns = s->native ? s->native
						      : s->crash_native;
	for (size_t i = 0; !si && ns && i < ns->nthreads && !crashing; i++)
		if (cs_crash_in_handler(&ns->threads[i], mem) ||
		    cs_crash_in_bug_report(&ns->threads[i])) {
			crashing = true;
			crash_tid = ns->threads[i].tid;
		}
	struct cs_error *calls_err = read_blocked_calls(t, s);
	/* The snapshot is taken: let a live process run again before the
	 * report is written. */
	if (!crashing)
		cs_target_release(t);
	if (calls_err)
		return calls_err;

	bool files_ok, merged_ok;
	int pid = cs_target_pid(t);
	if (pid < 0)
		pid = o->pid_hint;
	int64_t *glibc_tids = NULL;
	if ((err = gather_warnings(o, t, r, s, &files_ok)) ||
	    (err = kernel_threads(o, t, s)))
		return err;
	glibc_tids = glibc_tids_of(o, req, t, mem, s);
	err = cs_thread_tids_find(s->proc, s->threads, s->nthreads, pid,
				  glibc_tids, crash_tid, &s->tids);
	free(glibc_tids);
	if (err || (err = merge_native(s, &merged_ok)) ||
	    (err = match_blocked_calls(s)) ||
	    ((si || crashing) &&
	     (err = find_crash(req, t, mem, si, crash_tid, s))))
		return err;
	if (crashing) {
		cs_target_release(t);
		if (!s->crash) /* its signal frame not believed after all */
			crash_tid = -1;
	}
	const struct cs_vm_module *vm = &r->vm;
	struct cs_report *rep = &s->report;
	rep->core_path = t->dump ? t->name : NULL;
	rep->executable = vm->exe->path;
	rep->vm_module = vm->vm->path;
	rep->bundle = req->bundle;
	if (req->bundle && cs_bundle_core(req->bundle)) {
		/* the files by the paths the core names, as without a bundle */
		rep->core_path = cs_bundle_core(req->bundle)->path;
		rep->executable =
			cs_bundle_path_of(req->bundle, rep->executable);
		rep->vm_module = cs_bundle_path_of(req->bundle, rep->vm_module);
	}
	rep->pid = pid;
	rep->command = command_line(t, session, s);
	rep->cwd = cs_target_cwd(t);
	rep->siginfo = si;
	rep->ruby = s->proc;
	rep->tids = s->tids.tids;
	rep->tid_errors = s->tids.errors;
	rep->native_tids = s->tids.native_tids;
	rep->complete = rv_process_complete(s->proc) && !s->truncation &&
			files_ok && merged_ok && !s->native_warning &&
			s->tids.ok;
	rep->crash_tid = crash_tid;
	rep->native = s->native;
	ns = s->native ? s->native : s->crash ? s->crash_native : NULL;
	rep->modules_found = ns ? ns->found : NULL;
	rep->nmodules_found = ns ? ns->nfound : 0;
	rep->merged = s->merged;
	rep->native_all = o->native_all;
	rep->crash = s->crash;
	rep->blocked = s->blocked;
	rep->io_what = (const char *const *)s->io_what;
	return NULL;
}

void cs_snapshot_free(struct cs_snapshot *s)
{
	size_t n = s->proc ? s->proc->nthreads : 0;
	for (size_t i = 0; s->merged && i < n; i++)
		cs_merged_stack_free(&s->merged[i]);
	free(s->merged);
	cs_native_destroy(s->native);
	cs_native_destroy(s->crash_native);
	cs_crash_free(s->crash);
	for (size_t i = 0; i < s->ncalls; i++)
		cs_blocked_call_free(&s->calls[i]);
	free(s->calls);
	free(s->call_tids);
	free(s->blocked);
	for (size_t i = 0; s->io_what && i < n; i++)
		free(s->io_what[i]);
	free(s->io_what);
	free(s->native_warning);
	cs_error_destroy(s->truncation);
	free(s->command);
	cs_thread_tids_free(&s->tids, n);
	free(s->warnings);
	free(s->threads);
	rv_process_destroy(s->proc);
	memset(s, 0, sizeof(*s));
}
