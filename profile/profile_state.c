/* A sampled thread's state, from what every snapshot reads anyway: who
 * holds the GVL (threads.c), the thread's own status (thread_state.c) and
 * whether the VM is in GC (gc_state.c). No read of its own: a state costs
 * a sample nothing but these few comparisons.
 *
 * Only the GVL holder runs Ruby, and the GC runs on the thread holding it,
 * so a holder is "gc" while the object space says so and "running"
 * otherwise. A thread Ruby marks as sleeping (sleep, a Queue, a Mutex, a
 * join, a blocking region such as read(2)) is blocked, whatever it waits
 * on. Every other thread is runnable and waits for the GVL. */
#include <stdio.h>
#include <string.h>

#include "profile.h"

static const char *const names[CS_PROFILE_NSTATES] = {
	[CS_PROFILE_RUNNING] = "running",
	[CS_PROFILE_WAITING_GVL] = "waiting for GVL",
	[CS_PROFILE_BLOCKED] = "blocked",
	[CS_PROFILE_GC] = "gc",
};

static const char *const keys[CS_PROFILE_NSTATES] = {
	[CS_PROFILE_RUNNING] = "running",
	[CS_PROFILE_WAITING_GVL] = "waiting",
	[CS_PROFILE_BLOCKED] = "blocked",
	[CS_PROFILE_GC] = "gc",
};

const char *cs_profile_state_name(enum cs_profile_state st)
{
	return (unsigned)st < CS_PROFILE_NSTATES ? names[st] : "unknown";
}

const char *cs_profile_state_key(enum cs_profile_state st)
{
	return (unsigned)st < CS_PROFILE_NSTATES ? keys[st] : "unknown";
}

enum cs_profile_state cs_profile_state_of(const struct rv_process *proc,
					  const struct rv_thread *t)
{
	if (t->holds_gvl)
		return proc->gc.known && proc->gc.during_gc
			       ? CS_PROFILE_GC
			       : CS_PROFILE_RUNNING;
	switch (t->state) {
	case RV_STATE_SLEEPING:
	case RV_STATE_SLEEPING_FOREVER:
	case RV_STATE_DEAD: /* runs nothing and never will again */
		return CS_PROFILE_BLOCKED;
	default:
		return CS_PROFILE_WAITING_GVL;
	}
}

bool cs_profile_states_parse(const char *list, unsigned *set, char *why,
			     size_t whylen)
{
	*set = 0;
	for (const char *p = list;;) {
		size_t len = strcspn(p, ",");
		unsigned one = 0;
		for (unsigned i = 0; i < CS_PROFILE_NSTATES && len; i++)
			if (strlen(keys[i]) == len && !strncmp(p, keys[i], len))
				one = 1u << i;
		if (!one) {
			snprintf(why, whylen,
				 "--state takes a comma list of running, "
				 "waiting, blocked, gc; not '%.*s'",
				 (int)(len > 40 ? 40 : len), p);
			return false;
		}
		*set |= one;
		if (!p[len])
			return true;
		p += len + 1;
	}
}
