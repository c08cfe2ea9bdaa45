/* What one heap object refers to, as gc_mark_children marks it, for the
 * types the model can decode: a T_OBJECT's ivars, a class's or module's
 * constants and ivars, an Array's elements (a shared Array's as the
 * Array shows them, not its hidden root), a Hash's keys, values and
 * default, a Struct's members, a Proc's self and environment, an
 * environment's locals and outer one, a fields object's owner and
 * fields; another imemo's by its type (heap_refs_imemo.c), a T_DATA's
 * whose type marks declaratively (heap_refs_data.c). What else an object marks (its class, a class's
 * method table and superclass, a T_DATA's C mark function, an iseq) is
 * not followed: a path found is real, and one through an object of
 * another type is not looked for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap_refs.h"
#include "session.h"

/* The most ivars, elements, entries or members taken from one object. */
#define MAX_REFS_PER_OBJECT 1048576

bool rv_refs_add(struct rv_session *s, struct rv_refs *out, uint64_t v,
		 enum rv_ref_kind kind, uint64_t index)
{
	if (!v || rv_special_const(s, v))
		return true;
	if (out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 64;
		struct rv_ref *m = realloc(out->items, cap * sizeof(*m));
		if (!m)
			return false;
		out->items = m;
		out->cap = cap;
	}
	out->items[out->n++] = (struct rv_ref){v, kind, index};
	return true;
}

/* count VALUEs at ptr, in one read. */
static struct cs_error *add_values(struct rv_session *s, struct rv_refs *out,
				   uint64_t ptr, uint64_t count,
				   enum rv_ref_kind kind)
{
	if (!count)
		return NULL;
	if (count > MAX_REFS_PER_OBJECT)
		return cs_error_create(CS_ERR_CORRUPT,
				       "%llu elements at 0x%llx",
				       (unsigned long long)count,
				       (unsigned long long)ptr);
	uint64_t *vals = malloc(count * sizeof(*vals));
	if (!vals)
		return &cs_error_nomem;
	struct cs_error *err = rv_read(s, ptr, vals, count * sizeof(*vals));
	for (uint64_t i = 0; !err && i < count; i++)
		if (!rv_refs_add(s, out, vals[i], kind, i))
			err = &cs_error_nomem;
	free(vals);
	return err;
}

/* An object's (or a class's) ivars: the first call counts them, the
 * second takes them all. */
static struct cs_error *add_ivars(struct rv_session *s, struct rv_refs *out,
				  uint64_t obj, uint64_t flags, bool klass)
{
	uint64_t ids[32], vals[32], total = 0;
	size_t n = 0;
	struct cs_error *err =
		klass ? rv_class_ivars(s, obj, ids, vals, 32, &n, &total)
		      : rv_object_ivars(s, obj, flags, ids, vals, 32, &n,
					&total);
	uint64_t *v = vals, *heap = NULL, *heap_ids = NULL;
	if (!err && total > n) {
		heap = malloc(total * sizeof(*heap));
		heap_ids = malloc(total * sizeof(*heap_ids));
		if (!heap || !heap_ids)
			err = &cs_error_nomem;
		else if (klass)
			err = rv_class_ivars(s, obj, heap_ids, heap, total, &n,
					     &total);
		else
			err = rv_object_ivars(s, obj, flags, heap_ids, heap,
					      total, &n, &total);
		v = heap;
	}
	for (size_t i = 0; !err && i < n; i++)
		if (!rv_refs_add(s, out, v[i], RV_REF_IVAR, i))
			err = &cs_error_nomem;
	free(heap);
	free(heap_ids);
	return err;
}

static struct cs_error *add_constant(struct rv_session *s, uint64_t serial,
				     uint64_t entry, void *ctx)
{
	uint64_t value = 0;
	struct cs_error *err =
		rv_read_member(s, entry, RVL_const_entry_value, &value);
	if (err)
		return err;
	return rv_refs_add(s, ctx, value, RV_REF_CONSTANT, serial)
		       ? NULL
		       : &cs_error_nomem;
}

