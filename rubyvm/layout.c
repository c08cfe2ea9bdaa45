#include "layout.h"

#include <dwarf.h>
#include <string.h>

#include "../dwarf/macros.h"
#include "../dwarf/module.h"
#include "../dwarf/types.h"

enum spec_kind {
	SPEC_MEMBER,
	SPEC_SIZE,
	SPEC_ENUM,
	SPEC_ENUMS,
	SPEC_VAR,
	SPEC_VAR_MEMBER,
	SPEC_CONST,
	SPEC_FUNC,
	SPEC_TEXT
};

struct spec {
	enum spec_kind kind;
	const char *id;
	const char *type; /* struct or typedef name; enumerator/var name */
	const char *path; /* member path */
	const char *unit;
	int gc; /* a fact of the GC (GC_*): from the GC's module */
	/* a fact of the C extension ext (EXT_*), whose own unit is ext_unit
	 * ("monitor.c"); NULL for the others */
	const char *ext, *ext_unit;
};

static const struct spec specs[RVL_COUNT] = {
#define MEMBER(id, type, path, unit) \
	{SPEC_MEMBER, #id, type, path, unit, 0, NULL, NULL},
#define SIZE(id, type, unit) {SPEC_SIZE, #id, type, NULL, unit, 0, NULL, NULL},
#define ENUM(id, name, unit) {SPEC_ENUM, #id, name, NULL, unit, 0, NULL, NULL},
#define ENUMS(id, name, unit) \
	{SPEC_ENUMS, #id, name, NULL, unit, 0, NULL, NULL},
#define VAR(id, name, unit) {SPEC_VAR, #id, name, NULL, unit, 0, NULL, NULL},
#define VAR_MEMBER(id, name, path, unit) \
	{SPEC_VAR_MEMBER, #id, name, path, unit, 0, NULL, NULL},
#define CONST(id, name, unit) \
	{SPEC_CONST, #id, name, NULL, unit, 0, NULL, NULL},
#define FUNC(id, name, unit) {SPEC_FUNC, #id, name, NULL, unit, 0, NULL, NULL},
#define TEXT(id, text) {SPEC_TEXT, #id, text, NULL, NULL, 0, NULL, NULL},
#define GC_MEMBER(id, type, path, unit) \
	{SPEC_MEMBER, #id, type, path, unit, 1, NULL, NULL},
#define GC_SIZE(id, type, unit) \
	{SPEC_SIZE, #id, type, NULL, unit, 1, NULL, NULL},
#define GC_ENUM(id, name, unit) \
	{SPEC_ENUM, #id, name, NULL, unit, 1, NULL, NULL},
#define GC_CONST(id, name, unit) \
	{SPEC_CONST, #id, name, NULL, unit, 1, NULL, NULL},
#define EXT_VAR(id, ext, name, unit) \
	{SPEC_VAR, #id, name, NULL, unit, 0, ext, ext ".c"},
#define EXT_MEMBER(id, ext, type, path, unit) \
	{SPEC_MEMBER, #id, type, path, unit, 0, ext, ext ".c"},
#include "layout.def"
};

const char *rv_layout_item_name(enum rv_item_id id)
{
	return id < RVL_COUNT ? specs[id].id : "?";
}

const char *rv_layout_item_path(enum rv_item_id id)
{
	return id < RVL_COUNT && specs[id].path ? specs[id].path : "?";
}

const char *rv_layout_item_subject(enum rv_item_id id)
{
	return id < RVL_COUNT ? specs[id].type : "?";
}

const char *rv_layout_enums_name(enum rv_enums_id id)
{
	/* the lists are numbered in the order of their ENUMS lines */
	unsigned n = 0;
	for (int i = 0; i < RVL_COUNT; i++)
		if (specs[i].kind == SPEC_ENUMS && n++ == (unsigned)id)
			return specs[i].id;
	return "?";
}

int rv_enum_list_valid(const struct rv_enum_list *list)
{
	if (list->count > RV_ENUM_MAX)
		return 0;
	for (uint32_t k = 0; k < list->count; k++)
		if (!memchr(list->e[k].name, '\0', RV_ENUM_NAME_MAX))
			return 0;
	return 1;
}

int rv_layout_item_is_gc(enum rv_item_id id)
{
	return id < RVL_COUNT && specs[id].gc;
}

const char *rv_layout_item_ext(enum rv_item_id id)
{
	return id < RVL_COUNT ? specs[id].ext : NULL;
}

int rv_layout_item_is_var(enum rv_item_id id)
{
	return id < RVL_COUNT && specs[id].kind == SPEC_VAR;
}

int rv_layout_item_of_ext(enum rv_item_id id, const char *ext)
{
	return id < RVL_COUNT && specs[id].ext &&
	       strcmp(specs[id].ext, ext) == 0;
}

/* Items without which no stack can be read at all. */
const enum rv_item_id rv_layout_required[] = {
	RVL_vm_ptr,
	RVL_th_ec,
	RVL_ec_vm_stack,
	RVL_ec_vm_stack_size,
	RVL_ec_cfp,
	RVL_cfp_size,
	RVL_cfp_pc,
	RVL_cfp_ep,
	RVL_iseq_body,
	RVL_body_iseq_encoded,
	RVL_body_label,
	RVL_body_pathobj,
	RVL_basic_flags,
	RVL_t_mask,
	RVL_qnil,
	RVL_frame_magic_mask,
	RVL_frame_magic_cfunc,
	RVL_env_index_flags,
	RVL_value_size,
	RVL_guarded_ptr_mask,
	RVL_COUNT,
};

static int is_required(int id)
{
	for (const enum rv_item_id *r = rv_layout_required; *r != RVL_COUNT;
	     r++)
		if ((int)*r == id)
			return 1;
	return 0;
}

static int find_type(struct dw_index *idx, const char *name,
		     const char *const *hints, int scan_all, Dwarf_Die *ret)
{
	/* Both kinds in the units first: "VALUE" is a typedef, and looking
	 * for a struct of that name everywhere would read every unit. */
	for (int scan = 0; scan <= scan_all; scan++)
		if (dw_index_find(idx, DW_NAME_STRUCT, name, hints, scan, ret,
				  NULL) ||
		    dw_index_find(idx, DW_NAME_TYPEDEF, name, hints, scan, ret,
				  NULL))
			return 1;
	return 0;
}

/* Address of a variable from DW_OP_addr, or its DW_AT_const_value. */
static int variable_value(Dwarf_Die *die, int64_t *value, int *is_const)
{
	Dwarf_Attribute attr;
	if (dwarf_attr(die, DW_AT_const_value, &attr)) {
		Dwarf_Sword v;
		if (dwarf_formsdata(&attr, &v) != 0)
			return 0;
		*value = v;
		*is_const = 1;
		return 1;
	}
	Dwarf_Op *ops;
	size_t nops;
	if (!dwarf_attr(die, DW_AT_location, &attr) ||
	    dwarf_getlocation(&attr, &ops, &nops) != 0 || nops != 1 ||
	    ops[0].atom != DW_OP_addr)
		return 0;
	*value = (int64_t)ops[0].number;
	*is_const = 0;
	return 1;
}

/* The macros of the units read so far, kept for the next constant. */
#define MACRO_UNITS 16
struct macro_units {
	const char *name[MACRO_UNITS];
	struct dw_macros *macros[MACRO_UNITS];
	size_t count;
	/* the imported (header) macro units, read once for all units */
	struct dw_macro_cache *cache;
};

/* The macros of unit; *owned: not kept (the cache is full), the caller
 * destroys them. */
static struct cs_error *macros_for(struct dw_index *idx, struct macro_units *mu,
				   const char *unit, struct dw_macros **ret,
				   bool *owned)
{
	*owned = false;
	for (size_t i = 0; i < mu->count; i++)
		if (strcmp(mu->name[i], unit) == 0) {
			*ret = mu->macros[i];
			return NULL;
		}
	if (!mu->cache && !(mu->cache = dw_macro_cache_create()))
		return &cs_error_nomem;
	struct cs_error *err = dw_macros_load(idx, mu->cache, unit, ret);
	if (err)
		return err;
	if (mu->count < MACRO_UNITS) {
		mu->name[mu->count] = unit;
		mu->macros[mu->count++] = *ret;
	} else {
		*owned = true;
	}
	return NULL;
}

static int const_from_dwarf(struct dw_index *idx, const struct spec *s,
			    int scan, struct rv_item *it)
{
	const char *hints[] = {s->unit, NULL};
	Dwarf_Die die;
	int is_const;
	if (dw_index_find(idx, DW_NAME_ENUMERATOR, s->type, hints, scan, NULL,
			  &it->value) ||
	    (dw_index_find(idx, DW_NAME_VARIABLE, s->type, hints, scan, &die,
			   NULL) &&
	     variable_value(&die, &it->value, &is_const) && is_const)) {
		it->source = RV_FROM_DWARF;
		return 1;
	}
	return 0;
}

/* A constant: an enumerator or static const in its unit, else its macro,
 * else (without .debug_macro) the fallback table; a required one is then
 * looked for in every unit. */
static struct cs_error *resolve_const(struct dw_index *idx,
				      struct macro_units *mu,
				      const struct spec *s, struct rv_layout *l,
				      struct rv_item *it, int scan)
{
	if (const_from_dwarf(idx, s, 0, it))
		return NULL;
	struct dw_macros *m = NULL;
	bool owned = false;
	struct cs_error *err =
		s->unit ? macros_for(idx, mu, s->unit, &m, &owned) : NULL;
	if (err)
		return err;
	bool from_macro = false, had_macros = m != NULL;
	if (m) {
		l->has_macros = 1;
		/* "NAME(args)" applies a function-like macro. */
		err = strchr(s->type, '(')
			      ? dw_macro_eval_text(m, s->type, &it->value)
			      : dw_macros_eval(m, s->type, NULL, 0, &it->value);
		if (!err)
			from_macro = true;
		else if (err->code == CS_ERR_LOOKUP ||
			 err->code == CS_ERR_FORMAT) {
			cs_error_destroy(err);
			err = NULL;
		}
	}
	if (owned)
		dw_macros_destroy(m);
	if (err)
		return err;
	if (from_macro)
		it->source = RV_FROM_MACRO;
	else if (rv_fallback_constant(s->type, had_macros, &it->value))
		it->source = RV_FROM_FALLBACK;
	else if (scan)
		const_from_dwarf(idx, s, 1, it);
	return NULL;
}

/* Every enumerator of the enum tag s->type into list; those past
 * RV_ENUM_MAX and names too long to keep are left out. */
static void resolve_enums(struct dw_index *idx, const struct spec *s,
			  const char *const *hints, int scan,
			  struct rv_enum_list *list, struct rv_item *it)
{
	Dwarf_Die die;
	struct dw_enumerator all[RV_ENUM_MAX];
	if (!dw_index_find(idx, DW_NAME_ENUM, s->type, hints, scan, &die, NULL))
		return;
	long n = dw_type_enumerators(&die, all, RV_ENUM_MAX);
	if (n < 0)
		return;
	list->count = 0;
	for (long k = 0; k < n && k < RV_ENUM_MAX; k++) {
		size_t len = strnlen(all[k].name, RV_ENUM_NAME_MAX);
		if (len >= RV_ENUM_NAME_MAX)
			continue;
		struct rv_enumerator *e = &list->e[list->count++];
		e->value = all[k].value;
		memcpy(e->name, all[k].name, len + 1);
	}
	it->value = list->count;
	it->source = RV_FROM_DWARF;
}

/* Which items a module's layout holds: every one (libruby's), or only
 * the GC's of a GC library or one extension's of its module, each then
 * looked for in the unit given (NULL: no unit first) and else in every
 * unit. */
struct only {
	int gc;
	const char *ext;
	const char *unit;
};

static struct cs_error *resolve(struct dw_index *idx, const struct only *only,
				struct rv_layout *l)
{
	memset(l, 0, sizeof(*l));
	struct macro_units mu = {0};
	struct cs_error *err = NULL;
	/* the list of an ENUMS line: RVE_ ids go in the order of the lines */
	int nenums = -1;
	for (int i = 0; i < RVL_COUNT && !err; i++) {
		struct spec own = specs[i];
		const struct spec *s = &own;
		nenums += own.kind == SPEC_ENUMS;
		if (only &&
		    (only->gc ? !own.gc : !rv_layout_item_of_ext(i, only->ext)))
			continue;
		if (only)
			own.unit = only->unit;
		struct rv_item *it = &l->items[i];
		/* libruby's: an extension's item also in the unit of an
		 * extension linked in */
		const char *hints[] = {s->unit, only ? NULL : s->ext_unit,
				       NULL};
		int scan = only || is_required(i);
		Dwarf_Die die;
		switch (s->kind) {
		case SPEC_MEMBER: {
			struct dw_member m;
			if (!find_type(idx, s->type, hints, scan, &die))
				break;
			struct cs_error *e = dw_type_member(&die, s->path, &m);
			if (e) {
				cs_error_destroy(e);
				break;
			}
			it->value = (int64_t)m.offset;
			it->size = (uint32_t)m.size;
			it->bit_pos = (uint16_t)m.bit_pos;
			it->bit_size = (uint8_t)m.bit_size;
			it->source = RV_FROM_DWARF;
			break;
		}
		case SPEC_VAR_MEMBER: {
			Dwarf_Attribute attr;
			Dwarf_Die type;
			struct dw_member m;
			if (!dw_index_find(idx, DW_NAME_VARIABLE, s->type,
					   hints, scan, &die, NULL) ||
			    !dwarf_attr_integrate(&die, DW_AT_type, &attr) ||
			    !dwarf_formref_die(&attr, &type))
				break;
			struct cs_error *e = dw_type_member(&type, s->path, &m);
			if (e) {
				cs_error_destroy(e);
				break;
			}
			it->value = (int64_t)m.offset;
			it->size = (uint32_t)m.size;
			it->source = RV_FROM_DWARF;
			break;
		}
		case SPEC_SIZE: {
			uint64_t size;
			if (!find_type(idx, s->type, hints, scan, &die))
				break;
			struct cs_error *e = dw_type_size(&die, &size);
			if (e) {
				cs_error_destroy(e);
				break;
			}
			it->value = (int64_t)size;
			it->source = RV_FROM_DWARF;
			break;
		}
		case SPEC_ENUM:
			if (dw_index_find(idx, DW_NAME_ENUMERATOR, s->type,
					  hints, scan, NULL, &it->value))
				it->source = RV_FROM_DWARF;
			break;
		case SPEC_ENUMS:
			if (nenums < RVE_COUNT)
				resolve_enums(idx, s, hints, scan,
					      &l->enums[nenums], it);
			break;
		case SPEC_VAR: {
			int is_const;
			uint64_t addr;
			if (dw_index_find(idx, DW_NAME_VARIABLE, s->type, hints,
					  scan, &die, NULL) &&
			    variable_value(&die, &it->value, &is_const) &&
			    !is_const) {
				it->source = RV_FROM_DWARF;
				break;
			}
			/* A variable other code than C defines (YJIT's and
			 * ZJIT's Rust): the units that use it only declare
			 * it, and its own DWARF is nested in namespaces;
			 * the symbol table has it. */
			struct cs_error *e = dw_module_object_symbol(
				dw_index_module(idx), s->type, &addr);
			if (!e) {
				it->value = (int64_t)addr;
				it->source = RV_FROM_ELF;
			}
			cs_error_destroy(e);
			break;
		}
		case SPEC_CONST:
			err = resolve_const(idx, &mu, s, l, it, scan);
			break;
		case SPEC_FUNC:
			if (dw_index_find(idx, DW_NAME_FUNCTION, s->type, hints,
					  scan, NULL, NULL)) {
				it->value = 1;
				it->source = RV_FROM_DWARF;
			}
			break;
		case SPEC_TEXT:
			if (dw_module_has_string(dw_index_module(idx),
						 s->type)) {
				it->value = 1;
				it->source = RV_FROM_ELF;
			}
			break;
		}
	}
	for (size_t i = 0; i < mu.count; i++)
		dw_macros_destroy(mu.macros[i]);
	dw_macro_cache_destroy(mu.cache);
	return err;
}

struct cs_error *rv_layout_resolve(struct dw_index *idx, struct rv_layout *l)
{
	return resolve(idx, NULL, l);
}

struct cs_error *rv_layout_resolve_gc(struct dw_index *idx, const char *unit,
				      struct rv_layout *l)
{
	return resolve(idx, &(struct only){.gc = 1, .unit = unit}, l);
}

struct cs_error *rv_layout_resolve_ext(struct dw_index *idx, const char *ext,
				       struct rv_layout *l)
{
	const char *unit = NULL;
	for (int i = 0; !unit && i < RVL_COUNT; i++)
		if (rv_layout_item_of_ext(i, ext))
			unit = specs[i].ext_unit;
	return resolve(idx, &(struct only){.ext = ext, .unit = unit}, l);
}

/* Bump when the way items are resolved changes (not their list), so that
 * layouts cached by an older corestack are resolved again. */
#define RESOLVER_VERSION 4

/* A fingerprint of layout.def, struct rv_item, the enum lists and the
 * resolver, so a cached layout written by another corestack build is never
 * read as this one's. */
uint64_t rv_layout_spec_hash(void)
{
	uint64_t h = 14695981039346656037ULL;
	h = (h ^ sizeof(struct rv_item)) * 1099511628211ULL;
	h = (h ^ sizeof(struct rv_enum_list)) * 1099511628211ULL;
	h = (h ^ RESOLVER_VERSION) * 1099511628211ULL;
	for (int i = 0; i < RVL_COUNT; i++) {
		const char *parts[] = {specs[i].id, specs[i].type,
				       specs[i].path ? specs[i].path : "",
				       specs[i].unit ? specs[i].unit : "",
				       specs[i].ext ? specs[i].ext : ""};
		h = (h ^ (uint64_t)specs[i].kind) * 1099511628211ULL;
		h = (h ^ (uint64_t)specs[i].gc) * 1099511628211ULL;
		for (int p = 0; p < 5; p++) {
			for (const char *c = parts[p]; *c; c++)
				h = (h ^ (uint8_t)*c) * 1099511628211ULL;
			h = (h ^ 0xff) * 1099511628211ULL;
		}
	}
	return h;
}
