/* The allocations ObjectSpace.trace_object_allocations recorded, read
 * from the objspace extension (ext/objspace/object_tracing.c, loaded as
 * objspace.so, described by its own DWARF: the EXT_* items of
 * layout.def). Its tmp_trace_arg, NULL until tracing first ran, holds
 * object_table, an st_table from each object traced to its
 * allocation_info; dump_all looks each object up there (st_lookup), so
 * the entries the table holds are what it writes: those of objects
 * allocated while tracing ran, and, after tracing stopped, the leftovers
 * of objects freed since whose slots a new object took (the extension
 * deletes an entry only while it traces). The dump writes every object,
 * so the table is walked once into a map by VALUE. Its paths are C
 * strings the extension shares between entries, its methods Symbols:
 * each text is read once. */
#include "alloc_sites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "session.h"

/* Entries read at most: one an object traced, far more than tests or
 * benchmarks trace, bounded so a corrupt count cannot run away. */
#define MAX_SITES ((uint64_t)1 << 24)

/* Whether cache holds key's text, in *text. */
static bool cached(const struct u64map *cache, uint64_t key, char **text)
{
	int found;
	*text = u64map_get(cache, key, &found);
	return found;
}

/* text (malloc'd, or NULL) kept in cache as key's; NULL when it is
 * NULL or cannot be kept. */
static char *keep(struct u64map *cache, uint64_t key, char *text, bool *nomem)
{
	if (text && !u64map_put(cache, key, text)) {
		free(text);
		*nomem = true;
		return NULL;
	}
	return text;
}

/* The text of the path at addr (a C string), read once; NULL when it
 * cannot be read whole. */
static char *path_text(struct rv_session *s, struct rv_alloc_sites *a,
		       uint64_t addr, bool *nomem)
{
	char *t;
	if (cached(&a->paths, addr, &t))
		return t;
	char buf[RV_MAX_STRING];
	size_t n = 0;
	bool whole = false;
	if (rv_failed(rv_read_cstring(s, addr, buf, sizeof(buf) - 1, &n,
				      &whole)) ||
	    !whole)
		return NULL;
	buf[n] = '\0';
	if (!(t = strdup(buf)))
		*nomem = true;
	return keep(&a->paths, addr, t, nomem);
}

/* The name of the method's Symbol mid, read once; NULL when it cannot
 * be read. */
static char *method_text(struct rv_session *s, struct rv_alloc_sites *a,
			 uint64_t mid, bool *nomem)
{
	char *t;
	if (cached(&a->methods, mid, &t))
		return t;
	size_t n = 0;
	struct cs_error *err = rv_symbol_name_whole(s, mid, &t, &n);
	if (err == &cs_error_nomem)
		*nomem = true;
	if (rv_failed(err) || !t || strlen(t) != n) {
		free(t);
		return NULL;
	}
	return keep(&a->methods, mid, t, nomem);
}

/* The allocation_info at info into site; false when any of it cannot be
 * read. */
static bool read_site(struct rv_session *s, struct rv_alloc_sites *a,
		      uint64_t info, struct rv_alloc_site *site, bool *nomem)
{
	static const enum rv_item_id ids[] = {RVL_alloc_info_path,
					      RVL_alloc_info_line,
					      RVL_alloc_info_mid,
					      RVL_alloc_info_generation};
	struct rv_view v;
	uint64_t path = 0, mid = 0;
	rv_view_read(s, info, ids, sizeof(ids) / sizeof(*ids), &v);
	if (!rv_view_try(s, &v, RVL_alloc_info_path, &path) ||
	    !rv_view_try(s, &v, RVL_alloc_info_line, &site->line) ||
	    !rv_view_try(s, &v, RVL_alloc_info_mid, &mid) ||
	    !rv_view_try(s, &v, RVL_alloc_info_generation, &site->generation))
		return false;
	/* nil or false: no method (dump_all's RTEST) */
	bool method = mid && !rv_is_nil(s, mid);
	site->path = path ? path_text(s, a, path, nomem) : NULL;
	site->method = method ? method_text(s, a, mid, nomem) : NULL;
	return (!path || site->path) && (!method || site->method);
}

