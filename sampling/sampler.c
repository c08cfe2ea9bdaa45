#include "sampler.h"
#include "read_timing.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t read_live_ranges(void *live, const uint64_t *addrs,
			       void *const *bufs, const size_t *lens, size_t n)
{
	return cs_live_read_ranges(live, addrs, bufs, lens, n);
}

/* Which threads a paused sample must stop.
 *
 * Only a thread holding a GVL runs Ruby: the others wait for it, sleep, or
 * run C code with the GVL released, and none of them can change a Ruby
 * stack, a thread list or a string until it takes the GVL. A holder that is
 * stopped cannot hand the GVL on. So a sample is consistent when, for every
 * ractor, the thread the snapshot names as holding its GVL was stopped
 * through the read (then it held it all along, and nobody else ran Ruby),
 * or when every Ruby thread was stopped. A sampler therefore stops the GVL
 * holders of the last sample only, checks the snapshot says they still
 * hold it, and stops every Ruby thread when they do not (the GVL moved, or
 * nobody held it: then any waiting thread could have taken it).
 *
 * Stopping fewer threads is not only cheaper: stopping a thread restarts
 * some of its waits from the start (epoll_wait's timeout: Ruby 3.3's timer
 * thread, stopped 100 times a second, never ends its 100 ms wait and no
 * waiting thread ever gets the GVL), and waking each sleeper to stop it
 * takes CPU from the running thread. Threads that run no Ruby (the timer
 * thread, a C extension's own threads) are never stopped after the first
 * sample.
 *
 * All of this needs the kernel tid of every Ruby thread (3.1+, and no M:N
 * thread parked off a native thread); without it every thread is stopped
 * at every sample. */
static bool stopped(const struct cs_live *live, int64_t tid)
{
	const struct cs_target_tables *tt = cs_live_tables(live);
	for (size_t i = 0; i < tt->nthreads; i++)
		if (tt->threads[i].tid == tid)
			return true;
	return false;
}

/* Every Ruby thread's tid, and each one of this process: a forked child of
 * some Rubies still holds its parent's tid for its main thread. */
static bool tids_known(const struct cs_live *live, const struct rv_process *p)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid < 0 ||
		    !cs_live_traces(live, p->threads[i].tid))
			return false;
	return p->nthreads > 0 && !p->error;
}

/* Whether every ractor of p has a GVL holder (and, with live, one that
 * this pause stopped). */
static bool holders_stopped(const struct cs_live *live,
			    const struct rv_process *p)
{
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rv_thread *t = &p->threads[i];
		bool held = false;
		for (size_t j = 0; j < p->nthreads && !held; j++) {
			const struct rv_thread *h = &p->threads[j];
			held = h->holds_gvl && h->ractor.id == t->ractor.id &&
			       (!live || stopped(live, h->tid));
		}
		if (!held)
			return false;
	}
	return true;
}

static bool consistent(const struct cs_live *live, const struct rv_process *p)
{
	if (!tids_known(live, p))
		return true; /* every thread was stopped (see next_stops) */
	if (holders_stopped(live, p))
		return true;
	for (size_t i = 0; i < p->nthreads; i++)
		if (!stopped(live, p->threads[i].tid))
			return false;
	return true;
}

/* Set who the next pause stops: the GVL holders only (holders), or every
 * Ruby thread; never the threads that run no Ruby. */
static void next_stops(struct cs_live *live, const struct rv_process *p,
		       bool holders)
{
	const struct cs_target_tables *tt = cs_live_tables(live);
	if (!tids_known(live, p)) {
		for (size_t i = 0; i < tt->nthreads; i++)
			cs_live_leave_running(live, tt->threads[i].tid, 0);
		return;
	}
	/* stopped threads that are not Ruby's: left running from now on */
	for (size_t i = 0; i < tt->nthreads; i++) {
		int tid = tt->threads[i].tid;
		bool ruby = false;
		for (size_t j = 0; j < p->nthreads && !ruby; j++)
			ruby = p->threads[j].tid == tid;
		if (!ruby)
			cs_live_leave_running(live, tid, 1);
	}
	/* a ractor nobody holds the GVL of: any of its threads may take it */
	if (holders && !holders_stopped(NULL, p))
		holders = false;
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rv_thread *t = &p->threads[i];
		cs_live_leave_running(live, (int)t->tid,
				      holders && !t->holds_gvl);
	}
}

/* Is tid a kernel thread of the process? Paused, every one is traced;
 * else /proc says. */
static bool has_thread(const struct cs_live *live, int pid, int64_t tid,
		       int pause)
{
	if (pause)
		return cs_live_traces(live, tid);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%lld", pid, (long long)tid);
	return access(path, F_OK) == 0;
}

