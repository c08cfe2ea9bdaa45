#include "sampler.h"

#include <signal.h>
#include <string.h>

int cs_sample_once(struct rv_session *s, int pid, int pause, int on_cpu,
		   struct cs_live **keep, struct cs_page_cache *cache,
		   struct cs_profile *prof)
{
	struct cs_error *err = NULL;
	if (!*keep)
		err = cs_live_attach(pid, pause, keep);
	else if (pause)
		err = cs_live_pause(*keep);
	if (err) {
		int gone = kill(pid, 0) != 0 || strstr(err->message, "exited");
		cs_error_destroy(err);
		return gone ? -1 : 0;
	}
	struct rv_target t = cs_live_target(*keep);
	cache->inner = t;
	cs_page_cache_clear(cache); /* the process ran since the last sample */
	t = cs_page_cache_target(cache);
	rv_session_set_target(s, &t);
	struct rv_process *p = NULL;
	err = rv_snapshot(s, &p);
	if (pause) {
		struct cs_error *r = cs_live_resume(*keep);
		cs_error_destroy(r);
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
	int ok = cs_profile_add(prof, p, on_cpu);
	rv_process_destroy(p);
	return ok;
}
