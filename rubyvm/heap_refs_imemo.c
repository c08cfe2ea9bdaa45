/* What an imemo marks, by its imemo type, as the Ruby's GC marks it
 * (gc_mark_imemo, later rb_imemo_mark_and_move): a method entry, a cref,
 * an svar, a throw_data, an ifunc, a MEMO, a call cache, a constant cache
 * and a class variable's cache entry. Each member read is a layout item;
 * a member this Ruby's DWARF lacks is one its mark function has not
 * either. An environment is heap_refs.c's; an iseq, a tmpbuf, an AST and
 * a fields object are not decoded. */
#include "heap_refs.h"
#include "session.h"

/* Follow the VALUE in member id of the struct at base, held as a field
 * named by id; a member this Ruby lacks is skipped. */
static struct cs_error *add_member(struct rv_session *s, uint64_t base,
				   enum rv_item_id id, struct rv_refs *out)
{
	uint64_t v = 0;
	if (s->layout.items[id].source == RV_MISSING)
		return NULL;
	struct cs_error *err = rv_read_member(s, base, id, &v);
	if (!err && !rv_refs_add(s, out, v, RV_REF_FIELD, id))
		err = &cs_error_nomem;
	return err;
}

static struct cs_error *add_members(struct rv_session *s, uint64_t base,
				    const enum rv_item_id *ids, size_t n,
				    struct rv_refs *out)
{
	struct cs_error *err = NULL;
	for (size_t i = 0; !err && i < n; i++)
		err = add_member(s, base, ids[i], out);
	return err;
}

/* A word the GC marks only when it is an object (rb_gc_mark_maybe): the
 * start of a live heap slot. *known false when the heap's layout cannot
 * tell. */
static struct cs_error *add_maybe(struct rv_session *s, uint64_t base,
				  enum rv_item_id id, struct rv_refs *out,
				  bool *known)
{
	uint64_t v = 0, size = 0;
	char why[128];
	struct cs_error *err = rv_read_member(s, base, id, &v);
	if (err || !v || rv_special_const(s, v))
		return err;
	enum rv_slot slot = rv_heap_slot(s, v, &size, why, sizeof(why));
	if (slot == RV_SLOT_UNKNOWN)
		*known = false;
	else if (slot == RV_SLOT_LIVE &&
		 !rv_refs_add(s, out, v, RV_REF_FIELD, id))
		return &cs_error_nomem;
	return NULL;
}

/* Whether v is the value of the enumerator item id names. */
static bool enumerator_is(struct rv_session *s, int64_t v, enum rv_item_id id)
{
	return s->layout.items[id].source != RV_MISSING &&
	       v == s->layout.items[id].value;
}

/* A method entry: its owner and defined class, then what its definition
 * holds by its type. */
static struct cs_error *ment_refs(struct rv_session *s, uint64_t me,
				  struct rv_refs *out, bool *decoded)
{
	uint64_t def = 0, type = 0, defined = 0, overload = 0;
	if (!RV_HAS(s, me_def) || !RV_HAS(s, me_owner) ||
	    !RV_HAS(s, me_defined_class) || !RV_HAS(s, def_type) ||
	    !RV_HAS(s, method_type_iseq)) {
		*decoded = false;
		return NULL;
	}
	static const enum rv_item_id entry[] = {RVL_me_owner,
						RVL_me_defined_class};
	struct cs_error *err = add_members(s, me, entry, 2, out);
	if (!err)
		err = rv_read_member(s, me, RVL_me_def, &def);
	if (err || !def)
		return err;
	if ((err = add_member(s, def, RVL_def_original_module, out)) ||
	    (err = rv_read_member(s, def, RVL_def_type, &type)))
		return err;
	if (enumerator_is(s, (int64_t)type, RVL_method_type_iseq)) {
		static const enum rv_item_id iseq[] = {RVL_def_iseq_iseqptr,
						       RVL_def_iseq_cref};
		err = add_members(s, def, iseq, 2, out);
		/* an overloaded iseq method's entry is a key of a table the
		 * GC pins it for: it marks itself */
		if (!err && RV_HAS(s, def_iseq_overload) &&
		    !(err = rv_read_member(s, def, RVL_def_iseq_overload,
					   &overload)) &&
		    overload &&
		    !(err = rv_read_member(s, me, RVL_me_defined_class,
					   &defined)) &&
		    defined &&
		    !rv_refs_add(s, out, me, RV_REF_FIELD,
				 RVL_def_iseq_overload))
			err = &cs_error_nomem;
	} else if (enumerator_is(s, (int64_t)type, RVL_method_type_attrset) ||
		   enumerator_is(s, (int64_t)type, RVL_method_type_ivar))
		err = add_member(s, def, RVL_def_attr_location, out);
	else if (enumerator_is(s, (int64_t)type, RVL_method_type_bmethod))
		err = add_member(s, def, RVL_def_bmethod_proc, out);
	else if (enumerator_is(s, (int64_t)type, RVL_method_type_alias))
		err = add_member(s, def, RVL_def_alias_original_me, out);
	else if (enumerator_is(s, (int64_t)type, RVL_method_type_refined)) {
		static const enum rv_item_id refined[] = {
			RVL_def_refined_orig_me, RVL_def_refined_owner};
		err = add_members(s, def, refined, 2, out);
	}
	return err;
}