/* Some Rubies (3.1 among the fixtures; 3.3 updates it) keep the parent's
 * tid in a forked child's main thread. The thread that called fork is the child's first kernel
 * thread (tid == pid) and Ruby makes it the child's main thread: a main
 * thread whose tid is no thread of the process runs there, when no other
 * Ruby thread does. Only a main thread off the pid is looked at: one
 * check at most per sample. */
static void forked_main_tid(const struct cs_live *live, int pid, int pause,
			    struct rv_process *p)
{
	struct rv_thread *main = NULL;
	for (size_t i = 0; i < p->nthreads; i++) {
		if (p->threads[i].tid == pid)
			return;
		if (p->threads[i].is_main)
			main = &p->threads[i];
	}
	if (main && main->tid >= 0 &&
	    !has_thread(live, pid, main->tid, pause) &&
	    has_thread(live, pid, pid, pause))
		main->tid = pid;
}

/* Paused samples try this many times to read everything during a short
 * stop (see cs_sample_once) before staying stopped for the whole read. A
 * program whose running thread keeps moving to bytes not read last time
 * makes every quick try fail, and each failed try is a stop more: after a
 * sample whose quick tries failed, only one sample in QUICK_RETRY tries. */
#define QUICK_TRIES 2
#define QUICK_RETRY 16

int cs_sample_once(struct cs_engine *e, unsigned states,
		   struct cs_profile *prof)
{
	struct rv_session *s = e->ruby.session;
	int pid = e->request.target.pid, pause = e->request.target.pause;
	struct cs_live **keep = &e->kept;
	struct cs_page_cache *cache = &e->cache;
	struct rv_process *p = NULL;
	struct cs_error *err = NULL;
	/* when stopping the GVL holders was not enough: once more, all */
	bool again = false;
	/* when none of the threads to stop is left (the last GVL holder
	 * ended and nobody took the GVL): once more, stopping all */
	bool stop_all = false;
	int quick_tries = cache->unserved % QUICK_RETRY ? 0 : QUICK_TRIES;
	for (int try = 0;; try++) {
		bool quick = pause && try < quick_tries;
		if (!*keep) {
			err = cs_live_attach(pid, pause, keep);
			if (!err)
				cs_live_without_registers(*keep);
		} else if (pause)
			err = cs_live_pause(*keep);
		if (err) {
			int gone = kill(pid, 0) != 0 ||
				   strstr(err->message, "exited");
			cs_error_destroy(err);
			if (!gone && pause && *keep && !stop_all) {
				cs_live_stop_every_thread(*keep);
				stop_all = true;
				try = -1;
				continue;
			}
			return gone ? -1 : 0;
		}
		struct cs_memory t = cs_live_memory(*keep);
		cache->inner = t;
		cache->read_ranges = read_live_ranges;
		cache->read_ranges_priv = *keep;
		cache->unreadable = cs_live_unreadable;
		cache->unreadable_priv = *keep;
		if (e->request.time_target_reads)
			cs_read_timing_install(e, *keep, t);
		cs_page_cache_clear(cache); /* the process ran since */
		uint64_t filled = cache->filled;
		if (quick)
			cs_error_destroy(cs_live_resume(*keep));
		t = cs_page_cache_target(cache);
		rv_session_set_target(s, &t);
		err = rv_snapshot(s, &p);
		if (!err)
			forked_main_tid(*keep, pid, pause, p);
		if (pause && !quick)
			cs_error_destroy(cs_live_resume(*keep));
		bool whole = !quick || cache->filled == filled;
		if (pause && try == quick_tries && quick_tries)
			cache->unserved++; /* every quick try failed */
		else if (quick && whole)
			cache->unserved = 0;
		if (whole && pause && !err && !again && !consistent(*keep, p)) {
			next_stops(*keep, p, false);
			again = true;
			try = -1; /* the quick tries again, with every thread */
			whole = false;
		}
		if (whole)
			break;
		cs_error_destroy(err);
		rv_process_destroy(p);
		err = NULL;
		p = NULL;
	}
	if (err && kill(pid, 0) != 0) {
		cs_error_destroy(err);
		rv_process_destroy(p);
		return -1;
	}
	if (err || !rv_process_complete(p)) {
		cs_error_destroy(err);
		rv_process_destroy(p);
		return 0;
	}
	struct timespec taken;
	clock_gettime(CLOCK_MONOTONIC, &taken);
	if (pause)
		next_stops(*keep, p, true);
	int ok = cs_profile_add(prof, p, states,
				(uint64_t)taken.tv_sec * 1000000000u +
					(uint64_t)taken.tv_nsec);
	rv_process_destroy(p);
	return ok;
}
