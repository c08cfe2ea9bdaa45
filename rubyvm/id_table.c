/* Reading a CRuby rb_id_table (id_table.c, which symbol.c includes): an
 * open-addressed array of capa items, each an ID's serial (0: empty) and a
 * value, read in one piece and bounded like an st_table. What a class's
 * constants and the global variables are kept in. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

struct cs_error *rv_id_table_each(struct rv_session *s, uint64_t tbl,
				  rv_id_table_fn *fn, void *ctx)
{
	uint64_t capa = 0, items = 0;
	struct cs_error *err;
	if (!RV_HAS(s, id_table_capa) || !RV_HAS(s, id_table_items) ||
	    !RV_HAS(s, id_item_size) || !RV_HAS(s, id_item_key) ||
	    !RV_HAS(s, id_item_val))
		return rv_missing(RVL_id_table_items);
	if ((err = rv_read_member(s, tbl, RVL_id_table_capa, &capa)) ||
	    (err = rv_read_member(s, tbl, RVL_id_table_items, &items)))
		return err;
	uint64_t step = (uint64_t)RV_VAL(s, id_item_size);
	if (capa > RV_MAX_ST_ENTRIES || !step || step > 64)
		return cs_error_create(CS_ERR_CORRUPT,
				       "id table at 0x%llx has room for %llu",
				       (unsigned long long)tbl,
				       (unsigned long long)capa & 0xffffffff);
	if (!capa || !items)
		return NULL;
	uint8_t *buf = malloc(capa * step);
	if (!buf)
		return &cs_error_nomem;
	err = rv_read(s, items, buf, capa * step);
	uint64_t key_at = (uint64_t)RV_VAL(s, id_item_key);
	uint64_t val_at = (uint64_t)RV_VAL(s, id_item_val);
	unsigned key_size = RV_ITEM(s, id_item_key)->size;
	if (!err && (key_size < 1 || key_size > 8 || key_at + key_size > step ||
		     val_at + 8 > step))
		err = cs_error_create(CS_ERR_CORRUPT, "rb_id_item layout");
	for (uint64_t i = 0; !err && i < capa; i++) {
		uint64_t key = 0, val;
		memcpy(&key, buf + i * step + key_at, key_size);
		memcpy(&val, buf + i * step + val_at, 8);
		if (key)
			err = fn(s, key, val, ctx);
	}
	free(buf);
	return err;
}

struct cs_error *rv_id_serial_name(struct rv_session *s, uint64_t serial,
				   char **ret)
{
	/* rv_id_name takes the serial back from an ID above the operators'
	 * (ID_SCOPE_SHIFT bits of scope below it); no ID a table keys by
	 * serial is an operator's */
	if (!RV_HAS(s, id_scope_shift))
		return rv_missing(RVL_id_scope_shift);
	return rv_id_name(s, rv_shl(serial, RV_VAL(s, id_scope_shift)), ret);
}
