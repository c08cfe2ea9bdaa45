/* Instance variables of a T_OBJECT, and of a class or module, found the
 * way rb_ivar_lookup finds them (layout.def says which way each Ruby
 * takes). A T_OBJECT's: up to 3.1 the ivar's index from an st_table (the
 * class's iv_index_tbl, or the heap object's shortcut to it), from 3.2
 * from the object's shape, walked up to the transition that added the
 * ivar. A class's: up to 3.1 the value itself from the classext's iv_tbl
 * (an st_table), from 3.2 an index from the class's shape, walked the
 * same way, into the classext's iv_ptr; later from the fields object the
 * classext's fields_obj names, read as a T_OBJECT. Every step is
 * bounded: a corrupt object gives a reason, never a runaway walk. */
#include "session.h"

/* The deepest shape walked, the most singleton classes and modules
 * passed on the way to an object's class, the most ivars of an object. */
#define MAX_SHAPE_DEPTH 65536
#define MAX_IVARS 65536

/* The shape id of obj (3.2+) and its width in bits: RBasic.shape_id, or
 * the top bits of the flags. */
static struct cs_error *shape_id_of(struct rv_session *s, uint64_t obj,
				    uint64_t flags, uint64_t *sid,
				    unsigned *bits)
{
	enum rv_item_id parent = RV_HAS(s, shape_parent_offset)
					 ? RVL_shape_parent_offset
					 : RVL_shape_parent_id;
	if (s->layout.items[parent].source == RV_MISSING)
		return rv_missing(RVL_shape_parent_id);
	*bits = 8 * s->layout.items[parent].size; /* shape_id_t */
	unsigned value_bits = 8 * (unsigned)RV_VAL(s, value_size);
	if (*bits == 0 || *bits >= 64 || *bits > value_bits)
		return cs_error_create(CS_ERR_LOOKUP, "shape ids of %u bits",
				       *bits);
	if (RV_HAS(s, basic_shape_id)) {
		struct cs_error *err =
			rv_read_member(s, obj, RVL_basic_shape_id, sid);
		if (err)
			return err;
	} else {
		*sid = flags >> (value_bits - *bits);
	}
	*sid &= (1ULL << *bits) - 1;
	return NULL;
}

/* Where the shape id's layout bits put obj's fields: in itself
 * (*embedded), or in the fields object as.extended points to. */
static struct cs_error *layout_slots(struct rv_session *s, uint64_t obj,
				     uint64_t flags, uint64_t *ret,
				     bool *embedded)
{
	uint64_t sid = 0, fields = 0;
	unsigned bits;
	struct cs_error *err = shape_id_of(s, obj, flags, &sid, &bits);
	if (err)
		return err;
	uint64_t layout = sid & (uint64_t)RV_VAL(s, shape_id_layout_mask);
	*embedded = RV_HAS(s, shape_id_layout_robject) &&
		    layout == (uint64_t)RV_VAL(s, shape_id_layout_robject);
	if (*embedded) {
		*ret = obj + (uint64_t)RV_VAL(s, robject_ary);
		return NULL;
	}
	if (!RV_HAS(s, shape_id_layout_extended) ||
	    layout != (uint64_t)RV_VAL(s, shape_id_layout_extended))
		return cs_error_create(CS_ERR_LOOKUP,
				       "its fields are kept apart from the "
				       "object (layout 0x%llx), not read",
				       (unsigned long long)layout);
	if (!RV_HAS(s, robject_extended) || !RV_HAS(s, fields_embed))
		return rv_missing(RVL_fields_embed);
	if ((err = rv_read_member(s, obj, RVL_robject_extended, &fields)))
		return err;
	if (!fields || rv_special_const(s, fields))
		return cs_error_create(CS_ERR_CORRUPT,
				       "object 0x%llx has no fields object",
				       (unsigned long long)obj);
	*ret = fields + (uint64_t)RV_VAL(s, fields_embed);
	return NULL;
}

