/* ZJIT's frames: where a control frame's pc and iseq really are.
 *
 * A method ZJIT runs keeps its pc and iseq not in its control frame but in
 * a JIT frame record (struct zjit_jit_frame): cfp->jit_return points one
 * VALUE above a slot of the native stack that holds the record's address,
 * one slot per frame of a compiled method (the frames of the methods it
 * inlined have slots of their own), and the record is replaced as the
 * method runs, so its pc is the one Ruby would show. A C method ZJIT calls
 * gets a control frame whose jit_return is the sentinel
 * ZJIT_JIT_RETURN_C_FRAME, which stands for the record rb_zjit_c_frame (no
 * pc, no iseq); that frame's own pc and iseq are left over from an older
 * frame and name another method. CRuby reads every frame through CFP_PC
 * and CFP_ISEQ, which take the record when ZJIT is on (rb_zjit_entry set)
 * and jit_return is not NULL; so does this. When CRuby copies a record
 * into its control frame (rb_zjit_materialize_frames), it clears
 * jit_return.
 *
 * A Ruby whose debug info has no struct zjit_jit_frame has no records:
 * its ZJIT writes pc and iseq into the control frame like the interpreter
 * (4.0). While ZJIT is off, jit_return is YJIT's return address, or NULL.
 * Whether ZJIT is on is read from memory once per snapshot (it can be
 * switched on while a process runs: RubyVM::ZJIT.enable).
 *
 * The record and the slot are untrusted like any other memory: the slot
 * must lie on the machine stack Ruby records for the execution context,
 * the record must be readable and aligned, and what it holds goes through
 * the same checks as a control frame's own pc and iseq (frames.c). */
#include "session.h"

/* Ruby takes a machine stack's base from a local variable of a function
 * that may have returned: a slot may lie a little above it. */
#define STACK_BASE_SLACK (64 * 1024)

void rv_jit_frames_begin(struct rv_session *s)
{
	s->zjit_entry = 0;
	s->zjit_records = false;
	s->zjit_unknown = NULL;
	s->zjit_entry_known = rv_try_var(s, RVL_zjit_entry,
					 sizeof(s->zjit_entry), &s->zjit_entry);
	if (!RV_HAS(s, zjit_frame_pc) || !RV_HAS(s, zjit_frame_iseq) ||
	    !RV_HAS(s, cfp_jit_return))
		return;
	if (!s->zjit_entry_known)
		s->zjit_unknown =
			RV_HAS(s, zjit_entry)
				? "whether ZJIT is on cannot be told: "
				  "rb_zjit_entry is unreadable"
				: "whether ZJIT is on cannot be told: no "
				  "rb_zjit_entry in the debug info";
	else
		s->zjit_records = s->zjit_entry != 0;
}

bool rv_jit_frames_apply(const struct rv_session *s)
{
	return s->zjit_records || s->zjit_unknown;
}

static struct cs_error *record_fields(struct rv_session *s, uint64_t record,
				      uint64_t *pc, uint64_t *iseq)
{
	struct cs_error *err;
	if ((err = rv_read_member(s, record, RVL_zjit_frame_pc, pc)) ||
	    (err = rv_read_member(s, record, RVL_zjit_frame_iseq, iseq)))
		return cs_error_wrap(err, "ZJIT's JIT frame record 0x%llx",
				     (unsigned long long)record);
	return NULL;
}

/* rb_zjit_c_frame, the record of every C method ZJIT calls. */
static struct cs_error *c_frame_record(struct rv_session *s, uint64_t *pc,
				       uint64_t *iseq)
{
	if (!RV_HAS(s, zjit_c_frame))
		return cs_error_create(
			CS_ERR_LOOKUP,
			"a C frame of ZJIT (jit_return 0x%llx), "
			"but no rb_zjit_c_frame in the debug "
			"info",
			(unsigned long long)RV_VAL(s, zjit_jit_return_c_frame));
	return record_fields(
		s, s->load_bias + (uint64_t)RV_VAL(s, zjit_c_frame), pc, iseq);
}

struct cs_error *rv_jit_frame(struct rv_session *s,
			      const struct rv_machine_stack *ms,
			      uint64_t jit_return, uint64_t *pc, uint64_t *iseq)
{
	if (s->zjit_unknown)
		return cs_error_create(CS_ERR_LOOKUP,
				       "control frame has jit_return 0x%llx "
				       "and %s",
				       (unsigned long long)jit_return,
				       s->zjit_unknown);
	if (RV_HAS(s, zjit_jit_return_c_frame) &&
	    jit_return == (uint64_t)RV_VAL(s, zjit_jit_return_c_frame))
		return c_frame_record(s, pc, iseq);
	uint64_t word = (uint64_t)RV_VAL(s, value_size), record;
	if (jit_return % word || jit_return < word)
		return cs_error_create(CS_ERR_CORRUPT,
				       "control frame's jit_return 0x%llx is "
				       "neither ZJIT's C frame mark nor an "
				       "aligned stack slot",
				       (unsigned long long)jit_return);
	uint64_t slot = jit_return - word;
	if (ms->top && ms->size && ms->size <= ms->top &&
	    (slot < ms->top - ms->size || slot > ms->top + STACK_BASE_SLACK))
		return cs_error_create(
			CS_ERR_CORRUPT,
			"control frame's JIT frame slot 0x%llx is outside "
			"its machine stack (0x%llx-0x%llx)",
			(unsigned long long)slot,
			(unsigned long long)(ms->top - ms->size),
			(unsigned long long)ms->top);
	struct cs_error *err = rv_read_u64(s, slot, &record);
	if (err)
		return cs_error_wrap(err, "control frame's JIT frame slot");
	if (!record || record % word)
		return cs_error_create(CS_ERR_CORRUPT,
				       "control frame's JIT frame slot 0x%llx "
				       "holds 0x%llx, not a JIT frame record",
				       (unsigned long long)slot,
				       (unsigned long long)record);
	if ((err = record_fields(s, record, pc, iseq)))
		return err;
	/* Only C frames have records without an iseq, and theirs is the
	 * shared one. */
	if (!*pc || !*iseq)
		return cs_error_create(CS_ERR_CORRUPT,
				       "ZJIT's JIT frame record 0x%llx has pc "
				       "0x%llx and iseq 0x%llx",
				       (unsigned long long)record,
				       (unsigned long long)*pc,
				       (unsigned long long)*iseq);
	return NULL;
}
