/* One sample of a live Ruby for a profile: shared by `corestack record`
 * and gdbext's `ruby-sample`. */
#ifndef CS_CORESTACK_SAMPLER_H
#define CS_CORESTACK_SAMPLER_H

#include "../rubyvm/model.h"
#include "live.h"
#include "page_cache.h"
#include "profile.h"

/* One sample through one attachment kept for the whole recording (*keep,
 * attached on first use). Paused: stop every thread, read, let them run
 * again; unpaused: read while they run (or while a debugger holds them).
 * 1 taken, 0 lost, -1 target gone. */
int cs_sample_once(struct rv_session *s, int pid, int pause, int on_cpu,
		   struct cs_live **keep, struct cs_page_cache *cache,
		   struct cs_profile *prof);

#endif