/* Where obj keeps its ivars: in itself (*embedded) or in a buffer. */
static struct cs_error *ivar_slots(struct rv_session *s, uint64_t obj,
				   uint64_t flags, uint64_t *ret,
				   bool *embedded)
{
	if (RV_HAS(s, shape_id_layout_mask) && RV_HAS(s, robject_ary))
		return layout_slots(s, obj, flags, ret, embedded);
	if (RV_HAS(s, robject_heap))
		*embedded = !(flags & (uint64_t)RV_VAL(s, robject_heap));
	else if (RV_HAS(s, robject_embed))
		*embedded = flags & (uint64_t)RV_VAL(s, robject_embed);
	else
		return rv_missing(RVL_robject_embed);
	if (!*embedded)
		return rv_read_member(s, obj,
				      RV_HAS(s, robject_fields)
					      ? RVL_robject_fields
					      : RVL_robject_ivptr,
				      ret);
	if (!RV_HAS(s, robject_ary))
		return rv_missing(RVL_robject_ary);
	*ret = obj + (uint64_t)RV_VAL(s, robject_ary);
	return NULL;
}

/* rb_obj_class: klass past singleton classes and included modules. */
static struct cs_error *real_class(struct rv_session *s, uint64_t klass,
				   uint64_t *ret)
{
	struct cs_error *err = rv_real_class(s, klass, true, ret);
	if (!err && !*ret)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "no class above a singleton class or "
				      "module");
	return err;
}

/* Up to 3.1: the index of ivar id from the iv_index_tbl, and how many
 * ivars obj has room for. */
static struct cs_error *table_index(struct rv_session *s, uint64_t obj,
				    bool embedded, uint64_t id, uint64_t *index,
				    uint64_t *count, bool *found)
{
	uint64_t tbl = 0, klass = 0, ext = 0, rec = 0;
	struct cs_error *err;
	*found = false;
	if (!embedded) {
		if ((err = rv_read_member(s, obj, RVL_robject_iv_index_tbl,
					  &tbl)) ||
		    (err = rv_read_member(s, obj, RVL_robject_numiv, count)))
			return err;
	} else {
		*count = RV_HAS(s, robject_embed_len_max)
				 ? (uint64_t)RV_VAL(s, robject_embed_len_max)
				 : RV_ITEM(s, robject_ary)->size /
					   (uint64_t)RV_VAL(s, value_size);
		if ((err = rv_read_member(s, obj, RVL_basic_klass, &klass)) ||
		    (err = real_class(s, klass, &klass)) ||
		    (err = rv_classext(s, klass, &ext)) ||
		    (err = rv_read_member(s, ext, RVL_classext_iv_index_tbl,
					  &tbl)))
			return err;
	}
	if (!tbl || (err = rv_st_lookup(s, tbl, id, &rec, found)) || !*found)
		return err;
	/* 3.0, 3.1: the table holds an rb_iv_index_tbl_entry */
	if (RV_HAS(s, iv_index_entry_index))
		return rv_read_member(s, rec, RVL_iv_index_entry_index, index);
	*index = rec;
	return NULL;
}

/* The shapes of 3.2+: the list and how many it holds. */
static struct cs_error *shape_list(struct rv_session *s, uint64_t *list,
				   uint64_t *count)
{
	uint64_t tree = 0, vm = 0;
	struct cs_error *err;
	if (RV_HAS(s, shape_tree)) {
		tree = s->load_bias + (uint64_t)RV_VAL(s, shape_tree);
	} else if (RV_HAS(s, shape_tree_ptr)) {
		if ((err = rv_read_u64(
			     s,
			     s->load_bias + (uint64_t)RV_VAL(s, shape_tree_ptr),
			     &tree)))
			return err;
	} else {
		if (!RV_HAS(s, vm_shape_list))
			return rv_missing(RVL_shape_tree_ptr);
		if ((err = rv_read_u64(
			     s, s->load_bias + (uint64_t)RV_VAL(s, vm_ptr),
			     &vm)) ||
		    (err = rv_read_member(s, vm, RVL_vm_shape_list, list)))
			return err;
		return rv_read_member(s, vm, RVL_vm_next_shape_id, count);
	}
	if ((err = rv_read_member(s, tree, RVL_shape_tree_list, list)))
		return err;
	/* A tree that keeps no count (4.1-dev): the caller bounds ids by the
	 * offset bits of a shape id, the size of its shape buffer. */
	if (!RV_HAS(s, shape_tree_next_id)) {
		*count = UINT64_MAX;
		return NULL;
	}
	return rv_read_member(s, tree, RVL_shape_tree_next_id, count);
}

struct shape {
	uint64_t edge_name, parent, type, next_index;
};

