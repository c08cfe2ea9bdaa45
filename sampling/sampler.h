/* One sample of a live Ruby for a profile: shared by `corestack record`
 * and gdbext's `ruby-sample`. */
#ifndef CS_CORESTACK_SAMPLER_H
#define CS_CORESTACK_SAMPLER_H

#include "../engine/engine.h"
#include "../profile/profile.h"

/* One sample of the live Ruby e (cs_engine_open_sampling), through one
 * attachment kept for the whole recording (e->kept, taken here if none).
 * Nonblocking: read while the threads run. Paused: stop the threads that
 * hold a GVL (every Ruby thread when that is not enough: see sampler.c),
 * and read again, in one call, the pages the last sample used; let the
 * threads run at once, and walk the stacks from those pages. When the walk
 * needed a page that was not among them, that page was read while the
 * process ran, so the sample is not consistent: it is taken again (the
 * page is now on the list), and the last try stays stopped until the walk
 * is done. So a paused sample always reads a process whose Ruby cannot
 * move, and in the steady state the running thread is stopped for one
 * read, not for the whole walk.
 * Unpaused also reads a process a debugger holds (gdbext's ruby-sample).
 * Only the threads in one of states are kept (cs_profile_add; 0: all).
 * 1 taken, 0 lost, -1 target gone. */
int cs_sample_once(struct cs_engine *e, unsigned states,
		   struct cs_profile *prof);

#endif