static struct cs_error *class_refs(struct rv_session *s, uint64_t klass,
				   struct rv_refs *out)
{
	uint64_t ext = 0, tbl = 0, main = rv_main_box_classext(s, klass);
	uint64_t main_tbl = 0;
	struct cs_error *err = rv_classext(s, klass, &ext);
	if (!err && !RV_HAS(s, classext_const_tbl))
		err = rv_missing(RVL_classext_const_tbl);
	/* the main box's constants first (a program's own), then the
	 * class's prime ones */
	if (!err && main &&
	    !(err = rv_read_member(s, main, RVL_classext_const_tbl,
				   &main_tbl)) &&
	    main_tbl)
		err = rv_id_table_each(s, main_tbl, add_constant, out);
	if (!err)
		err = rv_read_member(s, ext, RVL_classext_const_tbl, &tbl);
	if (!err && tbl && tbl != main_tbl)
		err = rv_id_table_each(s, tbl, add_constant, out);
	if (!err)
		err = add_ivars(s, out, klass, 0, true);
	return err;
}

/* A Hash's entries: keys, then values, each by the entry's index. */
static struct cs_error *hash_refs(struct rv_session *s, uint64_t h,
				  uint64_t flags, struct rv_refs *out)
{
	if (!rv_hash_layout_known(s))
		return rv_missing(RVL_rhash_st_table_flag);
	uint64_t size = 0, ifnone = 0;
	size_t n = 0;
	struct cs_error *err =
		rv_hash_entries(s, h, flags, NULL, NULL, 0, &n, &size);
	if (err)
		return err;
	if (size > RV_MAX_ST_ENTRIES)
		return cs_error_create(CS_ERR_CORRUPT,
				       "Hash 0x%llx has %llu entries",
				       (unsigned long long)h,
				       (unsigned long long)size);
	uint64_t *keys = malloc((size + 1) * sizeof(*keys));
	uint64_t *vals = malloc((size + 1) * sizeof(*vals));
	if (!keys || !vals)
		err = &cs_error_nomem;
	else
		err = rv_hash_entries(s, h, flags, keys, vals, size, &n, &size);
	for (size_t i = 0; !err && i < n; i++)
		if (!rv_refs_add(s, out, keys[i], RV_REF_HASH_KEY, i) ||
		    !rv_refs_add(s, out, vals[i], RV_REF_HASH_VALUE, i))
			err = &cs_error_nomem;
	free(keys);
	free(vals);
	if (!err && RV_HAS(s, rhash_ifnone) &&
	    !(err = rv_read_member(s, h, RVL_rhash_ifnone, &ifnone)) &&
	    !rv_refs_add(s, out, ifnone, RV_REF_IFNONE, 0))
		err = &cs_error_nomem;
	return err;
}

/* The address of the Proc's rb_data_type_t, 0 when this Ruby has none. */
static uint64_t proc_type(struct rv_session *s)
{
	if (RV_HAS(s, ruby_proc_data_type))
		return s->load_bias + (uint64_t)RV_VAL(s, ruby_proc_data_type);
	if (RV_HAS(s, proc_data_type))
		return s->load_bias + (uint64_t)RV_VAL(s, proc_data_type);
	return 0;
}

static bool proc_layout(struct rv_session *s)
{
	return proc_type(s) && RV_HAS(s, typeddata_type) &&
	       RV_HAS(s, proc_block_self) && RV_HAS(s, proc_block_ep) &&
	       RV_HAS(s, proc_block_type) && RV_HAS(s, block_type_iseq) &&
	       RV_HAS(s, env_index_env);
}

/* A Proc of a Ruby block: its self and its environment, the escaped env
 * of its ep (what rb_vm_block_mark marks). *decoded false for another
 * T_DATA, or a Proc of a C block, a Symbol or a method. */
