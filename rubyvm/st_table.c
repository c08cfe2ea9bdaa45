/* Reading a CRuby st_table by scanning its entries array, as corrupt
 * memory cannot make the scan run away: the entries between
 * entries_start and entries_bound, at most RV_MAX_ST_ENTRIES. */
#include "session.h"

/* Where tbl's entries are: its array, and its first and bound indexes. */
static struct cs_error *st_span(struct rv_session *s, uint64_t tbl,
				uint64_t *entries, uint64_t *start,
				uint64_t *bound)
{
	struct cs_error *err;
	if ((err = rv_read_member(s, tbl, RVL_st_entries, entries)) ||
	    (err = rv_read_member(s, tbl, RVL_st_entries_start, start)) ||
	    (err = rv_read_member(s, tbl, RVL_st_entries_bound, bound)))
		return err;
	if (*bound < *start || *bound - *start > RV_MAX_ST_ENTRIES)
		return cs_error_create(CS_ERR_CORRUPT,
				       "st_table at 0x%llx has %llu entries",
				       (unsigned long long)tbl,
				       (unsigned long long)(*bound - *start));
	return NULL;
}

struct cs_error *rv_st_lookup(struct rv_session *s, uint64_t tbl, uint64_t key,
			      uint64_t *record, bool *found)
{
	uint64_t entries, start, bound;
	*found = false;
	struct cs_error *err = st_span(s, tbl, &entries, &start, &bound);
	if (err)
		return err;
	uint64_t esize = (uint64_t)RV_VAL(s, st_entry_size);
	for (uint64_t i = start; i < bound; i++) {
		uint64_t e = entries + i * esize, k;
		if ((err = rv_read_member(s, e, RVL_st_entry_key, &k)))
			return err;
		if (k == key) {
			*found = true;
			return rv_read_member(s, e, RVL_st_entry_record,
					      record);
		}
	}
	return NULL;
}

struct cs_error *rv_st_each(struct rv_session *s, uint64_t tbl,
			    rv_st_each_fn *fn, void *ctx)
{
	uint64_t entries, start, bound;
	struct cs_error *err = st_span(s, tbl, &entries, &start, &bound);
	if (err)
		return err;
	uint64_t esize = (uint64_t)RV_VAL(s, st_entry_size);
	for (uint64_t i = start; i < bound; i++) {
		uint64_t e = entries + i * esize, k, rec;
		if ((err = rv_read_member(s, e, RVL_st_entry_key, &k)) ||
		    (err = rv_read_member(s, e, RVL_st_entry_record, &rec)) ||
		    (err = fn(s, k, rec, ctx)))
			return err;
	}
	return NULL;
}
