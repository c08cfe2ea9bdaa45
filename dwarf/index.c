#include "index.h"

#include "../util/fnv.h"
#include "types.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	const char *name; /* owned by libdw's string sections */
	uint32_t hash;
	uint8_t kind;
	Dwarf_Off die_off;
	int64_t value;
};

/* Open-addressing hash of entries, first definition of a (kind, name) wins. */
struct table {
	struct entry *entries;
	size_t count, capacity;
	uint32_t *slots; /* index+1 into entries, 0 = empty */
	size_t nslots;   /* power of two */
};

struct unit {
	Dwarf_Off die_off;
	const char *basename;
	uint32_t basename_hash;
	uint32_t next_same; /* index+1 of the next unit of this basename */
	int indexed;
	struct table names;
};

struct dw_index {
	struct dw_module *mod;
	Dwarf *dwarf;
	struct unit *units;
	size_t nunits, nindexed;
	/* basename -> index+1 of its first unit (0 = empty); open
	 * addressing, so a unit named as a hint is found without comparing
	 * the name of every unit (a libruby has some 900) */
	uint32_t *by_name;
	size_t nslots; /* power of two */
};

static uint32_t name_hash(const char *s, enum dw_name_kind kind)
{
	return fnv1a32_string(FNV1A32_BASIS ^ (uint32_t)kind, s);
}

static const struct entry *table_get(const struct table *t,
				     enum dw_name_kind kind, const char *name,
				     uint32_t hash)
{
	if (!t->nslots)
		return NULL;
	for (size_t i = hash & (t->nslots - 1);;
	     i = (i + 1) & (t->nslots - 1)) {
		uint32_t s = t->slots[i];
		if (!s)
			return NULL;
		const struct entry *e = &t->entries[s - 1];
		if (e->hash == hash && e->kind == kind &&
		    strcmp(e->name, name) == 0)
			return e;
	}
}

