/* Control frames cross-checked before they are believed.
 *
 * A control frame is a few words (pc, iseq, ep) and the environment its ep
 * names; in a damaged core, or a read torn by a running target, any of
 * them can be wrong. CRuby keeps enough redundancy to tell: the env's flags
 * word carries a frame type (VM_FRAME_MAGIC_*), which must be one the VM
 * has and must fit the frame (a C method has no iseq, a frame with a pc
 * has one); an env lives on the VM stack below its own control frame and
 * above the env of the frame that called it, unless it escaped to the heap
 * (vm_make_env_each), which its flags then say. A frame that fails is shown
 * as unreliable with the reason, never dropped or taken as another kind
 * (docs/untrusted-input.md). */
#include "session.h"

static bool magic_is(struct rv_session *s, uint64_t magic, enum rv_item_id id)
{
	const struct rv_item *it = &s->layout.items[id];
	return it->source != RV_MISSING && magic == (uint64_t)it->value;
}

static uint64_t frame_magic(struct rv_session *s, uint64_t flags)
{
	return flags & (uint64_t)RV_VAL(s, frame_magic_mask);
}

/* A frame type this Ruby has. Each type is looked for on its own: a Ruby
 * without one of them simply has no frame of that type. */
static bool known_magic(struct rv_session *s, uint64_t magic)
{
	static const enum rv_item_id types[] = {
		RVL_frame_magic_method, RVL_frame_magic_block,
		RVL_frame_magic_class,  RVL_frame_magic_top,
		RVL_frame_magic_cfunc,  RVL_frame_magic_ifunc,
		RVL_frame_magic_eval,   RVL_frame_magic_rescue,
		RVL_frame_magic_dummy,
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (magic_is(s, magic, types[i]))
			return true;
	return false;
}

struct cs_error *rv_frame_type_check(struct rv_session *s, uint64_t flags,
				     bool has_iseq)
{
	uint64_t magic = frame_magic(s, flags);
	if (!known_magic(s, magic))
		return cs_error_create(CS_ERR_CORRUPT,
				       "control frame's env flags 0x%llx name "
				       "no frame type",
				       (unsigned long long)flags);
	/* vm_push_frame: C methods have no iseq, ifunc frames no pc */
	if (has_iseq && (magic_is(s, magic, RVL_frame_magic_cfunc) ||
			 magic_is(s, magic, RVL_frame_magic_ifunc)))
		return cs_error_create(CS_ERR_CORRUPT,
				       "control frame has an iseq and a pc but "
				       "its env flags 0x%llx say C frame",
				       (unsigned long long)flags);
	return NULL;
}

bool rv_frame_is_cfunc(struct rv_session *s, uint64_t flags)
{
	return magic_is(s, frame_magic(s, flags), RVL_frame_magic_cfunc);
}

bool rv_frame_is_method(struct rv_session *s, uint64_t flags)
{
	return magic_is(s, frame_magic(s, flags), RVL_frame_magic_method);
}

bool rv_frame_is_dummy(struct rv_session *s, uint64_t flags)
{
	return magic_is(s, frame_magic(s, flags), RVL_frame_magic_dummy);
}

struct cs_error *rv_frame_ep_check(struct rv_session *s, struct rv_ep_bounds *b,
				   uint64_t cfp, uint64_t ep)
{
	uint64_t value_size = (uint64_t)RV_VAL(s, value_size);
	if (ep % value_size)
		return cs_error_create(CS_ERR_CORRUPT,
				       "control frame's ep 0x%llx is not "
				       "aligned",
				       (unsigned long long)ep);
	if (ep >= b->stack && ep < cfp) {
		if (ep >= b->inner_ep)
			return cs_error_create(
				CS_ERR_CORRUPT,
				"control frame's ep 0x%llx is not below the "
				"env of the frame it called (0x%llx)",
				(unsigned long long)ep,
				(unsigned long long)b->inner_ep);
		b->inner_ep = ep;
		return NULL;
	}
	/* Off the stack: only an env that escaped to the heap is. */
	uint64_t flags;
	struct cs_error *err =
		rv_read_u64(s,
			    ep + (uint64_t)(RV_VAL(s, env_index_flags) *
					    (int64_t)value_size),
			    &flags);
	if (err)
		return cs_error_wrap(err, "control frame's env");
	if (RV_HAS(s, env_flag_escaped) &&
	    (flags & (uint64_t)RV_VAL(s, env_flag_escaped)))
		return NULL;
	return cs_error_create(CS_ERR_CORRUPT,
			       "control frame's ep 0x%llx is off its VM stack "
			       "and its env did not escape",
			       (unsigned long long)ep);
}
