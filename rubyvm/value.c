/* Decoding VALUEs: immediates, object types, Strings and Arrays.
 *
 * String and Array layouts differ between versions; which case applies is
 * decided by which members the DWARF has, never by the version number. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

bool rv_special_const(struct rv_session *s, uint64_t v)
{
	/* always resolved: the fallback table has it */
	return (v & (uint64_t)RV_VAL(s, immediate_mask)) != 0 ||
	       v == (uint64_t)RV_VAL(s, qfalse) ||
	       v == (uint64_t)RV_VAL(s, qnil) ||
	       (RV_HAS(s, qundef) && v == (uint64_t)RV_VAL(s, qundef));
}

bool rv_is_nil(struct rv_session *s, uint64_t v)
{
	return v == (uint64_t)RV_VAL(s, qnil);
}

struct cs_error *rv_builtin_type(struct rv_session *s, uint64_t v,
				 uint64_t *type, uint64_t *flags)
{
	if (rv_special_const(s, v))
		return cs_error_create(CS_ERR_CORRUPT,
				       "0x%llx is an immediate, not an object",
				       (unsigned long long)v);
	uint64_t f;
	struct cs_error *err = rv_read_member(s, v, RVL_basic_flags, &f);
	if (err)
		return err;
	*type = f & (uint64_t)RV_VAL(s, t_mask);
	if (flags)
		*flags = f;
	return NULL;
}

struct cs_error *rv_imemo_type(struct rv_session *s, uint64_t v, int64_t *ret)
{
	uint64_t type = 0, flags = 0;
	struct cs_error *err = rv_builtin_type(s, v, &type, &flags);
	if (err)
		return err;
	if (type != (uint64_t)RV_VAL(s, t_imemo))
		return cs_error_create(CS_ERR_CORRUPT,
				       "0x%llx is not an imemo (type 0x%llx)",
				       (unsigned long long)v,
				       (unsigned long long)type);
	*ret = (int64_t)(rv_shr(flags, RV_VAL(s, fl_ushift)) &
			 (uint64_t)RV_VAL(s, imemo_mask));
	return NULL;
}

/* Where a String's bytes are and how many it has. */
enum rv_item_id rv_string_len_item(struct rv_session *s, uint64_t flags)
{
	if (RV_HAS(s, rstring_len)) /* 3.3+: one length for both kinds */
		return RVL_rstring_len;
	if (flags & (uint64_t)RV_VAL(s, rstring_noembed))
		return RVL_rstring_heap_len;
	if (RV_HAS(s, rstring_embed_len)) /* variable-width slots */
		return RVL_rstring_embed_len;
	return RVL_rstring_embed_len_mask; /* packed in the flags */
}

uint64_t rv_string_flags_len(struct rv_session *s, uint64_t flags)
{
	return rv_shr(flags & (uint64_t)RV_VAL(s, rstring_embed_len_mask),
		      RV_VAL(s, rstring_embed_len_shift));
}

bool rv_array_flags_len(struct rv_session *s, uint64_t flags, uint64_t *len)
{
	if (!(flags & (uint64_t)RV_VAL(s, rarray_embed_flag)))
		return false;
	*len = rv_shr(flags & (uint64_t)RV_VAL(s, rarray_embed_len_mask),
		      RV_VAL(s, rarray_embed_len_shift));
	return true;
}

static struct cs_error *string_place(struct rv_session *s, uint64_t v,
				     uint64_t *ptr, uint64_t *len)
{
	uint64_t type = 0, flags = 0;
	struct cs_error *err = rv_builtin_type(s, v, &type, &flags);
	if (err)
		return err;
	if (type != (uint64_t)RV_VAL(s, t_string))
		return cs_error_create(CS_ERR_CORRUPT,
				       "0x%llx is not a String (type 0x%llx)",
				       (unsigned long long)v,
				       (unsigned long long)type);
	bool embedded = !(flags & (uint64_t)RV_VAL(s, rstring_noembed));
	enum rv_item_id at = rv_string_len_item(s, flags);
	if (at == RVL_rstring_embed_len_mask)
		*len = rv_string_flags_len(s, flags);
	else if ((err = rv_read_member(s, v, at, len)))
		return err;
	if (!embedded)
		return rv_read_member(s, v, RVL_rstring_heap_ptr, ptr);
	if (!RV_HAS(s, rstring_embed_ary) && !RV_HAS(s, rstring_ary))
		return rv_missing(RVL_rstring_embed_ary);
	enum rv_item_id ary = RV_HAS(s, rstring_embed_ary)
				      ? RVL_rstring_embed_ary
				      : RVL_rstring_ary;
	*ptr = v + (uint64_t)s->layout.items[ary].value;
	return NULL;
}