static int table_grow(struct table *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 256;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return 0;
	for (size_t j = 0; j < t->count; j++) {
		size_t i = t->entries[j].hash & (nslots - 1);
		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = (uint32_t)(j + 1);
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 1;
}

static int table_add(struct table *t, const struct entry *e)
{
	if (table_get(t, e->kind, e->name, e->hash))
		return 1;
	if (t->count == t->capacity) {
		size_t cap = t->capacity ? t->capacity * 2 : 128;
		struct entry *n = realloc(t->entries, cap * sizeof(*n));
		if (!n)
			return 0;
		t->entries = n;
		t->capacity = cap;
	}
	if ((t->count + 1) * 2 > t->nslots && !table_grow(t))
		return 0;
	t->entries[t->count] = *e;
	size_t i = e->hash & (t->nslots - 1);
	while (t->slots[i])
		i = (i + 1) & (t->nslots - 1);
	t->slots[i] = (uint32_t)(++t->count);
	return 1;
}

static void table_free(struct table *t)
{
	free(t->entries);
	free(t->slots);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static uint32_t basename_hash(const char *s)
{
	return fnv1a32_string(FNV1A32_BASIS, s);
}

/* Index+1 of the first unit named basename, 0 if none. */
static uint32_t first_unit(const struct dw_index *idx, const char *basename,
			   uint32_t hash)
{
	for (size_t i = hash & (idx->nslots - 1);;
	     i = (i + 1) & (idx->nslots - 1)) {
		uint32_t s = idx->by_name[i];
		if (!s || (idx->units[s - 1].basename_hash == hash &&
			   strcmp(idx->units[s - 1].basename, basename) == 0))
			return s;
	}
}

/* The units by basename, each chained to the next of its name in unit
 * order. */
static int index_basenames(struct dw_index *idx)
{
	size_t nslots = 64;
	while (nslots < 2 * idx->nunits)
		nslots *= 2;
	if (idx->nunits >= UINT32_MAX ||
	    !(idx->by_name = calloc(nslots, sizeof(*idx->by_name))))
		return 0;
	idx->nslots = nslots;
	uint32_t *last = calloc(nslots, sizeof(*last)); /* chain tails */
	if (!last)
		return 0;
	for (size_t u = 0; u < idx->nunits; u++) {
		struct unit *unit = &idx->units[u];
		unit->basename_hash = basename_hash(unit->basename);
		size_t i = unit->basename_hash & (nslots - 1);
		while (idx->by_name[i] &&
		       strcmp(idx->units[idx->by_name[i] - 1].basename,
			      unit->basename) != 0)
			i = (i + 1) & (nslots - 1);
		if (!idx->by_name[i])
			idx->by_name[i] = (uint32_t)(u + 1);
		else
			idx->units[last[i] - 1].next_same = (uint32_t)(u + 1);
		last[i] = (uint32_t)(u + 1);
	}
	free(last);
	return 1;
}

struct cs_error *dw_index_create(struct dw_module *mod, struct dw_index **ret)
{
	Dwarf *dwarf;
	struct cs_error *err = dw_module_dwarf(mod, &dwarf);
	if (err)
		return err;
	struct dw_index *idx = calloc(1, sizeof(*idx));
	if (!idx)
		return &cs_error_nomem;
	idx->mod = mod;
	idx->dwarf = dwarf;
	size_t cap = 0;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	while (dwarf_get_units(dwarf, cu, &cu, NULL, &unit_type, &cudie,
			       NULL) == 0) {
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		if (idx->nunits == cap) {
			cap = cap ? cap * 2 : 64;
			struct unit *u = realloc(idx->units, cap * sizeof(*u));
			if (!u) {
				dw_index_destroy(idx);
				return &cs_error_nomem;
			}
			idx->units = u;
		}
		const char *name = dwarf_diename(&cudie);
		idx->units[idx->nunits++] = (struct unit){
			.die_off = dwarf_dieoffset(&cudie),
			.basename = base_name(name ? name : ""),
		};
	}
	if (!idx->nunits) {
		dw_index_destroy(idx);
		return cs_error_create(CS_ERR_NO_DEBUG,
				       "%s: DWARF has no compile units",
				       mod->debug_path);
	}
	if (!index_basenames(idx)) {
		dw_index_destroy(idx);
		return &cs_error_nomem;
	}
	*ret = idx;
	return NULL;
}

void dw_index_destroy(struct dw_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->nunits; i++)
		table_free(&idx->units[i].names);
	free(idx->units);
	free(idx->by_name);
	free(idx);
}

static int add(struct table *t, const char *name, enum dw_name_kind kind,
	       Dwarf_Off off, int64_t value)
{
	struct entry e = {name, name_hash(name, kind), (uint8_t)kind, off,
			  value};
	return table_add(t, &e);
}

static struct cs_error *index_unit(struct dw_index *idx, struct unit *u)
{
	if (u->indexed)
		return NULL;
	u->indexed = 1;
	idx->nindexed++;
	Dwarf_Die cudie, die;
	if (!dwarf_offdie(idx->dwarf, u->die_off, &cudie) ||
	    dwarf_child(&cudie, &die) != 0)
		return NULL;
	do {
		int tag = dwarf_tag(&die);
		Dwarf_Attribute attr;
		const char *name;
		switch (tag) {
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			name = dwarf_diename(&die);
			if (name && !dwarf_hasattr(&die, DW_AT_declaration) &&
			    !add(&u->names, name, DW_NAME_STRUCT,
				 dwarf_dieoffset(&die), 0))
				return &cs_error_nomem;
			break;
		case DW_TAG_typedef:
			name = dwarf_diename(&die);
			if (name && !add(&u->names, name, DW_NAME_TYPEDEF,
					 dwarf_dieoffset(&die), 0))
				return &cs_error_nomem;
			break;
		case DW_TAG_enumeration_type: {
			Dwarf_Die e;
			name = dwarf_diename(&die);
			if (name && !dwarf_hasattr(&die, DW_AT_declaration) &&
			    !add(&u->names, name, DW_NAME_ENUM,
				 dwarf_dieoffset(&die), 0))
				return &cs_error_nomem;
			if (dwarf_child(&die, &e) != 0)
				break;
			do {
				if (dwarf_tag(&e) != DW_TAG_enumerator ||
				    !(name = dwarf_diename(&e)) ||
				    !dwarf_attr(&e, DW_AT_const_value, &attr))
					continue;
				if (!add(&u->names, name, DW_NAME_ENUMERATOR, 0,
					 dw_enumerator_value(&attr)))
					return &cs_error_nomem;
			} while (dwarf_siblingof(&e, &e) == 0);
			break;
		}
		case DW_TAG_subprogram:
			/* a definition, or the abstract one of an inlined
			 * static function; not a declaration */
			if (dwarf_hasattr(&die, DW_AT_declaration) ||
			    !(name = dwarf_diename(&die)))
				break;
			if (!add(&u->names, name, DW_NAME_FUNCTION,
				 dwarf_dieoffset(&die), 0))
				return &cs_error_nomem;
			break;
		case DW_TAG_variable:
			if (!dwarf_hasattr(&die, DW_AT_location) &&
			    !dwarf_hasattr(&die, DW_AT_const_value))
				break;
			if (!dwarf_attr_integrate(&die, DW_AT_name, &attr) ||
			    !(name = dwarf_formstring(&attr)))
				break;
			if (!add(&u->names, name, DW_NAME_VARIABLE,
				 dwarf_dieoffset(&die), 0))
				return &cs_error_nomem;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&die, &die) == 0);
	return NULL;
}

static int find_in_unit(struct dw_index *idx, struct unit *u,
			enum dw_name_kind kind, const char *name, uint32_t hash,
			Dwarf_Die *die, int64_t *value)
{
	if (index_unit(idx, u))
		return 0;
	const struct entry *e = table_get(&u->names, kind, name, hash);
	if (!e)
		return 0;
	if (kind == DW_NAME_ENUMERATOR) {
		if (value)
			*value = e->value;
		return 1;
	}
	return die ? dwarf_offdie(idx->dwarf, e->die_off, die) != NULL : 1;
}

int dw_index_find(struct dw_index *idx, enum dw_name_kind kind,
		  const char *name, const char *const *cu_hints, int scan_all,
		  Dwarf_Die *die, int64_t *value)
{
	uint32_t hash = name_hash(name, kind);
	for (const char *const *h = cu_hints; h && *h; h++)
		for (uint32_t u = first_unit(idx, *h, basename_hash(*h)); u;
		     u = idx->units[u - 1].next_same)
			if (find_in_unit(idx, &idx->units[u - 1], kind, name,
					 hash, die, value))
				return 1;
	if (cu_hints && cu_hints[0] && !scan_all)
		return 0;
	/* Units already indexed first (cheap), then the rest one by one. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < idx->nunits; i++)
			if (idx->units[i].indexed == !pass &&
			    find_in_unit(idx, &idx->units[i], kind, name, hash,
					 die, value))
				return 1;
	return 0;
}

int dw_index_unit(struct dw_index *idx, const char *basename, Dwarf_Die *ret)
{
	uint32_t u = first_unit(idx, basename, basename_hash(basename));
	return u &&
	       dwarf_offdie(idx->dwarf, idx->units[u - 1].die_off, ret) != NULL;
}

const char *dw_index_unit_at(struct dw_index *idx, uint64_t pc)
{
	for (size_t i = 0; i < idx->nunits; i++) {
		Dwarf_Die cudie;
		if (dwarf_offdie(idx->dwarf, idx->units[i].die_off, &cudie) &&
		    dwarf_haspc(&cudie, pc) == 1)
			return idx->units[i].basename;
	}
	return NULL;
}

struct dw_module *dw_index_module(const struct dw_index *idx)
{
	return idx->mod;
}

void dw_index_stats(const struct dw_index *idx, size_t *indexed, size_t *total)
{
	*indexed = idx->nindexed;
	*total = idx->nunits;
}
