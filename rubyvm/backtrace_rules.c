/* How this Ruby builds a backtrace: labels, which frames it shows, where it
 * places them (docs/backtrace-rules.md lists each rule with its evidence
 * and its test).
 *
 * Rubies differ not only in layout but in behaviour: 3.4 names methods by
 * their owners ("Kernel#sleep"), shows a rescue clause as its method,
 * shows some methods written in Ruby as C methods; 4.0 shows no frame of
 * Ruby's own <internal:...> files. Each rule here is switched on by what
 * the Ruby binary has — the function of vm_backtrace.c that implements
 * it, an enumerator, a string it prints — never by its version number, so
 * a Ruby that keeps the rule keeps working and one that drops it is not
 * misread. The rules follow vm_backtrace.c's code, named in each comment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* How far a label climbs parent iseqs: far above any real nesting. */
#define MAX_ISEQ_DEPTH 256

void rv_bt_rules_init(struct rv_session *s)
{
	struct rv_bt_rules *r = &s->rules;
	memset(r, 0, sizeof(*r));
	/* location_label -> calculate_iseq_label / rb_gen_method_name */
	r->owner_labels = RV_HAS(s, fn_calculate_iseq_label) &&
			  RV_HAS(s, fn_gen_method_name) &&
			  RV_HAS(s, body_parent_iseq) &&
			  RV_HAS(s, body_local_iseq) && RV_HAS(s, body_type);
	/* location_original_module: the definition records its module */
	r->definition_module = r->owner_labels &&
			       RV_HAS(s, def_original_module);
	/* rb_ec_partial_backtrace_object: skip_next_frame */
	r->rescue_as_method = RV_HAS(s, fn_is_rescue_or_ensure_frame) &&
			      RV_HAS(s, iseq_type_rescue) &&
			      RV_HAS(s, iseq_type_ensure);
	/* Primitive.attr! :c_trace */
	r->c_trace = RV_HAS(s, builtin_attr_c_trace) &&
		     RV_HAS(s, body_builtin_attrs);
	/* bt_backpatch_loc: <internal:...> frames behave like C methods, one
	 * kept per run, and a dummy frame has no pc */
	r->internal_as_c = RV_HAS(s, fn_bt_backpatch_loc);
	/* location_format / oldbt_print: "in `m'" or "in 'm'" */
	r->backtick_quotes = RV_HAS(s, text_quote_backtick) ||
			     (!RV_HAS(s, text_quote_apostrophe) &&
			      !RV_HAS(s, text_quote_apostrophe_len) &&
			      !r->owner_labels);
}

bool rv_bt_is_type(struct rv_session *s, int64_t type, enum rv_item_id id)
{
	return s->layout.items[id].source != RV_MISSING &&
	       type == s->layout.items[id].value;
}

/* rb_gen_method_name: "Owner#name", "Owner.name" for a singleton class of
 * a class or module, only when that name is permanent; else the name.
 * The qualified and stable styles always name the owner, their way. */
static struct cs_error *method_name(struct rv_session *s, uint64_t me,
				    uint64_t owner, const char *name,
				    enum rv_name_style style, char **ret)
{
	if (style == RV_NAME_RUBY)
		return rv_bt_method_name(s, owner, name, ret);
	char *path = NULL;
	bool dot = false;
	struct cs_error *err = NULL;
	if (owner)
		err = style == RV_NAME_STABLE
			      ? rv_stable_owner_name(s, owner, me, &path, &dot)
			      : rv_owner_name(s, owner, &path, &dot);
	if (err)
		return err;
	*ret = path ? rv_join3(path, strlen(path), dot ? "." : "#", name)
		    : strdup(name);
	free(path);
	return *ret ? NULL : &cs_error_nomem;
}

