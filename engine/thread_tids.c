/* Which kernel thread runs each Ruby thread, cross-checked.
 *
 * Two sources name a Ruby thread's kernel thread: Ruby's own record (the
 * tid of 3.1+, the pthread_t of every version, which on glibc x86-64 is
 * the thread's fs_base) and the kernel's (a core's NT_PRSTATUS notes: tid
 * and registers; a paused live process's ptrace registers). A damaged core
 * can make them disagree, and a tid picked from a disagreement puts a
 * stack on the wrong thread, or merges another thread's native stack into
 * it. So a tid is believed only when the sources agree: one kernel thread
 * with that tid and Ruby's pthread_t as its fs_base (and, where Ruby keeps
 * no tid, the tid glibc records at that pthread_t), no two Ruby threads on
 * one kernel thread, and the process's main thread (tid == pid) running
 * Ruby's main thread if any Ruby thread runs there. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../util/error.h"
#include "borrowed_stack.h"
#include "thread_tids.h"

static void fail(struct cs_thread_tids *t, size_t i, const char *fmt, ...)
{
	t->ok = false;
	if (t->errors[i])
		return; /* the first reason is enough */
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&t->errors[i], fmt, ap) < 0)
		t->errors[i] = NULL;
	va_end(ap);
}

/* How many of the kernel threads have that tid (by_tid) or that fs_base;
 * *first is the first of them. */
static size_t matching(const struct cs_thread *const *natives, size_t n,
		       bool by_tid, uint64_t value,
		       const struct cs_thread **first)
{
	size_t count = 0;
	for (size_t k = 0; k < n; k++) {
		uint64_t v = by_tid ? (uint64_t)(int64_t)natives[k]->tid
				    : natives[k]->fs_base;
		if (v == value && !count++)
			*first = natives[k];
	}
	return count;
}

/* The registers' stack pointer lies in the machine stack Ruby records for
 * the thread (a little above its base too: Ruby takes the base from a
 * local variable of a function that may have returned). The thread that
 * took a fatal signal is not asked: its handler runs on another stack. */
#define STACK_BASE_SLACK (64 * 1024)

static void check_stack(struct cs_thread_tids *r, size_t i,
			const struct rv_thread *t, const struct cs_thread *nt,
			int64_t crash_tid)
{
	uint64_t top = t->machine_stack_start, size = t->machine_stack_size;
	if (!nt || !nt->rsp || !top || !size || size > top ||
	    nt->tid == crash_tid)
		return;
	if (nt->rsp < top - size || nt->rsp > top + STACK_BASE_SLACK)
		fail(r, i,
		     "the stack pointer 0x%llx of kernel thread %d is outside "
		     "the machine stack Ruby records for it (0x%llx-0x%llx)",
		     (unsigned long long)nt->rsp, nt->tid,
		     (unsigned long long)(top - size), (unsigned long long)top);
}

/* Ruby keeps only a pthread_t: the kernel thread with that fs_base, and
 * the tid glibc records there (glibc_tid, -1: unknown) must be its. */
static void tid_by_fs_base(struct cs_thread_tids *r, size_t i,
			   const struct rv_thread *t,
			   const struct cs_thread *const *natives, size_t n,
			   int64_t glibc_tid, int64_t crash_tid)
{
	const struct cs_thread *nt = NULL;
	size_t count = matching(natives, n, false, t->pthread_id, &nt);
	if (count == 0) {
		/* A listed thread runs on a kernel thread until it is dead. */
		if (t->status != RV_STATUS_DEAD)
			fail(r, i,
			     "no kernel thread has its pthread_t 0x%llx as "
			     "fs_base",
			     (unsigned long long)t->pthread_id);
		return;
	}
	if (count > 1) {
		fail(r, i, "%zu kernel threads have its fs_base 0x%llx", count,
		     (unsigned long long)t->pthread_id);
		return;
	}
	if (nt->tid <= 0) {
		fail(r, i, "its kernel thread's tid %d is not a tid", nt->tid);
		return;
	}
	r->tids[i] = nt->tid;
	if (glibc_tid > 0 && glibc_tid != nt->tid) {
		fail(r, i,
		     "the core's notes give it tid %d, glibc's record at its "
		     "pthread_t tid %lld",
		     nt->tid, (long long)glibc_tid);
		return;
	}
	const struct cs_thread *same;
	if ((count = matching(natives, n, true, (uint64_t)(int64_t)nt->tid,
			      &same)) > 1)
		fail(r, i, "%zu kernel threads have its tid %d", count,
		     nt->tid);
	else
		check_stack(r, i, t, nt, crash_tid);
}