static struct cs_error *proc_refs(struct rv_session *s, uint64_t obj,
				  struct rv_refs *out, bool *decoded)
{
	uint64_t type = 0, data = 0, kind = 0, self = 0, ep = 0, env = 0;
	*decoded = false;
	if (!proc_layout(s) ||
	    !rv_try_member(s, obj, RVL_typeddata_type, &type) ||
	    /* the low bits, free in an aligned address, may flag
	     * "embedded" (4.0) */
	    (type & ~((uint64_t)RV_VAL(s, value_size) - 1)) != proc_type(s))
		return NULL;
	struct cs_error *err = rv_typed_data_ptr(s, obj, &data);
	if (!err)
		err = rv_read_member(s, data, RVL_proc_block_type, &kind);
	if (err || kind != (uint64_t)RV_VAL(s, block_type_iseq))
		return err;
	if ((err = rv_read_member(s, data, RVL_proc_block_self, &self)) ||
	    (err = rv_read_member(s, data, RVL_proc_block_ep, &ep)) ||
	    (err = rv_ep_slot(s, ep, RV_VAL(s, env_index_env), &env)))
		return err;
	*decoded = true;
	if (!rv_refs_add(s, out, self, RV_REF_SELF, 0) ||
	    !rv_refs_add(s, out, env, RV_REF_ENV, 0))
		return &cs_error_nomem;
	return NULL;
}

/* An environment's iseq and ep, when obj is an imemo_env. */
static bool env_of(struct rv_session *s, uint64_t obj, uint64_t *iseq,
		   uint64_t *ep)
{
	int64_t imemo = -1;
	return RV_HAS(s, imemo_env) && RV_HAS(s, env_iseq) &&
	       RV_HAS(s, env_ep) && RV_HAS(s, env_index_env) &&
	       !rv_failed(rv_imemo_type(s, obj, &imemo)) &&
	       imemo == RV_VAL(s, imemo_env) &&
	       rv_try_member(s, obj, RVL_env_iseq, iseq) &&
	       rv_try_member(s, obj, RVL_env_ep, ep) && *iseq && *ep;
}

/* An environment's locals, by its iseq's local table, and the one around
 * it (the env of its specval's ep, unless it is a method's). */
static struct cs_error *env_refs(struct rv_session *s, uint64_t iseq,
				 uint64_t ep, struct rv_refs *out)
{
	const struct rv_iseq_info *info;
	uint64_t *ids = NULL, n = 0, flags = 0, prev = 0, outer = 0;
	struct cs_error *err = rv_iseq_lookup(s, iseq, &info);
	if (!err)
		err = rv_scope_slots(s, iseq, info, ep, &ids, &n);
	for (uint64_t i = 0; !err && ids && i < n; i++)
		if (!rv_refs_add(s, out, ids[n + i], RV_REF_LOCAL, i))
			err = &cs_error_nomem;
	free(ids);
	if (!err)
		err = rv_ep_slot(s, ep, RV_VAL(s, env_index_flags), &flags);
	if (err || (flags & (uint64_t)RV_VAL(s, env_flag_local)))
		return err;
	if ((err = rv_ep_slot(s, ep, RV_VAL(s, env_index_specval), &prev)))
		return err;
	prev &= (uint64_t)RV_VAL(s, guarded_ptr_mask);
	if (prev &&
	    !(err = rv_ep_slot(s, prev, RV_VAL(s, env_index_env), &outer)) &&
	    !rv_refs_add(s, out, outer, RV_REF_OUTER, 0))
		err = &cs_error_nomem;
	return err;
}

/* Whether obj is an imemo_fields (4.0+), whose fields are laid out as a
 * T_OBJECT's by its own shape. */
static bool fields_object(struct rv_session *s, uint64_t obj)
{
	int64_t imemo = -1;
	return RV_HAS(s, imemo_fields) && RV_HAS(s, basic_klass) &&
	       !rv_failed(rv_imemo_type(s, obj, &imemo)) &&
	       imemo == RV_VAL(s, imemo_fields);
}

/* A fields object's owner, which the GC marks in its RBasic klass, and
 * its fields, named as the owner's ivars. One of too complex a shape,
 * whose fields are in a hash table, is not decoded. */
static struct cs_error *fields_refs(struct rv_session *s, uint64_t fields,
				    uint64_t flags, struct rv_refs *out,
				    bool *decoded)
{
	uint64_t owner = 0;
	bool complex = false;
	struct cs_error *err = rv_shape_too_complex(s, fields, flags, &complex);
	if (err || complex) {
		*decoded = false;
		return err;
	}
	err = rv_read_member(s, fields, RVL_basic_klass, &owner);
	if (!err && !rv_refs_add(s, out, owner, RV_REF_FIELD, RVL_basic_klass))
		err = &cs_error_nomem;
	if (!err)
		err = add_ivars(s, out, fields, flags, false);
	return err;
}

