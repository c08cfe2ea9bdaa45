/* Reading a CRuby st_table by scanning its entries array, as corrupt
 * memory cannot make the scan run away: the entries between
 * entries_start and entries_bound, at most a bound the caller gives.
 * As st.c's own scans, an entry marked deleted (its hash all bits set:
 * RESERVED_HASH_VAL) is passed over: its key and record stay behind, the
 * record often freed. */
#include "session.h"

/* Where tbl's entries are: its array, and its first and bound indexes. */
static struct cs_error *st_span(struct rv_session *s, uint64_t tbl,
				uint64_t max, uint64_t *entries,
				uint64_t *start, uint64_t *bound)
{
	struct cs_error *err;
	if ((err = rv_read_member(s, tbl, RVL_st_entries, entries)) ||
	    (err = rv_read_member(s, tbl, RVL_st_entries_start, start)) ||
	    (err = rv_read_member(s, tbl, RVL_st_entries_bound, bound)))
		return err;
	if (*bound < *start || *bound - *start > max)
		return cs_error_create(CS_ERR_CORRUPT,
				       "st_table at 0x%llx has %llu entries",
				       (unsigned long long)tbl,
				       (unsigned long long)(*bound - *start));
	return NULL;
}

/* The key and record of the entry at e; *live false when it is deleted
 * (where the layout has the entry's hash). */
static struct cs_error *st_entry(struct rv_session *s, uint64_t e,
				 uint64_t *key, uint64_t *record, bool *live)
{
	static const enum rv_item_id ids[] = {
		RVL_st_entry_hash, RVL_st_entry_key, RVL_st_entry_record};
	struct rv_view v;
	rv_view_read(s, e, ids, sizeof(ids) / sizeof(*ids), &v);
	struct cs_error *err;
	if ((err = rv_view_member(s, &v, RVL_st_entry_key, key)) ||
	    (err = rv_view_member(s, &v, RVL_st_entry_record, record)))
		return err;
	const struct rv_item *h = RV_ITEM(s, st_entry_hash);
	uint64_t hash = 0;
	*live = true;
	if (h->source != RV_MISSING && h->size >= 1 && h->size <= 8 &&
	    rv_view_try(s, &v, RVL_st_entry_hash, &hash)) {
		uint64_t all = h->size == 8
				       ? ~(uint64_t)0
				       : ((uint64_t)1 << (8 * h->size)) - 1;
		*live = hash != all;
	}
	return NULL;
}

struct cs_error *rv_st_lookup(struct rv_session *s, uint64_t tbl, uint64_t key,
			      uint64_t *record, bool *found)
{
	uint64_t entries, start, bound;
	*found = false;
	struct cs_error *err =
		st_span(s, tbl, RV_MAX_ST_ENTRIES, &entries, &start, &bound);
	if (err)
		return err;
	uint64_t esize = (uint64_t)RV_VAL(s, st_entry_size);
	for (uint64_t i = start; i < bound; i++) {
		uint64_t k, rec;
		bool live;
		if ((err = st_entry(s, entries + i * esize, &k, &rec, &live)))
			return err;
		if (live && k == key) {
			*found = true;
			*record = rec;
			return NULL;
		}
	}
	return NULL;
}

struct cs_error *rv_st_each_max(struct rv_session *s, uint64_t tbl,
				uint64_t max, rv_st_each_fn *fn, void *ctx)
{
	uint64_t entries, start, bound;
	struct cs_error *err = st_span(s, tbl, max, &entries, &start, &bound);
	if (err)
		return err;
	uint64_t esize = (uint64_t)RV_VAL(s, st_entry_size);
	for (uint64_t i = start; i < bound; i++) {
		uint64_t k, rec;
		bool live;
		if ((err = st_entry(s, entries + i * esize, &k, &rec, &live)) ||
		    (live && (err = fn(s, k, rec, ctx))))
			return err;
	}
	return NULL;
}

struct cs_error *rv_st_each(struct rv_session *s, uint64_t tbl,
			    rv_st_each_fn *fn, void *ctx)
{
	return rv_st_each_max(s, tbl, RV_MAX_ST_ENTRIES, fn, ctx);
}