/* Ruby knows the tid: its kernel thread must be one, with Ruby's
 * pthread_t as its fs_base. A tid no kernel thread of the process has is
 * stale: some Rubies (3.1 among the fixtures; 3.3 updates it) keep the
 * parent's tid for a forked child's main thread. The pthread_t still names the thread then. */
static void check_ruby_tid(struct cs_thread_tids *r, size_t i,
			   const struct rv_thread *t,
			   const struct cs_thread *const *natives, size_t n,
			   int64_t glibc_tid, int64_t crash_tid)
{
	const struct cs_thread *nt = NULL;
	size_t count = matching(natives, n, true, (uint64_t)t->tid, &nt);
	if (count == 0 && n && t->status != RV_STATUS_DEAD) {
		r->tids[i] = -1;
		if (t->pthread_id)
			tid_by_fs_base(r, i, t, natives, n, glibc_tid,
				       crash_tid);
		else
			fail(r, i, "no kernel thread has its tid %lld",
			     (long long)t->tid);
		return;
	}
	if (count > 1)
		fail(r, i, "%zu kernel threads have its tid %lld", count,
		     (long long)t->tid);
	else if (count == 1 && nt->fs_base && t->pthread_id &&
		 nt->fs_base != t->pthread_id)
		fail(r, i,
		     "the registers of kernel thread %lld are another "
		     "thread's (fs_base 0x%llx, Ruby's pthread_t 0x%llx)",
		     (long long)t->tid, (unsigned long long)nt->fs_base,
		     (unsigned long long)t->pthread_id);
	else if (count == 1)
		check_stack(r, i, t, nt, crash_tid);
}

/* Ruby keeps only a pthread_t, and the kernel threads come with a stack
 * pointer but no fs_base (lldb 14 on a live process): the tid glibc
 * records at the pthread_t (glibc_tid, -1: unknown), believed when one
 * kernel thread has it and that thread's stack pointer lies in the machine
 * stack Ruby records; otherwise no tid (one source alone is not enough). */
static void tid_by_glibc(struct cs_thread_tids *r, size_t i,
			 const struct rv_thread *t,
			 const struct cs_thread *const *natives, size_t n,
			 int64_t glibc_tid, int64_t crash_tid)
{
	const struct cs_thread *nt = NULL;
	uint64_t top = t->machine_stack_start, size = t->machine_stack_size;
	if (glibc_tid <= 0 || !top || !size || size > top)
		return;
	size_t count = matching(natives, n, true, (uint64_t)glibc_tid, &nt);
	if (count == 0) {
		if (t->status != RV_STATUS_DEAD)
			fail(r, i,
			     "no kernel thread has the tid %lld glibc records "
			     "at its pthread_t 0x%llx",
			     (long long)glibc_tid,
			     (unsigned long long)t->pthread_id);
		return;
	}
	if (count > 1) {
		fail(r, i, "%zu kernel threads have its tid %lld", count,
		     (long long)glibc_tid);
		return;
	}
	if (!nt->rsp)
		return;
	r->tids[i] = glibc_tid;
	check_stack(r, i, t, nt, crash_tid);
}

/* No registers to check against (a nonblocking look at a live process),
 * but the process's threads: a Ruby tid none of them has is stale (see
 * check_ruby_tid), and the tid glibc records at the pthread_t is taken
 * when one of them has it. */
static void stale_without_registers(struct cs_thread_tids *r, size_t i,
				    const struct rv_thread *t,
				    const struct cs_thread *const *natives,
				    size_t n, int64_t glibc_tid)
{
	const struct cs_thread *nt = NULL;
	if (t->tid < 0 || !n || t->status == RV_STATUS_DEAD ||
	    matching(natives, n, true, (uint64_t)t->tid, &nt))
		return;
	r->tids[i] = -1;
	if (glibc_tid > 0 &&
	    matching(natives, n, true, (uint64_t)glibc_tid, &nt) == 1)
		r->tids[i] = glibc_tid;
	else
		fail(r, i, "no kernel thread has its tid %lld",
		     (long long)t->tid);
}