struct cs_error *rv_bt_method_name(struct rv_session *s, uint64_t owner,
				   const char *name, char **ret)
{
	uint64_t type, flags;
	char *path = NULL;
	const char *sep = "#";
	struct cs_error *err = NULL;
	*ret = NULL;
	if (owner && !rv_special_const(s, owner) &&
	    !rv_failed(rv_builtin_type(s, owner, &type, &flags)) &&
	    (type == (uint64_t)RV_VAL(s, t_class) ||
	     type == (uint64_t)RV_VAL(s, t_module))) {
		uint64_t klass = owner, attached, atype;
		bool singleton = rv_singleton_class_p(s, type, flags);
		if (singleton) {
			sep = ".";
			klass = 0;
			if (!rv_failed(
				    rv_attached_object(s, owner, &attached)) &&
			    attached && !rv_special_const(s, attached) &&
			    !rv_failed(rv_builtin_type(s, attached, &atype,
						       NULL)) &&
			    (atype == (uint64_t)RV_VAL(s, t_class) ||
			     atype == (uint64_t)RV_VAL(s, t_module)))
				klass = attached;
		}
		if (klass)
			err = rv_permanent_path(s, klass, &path);
	}
	*ret = path ? rv_join3(path, strlen(path), sep, name) : strdup(name);
	free(path);
	if (err) {
		free(*ret);
		*ret = NULL;
		return err;
	}
	return *ret ? NULL : &cs_error_nomem;
}

/* location_original_module: an alias or a define_method copy of a method
 * shares its definition, which keeps the module that defined the body; the
 * label names that module, not the class the copy was installed in. But
 * module_function's copy, on the singleton class of the module that defined
 * it, is named by its owner (M.f). A definition without the module (0)
 * leaves the owner. */
struct cs_error *rv_bt_label_owner(struct rv_session *s, uint64_t me,
				   uint64_t owner, uint64_t *ret)
{
	uint64_t def, module, type, flags, attached;
	struct cs_error *err;
	*ret = owner;
	if (!s->rules.definition_module || !me)
		return NULL;
	if ((err = rv_read_member(s, me, RVL_me_def, &def)) ||
	    (err = rv_read_member(s, def, RVL_def_original_module, &module)))
		return err;
	if (!module || module == owner)
		return NULL;
	if (owner && !rv_special_const(s, owner) &&
	    !rv_failed(rv_builtin_type(s, owner, &type, &flags)) &&
	    type == (uint64_t)RV_VAL(s, t_class) &&
	    rv_singleton_class_p(s, type, flags) &&
	    !rv_failed(rv_attached_object(s, owner, &attached)) &&
	    attached == module)
		return NULL;
	*ret = module;
	return NULL;
}

/* calculate_iseq_label: the label of iseq, its method named by owner. */
static struct cs_error *iseq_label(struct rv_session *s, uint64_t me,
				   uint64_t owner, uint64_t iseq,
				   enum rv_name_style style, int depth,
				   char **ret)
{
	const struct rv_iseq_info *info;
	struct cs_error *err;
	for (;;) {
		if (depth++ > MAX_ISEQ_DEPTH || !iseq)
			return cs_error_create(CS_ERR_CORRUPT,
					       "iseq parents end nowhere "
					       "(a cycle?)");
		if ((err = rv_iseq_lookup(s, iseq, &info)))
			return err;
		int64_t t = info->type;
		if (rv_bt_is_type(s, t, RVL_iseq_type_rescue) ||
		    rv_bt_is_type(s, t, RVL_iseq_type_ensure) ||
		    rv_bt_is_type(s, t, RVL_iseq_type_eval)) {
			iseq = info->parent_iseq;
			continue;
		}
		if (rv_bt_is_type(s, t, RVL_iseq_type_method))
			return method_name(s, me, owner, info->label, style,
					   ret);
		if (!rv_bt_is_type(s, t, RVL_iseq_type_block) &&
		    !rv_bt_is_type(s, t, RVL_iseq_type_plain))
			break; /* top, main, class: the label as it is */
		/* a block: count the blocks up to its local iseq */
		int level = 0;
		uint64_t local = info->local_iseq, cur = iseq;
		if (info->parent_iseq) {
			const struct rv_iseq_info *ci = info;
			while (cur != local) {
				if (depth++ > MAX_ISEQ_DEPTH)
					return cs_error_create(
						CS_ERR_CORRUPT,
						"block nesting deeper than %d",
						MAX_ISEQ_DEPTH);
				if (rv_bt_is_type(s, ci->type,
						  RVL_iseq_type_block))
					level++;
				cur = ci->parent_iseq;
				if (!cur)
					return cs_error_create(
						CS_ERR_CORRUPT,
						"a block's parents miss its "
						"local iseq");
				if ((err = rv_iseq_lookup(s, cur, &ci)))
					return err;
			}
		}
		if (cur == iseq) /* no parents: Ruby would recurse for ever */
			return cs_error_create(CS_ERR_CORRUPT,
					       "a block without a parent iseq");
		char *inner = NULL;
		if ((err = iseq_label(s, me, owner, cur, style, depth, &inner)))
			return err;
		if (!inner)
			return &cs_error_nomem;
		char prefix[48];
		if (level <= 1)
			snprintf(prefix, sizeof(prefix), "block in ");
		else
			snprintf(prefix, sizeof(prefix),
				 "block (%d levels) in ", level);
		*ret = rv_join3(prefix, strlen(prefix), inner, "");
		free(inner);
		return *ret ? NULL : &cs_error_nomem;
	}
	*ret = strdup(info->label);
	return *ret ? NULL : &cs_error_nomem;
}

