/* What a typed T_DATA marks when its type marks declaratively (3.3+: the
 * type's flags have RUBY_TYPED_DECL_MARKING): its dmark is then no
 * function but a list of offsets into the data, each of a VALUE the GC
 * marks, ended by RUBY_REF_END. Any other T_DATA's mark function is C
 * code, which is not followed. */
#include <stdlib.h>

#include "heap_refs.h"
#include "session.h"

/* The longest offset list read; CRuby's lists are a dozen long. */
#define MAX_DECL_REFS 256

/* The address of obj's rb_data_type_t, 0 when obj is an untyped T_DATA.
 * Where RTypedData has typed_flag it is 1 (the embedded bit aside) for a
 * typed object; 4.0+ flags the object itself. */
static uint64_t data_type_of(struct rv_session *s, uint64_t obj, uint64_t flags)
{
	uint64_t type = 0, typed = 1;
	if (!RV_HAS(s, typeddata_type))
		return 0;
	if (RV_HAS(s, typed_fl_is_typed_data) &&
	    !(flags & (uint64_t)RV_VAL(s, typed_fl_is_typed_data)))
		return 0;
	if (RV_HAS(s, typeddata_typed_flag) &&
	    (!rv_try_member(s, obj, RVL_typeddata_typed_flag, &typed) ||
	     !(typed & 1) || (typed & ~(uint64_t)3)))
		return 0;
	if (!rv_try_member(s, obj, RVL_typeddata_type, &type))
		return 0;
	/* the low bits, free in an aligned address, may flag "embedded" */
	return type & ~((uint64_t)RV_VAL(s, value_size) - 1);
}

static bool decl_layout(struct rv_session *s)
{
	return RV_HAS(s, data_type_flags) && RV_HAS(s, data_type_dmark) &&
	       RV_HAS(s, typed_decl_marking) && RV_HAS(s, ref_end);
}

struct cs_error *rv_decl_marked_refs(struct rv_session *s, uint64_t obj,
				     uint64_t flags, struct rv_refs *out,
				     bool *decoded)
{
	uint64_t type = 0, tflags = 0, list = 0, data = 0;
	uint64_t end = (uint64_t)RV_VAL(s, ref_end);
	*decoded = false;
	if (!decl_layout(s) || !(type = data_type_of(s, obj, flags)))
		return NULL;
	struct cs_error *err =
		rv_read_member(s, type, RVL_data_type_flags, &tflags);
	if (err || !(tflags & (uint64_t)RV_VAL(s, typed_decl_marking)))
		return err;
	if ((err = rv_read_member(s, type, RVL_data_type_dmark, &list)) ||
	    (err = rv_typed_data_ptr(s, obj, &data)))
		return err;
	*decoded = true;
	/* the GC marks nothing of an object whose data is not yet set */
	if (!data || !list)
		return NULL;
	/* a size_t each, a word as a VALUE is */
	uint64_t word = (uint64_t)RV_VAL(s, value_size);
	for (uint64_t i = 0; i < MAX_DECL_REFS; i++) {
		uint64_t offset = 0, v = 0;
		if ((err = rv_read_u64(s, list + i * word, &offset)))
			return err;
		if (offset == end)
			return NULL;
		if (offset > UINT32_MAX)
			return cs_error_create(
				CS_ERR_CORRUPT,
				"offset %llu in the mark list at 0x%llx",
				(unsigned long long)offset,
				(unsigned long long)list);
		if ((err = rv_read_u64(s, data + offset, &v)))
			return err;
		if (!rv_refs_add(s, out, v, RV_REF_DATA, offset))
			return &cs_error_nomem;
	}
	return cs_error_create(CS_ERR_CORRUPT,
			       "the mark list at 0x%llx has no end in %d",
			       (unsigned long long)list, MAX_DECL_REFS);
}
