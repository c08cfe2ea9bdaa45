/* An object's bytes as the census counts them: its slot, and what it owns
 * outside the heap as ObjectSpace.memsize_of (rb_obj_memsize_of) counts
 * it, for the types whose layout tells:
 *
 * - a String's buffer neither embedded nor shared nor static
 *   (STR_NOFREE): its capacity and a terminator, counted as one byte (the
 *   wide encodings' terminators, 2 or 4, are not told apart);
 * - an Array's buffer neither embedded nor shared: its capacity;
 * - a Hash's table. An st_table is st_memsize: the table, its bins (where
 *   it has them: tab->bins not NULL, or, where the bins follow the entries
 *   and there is no bins member, an entry_power above
 *   MAX_POWER2_FOR_TABLES_WITHOUT_BINS; their words from st.c's features
 *   table, read from the process's memory) and 1 << entry_power entries;
 *   where the table lives in the Hash's slot (no as.st pointer) less the
 *   table itself. A small Hash's ar_table counts sizeof(ar_table) where
 *   the Hash points to it (as.ar), nothing where it is in the slot;
 * - a Struct's members off the slot (no embedded length): len VALUEs;
 * - a Bignum's digits off the slot (BIGNUM_EMBED_FLAG clear): len digits. */
#include <string.h>

#include "heap_census.h"
#include "session.h"

static uint64_t word(const uint8_t *slot, uint64_t off)
{
	uint64_t v;
	memcpy(&v, slot + off, 8);
	return v;
}

static bool hash_layout(struct rv_session *s)
{
	return RV_HAS(s, t_hash) && RV_HAS(s, rhash_st_table_flag) &&
	       RV_HAS(s, st_table_size) && RV_HAS(s, st_entry_power) &&
	       RV_HAS(s, st_entry_size) && RV_HAS(s, st_features) &&
	       RV_HAS(s, st_features_size) &&
	       RV_HAS(s, st_features_bins_words) &&
	       (RV_HAS(s, st_bins) || RV_HAS(s, st_max_power2_no_bins)) &&
	       (RV_HAS(s, rhash_st)
			? RV_HAS(s, rhash_ar) && RV_HAS(s, ar_table_size)
			: RV_HAS(s, rhash_size));
}

void rv_object_sizer_init(struct rv_session *s, struct rv_object_sizer *z)
{
	memset(z, 0, sizeof(*z));
	z->s = s;
	bool shared = RV_HAS(s, elts_shared);
	z->t_string = (uint64_t)RV_VAL(s, t_string);
	z->t_array = (uint64_t)RV_VAL(s, t_array);
	z->t_hash = (uint64_t)RV_VAL(s, t_hash);
	z->strings = shared && RV_HAS(s, rstring_noembed) &&
		     RV_HAS(s, str_nofree) && RV_HAS(s, rstring_heap_capa) &&
		     RV_HAS(s, t_string);
	if (z->strings) {
		z->str_noembed = (uint64_t)RV_VAL(s, rstring_noembed);
		z->str_own_mask = z->str_noembed |
				  (uint64_t)RV_VAL(s, elts_shared) |
				  (uint64_t)RV_VAL(s, str_nofree);
		z->str_capa_off = (uint64_t)RV_VAL(s, rstring_heap_capa);
	}
	z->arrays = shared && RV_HAS(s, rarray_embed_flag) &&
		    RV_HAS(s, rarray_heap_capa) && RV_HAS(s, t_array) &&
		    RV_HAS(s, value_size);
	if (z->arrays) {
		z->ary_own_mask = (uint64_t)RV_VAL(s, rarray_embed_flag) |
				  (uint64_t)RV_VAL(s, elts_shared);
		z->ary_capa_off = (uint64_t)RV_VAL(s, rarray_heap_capa);
		z->value_size = (uint64_t)RV_VAL(s, value_size);
	}
	z->hashes = hash_layout(s);
	z->t_struct = (uint64_t)RV_VAL(s, t_struct);
	z->structs = RV_HAS(s, t_struct) && RV_HAS(s, rstruct_embed_len_mask) &&
		     RV_HAS(s, rstruct_heap_len) &&
		     RV_HAS(s, rstruct_heap_ptr) && RV_HAS(s, value_size);
	if (z->structs) {
		z->struct_embed_mask =
			(uint64_t)RV_VAL(s, rstruct_embed_len_mask);
		z->struct_len_off = (uint64_t)RV_VAL(s, rstruct_heap_len);
		z->struct_ptr_off = (uint64_t)RV_VAL(s, rstruct_heap_ptr);
		z->value_size = (uint64_t)RV_VAL(s, value_size);
	}
	z->t_bignum = (uint64_t)RV_VAL(s, t_bignum);
	z->bignums = RV_HAS(s, t_bignum) && RV_HAS(s, bignum_embed_flag) &&
		     RV_HAS(s, rbignum_len) && RV_HAS(s, rbignum_digits) &&
		     RV_HAS(s, rbignum_digit) &&
		     RV_ITEM(s, rbignum_digit)->size > 0;
	if (z->bignums) {
		z->bignum_embed_flag = (uint64_t)RV_VAL(s, bignum_embed_flag);
		z->bignum_len_off = (uint64_t)RV_VAL(s, rbignum_len);
		z->bignum_digits_off = (uint64_t)RV_VAL(s, rbignum_digits);
		z->bignum_digit_size = RV_ITEM(s, rbignum_digit)->size;
	}
}