struct cs_error *rv_object_refs(struct rv_session *s, uint64_t obj,
				uint64_t flags, struct rv_refs *out,
				bool *decoded)
{
	uint64_t type = flags & (uint64_t)RV_VAL(s, t_mask), ptr = 0, len = 0;
	struct cs_error *err = NULL;
	*decoded = true;
	if (type == (uint64_t)RV_VAL(s, t_object))
		err = add_ivars(s, out, obj, flags, false);
	else if (type == (uint64_t)RV_VAL(s, t_class) ||
		 type == (uint64_t)RV_VAL(s, t_module))
		err = class_refs(s, obj, out);
	else if (type == (uint64_t)RV_VAL(s, t_array)) {
		if (!(err = rv_array_span(s, obj, &ptr, &len)))
			err = add_values(s, out, ptr, len, RV_REF_ELEMENT);
	} else if (type == (uint64_t)RV_VAL(s, t_hash))
		err = hash_refs(s, obj, flags, out);
	else if (RV_HAS(s, t_struct) && type == (uint64_t)RV_VAL(s, t_struct)) {
		if (!(err = rv_struct_fields(s, obj, flags, &ptr, &len)))
			err = add_values(s, out, ptr, len, RV_REF_MEMBER);
	} else if (RV_HAS(s, t_data) && type == (uint64_t)RV_VAL(s, t_data)) {
		err = proc_refs(s, obj, out, decoded);
		if (!err && !*decoded)
			err = rv_decl_marked_refs(s, obj, flags, out, decoded);
	} else if (RV_HAS(s, t_imemo) && type == (uint64_t)RV_VAL(s, t_imemo)) {
		uint64_t iseq = 0, ep = 0;
		if (env_of(s, obj, &iseq, &ep))
			err = env_refs(s, iseq, ep, out);
		else if (fields_object(s, obj))
			err = fields_refs(s, obj, flags, out, decoded);
		else
			err = rv_imemo_refs(s, obj, out, decoded);
	} else
		*decoded = false;
	return err;
}

void rv_refs_free(struct rv_refs *r)
{
	free(r->items);
	memset(r, 0, sizeof(*r));
}

/* The name of the ivar at index of obj (a class's when klass). */
static struct cs_error *ivar_name(struct rv_session *s, uint64_t obj,
				  uint64_t flags, bool klass, uint64_t index,
				  char **ret)
{
	uint64_t total = 0;
	size_t n = 0;
	if (index >= MAX_REFS_PER_OBJECT)
		return cs_error_create(CS_ERR_CORRUPT, "ivar %llu",
				       (unsigned long long)index);
	uint64_t *ids = malloc((index + 1) * sizeof(*ids));
	uint64_t *vals = malloc((index + 1) * sizeof(*vals));
	struct cs_error *err = NULL;
	if (!ids || !vals)
		err = &cs_error_nomem;
	else if (klass)
		err = rv_class_ivars(s, obj, ids, vals, index + 1, &n, &total);
	else
		err = rv_object_ivars(s, obj, flags, ids, vals, index + 1, &n,
				      &total);
	if (!err && n <= index)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "ivar %llu of 0x%llx is gone",
				      (unsigned long long)index,
				      (unsigned long long)obj);
	if (!err)
		err = rv_id_name(s, ids[index], ret);
	free(ids);
	free(vals);
	return err;
}

/* The name of an environment's local at index. */
static struct cs_error *local_name(struct rv_session *s, uint64_t env,
				   uint64_t index, char **ret)
{
	uint64_t iseq = 0, ep = 0, *ids = NULL, n = 0;
	const struct rv_iseq_info *info;
	if (!env_of(s, env, &iseq, &ep))
		return cs_error_create(CS_ERR_CORRUPT,
				       "0x%llx is no environment",
				       (unsigned long long)env);
	struct cs_error *err = rv_iseq_lookup(s, iseq, &info);
	if (!err)
		err = rv_scope_slots(s, iseq, info, ep, &ids, &n);
	if (!err && ids && index < n)
		err = rv_id_name(s, ids[index], ret);
	else if (!err)
		err = cs_error_create(
			CS_ERR_CORRUPT,
			"local %llu of environment 0x%llx is gone",
			(unsigned long long)index, (unsigned long long)env);
	free(ids);
	return err;
}

