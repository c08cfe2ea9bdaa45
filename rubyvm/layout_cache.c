/* The on-disk layout cache: resolving a layout from compressed DWARF costs
 * tens of milliseconds, reading it back costs microseconds. Entries are
 * keyed by the module's build-id and stamped with the layout.def
 * fingerprint; anything that does not match exactly, or is short, is
 * ignored and rewritten. An entry is the header, the items, then the
 * enum lists (ENUMS), each checked on reading. Writes go to a temporary
 * file renamed into place, so a reader never sees half an entry. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../dwarf/module.h"
#include "layout.h"

#define CACHE_MAGIC "CSLAYOUT"

struct cache_header {
	char magic[8];
	uint64_t spec_hash;
	uint32_t build_id_len;
	uint8_t build_id[DW_BUILD_ID_MAX];
	uint32_t has_macros;
};

char *rv_cache_file(const char *dir, const char *name)
{
	char *path = NULL;
	if (dir) {
		if (asprintf(&path, "%s/%s", dir, name) < 0)
			return NULL;
		return path;
	}
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n = xdg && *xdg
			? asprintf(&path, "%s/corestack/layouts/%s", xdg, name)
		: home && *home
			? asprintf(&path, "%s/.cache/corestack/layouts/%s",
				   home, name)
			: -1;
	return n < 0 ? NULL : path;
}

/* BUILDID.layout, or for the items of a part of the layout (a layout of
 * other items than the same module's whole one) BUILDID.PART.layout: "gc"
 * for a GC library's GC_* items, an extension's name for its EXT_* ones */
static char *cache_path(const char *dir, const struct dw_module *mod,
			const char *part)
{
	char hex[2 * DW_BUILD_ID_MAX + 1], *name = NULL;
	dw_module_build_id_hex(mod, hex);
	if (asprintf(&name, "%s%s%s.layout", hex, part ? "." : "",
		     part ? part : "") < 0)
		return NULL;
	char *path = rv_cache_file(dir, name);
	free(name);
	return path;
}

static void header_for(const struct dw_module *mod, int has_macros,
		       struct cache_header *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, CACHE_MAGIC, 8);
	h->spec_hash = rv_layout_spec_hash();
	h->build_id_len = (uint32_t)mod->build_id_len;
	memcpy(h->build_id, mod->build_id, mod->build_id_len);
	h->has_macros = (uint32_t)has_macros;
}

static int load(const char *path, const struct dw_module *mod,
		struct rv_layout *l)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct cache_header want, got;
	header_for(mod, 0, &want);
	int ok = read(fd, &got, sizeof(got)) == (ssize_t)sizeof(got) &&
		 memcmp(got.magic, want.magic, 8) == 0 &&
		 got.spec_hash == want.spec_hash &&
		 got.build_id_len == want.build_id_len &&
		 memcmp(got.build_id, want.build_id, DW_BUILD_ID_MAX) == 0 &&
		 read(fd, l->items, sizeof(l->items)) ==
			 (ssize_t)sizeof(l->items) &&
		 read(fd, l->enums, sizeof(l->enums)) ==
			 (ssize_t)sizeof(l->enums);
	char extra;
	ok = ok && read(fd, &extra, 1) == 0;
	close(fd);
	for (int i = 0; ok && i < RVL_COUNT; i++)
		ok = l->items[i].source <= RV_FROM_ELF;
	for (int i = 0; ok && i < RVE_COUNT; i++)
		ok = rv_enum_list_valid(&l->enums[i]);
	l->has_macros = (int)got.has_macros;
	return ok;
}

int rv_cache_mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int r = mkdir(path, 0755);
		*p = '/';
		if (r != 0 && errno != EEXIST)
			return 0;
	}
	return 1;
}

/* Best effort: a cache that cannot be written only costs time. */
static void save(const char *path, const struct dw_module *mod,
		 const struct rv_layout *l)
{
	char *tmp = NULL;
	if (asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0)
		return;
	if (!rv_cache_mkdirs(tmp)) {
		free(tmp);
		return;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		struct cache_header h;
		header_for(mod, l->has_macros, &h);
		int ok = write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h) &&
			 write(fd, l->items, sizeof(l->items)) ==
				 (ssize_t)sizeof(l->items) &&
			 write(fd, l->enums, sizeof(l->enums)) ==
				 (ssize_t)sizeof(l->enums);
		ok = close(fd) == 0 && ok;
		if (!ok || rename(tmp, path) != 0)
			unlink(tmp);
	}
	free(tmp);
}

/* gc: the GC_* items alone, from the unit holding pc first; ext: the
 * EXT_* items of that extension alone */
static struct cs_error *layout_of(struct dw_module *mod, const char *cache_dir,
				  bool gc, uint64_t pc, const char *ext,
				  struct rv_layout *l, int *from_cache)
{
	*from_cache = 0;
	char *path = NULL;
	if (mod->build_id_len && !(cache_dir && !*cache_dir))
		path = cache_path(cache_dir, mod, gc ? "gc" : ext);
	if (path && load(path, mod, l)) {
		*from_cache = 1;
		free(path);
		return NULL;
	}
	struct dw_index *idx;
	struct cs_error *err = dw_index_create(mod, &idx);
	if (!err) {
		err = gc ? rv_layout_resolve_gc(
				   idx, pc ? dw_index_unit_at(idx, pc) : NULL,
				   l)
		      : ext ? rv_layout_resolve_ext(idx, ext, l)
			    : rv_layout_resolve(idx, l);
		dw_index_stats(idx, &l->units_read, &l->units_total);
		dw_index_destroy(idx);
	}
	if (!err && path)
		save(path, mod, l);
	free(path);
	return err;
}

struct cs_error *rv_layout_for_module(struct dw_module *mod,
				      const char *cache_dir,
				      struct rv_layout *l, int *from_cache)
{
	return layout_of(mod, cache_dir, false, 0, NULL, l, from_cache);
}

struct cs_error *rv_layout_for_gc_module(struct dw_module *mod, uint64_t pc,
					 const char *cache_dir,
					 struct rv_layout *l, int *from_cache)
{
	return layout_of(mod, cache_dir, true, pc, NULL, l, from_cache);
}

struct cs_error *rv_layout_for_ext_module(struct dw_module *mod,
					  const char *ext,
					  const char *cache_dir,
					  struct rv_layout *l, int *from_cache)
{
	return layout_of(mod, cache_dir, false, 0, ext, l, from_cache);
}
