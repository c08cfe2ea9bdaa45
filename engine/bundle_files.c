/* See bundle_files.h. */
#include "bundle_files.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dwarf/module.h"
#include "../process/build_id.h"
#include "../process/module_search.h"
#include "../util/hex.h"
#include "engine.h"

static struct cs_error *add(struct cs_bundle_files *f, int kind,
			    const char *path, const char *file,
			    const uint8_t *id, size_t len)
{
	if (f->n == CS_BUNDLE_MAX_ENTRIES)
		return cs_error_create(CS_ERR_LIMIT,
				       "more than %d files to bundle",
				       CS_BUNDLE_MAX_ENTRIES);
	void *p = reallocarray(f->entries, f->n + 1, sizeof(*f->entries));
	if (!p)
		return &cs_error_nomem;
	f->entries = p;
	struct cs_bundle_entry *e = &f->entries[f->n];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->path = strdup(path);
	e->file = strdup(file);
	if (!id || len > sizeof(e->build_id))
		len = 0;
	if (len)
		memcpy(e->build_id, id, len);
	e->build_id_len = len;
	f->n++;
	return e->path && e->file ? NULL : &cs_error_nomem;
}

static void missing(struct cs_bundle_files *f, const char *fmt,
		    const char *path, const char *id)
{
	char *line;
	void *p =
		reallocarray(f->missing, f->nmissing + 1, sizeof(*f->missing));
	if (!p)
		return;
	f->missing = p;
	if (asprintf(&line, fmt, path, id) >= 0)
		f->missing[f->nmissing++] = line;
}

/* The separate debug file of the module at file, as an analysis finds
 * it, unless it is bundled already. */
static struct cs_error *add_debug(struct cs_bundle_files *f, const char *file,
				  const char *const *debug_dirs)
{
	struct dw_module *mod;
	struct cs_error *err = dw_module_open(file, debug_dirs, &mod);
	if (err) {
		cs_error_destroy(err);
		return NULL;
	}
	bool separate = mod->debug_path && mod->build_id_len >= 2 &&
			strcmp(mod->debug_path, mod->path) != 0;
	for (size_t i = 0; separate && i < f->n; i++)
		separate =
			!(f->entries[i].kind == CS_BUNDLE_DEBUG &&
			  cs_build_id_same(f->entries[i].build_id,
					   f->entries[i].build_id_len,
					   mod->build_id, mod->build_id_len));
	if (separate)
		err = add(f, CS_BUNDLE_DEBUG, mod->debug_path, mod->debug_path,
			  mod->build_id, mod->build_id_len);
	dw_module_close(mod);
	return err;
}

static bool is_elf(const char *path)
{
	FILE *fp = fopen(path, "rb");
	char head[4] = {0};
	bool elf = fp && fread(head, 1, 4, fp) == 4 &&
		   memcmp(head, "\177ELF", 4) == 0;
	if (fp)
		fclose(fp);
	return elf;
}

/* The module the target maps from m->path (first seen at mapping i). */
static struct cs_error *add_module(struct cs_bundle_files *f,
				   const struct cs_target *t, size_t i,
				   struct cs_module_search *search,
				   const char *const *debug_dirs)
{
	const struct cs_mapping *m = cs_target_mapping_at(t, i);
	uint8_t id[CS_BUNDLE_MAX_BUILD_ID];
	size_t len = 0;
	for (size_t k = i; k < cs_target_mapping_count(t) && !len; k++) {
		const struct cs_mapping *o = cs_target_mapping_at(t, k);
		if (o->file_offset || strcmp(o->path, m->path) != 0)
			continue;
		struct cs_error *err = cs_target_module_build_id(
			t, o->start, id, sizeof(id), &len);
		if (err)
			len = 0;
		cs_error_destroy(err);
	}
	const char *exe = cs_target_executable(t);
	bool is_exe = exe && strcmp(m->path, exe) == 0;
	char *file = cs_target_host_path(t, m->path);
	if (!file)
		return &cs_error_nomem;
	uint8_t have[CS_BUNDLE_MAX_BUILD_ID];
	bool ok = len ? cs_build_id_same(have,
					 cs_build_id_of_path(file, have,
							     sizeof(have)),
					 id, len)
		      : is_elf(file);
	const struct cs_module_found *found =
		!ok && len
			? cs_module_search_find(search, m->path, id, len, NULL)
			: NULL;
	if (found) {
		char *copy = strdup(found->file);
		if (!copy) {
			free(file);
			return &cs_error_nomem;
		}
		free(file);
		file = copy;
		ok = true;
	}
	char hex[2 * CS_BUNDLE_MAX_BUILD_ID + 1] = "unknown";
	if (len)
		cs_hex(id, len, hex);
	struct cs_error *err = NULL;
	if (ok) {
		if (!len)
			len = cs_build_id_of_path(file, id, sizeof(id));
		err = add(f, is_exe ? CS_BUNDLE_EXE : CS_BUNDLE_LIB, m->path,
			  file, id, len);
		if (!err)
			err = add_debug(f, file, debug_dirs);
	} else if (len || is_exe) {
		missing(f,
			"%s (build-id %s): no file with that build-id here "
			"(give it with --sysroot, --lib-search-path or "
			"EXECUTABLE)",
			m->path, hex);
	}
	free(file);
	return err;
}

struct cs_error *cs_bundle_files_find(const struct cs_target_request *req,
				      const char *const *debug_dirs,
				      struct cs_bundle_files *ret)
{
	memset(ret, 0, sizeof(*ret));
	/* With the Ruby open, its module search also looks in the Ruby's
	 * own directories ($LOAD_PATH), as an analysis does: where an
	 * extension loaded from a deleted copy (Ruby::Box) is found. A core
	 * whose Ruby cannot be read is bundled with the request's alone. */
	const struct cs_engine_request er = {.target = *req,
					     .debug_dirs = debug_dirs};
	struct cs_engine *engine = NULL;
	struct cs_error *err = cs_engine_open(&er, &engine);
	cs_error_destroy(err);
	err = NULL;
	struct cs_target *own = NULL;
	if (!engine && (err = cs_target_open(req, &own)))
		return err;
	const struct cs_target *t = engine ? engine->target : own;
	err = add(ret, CS_BUNDLE_CORE, req->core, req->core, NULL, 0);
	struct cs_module_search *search =
		engine ? engine->search
		       : cs_module_search_new(req->lib_search_path, debug_dirs);
	if (!search && !err)
		err = &cs_error_nomem;
	size_t n = cs_target_mapping_count(t);
	for (size_t i = 0; !err && i < n; i++) {
		const char *path = cs_target_mapping_at(t, i)->path;
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(cs_target_mapping_at(t, k)->path, path) ==
			       0;
		if (!seen)
			err = add_module(ret, t, i, search, debug_dirs);
	}
	if (!engine)
		cs_module_search_free(search);
	cs_engine_close(engine);
	cs_target_close(own);
	if (err)
		cs_bundle_files_free(ret);
	return err;
}

void cs_bundle_files_free(struct cs_bundle_files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->entries[i].path);
		free(f->entries[i].file);
	}
	for (size_t i = 0; i < f->nmissing; i++)
		free(f->missing[i]);
	free(f->entries);
	free(f->missing);
	memset(f, 0, sizeof(*f));
}