/* A call cache: its method entry, always where the Ruby has no super and
 * refinement flags, else for a super or refinement call only. Without
 * .debug_macro the flags' absence cannot be told: not decoded. */
static struct cs_error *callcache_refs(struct rv_session *s, uint64_t cc,
				       struct rv_refs *out, bool *decoded)
{
	uint64_t flags = 0;
	bool flagged = RV_HAS(s, callcache_super) &&
		       RV_HAS(s, callcache_refinement);
	if (!RV_HAS(s, callcache_cme) || !RV_HAS(s, callcache_flags) ||
	    (!flagged && !s->layout.has_macros)) {
		*decoded = false;
		return NULL;
	}
	if (!flagged)
		return add_member(s, cc, RVL_callcache_cme, out);
	struct cs_error *err =
		rv_read_member(s, cc, RVL_callcache_flags, &flags);
	if (err)
		return err;
	uint64_t marked = (uint64_t)RV_VAL(s, callcache_super) |
			  (uint64_t)RV_VAL(s, callcache_refinement);
	return flags & marked ? add_member(s, cc, RVL_callcache_cme, out)
			      : NULL;
}

/* The imemos whose members the GC marks each: by the imemo type's
 * enumerator, the member without which the type is not decoded, and the
 * members marked (a cref's class is klass before 3.0, klass_or_self
 * after: the one the Ruby has). A MEMO's u3 is add_maybe's. */
#define MAX_MARKED 4
static const struct marked_members {
	enum rv_item_id type, required;
	enum rv_item_id members[MAX_MARKED];
	size_t n;
} marked[] = {
	{RVL_imemo_cref,
	 RVL_cref_next,
	 {RVL_cref_klass_or_self, RVL_cref_klass, RVL_cref_next,
	  RVL_cref_refinements},
	 4},
	{RVL_imemo_svar,
	 RVL_svar_cref_or_me,
	 {RVL_svar_cref_or_me, RVL_svar_lastline, RVL_svar_backref,
	  RVL_svar_others},
	 4},
	{RVL_imemo_throw_data, RVL_throw_data_obj, {RVL_throw_data_obj}, 1},
	{RVL_imemo_constcache, RVL_constcache_value, {RVL_constcache_value}, 1},
	{RVL_imemo_cvar_entry,
	 RVL_cvar_entry_class,
	 {RVL_cvar_entry_class, RVL_cvar_entry_cref},
	 2},
	{RVL_imemo_memo, RVL_memo_u3, {RVL_memo_v1, RVL_memo_v2}, 2},
};

struct cs_error *rv_imemo_refs(struct rv_session *s, uint64_t obj,
			       struct rv_refs *out, bool *decoded)
{
	int64_t t = -1;
	bool known = true;
	struct cs_error *err = rv_imemo_type(s, obj, &t);
	*decoded = true;
	if (err)
		return err;
	if (enumerator_is(s, t, RVL_imemo_ment))
		return ment_refs(s, obj, out, decoded);
	if (enumerator_is(s, t, RVL_imemo_callcache))
		return callcache_refs(s, obj, out, decoded);
	if (enumerator_is(s, t, RVL_imemo_ifunc) && RV_HAS(s, ifunc_data)) {
		err = add_maybe(s, obj, RVL_ifunc_data, out, &known);
		*decoded = known;
		return err;
	}
	for (size_t i = 0; i < sizeof(marked) / sizeof(marked[0]); i++) {
		const struct marked_members *m = &marked[i];
		if (!enumerator_is(s, t, m->type) ||
		    s->layout.items[m->required].source == RV_MISSING)
			continue;
		err = add_members(s, obj, m->members, m->n, out);
		if (!err && m->type == RVL_imemo_memo)
			err = add_maybe(s, obj, RVL_memo_u3, out, &known);
		*decoded = known;
		return err;
	}
	*decoded = false;
	return NULL;
}