static struct cs_error *shape_read(struct rv_session *s, uint64_t list,
				   uint64_t count, uint64_t sid,
				   struct shape *ret)
{
	if (sid >= count)
		return cs_error_create(CS_ERR_CORRUPT,
				       "shape %llu past the %llu shapes",
				       (unsigned long long)sid,
				       (unsigned long long)count);
	uint64_t at = list + sid * (uint64_t)RV_VAL(s, shape_size);
	struct cs_error *err;
	if ((err = rv_read_member(s, at, RVL_shape_edge_name,
				  &ret->edge_name)) ||
	    (err = rv_read_member(s, at,
				  RV_HAS(s, shape_parent_offset)
					  ? RVL_shape_parent_offset
					  : RVL_shape_parent_id,
				  &ret->parent)) ||
	    (err = rv_read_member(s, at, RVL_shape_type, &ret->type)))
		return err;
	return rv_read_member(s, at,
			      RV_HAS(s, shape_next_field_index)
				      ? RVL_shape_next_field_index
				      : RVL_shape_next_iv_index,
			      &ret->next_index);
}

/* 3.2+: the index of ivar id from obj's shape, and how many ivars the
 * shape gives obj (a T_OBJECT, or a class or module: their shapes are
 * walked alike). */
static struct cs_error *shape_index(struct rv_session *s, uint64_t obj,
				    uint64_t flags, uint64_t id,
				    uint64_t *index, uint64_t *count,
				    bool *found)
{
	uint64_t list = 0, nshapes = 0, sid = 0;
	unsigned bits = 0;
	struct cs_error *err;
	*found = false;
	if (!RV_HAS(s, shape_size))
		return rv_missing(RVL_shape_size);
	if ((err = shape_id_of(s, obj, flags, &sid, &bits)))
		return err;
	/* 4.0+: flags above the offset in the shape id, the lowest of them
	 * the lowest bit of the first enumerator above it */
	uint64_t offset_mask = (1ULL << bits) - 1, m = 0;
	if (RV_HAS(s, shape_id_heap_index_mask))
		m = (uint64_t)RV_VAL(s, shape_id_heap_index_mask);
	else if (RV_HAS(s, shape_id_capacity_mask))
		m = (uint64_t)RV_VAL(s, shape_id_capacity_mask);
	if (m)
		offset_mask = (m & -m) - 1;
	/* The root's parent: all offset bits set (INVALID_SHAPE_ID). */
	uint64_t invalid = offset_mask;
	uint64_t complex =
		RV_HAS(s, shape_id_fl_too_complex)
			? (uint64_t)RV_VAL(s, shape_id_fl_too_complex)
		: RV_HAS(s, shape_id_fl_complex)
			? (uint64_t)RV_VAL(s, shape_id_fl_complex)
			: 0;
	if (sid & complex)
		return cs_error_create(CS_ERR_LOOKUP,
				       "its ivars are in a hash table (too "
				       "complex a shape), not read");
	if ((err = shape_list(s, &list, &nshapes)))
		return err;
	if (nshapes > offset_mask + 1)
		nshapes = offset_mask + 1;
	struct shape sh = {0};
	if ((err = shape_read(s, list, nshapes, sid & offset_mask, &sh)))
		return err;
	if (RV_HAS(s, shape_obj_too_complex) &&
	    sh.type == (uint64_t)RV_VAL(s, shape_obj_too_complex))
		return cs_error_create(CS_ERR_LOOKUP,
				       "its ivars are in a hash table (too "
				       "complex a shape), not read");
	*count = sh.next_index;
	for (int depth = 0; (sh.parent & offset_mask) != invalid; depth++) {
		if (depth >= MAX_SHAPE_DEPTH)
			return cs_error_create(CS_ERR_CORRUPT,
					       "shape 0x%llx is more than %d "
					       "deep",
					       (unsigned long long)sid,
					       MAX_SHAPE_DEPTH);
		if (sh.edge_name == id) {
			if (sh.type != (uint64_t)RV_VAL(s, shape_ivar))
				return NULL;
			if (sh.next_index == 0)
				return cs_error_create(CS_ERR_CORRUPT,
						       "an ivar shape without "
						       "an index");
			*index = sh.next_index - 1;
			*found = true;
			return NULL;
		}
		if ((err = shape_read(s, list, nshapes, sh.parent & offset_mask,
				      &sh)))
			return err;
	}
	return NULL;
}