struct walk {
	struct rv_alloc_sites *a;
	bool nomem;
};

static struct cs_error *table_entry(struct rv_session *s, uint64_t obj,
				    uint64_t info, void *ctx)
{
	struct walk *w = ctx;
	int found;
	if (!obj || (u64map_get(&w->a->by_object, obj, &found), found))
		return NULL; /* an object once, as st_lookup finds it */
	struct rv_alloc_site *site = calloc(1, sizeof(*site));
	if (!site || !u64map_put(&w->a->by_object, obj, site)) {
		free(site);
		return &cs_error_nomem;
	}
	site->unreadable = !info || !read_site(s, w->a, info, site, &w->nomem);
	return w->nomem ? &cs_error_nomem : NULL;
}

/* Why the Ruby's layout cannot read the table, or NULL when it can. */
static const char *lacking(struct rv_session *s)
{
	static const enum rv_item_id needed[] = {
		RVL_trace_object_table,    RVL_alloc_info_path,
		RVL_alloc_info_line,       RVL_alloc_info_mid,
		RVL_alloc_info_generation, RVL_st_entries,
		RVL_st_entries_start,      RVL_st_entries_bound,
		RVL_st_entry_size,         RVL_st_entry_key,
		RVL_st_entry_record};
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (s->layout.items[needed[i]].source == RV_MISSING)
			return rv_layout_item_name(needed[i]);
	return NULL;
}

static void set_error(struct rv_alloc_sites *a, const char *what,
		      const char *why)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "ObjectSpace.trace_object_allocations' table: %s%s", what,
		 why);
	a->error = strdup(buf);
}

struct cs_error *rv_alloc_sites_read(struct rv_session *s,
				     struct rv_alloc_sites *a)
{
	memset(a, 0, sizeof(*a));
	if (!RV_HAS(s, trace_arg)) {
		a->undescribed = rv_session_ext_unread(s, "objspace");
		return NULL;
	}
	uint64_t arg = 0, tbl = 0;
	const char *missing = NULL;
	struct cs_error *err = NULL;
	if (!rv_try_var(s, RVL_trace_arg, sizeof(arg), &arg)) {
		set_error(a, "tmp_trace_arg unreadable", "");
	} else if (!arg) {
		return NULL; /* tracing never ran */
	} else if ((missing = lacking(s))) {
		set_error(a, "the debug info lacks ", missing);
	} else if ((err = rv_read_member(s, arg, RVL_trace_object_table,
					 &tbl)) ||
		   !tbl) {
		set_error(a, "object_table unreadable", "");
	} else {
		struct walk w = {.a = a};
		err = rv_st_each_max(s, tbl, MAX_SITES, table_entry, &w);
		if (err == &cs_error_nomem || w.nomem) {
			rv_alloc_sites_free(a);
			return &cs_error_nomem;
		}
		if (err)
			set_error(a, "", err->message);
	}
	cs_error_destroy(err);
	if (a->error) { /* what was read is dropped: none of it shown */
		char *why = a->error;
		a->error = NULL;
		rv_alloc_sites_free(a);
		a->error = why;
		return why ? NULL : &cs_error_nomem;
	}
	return NULL;
}

const struct rv_alloc_site *rv_alloc_site_of(const struct rv_alloc_sites *a,
					     uint64_t obj)
{
	int found;
	return u64map_get(&a->by_object, obj, &found);
}

void rv_alloc_sites_free(struct rv_alloc_sites *a)
{
	u64map_free(&a->by_object, free);
	u64map_free(&a->paths, free);
	u64map_free(&a->methods, free);
	free(a->error);
	memset(a, 0, sizeof(*a));
}
