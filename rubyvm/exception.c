/* The exception a thread is raising or handling, as $! (errinfo_place in
 * eval.c): the innermost rescue or ensure clause keeps it in its last
 * local, ep[VM_ENV_INDEX_LAST_LVAR]; outside any, ec->errinfo, which
 * Ruby sets while it raises. Both also carry other values (the VM's
 * throw objects, an ensure clause's state), so only an ordinary object
 * counts, named by its class's path. */
#include "session.h"

/* v, when it is an ordinary object, and its class. */
static bool object_of(struct rv_session *s, uint64_t v, uint64_t *klass)
{
	uint64_t type;
	return !rv_special_const(s, v) &&
	       !rv_failed(rv_builtin_type(s, v, &type, NULL)) &&
	       type == (uint64_t)RV_VAL(s, t_object) &&
	       rv_try_member(s, v, RVL_basic_klass, klass) && *klass;
}

/* $! as the innermost rescue or ensure clause holds it, or 0. */
static uint64_t clause_errinfo(struct rv_session *s, const struct rv_thread *t)
{
	for (size_t i = 0; i < t->nframes; i++) {
		const struct rv_frame *f = &t->frames[i];
		uint64_t ep, v, klass;
		if (f->kind != RV_FRAME_RUBY || !f->rescue_or_ensure ||
		    !f->cfp || !rv_try_member(s, f->cfp, RVL_cfp_ep, &ep))
			continue;
		uint64_t at = ep + (uint64_t)(RV_VAL(s, env_index_last_lvar) *
					      (int64_t)RV_VAL(s, value_size));
		if (rv_try_read(s, at, &v, sizeof(v)) &&
		    object_of(s, v, &klass))
			return v;
	}
	return 0;
}

void rv_thread_exception_read(struct rv_session *s, uint64_t ec,
			      struct rv_thread *t)
{
	uint64_t v, klass;
	if (!RV_HAS(s, basic_klass) || !RV_HAS(s, t_object))
		return;
	if (!(v = clause_errinfo(s, t)) &&
	    !(RV_HAS(s, ec_errinfo) &&
	      rv_try_member(s, ec, RVL_ec_errinfo, &v)))
		return;
	if (!object_of(s, v, &klass))
		return;
	t->exception = v;
	char *name = NULL;
	if (!rv_failed(rv_class_path(s, klass, &name)))
		t->exception_class = name;
}