/* The key of a Hash's entry index, shown. */
static struct cs_error *entry_key(struct rv_session *s, uint64_t h,
				  uint64_t flags, uint64_t index, char **ret)
{
	uint64_t size = 0;
	size_t n = 0;
	if (index >= RV_MAX_ST_ENTRIES)
		return cs_error_create(CS_ERR_CORRUPT, "entry %llu",
				       (unsigned long long)index);
	uint64_t *keys = malloc((index + 1) * sizeof(*keys));
	uint64_t *vals = malloc((index + 1) * sizeof(*vals));
	struct cs_error *err = NULL;
	if (!keys || !vals)
		err = &cs_error_nomem;
	else
		err = rv_hash_entries(s, h, flags, keys, vals, index + 1, &n,
				      &size);
	if (!err && n <= index)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "entry %llu of Hash 0x%llx is gone",
				      (unsigned long long)index,
				      (unsigned long long)h);
	char *class_name = NULL;
	if (!err)
		err = rv_value_show(s, keys[index], ret, &class_name);
	free(class_name);
	free(keys);
	free(vals);
	return err;
}

const char *rv_ref_kind_name(enum rv_ref_kind kind)
{
	switch (kind) {
	case RV_REF_IVAR:
		return "ivar";
	case RV_REF_ELEMENT:
		return "element";
	case RV_REF_HASH_KEY:
		return "key";
	case RV_REF_HASH_VALUE:
		return "value";
	case RV_REF_IFNONE:
		return "default";
	case RV_REF_MEMBER:
		return "member";
	case RV_REF_CONSTANT:
		return "constant";
	case RV_REF_SELF:
		return "self";
	case RV_REF_ENV:
		return "env";
	case RV_REF_LOCAL:
		return "local";
	case RV_REF_OUTER:
		return "outer";
	case RV_REF_FIELD:
		return "field";
	case RV_REF_DATA:
		return "data";
	}
	return "?";
}

struct cs_error *rv_ref_describe(struct rv_session *s, uint64_t obj,
				 uint64_t flags, const struct rv_ref *r,
				 struct rv_ref_label *ret)
{
	uint64_t type = flags & (uint64_t)RV_VAL(s, t_mask);
	memset(ret, 0, sizeof(*ret));
	ret->kind = rv_ref_kind_name(r->kind);
	ret->index = -1;
	switch (r->kind) {
	case RV_REF_IVAR:
		/* a fields object's ivars are named as a T_OBJECT's */
		return ivar_name(s, obj, flags,
				 type == (uint64_t)RV_VAL(s, t_class) ||
					 type == (uint64_t)RV_VAL(s, t_module),
				 r->index, &ret->name);
	case RV_REF_CONSTANT:
		return rv_id_serial_name(s, r->index, &ret->name);
	case RV_REF_HASH_VALUE:
		return entry_key(s, obj, flags, r->index, &ret->key);
	case RV_REF_FIELD:
		if (r->index >= RVL_COUNT)
			return cs_error_create(CS_ERR_CORRUPT, "field %llu",
					       (unsigned long long)r->index);
		ret->name =
			strdup(rv_layout_item_path((enum rv_item_id)r->index));
		return ret->name ? NULL : &cs_error_nomem;
	case RV_REF_ELEMENT:
	case RV_REF_MEMBER:
	case RV_REF_HASH_KEY:
	case RV_REF_DATA:
		ret->index = (int64_t)r->index;
		return NULL;
	case RV_REF_LOCAL:
		return local_name(s, obj, r->index, &ret->name);
	case RV_REF_IFNONE:
	case RV_REF_SELF:
	case RV_REF_ENV:
	case RV_REF_OUTER:
		return NULL;
	}
	return NULL;
}

void rv_ref_label_free(struct rv_ref_label *l)
{
	free(l->name);
	free(l->key);
	memset(l, 0, sizeof(*l));
}
