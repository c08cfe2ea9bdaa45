/* The compact layout of one CRuby build, resolved from its DWARF.
 *
 * layout.def declares every fact up front; resolving turns each into an
 * rv_item. The model then only indexes an array: no DWARF on the hot path,
 * and the whole layout can be cached on disk by build-id. */
#ifndef CS_RUBYVM_LAYOUT_H
#define CS_RUBYVM_LAYOUT_H

#include <stdint.h>

#include "../dwarf/index.h"
#include "../util/error.h"

enum rv_item_id {
#define MEMBER(id, type, path, unit) RVL_##id,
#define SIZE(id, type, unit) RVL_##id,
#define ENUM(id, name, unit) RVL_##id,
#define ENUMS(id, name, unit) RVL_##id,
#define VAR(id, name, unit) RVL_##id,
#define VAR_MEMBER(id, name, path, unit) RVL_##id,
#define CONST(id, name, unit) RVL_##id,
#define FUNC(id, name, unit) RVL_##id,
#define TEXT(id, text) RVL_##id,
#define GC_MEMBER MEMBER
#define GC_SIZE SIZE
#define GC_ENUM ENUM
#define GC_CONST CONST
#define EXT_VAR(id, ext, name, unit) RVL_##id,
#define EXT_MEMBER(id, ext, type, path, unit) RVL_##id,
#include "layout.def"
	RVL_COUNT
};

/* The enum types whose every enumerator the layout lists (ENUMS). */
enum rv_enums_id {
#define ENUMS(id, name, unit) RVE_##id,
#include "layout.def"
	RVE_COUNT
};

enum rv_item_source {
	RV_MISSING = 0,
	RV_FROM_DWARF,    /* struct, enumerator, variable or const variable */
	RV_FROM_MACRO,    /* .debug_macro */
	RV_FROM_FALLBACK, /* rubyvm/fallback.c, only without .debug_macro */
	RV_FROM_ELF,      /* the module's ELF: a string in its .rodata, a
			   * variable's symbol */
};

struct rv_item {
	int64_t value;    /* offset, size, enumerator/constant or address */
	uint32_t size;    /* member byte size */
	uint16_t bit_pos; /* bitfields: bit position from the struct start */
	uint8_t bit_size; /* bitfields: width, else 0 */
	uint8_t source;   /* enum rv_item_source */
};

/* An enum's enumerators, bounded: the DWARF is input, and CRuby's enums
 * the layout lists have a few dozen short names. An enumerator past
 * RV_ENUM_MAX, or whose name is longer than RV_ENUM_NAME_MAX - 1, is left
 * out. */
#define RV_ENUM_MAX 64
#define RV_ENUM_NAME_MAX 48
struct rv_enumerator {
	int64_t value;
	char name[RV_ENUM_NAME_MAX]; /* NUL-terminated */
};
struct rv_enum_list {
	uint32_t count;
	struct rv_enumerator e[RV_ENUM_MAX];
};

struct rv_layout {
	struct rv_item items[RVL_COUNT];
	struct rv_enum_list enums[RVE_COUNT];
	int has_macros;                 /* .debug_macro was present */
	size_t units_read, units_total; /* compile units indexed; 0 if cached */
};

/* Resolve every item of layout.def. Items that are absent are left
 * RV_MISSING; whether that is fatal is the model's call. */
struct cs_error *rv_layout_resolve(struct dw_index *idx, struct rv_layout *ret);
/* Resolve only the GC_* items, from a GC library (RUBY_GC_LIBRARY): each
 * in the compile unit named unit (NULL: none) and then in every other;
 * the rest are left RV_MISSING. */
struct cs_error *rv_layout_resolve_gc(struct dw_index *idx, const char *unit,
				      struct rv_layout *ret);
/* Whether an item is a fact of the GC (GC_* in layout.def). */
int rv_layout_item_is_gc(enum rv_item_id id);
/* Resolve only the items of the C extension ext (EXT_* in layout.def),
 * from that extension's own module (EXT.so): each in its unit (EXT.c) and
 * then in every other; the rest are left RV_MISSING. */
struct cs_error *rv_layout_resolve_ext(struct dw_index *idx, const char *ext,
				       struct rv_layout *ret);
/* The C extension an item is a fact of (EXT_* in layout.def: "monitor"),
 * NULL for the others. */
const char *rv_layout_item_ext(enum rv_item_id id);
/* Whether an item is a variable's address (VAR, EXT_VAR), which a
 * module's load bias moves. */
int rv_layout_item_is_var(enum rv_item_id id);
/* Whether an item is a fact of the C extension ext. */
int rv_layout_item_of_ext(enum rv_item_id id, const char *ext);

const char *rv_layout_item_name(enum rv_item_id id);
/* A MEMBER item's member path ("body.iseq.cref"), "?" for other items. */
const char *rv_layout_item_path(enum rv_item_id id);
/* The name of an enum list's id (its ENUMS line's, as its item's). */
const char *rv_layout_enums_name(enum rv_enums_id id);
/* Whether a list, as a cache file or other input gave it, is one this
 * build can use: bounded, every name terminated. */
int rv_enum_list_valid(const struct rv_enum_list *list);
/* What an item names in the Ruby's DWARF: the struct, enumerator,
 * constant, variable or function ("ruby_current_vm_ptr" for vm_ptr). */
const char *rv_layout_item_subject(enum rv_item_id id);

/* Items without which no stack can be read, ending with RVL_COUNT. */
extern const enum rv_item_id rv_layout_required[];

/* Fingerprint of layout.def and the item format (for the on-disk cache). */
uint64_t rv_layout_spec_hash(void);

/* The layout of a module: from the on-disk cache keyed by its build-id when
 * there is a valid entry, else resolved from its DWARF and then cached.
 * cache_dir NULL means $XDG_CACHE_HOME/corestack/layouts (or ~/.cache/…);
 * "" disables the cache. *from_cache tells which happened. A module without
 * a build-id is never cached. */
/* The path of a file named name in the layout cache's directory: dir, or
 * by default $XDG_CACHE_HOME/corestack/layouts (~/.cache/...); NULL when
 * out of memory or without a home. rv_cache_mkdirs makes the directories
 * above path; 1 on success. Others keep small facts keyed by a build-id
 * there too (engine/pthread_tid.c). */
char *rv_cache_file(const char *dir, const char *name);
int rv_cache_mkdirs(char *path);

struct cs_error *rv_layout_for_module(struct dw_module *mod,
				      const char *cache_dir,
				      struct rv_layout *ret, int *from_cache);
/* The same for a GC library: its GC_* items (rv_layout_resolve_gc), the
 * unit looked in first being the one whose code holds pc (a link-time
 * address of the library's; 0: none), cached apart from a whole layout
 * of the same module. */
struct cs_error *rv_layout_for_gc_module(struct dw_module *mod, uint64_t pc,
					 const char *cache_dir,
					 struct rv_layout *ret,
					 int *from_cache);
/* The same for a C extension's module: the items of ext
 * (rv_layout_resolve_ext), cached as its own. */
struct cs_error *rv_layout_for_ext_module(struct dw_module *mod,
					  const char *ext,
					  const char *cache_dir,
					  struct rv_layout *ret,
					  int *from_cache);

/* Constants that exist only as C macros, used when .debug_macro is absent
 * (has_macros 0), and enumerators a compiler may drop. Returns 1 and the
 * value if name is in the fallback table and may be used. */
int rv_fallback_constant(const char *name, int has_macros, int64_t *value);

#endif
