#include "sampler.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>

static size_t read_live_ranges(void *live, const uint64_t *addrs,
			       void *const *bufs, const size_t *lens, size_t n)
{
	return cs_live_read_ranges(live, addrs, bufs, lens, n);
}

/* After a paused sample: later pauses stop only the threads that run Ruby
 * (see cs_live_leave_running for why the others must run on). Only when
 * Ruby names every thread's kernel tid (3.1+, and no M:N thread parked off
 * a native thread): else every thread is stopped, as before. A thread
 * left running that turns out to run Ruby is stopped again from the next
 * pause on. */
static void leave_others_running(struct cs_live *live,
				 const struct rv_process *p)
{
	if (p->error || !p->nthreads)
		return;
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid < 0)
			return;
	for (size_t i = 0; i < p->nthreads; i++)
		cs_live_leave_running(live, (int)p->threads[i].tid, 0);
	for (size_t i = 0; i < cs_live_thread_count(live); i++) {
		int tid = cs_live_thread_at(live, i)->tid;
		bool ruby = false;
		for (size_t j = 0; j < p->nthreads && !ruby; j++)
			ruby = p->threads[j].tid == tid;
		if (!ruby)
			cs_live_leave_running(live, tid, 1);
	}
}

/* Paused samples try this many times to read everything during a short
 * stop (see cs_sample_once) before staying stopped for the whole read. */
#define QUICK_TRIES 2

int cs_sample_once(struct rv_session *s, int pid, int pause, int on_cpu,
		   struct cs_live **keep, struct cs_page_cache *cache,
		   struct cs_profile *prof)
{
	struct rv_process *p = NULL;
	struct cs_error *err = NULL;
	for (int try = 0;; try++) {
		bool quick = pause && try < QUICK_TRIES;
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
			return gone ? -1 : 0;
		}
		struct rv_target t = cs_live_target(*keep);
		cache->inner = t;
		cache->read_ranges = read_live_ranges;
		cache->read_ranges_priv = *keep;
		cs_page_cache_clear(cache); /* the process ran since */
		uint64_t filled = cache->filled;
		if (quick)
			cs_error_destroy(cs_live_resume(*keep));
		t = cs_page_cache_target(cache);
		rv_session_set_target(s, &t);
		err = rv_snapshot(s, &p);
		if (pause && !quick)
			cs_error_destroy(cs_live_resume(*keep));
		if (!quick || cache->filled == filled)
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
	if (pause)
		leave_others_running(*keep, p);
	int ok = cs_profile_add(prof, p, on_cpu);
	rv_process_destroy(p);
	return ok;
}