/* The ivar at index of the count obj has, in the buffer at slots. */
static struct cs_error *slot_value(struct rv_session *s, uint64_t obj,
				   uint64_t slots, uint64_t index,
				   uint64_t count, uint64_t *ret, bool *found)
{
	struct cs_error *err;
	*found = false;
	if (count > MAX_IVARS || index >= count)
		return cs_error_create(CS_ERR_CORRUPT,
				       "ivar index %llu of 0x%llx, which has "
				       "%llu",
				       (unsigned long long)index,
				       (unsigned long long)obj,
				       (unsigned long long)count);
	if ((err = rv_read_u64(
		     s, slots + index * (uint64_t)RV_VAL(s, value_size), ret)))
		return err;
	*found = *ret != (uint64_t)RV_VAL(s, qundef);
	return NULL;
}

struct cs_error *rv_object_ivar(struct rv_session *s, uint64_t obj,
				uint64_t flags, uint64_t id, uint64_t *ret,
				bool *found)
{
	uint64_t slots = 0, index = 0, count = 0;
	bool embedded = false;
	struct cs_error *err;
	*found = false;
	if ((err = ivar_slots(s, obj, flags, &slots, &embedded)))
		return err;
	if (RV_HAS(s, shape_type))
		err = shape_index(s, obj, flags, id, &index, &count, found);
	else if (RV_HAS(s, classext_iv_index_tbl))
		err = table_index(s, obj, embedded, id, &index, &count, found);
	else
		return rv_missing(RVL_classext_iv_index_tbl);
	if (err || !*found)
		return err;
	return slot_value(s, obj, slots, index, count, ret, found);
}

/* A class's ivars kept in its fields object (the classext's fields_obj),
 * which is read as a T_OBJECT is: its shape, its fields in itself or in
 * a buffer. */
static struct cs_error *fields_obj_ivar(struct rv_session *s, uint64_t klass,
					uint64_t ext, uint64_t id,
					uint64_t *ret, bool *found)
{
	uint64_t fields = 0, type = 0, flags = 0;
	int64_t imemo = 0;
	struct cs_error *err =
		rv_read_member(s, ext, RVL_classext_fields_obj, &fields);
	if (err || !fields) /* no ivars yet */
		return err;
	if (rv_special_const(s, fields) ||
	    fields % (uint64_t)RV_VAL(s, value_size))
		return cs_error_create(CS_ERR_CORRUPT,
				       "class 0x%llx has fields object 0x%llx",
				       (unsigned long long)klass,
				       (unsigned long long)fields);
	if ((err = rv_builtin_type(s, fields, &type, &flags)) ||
	    (err = rv_imemo_type(s, fields, &imemo)))
		return err;
	if (RV_HAS(s, imemo_fields) && imemo != RV_VAL(s, imemo_fields))
		return cs_error_create(CS_ERR_CORRUPT,
				       "fields object 0x%llx of class 0x%llx "
				       "is imemo %lld",
				       (unsigned long long)fields,
				       (unsigned long long)klass,
				       (long long)imemo);
	err = rv_object_ivar(s, fields, flags, id, ret, found);
	if (!*found)
		*ret = 0;
	return err;
}

struct cs_error *rv_class_ivar(struct rv_session *s, uint64_t klass,
			       uint64_t id, uint64_t *ret, bool *found)
{
	uint64_t ext = 0, tbl = 0, flags = 0, index = 0, count = 0, ptr = 0;
	struct cs_error *err;
	*ret = 0;
	*found = false;
	if ((err = rv_classext(s, klass, &ext)))
		return err;
	if (RV_HAS(s, classext_fields_obj))
		return fields_obj_ivar(s, klass, ext, id, ret, found);
	if (RV_HAS(s, classext_iv_tbl)) {
		if ((err = rv_read_member(s, ext, RVL_classext_iv_tbl, &tbl)) ||
		    !tbl)
			return err;
		return rv_st_lookup(s, tbl, id, ret, found);
	}
	if (!RV_HAS(s, shape_type) || !RV_HAS(s, classext_iv_ptr))
		return rv_missing(RVL_classext_iv_ptr);
	if ((err = rv_read_member(s, klass, RVL_basic_flags, &flags)) ||
	    (err = shape_index(s, klass, flags, id, &index, &count, found)) ||
	    !*found)
		return err;
	if ((err = rv_read_member(s, ext, RVL_classext_iv_ptr, &ptr)))
		return err;
	if (!ptr) {
		*found = false;
		return cs_error_create(CS_ERR_CORRUPT,
				       "class 0x%llx has ivars but no "
				       "iv_ptr",
				       (unsigned long long)klass);
	}
	err = slot_value(s, klass, ptr, index, count, ret, found);
	if (!*found)
		*ret = 0;
	return err;
}