struct cs_error *rv_bt_iseq_label(struct rv_session *s, uint64_t me,
				  uint64_t owner, uint64_t iseq,
				  enum rv_name_style style, char **ret)
{
	*ret = NULL;
	return iseq_label(s, me, owner, iseq, style, 0, ret);
}

bool rv_bt_rescue_or_ensure(struct rv_session *s,
			    const struct rv_iseq_info *info)
{
	return rv_bt_is_type(s, info->type, RVL_iseq_type_rescue) ||
	       rv_bt_is_type(s, info->type, RVL_iseq_type_ensure);
}

bool rv_bt_internal(const struct rv_iseq_info *info)
{
	return strncmp(info->path, "<internal:", 10) == 0;
}

enum rv_c_like rv_bt_c_like(struct rv_session *s,
			    const struct rv_iseq_info *info)
{
	if (s->rules.internal_as_c && rv_bt_internal(info))
		return RV_C_LIKE_INTERNAL;
	if (s->rules.c_trace &&
	    (info->builtin_attrs & (uint64_t)RV_VAL(s, builtin_attr_c_trace)))
		return RV_C_LIKE_C_TRACE;
	return RV_NOT_C_LIKE;
}

/* Frames leave the stack in place: the ones after are moved down. A
 * vm_exec() begun at a dropped frame begins at the next inner one kept. */
static void drop_frames(struct rv_thread *th, size_t at, size_t n)
{
	for (size_t i = at; i < at + n; i++) {
		if (th->frames[i].vm_finish && at > 0)
			th->frames[at - 1].vm_finish = true;
		rv_frame_free(&th->frames[i]);
	}
	memmove(&th->frames[at], &th->frames[at + n],
		(th->nframes - at - n) * sizeof(*th->frames));
	th->nframes -= n;
	memset(&th->frames[th->nframes], 0, n * sizeof(*th->frames));
}

void rv_bt_select_frames(struct rv_session *s, struct rv_thread *th)
{
	bool skip_next = false;
	size_t pending = 0; /* C-like frames since the last Ruby frame */
	for (size_t i = 0; i < th->nframes;) {
		struct rv_frame *f = &th->frames[i];
		if (f->kind != RV_FRAME_RUBY) {
			pending++;
			i++;
			continue;
		}
		/* rb_ec_partial_backtrace_object: the frame after a rescue
		 * or ensure clause's is its method's, which the clause's
		 * frame already stands for (also when itself skipped) */
		bool skip = s->rules.rescue_as_method && skip_next;
		skip_next = f->rescue_or_ensure;
		if (skip) {
			drop_frames(th, i, 1);
			continue;
		}
		if (f->c_like == RV_C_LIKE_INTERNAL && pending) {
			/* "keep only one internal frame": what it called,
			 * down to the last Ruby frame, is not shown */
			drop_frames(th, i - pending, pending);
			i -= pending;
			pending = 0;
		}
		if (f->c_like) {
			pending++;
			i++;
			continue;
		}
		pending = 0;
		i++;
	}
}

void rv_bt_count_frame(const struct rv_session *s, struct rv_bt_count *c,
		       const struct rv_frame *f)
{
	if (f->kind != RV_FRAME_RUBY) {
		c->pending++;
		c->n++;
		return;
	}
	bool skip = s->rules.rescue_as_method && c->skip_next;
	c->skip_next = f->rescue_or_ensure;
	if (skip)
		return;
	if (f->c_like == RV_C_LIKE_INTERNAL && c->pending) {
		c->n -= c->pending;
		c->pending = 0;
	}
	if (f->c_like) {
		c->pending++;
		c->n++;
		return;
	}
	c->pending = 0;
	c->n++;
}