struct cs_error *rv_string_bytes(struct rv_session *s, uint64_t v, size_t max,
				 char **ret, size_t *got, uint64_t *len)
{
	uint64_t ptr = 0;
	struct cs_error *err = string_place(s, v, &ptr, len);
	if (err)
		return err;
	size_t n = *len < max ? (size_t)*len : max;
	char *buf = malloc(n + 1);
	if (!buf)
		return &cs_error_nomem;
	if (n && (err = rv_read(s, ptr, buf, n))) {
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*ret = buf;
	*got = n;
	return NULL;
}

struct cs_error *rv_string(struct rv_session *s, uint64_t v, char **ret)
{
	uint64_t len = 0, ptr = 0;
	struct cs_error *err = string_place(s, v, &ptr, &len);
	if (err)
		return err;
	if (len > RV_MAX_STRING)
		return cs_error_create(CS_ERR_CORRUPT,
				       "String at 0x%llx claims %llu bytes",
				       (unsigned long long)v,
				       (unsigned long long)len);
	char *buf = malloc(len + 1);
	if (!buf)
		return &cs_error_nomem;
	if (len && (err = rv_read(s, ptr, buf, len))) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	/* Labels, paths and names never hold a NUL: one means the length or
	 * the bytes are not what they claim. */
	if (memchr(buf, '\0', len)) {
		free(buf);
		return cs_error_create(CS_ERR_CORRUPT,
				       "String at 0x%llx holds a NUL byte",
				       (unsigned long long)v);
	}
	*ret = buf;
	return NULL;
}

struct cs_error *rv_array_span(struct rv_session *s, uint64_t ary,
			       uint64_t *ptr, uint64_t *len)
{
	uint64_t type = 0, flags = 0;
	struct cs_error *err = rv_builtin_type(s, ary, &type, &flags);
	if (err)
		return err;
	if (type != (uint64_t)RV_VAL(s, t_array))
		return cs_error_create(CS_ERR_CORRUPT, "0x%llx is not an Array",
				       (unsigned long long)ary);
	if (rv_array_flags_len(s, flags, len)) {
		if (!RV_HAS(s, rarray_ary))
			return rv_missing(RVL_rarray_ary);
		*ptr = ary + (uint64_t)RV_VAL(s, rarray_ary);
		return NULL;
	}
	if ((err = rv_read_member(s, ary, RVL_rarray_heap_len, len)) ||
	    (err = rv_read_member(s, ary, RVL_rarray_heap_ptr, ptr)))
		return err;
	return NULL;
}

struct cs_error *rv_typed_data_ptr(struct rv_session *s, uint64_t obj,
				   uint64_t *ret)
{
	uint64_t type = 0, flags = 0, word = 0;
	struct cs_error *err = rv_builtin_type(s, obj, &type, &flags);
	if (err)
		return err;
	if (type != (uint64_t)RV_VAL(s, t_data))
		return cs_error_create(CS_ERR_CORRUPT, "0x%llx is not T_DATA",
				       (unsigned long long)obj);
	if (!RV_HAS(s, typeddata_type))
		return rv_missing(RVL_typeddata_type);
	if ((err = rv_read_member(s, obj, RVL_typeddata_type, &word)))
		return err;
	if (!RV_HAS(s, typeddata_data))
		return rv_missing(RVL_typeddata_data);
	uint64_t embedded = RV_HAS(s, typed_data_embedded)
				    ? (uint64_t)RV_VAL(s, typed_data_embedded)
				    : 0;
	/* the flag is in typed_flag where there is one (3.3, 3.4: its value
	 * there only .debug_macro gives, the fallback's being the type
	 * word's bit), else in the low bits of type (4.0+); the data in
	 * place of data either way */
	if (embedded && RV_HAS(s, typeddata_typed_flag)) {
		if (RV_ITEM(s, typed_data_embedded)->source != RV_FROM_MACRO)
			embedded = 0;
		else if ((err = rv_read_member(s, obj, RVL_typeddata_typed_flag,
					       &word)))
			return err;
	}
	if (embedded && (word & embedded)) {
		*ret = obj + (uint64_t)RV_VAL(s, typeddata_data);
		return NULL;
	}
	return rv_read_member(s, obj, RVL_typeddata_data, ret);
}

uint64_t rv_typed_data_of(struct rv_session *s, uint64_t obj,
			  enum rv_item_id type_var)
{
	uint64_t word = 0, data = 0;
	const struct rv_item *type = &s->layout.items[type_var];
	if (type->source == RV_MISSING || !RV_HAS(s, typeddata_type) ||
	    rv_special_const(s, obj) ||
	    rv_failed(rv_typed_data_ptr(s, obj, &data)) ||
	    !rv_try_member(s, obj, RVL_typeddata_type, &word))
		return 0;
	/* the low bits, free in an aligned address, may flag "embedded"
	 * (4.0) */
	uint64_t mask = ~((uint64_t)RV_VAL(s, value_size) - 1);
	return (word & mask) == rv_var_address(s, type_var) ? data : 0;
}

struct cs_error *rv_array_entry(struct rv_session *s, uint64_t ary, uint64_t i,
				uint64_t *ret)
{
	uint64_t len = 0, ptr = 0;
	struct cs_error *err = rv_array_span(s, ary, &ptr, &len);
	if (err)
		return err;
	if (i >= len)
		return cs_error_create(CS_ERR_CORRUPT,
				       "index %llu past Array length %llu",
				       (unsigned long long)i,
				       (unsigned long long)len);
	return rv_read_u64(s, ptr + i * (uint64_t)RV_VAL(s, value_size), ret);
}

bool rv_hash_layout_known(struct rv_session *s)
{
	return RV_HAS(s, rhash_st_table_flag) && RV_HAS(s, ar_pairs) &&
	       RV_HAS(s, st_num_entries) && RV_HAS(s, st_entry_size);
}

/* Where a Hash's table is: behind as.st, or in place after the RHash. */
static struct cs_error *hash_table(struct rv_session *s, uint64_t v,
				   uint64_t *ret)
{
	if (RV_HAS(s, rhash_st))
		return rv_read_member(s, v, RVL_rhash_st, ret);
	if (!RV_HAS(s, rhash_size))
		return rv_missing(RVL_rhash_size);
	*ret = v + (uint64_t)RV_VAL(s, rhash_size);
	return NULL;
}

struct cs_error *rv_hash_entries(struct rv_session *s, uint64_t v,
				 uint64_t flags, uint64_t *keys, uint64_t *vals,
				 size_t max, size_t *n, uint64_t *size)
{
	uint64_t tbl = 0, undef = (uint64_t)RV_VAL(s, qundef);
	struct cs_error *err = hash_table(s, v, &tbl);
	*n = 0;
	if (err)
		return err;
	uint64_t first = 0, bound = 0, step, key_at, val_at, base = 0;
	if (flags & (uint64_t)RV_VAL(s, rhash_st_table_flag)) {
		if ((err = rv_read_member(s, tbl, RVL_st_num_entries, size)) ||
		    (err = rv_read_member(s, tbl, RVL_st_entries, &base)) ||
		    (err = rv_read_member(s, tbl, RVL_st_entries_start,
					  &first)) ||
		    (err = rv_read_member(s, tbl, RVL_st_entries_bound,
					  &bound)))
			return err;
		step = (uint64_t)RV_VAL(s, st_entry_size);
		key_at = (uint64_t)RV_VAL(s, st_entry_key);
		val_at = (uint64_t)RV_VAL(s, st_entry_record);
	} else {
		*size = rv_shr(flags & (uint64_t)RV_VAL(s, rhash_ar_size_mask),
			       RV_VAL(s, rhash_ar_size_shift));
		bound = rv_shr(flags & (uint64_t)RV_VAL(s, rhash_ar_bound_mask),
			       RV_VAL(s, rhash_ar_bound_shift));
		first = 0;
		base = tbl + (uint64_t)RV_VAL(s, ar_pairs);
		step = (uint64_t)RV_VAL(s, ar_pair_size);
		key_at = (uint64_t)RV_VAL(s, ar_pair_key);
		val_at = (uint64_t)RV_VAL(s, ar_pair_val);
	}
	/* Deleted entries keep Qundef as their key; look at a few past the
	 * ones shown, no more. */
	for (uint64_t i = first; i < bound && i < first + 4 * max && *n < max;
	     i++) {
		uint64_t k, val;
		if ((err = rv_read_u64(s, base + i * step + key_at, &k)) ||
		    (err = rv_read_u64(s, base + i * step + val_at, &val)))
			return err;
		if (RV_HAS(s, qundef) && k == undef)
			continue;
		keys[*n] = k;
		vals[(*n)++] = val;
	}
	return NULL;
}

struct cs_error *rv_struct_fields(struct rv_session *s, uint64_t v,
				  uint64_t flags, uint64_t *ptr, uint64_t *len)
{
	if (!RV_HAS(s, rstruct_embed_len_mask) ||
	    !RV_HAS(s, rstruct_embed_len_shift) || !RV_HAS(s, rstruct_ary))
		return rv_missing(RVL_rstruct_ary);
	uint64_t mask = (uint64_t)RV_VAL(s, rstruct_embed_len_mask);
	if (flags & mask) {
		*len = rv_shr(flags & mask, RV_VAL(s, rstruct_embed_len_shift));
		*ptr = v + (uint64_t)RV_VAL(s, rstruct_ary);
		return NULL;
	}
	struct cs_error *err;
	if ((err = rv_read_member(s, v, RVL_rstruct_heap_len, len)) ||
	    (err = rv_read_member(s, v, RVL_rstruct_heap_ptr, ptr)))
		return err;
	return NULL;
}