/* The whole assignment: one Ruby thread per kernel thread, and the
 * process's main thread, if it runs Ruby, runs Ruby's main thread. */
static void check_assignment(struct cs_thread_tids *r,
			     const struct rv_process *p, int64_t pid)
{
	size_t main = p->nthreads;
	for (size_t i = 0; i < p->nthreads; i++) {
		if (p->threads[i].is_main)
			main = i;
		for (size_t j = i + 1; j < p->nthreads; j++)
			if (r->tids[i] >= 0 && r->tids[i] == r->tids[j]) {
				fail(r, i, "tid %lld is also thread %zu's",
				     (long long)r->tids[i], j + 1);
				fail(r, j, "tid %lld is also thread %zu's",
				     (long long)r->tids[j], i + 1);
			}
	}
	if (pid <= 0 || main == p->nthreads || r->tids[main] == pid)
		return;
	for (size_t i = 0; i < p->nthreads; i++)
		if (i != main && r->tids[i] == pid) {
			fail(r, i,
			     "tid %lld is the process's main thread, but "
			     "this is not Ruby's main thread",
			     (long long)pid);
			fail(r, main,
			     "Ruby's main thread on tid %lld, not on the "
			     "process's main thread %lld",
			     (long long)r->tids[main], (long long)pid);
		}
}

struct cs_error *cs_thread_tids_find(const struct rv_process *p,
				     const struct cs_thread *const *natives,
				     size_t n, int64_t pid,
				     const int64_t *glibc_tids,
				     int64_t crash_tid,
				     struct cs_thread_tids *ret)
{
	ret->tids = calloc(p->nthreads + 1, sizeof(*ret->tids));
	ret->errors = calloc(p->nthreads + 1, sizeof(*ret->errors));
	ret->native_tids = calloc(p->nthreads + 1, sizeof(*ret->native_tids));
	ret->ok = true;
	if (!ret->tids || !ret->errors || !ret->native_tids) {
		cs_thread_tids_free(ret, 0);
		return &cs_error_nomem;
	}
	/* Kernel threads whose registers were read (none in a nonblocking
	 * look at a live process): only those can be checked. Some
	 * debuggers show the stack pointer but not fs_base. */
	bool registers = false, stack_pointers = false;
	for (size_t k = 0; k < n; k++) {
		registers |= natives[k]->fs_base != 0;
		stack_pointers |= natives[k]->rsp != 0;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rv_thread *t = &p->threads[i];
		ret->tids[i] = t->tid;
		if (!registers && stack_pointers && t->tid < 0 &&
		    t->pthread_id && glibc_tids)
			tid_by_glibc(ret, i, t, natives, n, glibc_tids[i],
				     crash_tid);
		if (!registers) {
			stale_without_registers(ret, i, t, natives, n,
						glibc_tids ? glibc_tids[i]
							   : -1);
			continue;
		}
		if (t->tid >= 0)
			check_ruby_tid(ret, i, t, natives, n,
				       glibc_tids ? glibc_tids[i] : -1,
				       crash_tid);
		else if (t->pthread_id)
			tid_by_fs_base(ret, i, t, natives, n,
				       glibc_tids ? glibc_tids[i] : -1,
				       crash_tid);
	}
	check_assignment(ret, p, pid);
	/* the kernel thread whose native stack holds each one's frames */
	for (size_t i = 0; i < p->nthreads; i++) {
		ret->native_tids[i] = -1;
		if (!ret->errors[i])
			ret->native_tids[i] = cs_borrowed_stack_runner(
				&p->threads[i], ret->tids[i], ret->tids,
				p->nthreads, natives, n);
	}
	return NULL;
}

void cs_thread_tids_free(struct cs_thread_tids *t, size_t nthreads)
{
	for (size_t i = 0; t->errors && i < nthreads; i++)
		free(t->errors[i]);
	free(t->errors);
	free(t->tids);
	free(t->native_tids);
	t->errors = NULL;
	t->tids = NULL;
	t->native_tids = NULL;
}