/* The words of the bins of a table of 2^power entries (features[power]). */
static uint64_t bins_words(struct rv_object_sizer *z, unsigned power)
{
	struct rv_session *s = z->s;
	if (!z->bins_words[power]) {
		uint64_t at = s->load_bias + (uint64_t)RV_VAL(s, st_features) +
			      power * (uint64_t)RV_VAL(s, st_features_size);
		uint64_t v = 0;
		z->bins_words[power] =
			rv_try_member(s, at, RVL_st_features_bins_words, &v) &&
					v < ((uint64_t)1 << 40)
				? v + 1 /* 0 stands for "not read yet" */
				: UINT64_MAX;
	}
	return z->bins_words[power] == UINT64_MAX ? 0
						  : z->bins_words[power] - 1;
}

/* What a Hash's table holds outside its slot (0 when unreadable). */
static uint64_t hash_bytes(struct rv_object_sizer *z, uint64_t h,
			   uint64_t flags)
{
	struct rv_session *s = z->s;
	uint64_t tab = 0, power = 0, bins = 0;
	bool in_slot = !RV_HAS(s, rhash_st);
	if (!(flags & (uint64_t)RV_VAL(s, rhash_st_table_flag))) {
		if (in_slot || !rv_try_member(s, h, RVL_rhash_ar, &tab) || !tab)
			return 0;
		return (uint64_t)RV_VAL(s, ar_table_size);
	}
	if (in_slot)
		tab = h + (uint64_t)RV_VAL(s, rhash_size);
	else if (!rv_try_member(s, h, RVL_rhash_st, &tab) || !tab)
		return 0;
	if (!rv_try_member(s, tab, RVL_st_entry_power, &power) || power >= 63)
		return 0;
	bool has_bins =
		RV_HAS(s, st_bins)
			? rv_try_member(s, tab, RVL_st_bins, &bins) && bins
			: power > (uint64_t)RV_VAL(s, st_max_power2_no_bins);
	uint64_t index_size = RV_ITEM(s, st_features_bins_words)->size;
	uint64_t total =
		(uint64_t)RV_VAL(s, st_table_size) +
		((uint64_t)1 << power) * (uint64_t)RV_VAL(s, st_entry_size);
	if (has_bins)
		total += bins_words(z, (unsigned)power) *
			 (index_size ? index_size : 8);
	if (in_slot)
		total -= (uint64_t)RV_VAL(s, st_table_size);
	return total;
}

uint64_t rv_object_bytes(struct rv_object_sizer *z, uint64_t addr,
			 uint64_t type, uint64_t flags, const uint8_t *slot,
			 uint64_t stride)
{
	if (type == z->t_string && z->strings &&
	    z->str_capa_off + 8 <= stride &&
	    (flags & z->str_own_mask) == z->str_noembed)
		return stride + word(slot, z->str_capa_off) + 1;
	if (type == z->t_array && z->arrays && z->ary_capa_off + 8 <= stride &&
	    !(flags & z->ary_own_mask))
		return stride + word(slot, z->ary_capa_off) * z->value_size;
	if (type == z->t_hash && z->hashes)
		return stride + hash_bytes(z, addr, flags);
	if (type == z->t_struct && z->structs &&
	    !(flags & z->struct_embed_mask) &&
	    z->struct_len_off + 8 <= stride &&
	    z->struct_ptr_off + 8 <= stride && word(slot, z->struct_ptr_off))
		return stride + word(slot, z->struct_len_off) * z->value_size;
	if (type == z->t_bignum && z->bignums &&
	    !(flags & z->bignum_embed_flag) &&
	    z->bignum_len_off + 8 <= stride &&
	    z->bignum_digits_off + 8 <= stride &&
	    word(slot, z->bignum_digits_off))
		return stride +
		       word(slot, z->bignum_len_off) * z->bignum_digit_size;
	return stride;
}
