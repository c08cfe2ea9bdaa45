/* Instance variables of a T_OBJECT, and of a class or module, found the
 * way rb_ivar_lookup finds them (layout.def says which way each Ruby
 * takes). A T_OBJECT's: up to 3.1 the ivar's index from an st_table (the
 * class's iv_index_tbl, or the heap object's shortcut to it), from 3.2
 * from the object's shape, walked up to the transition that added the
 * ivar. A class's: up to 3.1 the value itself from the classext's iv_tbl
 * (an st_table), from 3.2 an index from the class's shape, walked the
 * same way, into the classext's iv_ptr; later from the fields object the
 * classext's fields_obj names, read as a T_OBJECT. All of a T_OBJECT's
 * ivars, for its inspect, come in the order of their indexes, which is
 * the order they were set in. Every step is bounded: a corrupt object
 * gives a reason, never a runaway walk. */
#include <stdlib.h>

#include "session.h"

/* The deepest shape walked, the most singleton classes and modules
 * passed on the way to an object's class, the most ivars of an object. */
#define MAX_SHAPE_DEPTH 65536
#define MAX_IVARS 65536

struct cs_error *rv_shape_id(struct rv_session *s, uint64_t obj, uint64_t flags,
			     uint64_t *sid, unsigned *bits)
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
	struct cs_error *err = rv_shape_id(s, obj, flags, &sid, &bits);
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

/* Up to 3.1: the iv_index_tbl that indexes obj's ivars, 0 when it has
 * none, and how many ivars obj has room for. */
static struct cs_error *index_table(struct rv_session *s, uint64_t obj,
				    bool embedded, uint64_t *tbl,
				    uint64_t *count)
{
	uint64_t klass = 0, ext = 0;
	struct cs_error *err;
	*tbl = 0;
	if (!embedded) {
		if ((err = rv_read_member(s, obj, RVL_robject_iv_index_tbl,
					  tbl)))
			return err;
		return rv_read_member(s, obj, RVL_robject_numiv, count);
	}
	*count = RV_HAS(s, robject_embed_len_max)
			 ? (uint64_t)RV_VAL(s, robject_embed_len_max)
			 : RV_ITEM(s, robject_ary)->size /
				   (uint64_t)RV_VAL(s, value_size);
	if ((err = rv_read_member(s, obj, RVL_basic_klass, &klass)) ||
	    (err = real_class(s, klass, &klass)) ||
	    (err = rv_classext(s, klass, &ext)))
		return err;
	return rv_read_member(s, ext, RVL_classext_iv_index_tbl, tbl);
}

/* An ivar's index from what the iv_index_tbl holds for it: the index, or
 * (3.0, 3.1) an rb_iv_index_tbl_entry with it. */
static struct cs_error *table_record_index(struct rv_session *s, uint64_t rec,
					   uint64_t *index)
{
	if (RV_HAS(s, iv_index_entry_index))
		return rv_read_member(s, rec, RVL_iv_index_entry_index, index);
	*index = rec;
	return NULL;
}

/* Up to 3.1: the index of ivar id from the iv_index_tbl, and how many
 * ivars obj has room for. */
