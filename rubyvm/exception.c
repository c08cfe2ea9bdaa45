/* The exception a thread is raising or handling, as $! (errinfo_place in
 * eval.c): the innermost rescue or ensure clause keeps it in its last
 * local, ep[VM_ENV_INDEX_LAST_LVAR]; outside any, ec->errinfo, which
 * Ruby sets while it raises. Both also carry other values (the VM's
 * throw objects, an ensure clause's state), so only an ordinary object
 * counts, named by its class's path.
 *
 * Its message is what Exception#to_s returns: the mesg ivar when it is a
 * String, the class path when it is nil or unset. A class that overrides
 * message or to_s, or a mesg of another type (which to_s would convert by
 * calling Ruby), gets no message but the reason. */
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"
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

/* Text that JSON and the text output can carry: UTF-8, any character. */
static bool utf8_text(const char *text)
{
	const unsigned char *p = (const unsigned char *)text;
	while (*p) {
		size_t n = *p < 0x80 ? 1 : utf8_sequence_length(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

static struct cs_error *message_read(struct rv_session *s, uint64_t exc,
				     const char *class_path, char **ret)
{
	uint64_t flags = 0, mesg = 0, type = 0;
	bool found;
	struct cs_error *err;
	*ret = NULL;
	if (!RV_HAS(s, id_mesg))
		return rv_missing(RVL_id_mesg);
	if ((err = rv_read_member(s, exc, RVL_basic_flags, &flags)) ||
	    (err = rv_object_ivar(s, exc, flags, (uint64_t)RV_VAL(s, id_mesg),
				  &mesg, &found)))
		return err;
	if (!found || rv_is_nil(s, mesg)) {
		if (!class_path)
			return cs_error_create(CS_ERR_LOOKUP,
					       "no message, and its class has "
					       "no name");
		*ret = strdup(class_path);
		return *ret ? NULL : &cs_error_nomem;
	}
	if (rv_special_const(s, mesg) ||
	    rv_failed(rv_builtin_type(s, mesg, &type, NULL)) ||
	    type != (uint64_t)RV_VAL(s, t_string))
		return cs_error_create(CS_ERR_LOOKUP,
				       "its mesg 0x%llx is not a String",
				       (unsigned long long)mesg);
	if ((err = rv_string(s, mesg, ret)))
		return err;
	if (!utf8_text(*ret)) {
		free(*ret);
		*ret = NULL;
		return cs_error_create(CS_ERR_LOOKUP,
				       "its message is not UTF-8 text");
	}
	return NULL;
}

void rv_thread_exception_read(struct rv_session *s, const struct rv_view *ec,
			      struct rv_thread *t)
{
	uint64_t v, klass;
	if (!RV_HAS(s, basic_klass) || !RV_HAS(s, t_object))
		return;
	if (!(v = clause_errinfo(s, t)) &&
	    !(RV_HAS(s, ec_errinfo) && rv_view_try(s, ec, RVL_ec_errinfo, &v)))
		return;
	if (!object_of(s, v, &klass))
		return;
	t->exception = v;
	char *name = NULL;
	if (!rv_failed(rv_class_path(s, klass, &name)))
		t->exception_class = name;
	struct cs_error *err =
		message_read(s, v, t->exception_class, &t->exception_message);
	if (err) {
		t->exception_message_error = strdup(err->message);
		cs_error_destroy(err);
	}
}
