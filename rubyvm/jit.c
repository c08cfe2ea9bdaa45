/* Which JIT runs and where its code is, as the VM records it. See jit.h. */
#include "jit.h"

#include <string.h>

#include "session.h"

/* Frames of each stack looked at for code addresses: the first ones hold
 * the JIT code a thread runs; a few suffice. */
#define FRAMES_PER_STACK 64

static void add_code(struct rv_jit *j, uint64_t addr)
{
	if (!addr || j->ncode == RV_JIT_MAX_CODE)
		return;
	for (size_t i = 0; i < j->ncode; i++)
		if (j->code[i] == addr)
			return;
	j->code[j->ncode++] = addr;
}

/* The frame's code addresses; true when its jit_return gave one. */
static bool frame_code(struct rv_session *s, const struct rv_frame *f,
		       bool yjit, struct rv_jit *j)
{
	uint64_t body, v;
	if (f->iseq && RV_HAS(s, iseq_jit_entry) &&
	    rv_try_member(s, f->iseq, RVL_iseq_body, &body) && body &&
	    rv_try_member(s, body, RVL_iseq_jit_entry, &v))
		add_code(j, v);
	/* ZJIT's jit_return may point at a record, not at code */
	if (yjit && f->cfp &&
	    rv_try_member(s, f->cfp, RVL_cfp_jit_return, &v) && v) {
		add_code(j, v);
		return true;
	}
	return false;
}

/* Only YJIT sets a control frame's jit_return where the Ruby has no ZJIT
 * (rb_zjit_entry). */
static bool only_yjit_returns(struct rv_session *s)
{
	return RV_HAS(s, cfp_jit_return) && !RV_HAS(s, zjit_entry);
}

void rv_snapshot_jit(struct rv_session *s, const struct rv_process *p,
		     struct rv_jit *ret)
{
	memset(ret, 0, sizeof(*ret));
	/* rb_zjit_entry as the snapshot read it (jit_frames.c) */
	uint64_t zjit_entry = s->zjit_entry, yjit_enabled = 0;
	bool zjit_known = s->zjit_entry_known;
	bool yjit_known = rv_try_var(s, RVL_yjit_enabled, 1, &yjit_enabled);
	if (zjit_entry) {
		ret->name = "zjit";
		add_code(ret, zjit_entry);
	} else if (yjit_enabled) {
		ret->name = "yjit";
	} else if (zjit_known || yjit_known ||
		   (!RV_HAS(s, iseq_jit_entry) && !only_yjit_returns(s))) {
		return; /* no JIT runs, or nothing would tell */
	} else {
		ret->name = "jit"; /* none it can tell of: any jit_entry */
	}
	/* Without rb_yjit_enabled_p as a variable (3.2 and older), a
	 * jit_return set in a Ruby built without ZJIT is YJIT's. */
	bool yjit = yjit_enabled != 0 || only_yjit_returns(s), returned = false;
	for (size_t t = 0; p && t < p->nthreads; t++) {
		const struct rv_thread *th = &p->threads[t];
		for (size_t i = 0; i < th->nframes && i < FRAMES_PER_STACK; i++)
			returned |= frame_code(s, &th->frames[i], yjit, ret);
	}
	if (!yjit_enabled && returned)
		ret->name = "yjit";
	if (!ret->ncode)
		ret->name = NULL;
}
