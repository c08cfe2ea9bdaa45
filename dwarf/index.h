/* A lazy name index over a module's DWARF, one compile unit at a time.
 *
 * Resolving a handful of names must not cost a scan of all of libruby's
 * DWARF. Callers give the compile units where a name is defined ("vm.c",
 * "cont.c"); only those are indexed first, and every other unit is indexed
 * one by one only when a name is still missing. Indexing a unit reads its
 * top-level DIEs (and the enumerators of its enumeration types), never the
 * whole tree. */
#ifndef CS_DWARF_INDEX_H
#define CS_DWARF_INDEX_H

#include <stdint.h>

#include <elfutils/libdw.h>

#include "../util/error.h"
#include "module.h"

enum dw_name_kind {
	DW_NAME_STRUCT, /* complete struct or union definition */
	DW_NAME_TYPEDEF,
	DW_NAME_ENUMERATOR, /* value in the entry, no DIE */
	DW_NAME_VARIABLE,   /* variable with a location or a constant value */
	DW_NAME_UNIT,       /* a compile unit, by file basename */
	DW_NAME_FUNCTION,   /* a function defined (or inlined) in the unit */
	DW_NAME_ENUM,       /* an enumeration type by its tag (enum NAME) */
};

struct dw_index;

struct cs_error *dw_index_create(struct dw_module *mod, struct dw_index **ret);
void dw_index_destroy(struct dw_index *idx);

/* Find a name of a kind in the compile units named by cu_hints (a
 * NULL-terminated list of basenames), then, if scan_all or when there are
 * no hints, in every other unit, indexing each on first use. On success
 * fills *die (not for enumerators) or *value (enumerators only). Returns 1
 * if found, 0 if not. */
int dw_index_find(struct dw_index *idx, enum dw_name_kind kind,
		  const char *name, const char *const *cu_hints, int scan_all,
		  Dwarf_Die *die, int64_t *value);

/* The CU DIE of a compile unit by basename ("vm.c"); 1 if found. */
int dw_index_unit(struct dw_index *idx, const char *basename, Dwarf_Die *ret);

/* The basename of the compile unit whose code holds pc (a link-time
 * address), NULL when none says so. Valid while idx lives. */
const char *dw_index_unit_at(struct dw_index *idx, uint64_t pc);

/* The module the index reads. */
struct dw_module *dw_index_module(const struct dw_index *idx);

/* Number of units indexed so far, and in all (for benchmarks and tests). */
void dw_index_stats(const struct dw_index *idx, size_t *indexed, size_t *total);

#endif
