/* C preprocessor macros from .debug_macro (present with -g3/-ggdb3).
 *
 * Values are computed by a small integer expression evaluator: literals,
 * parentheses, casts (ignored), unary and binary C operators, references to
 * other object-like macros and, for function-like macros, integer
 * arguments substituted for the parameters. */
#ifndef CS_DWARF_MACROS_H
#define CS_DWARF_MACROS_H

#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"
#include "index.h"

struct dw_macros;

/* The imported macro units (a header's macros) read so far, shared by the
 * loads of several units of one index: each is read from .debug_macro
 * once. Valid while that index is, and it must outlive the macros loaded
 * through it. */
struct dw_macro_cache;
struct dw_macro_cache *dw_macro_cache_create(void);
void dw_macro_cache_destroy(struct dw_macro_cache *cache);

/* Macros of one compile unit (by basename, e.g. "vm.c"), the units it
 * imports read through cache. Returns NULL with *ret NULL when that unit
 * has no macro information. */
struct cs_error *dw_macros_load(struct dw_index *idx,
				struct dw_macro_cache *cache, const char *unit,
				struct dw_macros **ret);
void dw_macros_destroy(struct dw_macros *m);

/* Evaluate macro `name` (with nargs integer arguments for a function-like
 * macro). CS_ERR_LOOKUP when undefined, CS_ERR_FORMAT when the body is not
 * an integer expression this evaluator understands. */
struct cs_error *dw_macros_eval(const struct dw_macros *m, const char *name,
				const int64_t *args, size_t nargs,
				int64_t *ret);

/* Evaluate a standalone expression text in the context of these macros
 * (m may be NULL). Exposed for unit tests. */
struct cs_error *dw_macro_eval_text(const struct dw_macros *m, const char *text,
				    int64_t *ret);

#endif