static struct cs_error *table_index(struct rv_session *s, uint64_t obj,
				    bool embedded, uint64_t id, uint64_t *index,
				    uint64_t *count, bool *found)
{
	uint64_t tbl = 0, rec = 0;
	struct cs_error *err;
	*found = false;
	if ((err = index_table(s, obj, embedded, &tbl, count)))
		return err;
	if (!tbl || (err = rv_st_lookup(s, tbl, id, &rec, found)) || !*found)
		return err;
	return table_record_index(s, rec, index);
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

/* A walk up the shapes of 3.2+: where they are, the bits of a shape id
 * that give its offset, and the shape reached. */
struct shape_walk {
	uint64_t list, nshapes, offset_mask, sid;
	struct shape sh;
};

static struct cs_error *shape_leaf_of(struct rv_session *s, uint64_t obj,
				      uint64_t flags, struct shape_walk *w,
				      bool *complex);

/* The shape of obj (a T_OBJECT, or a class or module: their shapes are
 * walked alike), where a walk starts; one too complex, whose ivars are in
 * a hash table, is not walked. */
static struct cs_error *shape_leaf(struct rv_session *s, uint64_t obj,
				   uint64_t flags, struct shape_walk *w)
{
	bool complex = false;
	struct cs_error *err = shape_leaf_of(s, obj, flags, w, &complex);
	if (!err && complex)
		err = cs_error_create(CS_ERR_LOOKUP,
				      "its ivars are in a hash table (too "
				      "complex a shape), not read");
	return err;
}

/* As shape_leaf; *complex when the shape is too complex (by a flag of
 * its id, 4.0+, or its type, 3.2 to 3.4). */
static struct cs_error *shape_leaf_of(struct rv_session *s, uint64_t obj,
				      uint64_t flags, struct shape_walk *w,
				      bool *complex_shape)
{
	unsigned bits = 0;
	struct cs_error *err;
	if (!RV_HAS(s, shape_size))
		return rv_missing(RVL_shape_size);
	if ((err = rv_shape_id(s, obj, flags, &w->sid, &bits)))
		return err;
	/* 4.0+: flags above the offset in the shape id, the lowest of them
	 * the lowest bit of the first enumerator above it */
	uint64_t m = 0;
	w->offset_mask = (1ULL << bits) - 1;
	if (RV_HAS(s, shape_id_heap_index_mask))
		m = (uint64_t)RV_VAL(s, shape_id_heap_index_mask);
	else if (RV_HAS(s, shape_id_capacity_mask))
		m = (uint64_t)RV_VAL(s, shape_id_capacity_mask);
	if (m)
		w->offset_mask = (m & -m) - 1;
	uint64_t complex =
		RV_HAS(s, shape_id_fl_too_complex)
			? (uint64_t)RV_VAL(s, shape_id_fl_too_complex)
		: RV_HAS(s, shape_id_fl_complex)
			? (uint64_t)RV_VAL(s, shape_id_fl_complex)
			: 0;
	*complex_shape = false;
	if (w->sid & complex) {
		*complex_shape = true;
		return NULL;
	}
	if ((err = shape_list(s, &w->list, &w->nshapes)))
		return err;
	if (w->nshapes > w->offset_mask + 1)
		w->nshapes = w->offset_mask + 1;
	if ((err = shape_read(s, w->list, w->nshapes, w->sid & w->offset_mask,
			      &w->sh)))
		return err;
	*complex_shape = RV_HAS(s, shape_obj_too_complex) &&
			 w->sh.type ==
				 (uint64_t)RV_VAL(s, shape_obj_too_complex);
	return NULL;
}

/* obj's shape walked to its leaf (*w, where a walk of its ivars starts)
 * when it is a simple one; when too complex (*complex), *table: the
 * st_table of its ivars (ID to value). */
static struct cs_error *complex_table(struct rv_session *s, uint64_t obj,
				      uint64_t flags, struct shape_walk *w,
				      bool *complex, uint64_t *table)
{
	uint64_t tbl = 0, fields = 0;
	*complex = false;
	*table = 0;
	struct cs_error *err = shape_leaf_of(s, obj, flags, w, complex);
	if (err || !*complex)
		return err;
	if (RV_HAS(s, shape_id_layout_mask)) {
		/* in the fields object, an st_table in place */
		if (!RV_HAS(s, robject_extended) ||
		    !RV_HAS(s, fields_complex_table))
			return rv_missing(RVL_fields_complex_table);
		if ((err = rv_read_member(s, obj, RVL_robject_extended,
					  &fields)))
			return err;
		if (!fields || rv_special_const(s, fields))
			return cs_error_create(CS_ERR_CORRUPT,
					       "object 0x%llx has no fields "
					       "object",
					       (unsigned long long)obj);
		tbl = fields + (uint64_t)RV_VAL(s, fields_complex_table);
	} else if ((err = rv_read_member(s, obj,
					 RV_HAS(s, robject_fields)
						 ? RVL_robject_fields
						 : RVL_robject_ivptr,
					 &tbl))) {
		return err; /* as.heap.fields (4.0), else as.heap.ivptr */
	}
	if (!tbl)
		return cs_error_create(CS_ERR_CORRUPT,
				       "object 0x%llx has no ivar table",
				       (unsigned long long)obj);
	*table = tbl;
	return NULL;
}

struct cs_error *rv_shape_too_complex(struct rv_session *s, uint64_t obj,
				      uint64_t flags, bool *complex)
{
	struct shape_walk w = {0};
	return shape_leaf_of(s, obj, flags, &w, complex);
}

struct cs_error *rv_object_complex(struct rv_session *s, uint64_t obj,
				   uint64_t flags, bool *complex,
				   uint64_t *count)
{
	struct shape_walk w = {0};
	uint64_t tbl = 0;
	*count = 0;
	struct cs_error *err = complex_table(s, obj, flags, &w, complex, &tbl);
	if (err)
		return err;
	if (!*complex) {
		*count = w.sh.next_index; /* the fields its shape gives it */
		return NULL;
	}
	if ((err = rv_read_member(s, tbl, RVL_st_num_entries, count)))
		return err;
	if (*count > MAX_IVARS)
		return cs_error_create(CS_ERR_CORRUPT,
				       "an ivar table of %llu entries",
				       (unsigned long long)*count);
	return NULL;
}

struct cs_error *rv_object_embedded(struct rv_session *s, uint64_t obj,
				    uint64_t flags, bool *embedded)
{
	if (RV_HAS(s, shape_id_layout_mask) &&
	    RV_HAS(s, shape_id_layout_robject)) {
		uint64_t sid = 0;
		unsigned bits = 0;
		struct cs_error *err = rv_shape_id(s, obj, flags, &sid, &bits);
		*embedded =
			!err &&
			(sid & (uint64_t)RV_VAL(s, shape_id_layout_mask)) ==
				(uint64_t)RV_VAL(s, shape_id_layout_robject);
		return err;
	}
	if (RV_HAS(s, robject_heap))
		*embedded = !(flags & (uint64_t)RV_VAL(s, robject_heap));
	else if (RV_HAS(s, robject_embed))
		*embedded = flags & (uint64_t)RV_VAL(s, robject_embed);
	else
		return rv_missing(RVL_robject_embed);
	return NULL;
}

/* One step up the walk; *done at the root (whose parent has all offset
 * bits set: INVALID_SHAPE_ID). */
static struct cs_error *shape_up(struct rv_session *s, struct shape_walk *w,
				 int depth, bool *done)
{
	*done = (w->sh.parent & w->offset_mask) == w->offset_mask;
	if (*done)
		return NULL;
	if (depth >= MAX_SHAPE_DEPTH)
		return cs_error_create(CS_ERR_CORRUPT,
				       "shape 0x%llx is more than %d deep",
				       (unsigned long long)w->sid,
				       MAX_SHAPE_DEPTH);
	return shape_read(s, w->list, w->nshapes, w->sh.parent & w->offset_mask,
			  &w->sh);
}

/* 3.2+: the index of ivar id from obj's shape, and how many ivars the
 * shape gives obj. */
static struct cs_error *shape_index(struct rv_session *s, uint64_t obj,
				    uint64_t flags, uint64_t id,
				    uint64_t *index, uint64_t *count,
				    bool *found)
{
	struct shape_walk w = {0};
	bool done = false;
	*found = false;
	struct cs_error *err = shape_leaf(s, obj, flags, &w);
	if (err)
		return err;
	*count = w.sh.next_index;
	for (int depth = 0;; depth++) {
		if ((w.sh.parent & w.offset_mask) == w.offset_mask)
			return NULL;
		if (w.sh.edge_name == id) {
			if (w.sh.type != (uint64_t)RV_VAL(s, shape_ivar))
				return NULL;
			if (w.sh.next_index == 0)
				return cs_error_create(CS_ERR_CORRUPT,
						       "an ivar shape without "
						       "an index");
			*index = w.sh.next_index - 1;
			*found = true;
			return NULL;
		}
		if ((err = shape_up(s, &w, depth, &done)) || done)
			return err;
	}
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

struct cs_error *rv_object_id_field(struct rv_session *s, uint64_t obj,
				    uint64_t flags, uint64_t *ret)
{
	uint64_t slots = 0;
	bool embedded = false, done = false, found = false;
	struct shape_walk w = {0};
	struct cs_error *err;
	if (!RV_HAS(s, shape_obj_id))
		return rv_missing(RVL_shape_obj_id);
	if ((err = ivar_slots(s, obj, flags, &slots, &embedded)) ||
	    (err = shape_leaf(s, obj, flags, &w)))
		return err;
	uint64_t count = w.sh.next_index;
	for (int depth = 0; !done; depth++) {
		if (w.sh.type == (uint64_t)RV_VAL(s, shape_obj_id)) {
			if (!w.sh.next_index)
				break;
			err = slot_value(s, obj, slots, w.sh.next_index - 1,
					 count, ret, &found);
			if (!err && !found)
				break;
			return err;
		}
		if ((err = shape_up(s, &w, depth, &done)))
			return err;
	}
	return cs_error_create(CS_ERR_CORRUPT,
			       "shape 0x%llx says it has an object id, which "
			       "it does not hold",
			       (unsigned long long)w.sid);
}

/* A class's ivars kept in its fields object (the classext's fields_obj),
 * which is read as a T_OBJECT is: its shape, its fields in itself or in
 * a buffer. */
struct cs_error *rv_fields_object(struct rv_session *s, uint64_t owner,
				  uint64_t fields, uint64_t *flags)
{
	uint64_t type = 0;
	int64_t imemo = 0;
	struct cs_error *err;
	if (rv_special_const(s, fields) ||
	    fields % (uint64_t)RV_VAL(s, value_size))
		return cs_error_create(CS_ERR_CORRUPT,
				       "object 0x%llx has fields object 0x%llx",
				       (unsigned long long)owner,
				       (unsigned long long)fields);
	if ((err = rv_builtin_type(s, fields, &type, flags)) ||
	    (err = rv_imemo_type(s, fields, &imemo)))
		return err;
	if ((RV_HAS(s, t_imemo) && type != (uint64_t)RV_VAL(s, t_imemo)) ||
	    (RV_HAS(s, imemo_fields) && imemo != RV_VAL(s, imemo_fields)))
		return cs_error_create(CS_ERR_CORRUPT,
				       "fields object 0x%llx of object 0x%llx "
				       "is no imemo_fields (imemo %lld)",
				       (unsigned long long)fields,
				       (unsigned long long)owner,
				       (long long)imemo);
	return NULL;
}

static struct cs_error *fields_obj_ivar(struct rv_session *s, uint64_t klass,
					uint64_t ext, uint64_t id,
					uint64_t *ret, bool *found)
{
	uint64_t fields = 0, flags = 0;
	struct cs_error *err =
		rv_read_member(s, ext, RVL_classext_fields_obj, &fields);
	if (err || !fields) /* no ivars yet */
		return err;
	if ((err = rv_fields_object(s, klass, fields, &flags)))
		return err;
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

/* The ids of an object's ivars by index (0 where none has the index), and
 * how many indexes it has. */
struct index_ids {
	uint64_t *ids;
	uint64_t count;
};

static struct cs_error *index_ids_alloc(uint64_t obj, struct index_ids *x)
{
	if (x->count > MAX_IVARS)
		return cs_error_create(CS_ERR_CORRUPT,
				       "object 0x%llx has %llu ivars",
				       (unsigned long long)obj,
				       (unsigned long long)x->count);
	x->ids = calloc(x->count ? x->count : 1, sizeof(*x->ids));
	return x->ids ? NULL : &cs_error_nomem;
}

/* 3.2+: every ivar shape from obj's up to the root names its index. */
/* The ivar names of obj's fields, from a walk w at its shape's leaf up
 * to the root. */
static struct cs_error *shape_ids_from(struct rv_session *s, uint64_t obj,
				       struct shape_walk *w,
				       struct index_ids *x)
{
	bool done = false;
	struct cs_error *err;
	x->count = w->sh.next_index;
	if ((err = index_ids_alloc(obj, x)) || !x->ids)
		return err;
	for (int depth = 0; !done; depth++) {
		if (w->sh.type == (uint64_t)RV_VAL(s, shape_ivar) &&
		    w->sh.next_index && w->sh.next_index <= x->count)
			x->ids[w->sh.next_index - 1] = w->sh.edge_name;
		if ((err = shape_up(s, w, depth, &done)))
			return err;
	}
	return NULL;
}

static struct cs_error *shape_ids(struct rv_session *s, uint64_t obj,
				  uint64_t flags, struct index_ids *x)
{
	struct shape_walk w = {0};
	struct cs_error *err = shape_leaf(s, obj, flags, &w);
	return err ? err : shape_ids_from(s, obj, &w, x);
}

static struct cs_error *table_entry_id(struct rv_session *s, uint64_t id,
				       uint64_t rec, void *ctx)
{
	struct index_ids *x = ctx;
	uint64_t index = 0;
	struct cs_error *err = table_record_index(s, rec, &index);
	/* an index past obj's: an ivar of the class set after obj was made */
	if (!err && x->ids && index < x->count)
		x->ids[index] = id;
	return err;
}

/* Up to 3.1: the iv_index_tbl names every index. */
static struct cs_error *table_ids(struct rv_session *s, uint64_t obj,
				  bool embedded, struct index_ids *x)
{
	uint64_t tbl = 0;
	struct cs_error *err = index_table(s, obj, embedded, &tbl, &x->count);
	if (err)
		return err;
	if (!tbl)
		x->count = 0;
	if ((err = index_ids_alloc(obj, x)) || !x->ids || !tbl)
		return err;
	return rv_st_each(s, tbl, table_entry_id, x);
}

/* An st_table's entries as ivars: up to 3.1 a class's iv_tbl, and a
 * T_OBJECT's of too complex a shape. */
struct table_ivars {
	uint64_t *ids, *vals;
	size_t max, *n;
	uint64_t *total;
};

static struct cs_error *table_ivar(struct rv_session *s, uint64_t id,
				   uint64_t val, void *ctx)
{
	(void)s;
	struct table_ivars *t = ctx;
	if (*t->n < t->max) {
		t->ids[*t->n] = id;
		t->vals[(*t->n)++] = val;
	}
	(*t->total)++;
	return NULL;
}

struct cs_error *rv_object_ivars(struct rv_session *s, uint64_t obj,
				 uint64_t flags, uint64_t *ids, uint64_t *vals,
				 size_t max, size_t *n, uint64_t *total)
{
	struct index_ids x = {0};
	struct shape_walk w = {0};
	uint64_t slots = 0, tbl = 0;
	bool embedded = false, complex = false, walked = false;
	*n = 0;
	*total = 0;
	/* a T_OBJECT (by the flags given, obj's own) of too complex a
	 * shape: its table's entries; of a simple one, its walk goes on
	 * below */
	if (RV_HAS(s, shape_size) && RV_HAS(s, t_mask) &&
	    (flags & (uint64_t)RV_VAL(s, t_mask)) ==
		    (uint64_t)RV_VAL(s, t_object)) {
		struct cs_error *err =
			complex_table(s, obj, flags, &w, &complex, &tbl);
		if (err)
			return err;
		if (complex) {
			struct table_ivars t = {ids, vals, max, n, total};
			return rv_st_each_max(s, tbl, MAX_IVARS, table_ivar,
					      &t);
		}
		walked = RV_HAS(s, shape_type);
	}
	struct cs_error *err = ivar_slots(s, obj, flags, &slots, &embedded);
	if (!err && walked)
		err = shape_ids_from(s, obj, &w, &x);
	else if (!err && RV_HAS(s, shape_type))
		err = shape_ids(s, obj, flags, &x);
	else if (!err && RV_HAS(s, classext_iv_index_tbl))
		err = table_ids(s, obj, embedded, &x);
	else if (!err)
		err = rv_missing(RVL_classext_iv_index_tbl);
	for (uint64_t i = 0; !err && x.ids && i < x.count; i++) {
		uint64_t v = 0;
		bool found = false;
		if (!x.ids[i] ||
		    (err = slot_value(s, obj, slots, i, x.count, &v, &found)) ||
		    !found)
			continue;
		if (*n < max) {
			ids[*n] = x.ids[i];
			vals[*n] = v;
			(*n)++;
		}
		(*total)++;
	}
	free(x.ids);
	return err;
}

struct cs_error *rv_class_ivars(struct rv_session *s, uint64_t klass,
				uint64_t *ids, uint64_t *vals, size_t max,
				size_t *n, uint64_t *total)
{
	uint64_t ext = 0, tbl = 0, flags = 0, ptr = 0, type = 0;
	struct index_ids x = {0};
	struct cs_error *err;
	*n = 0;
	*total = 0;
	if ((err = rv_classext(s, klass, &ext)))
		return err;
	if (RV_HAS(s, classext_fields_obj)) {
		uint64_t fields = 0;
		if ((err = rv_read_member(s, ext, RVL_classext_fields_obj,
					  &fields)) ||
		    !fields)
			return err;
		if ((err = rv_builtin_type(s, fields, &type, &flags)))
			return err;
		return rv_object_ivars(s, fields, flags, ids, vals, max, n,
				       total);
	}
	if (RV_HAS(s, classext_iv_tbl)) {
		if ((err = rv_read_member(s, ext, RVL_classext_iv_tbl, &tbl)) ||
		    !tbl)
			return err;
		struct table_ivars t = {ids, vals, max, n, total};
		return rv_st_each(s, tbl, table_ivar, &t);
	}
	if (!RV_HAS(s, shape_type) || !RV_HAS(s, classext_iv_ptr))
		return rv_missing(RVL_classext_iv_ptr);
	if ((err = rv_read_member(s, klass, RVL_basic_flags, &flags)) ||
	    (err = shape_ids(s, klass, flags, &x))) {
		free(x.ids);
		return err;
	}
	if (x.count &&
	    !(err = rv_read_member(s, ext, RVL_classext_iv_ptr, &ptr)) && !ptr)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "class 0x%llx has ivars but no iv_ptr",
				      (unsigned long long)klass);
	for (uint64_t i = 0; !err && x.ids && i < x.count; i++) {
		uint64_t v = 0;
		bool found = false;
		if (!x.ids[i] ||
		    (err = slot_value(s, klass, ptr, i, x.count, &v, &found)) ||
		    !found)
			continue;
		if (*n < max) {
			ids[*n] = x.ids[i];
			vals[(*n)++] = v;
		}
		(*total)++;
	}
	free(x.ids);
	return err;
}
