/* Whether the VM is in GC, the phase its object space records and how
 * many GCs ran: what a crash during GC needs told. The object space is
 * the GC's: read with the GC library's layout where the process loaded
 * one (RUBY_GC_LIBRARY, rv_session_set_gc_module). */
#include <stdlib.h>
#include <string.h>

#include "session.h"

const char *rv_gc_phase_name(enum rv_gc_phase phase)
{
	switch (phase) {
	case RV_GC_NONE:
		return "none";
	case RV_GC_MARKING:
		return "marking";
	case RV_GC_SWEEPING:
		return "sweeping";
	case RV_GC_COMPACTING:
		return "compacting";
	default:
		return "unknown";
	}
}

static enum rv_gc_phase phase_of(struct rv_session *s, uint64_t mode)
{
	static const struct {
		enum rv_item_id id;
		enum rv_gc_phase phase;
	} modes[] = {
		{RVL_gc_mode_none, RV_GC_NONE},
		{RVL_gc_mode_marking, RV_GC_MARKING},
		{RVL_gc_mode_sweeping, RV_GC_SWEEPING},
		{RVL_gc_mode_compacting, RV_GC_COMPACTING},
	};
	for (size_t i = 0; i < sizeof(modes) / sizeof(*modes); i++)
		if (s->layout.items[modes[i].id].source != RV_MISSING &&
		    (uint64_t)s->layout.items[modes[i].id].value == mode)
			return modes[i].phase;
	return RV_GC_UNKNOWN;
}

void rv_gc_state_read(struct rv_session *s, uint64_t vm, struct rv_gc_state *g)
{
	memset(g, 0, sizeof(*g));
	if (s->gc_library && rv_modular_gc_loaded(s))
		g->library = strdup(s->gc_library);
	const char *why = NULL;
	uint64_t objspace = rv_objspace(s, vm, &why);
	uint64_t during = 0, mode = 0;
	if (!objspace && !why)
		why = "the object space is unreadable";
	else if (objspace &&
		 !(RV_HAS(s, objspace_during_gc) && RV_HAS(s, objspace_mode)))
		why = s->gc_layout ? "the GC library's debug info lacks the "
				     "default GC's object space flags"
				   : "the debug info lacks the object space's "
				     "flags";
	else if (objspace &&
		 !(rv_try_member(s, objspace, RVL_objspace_during_gc,
				 &during) &&
		   rv_try_member(s, objspace, RVL_objspace_mode, &mode)))
		why = "the object space's flags are unreadable";
	if (why) {
		g->error = strdup(why);
		return;
	}
	g->known = true;
	g->during_gc = during != 0;
	g->phase = phase_of(s, mode);
	g->count_known =
		RV_HAS(s, objspace_gc_count) &&
		rv_try_member(s, objspace, RVL_objspace_gc_count, &g->count);
}
