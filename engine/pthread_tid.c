/* The tid glibc keeps for a thread, from the thread's own memory.
 *
 * A Ruby that keeps only a pthread_t for a thread (2.7, 3.0) leaves the
 * core's NT_PRSTATUS notes as the only source of its tid; a damaged note
 * would then go unnoticed. glibc's struct pthread (what a pthread_t points
 * to) records the kernel tid too (set by clone, cleared at exit), so when
 * libc's debug info says where, the tid can be read a second way and the
 * two compared (thread_tids.c). The member's place comes from DWARF, like
 * every CRuby layout: nothing here knows glibc's struct. */
#include "pthread_tid.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../dwarf/index.h"
#include "../dwarf/module.h"
#include "../dwarf/types.h"
#include "../rubyvm/layout.h"
#include "../util/hex.h"

/* Opening libc's debug info costs tens of milliseconds, far more than a
 * warm run: the member's place is kept in the layout cache's directory,
 * in BUILD-ID.pthread-tid (libc's build-id, read from the target). */
static char *cache_of(const struct cs_target *img, const struct cs_mapping *m,
		      const char *cache_dir)
{
	uint8_t id[64];
	size_t len = 0;
	if (cache_dir && !*cache_dir)
		return NULL;
	struct cs_error *err =
		cs_target_module_build_id(img, m->start, id, sizeof(id), &len);
	if (err || !len) {
		cs_error_destroy(err);
		return NULL;
	}
	char name[2 * sizeof(id) + sizeof(".pthread-tid")];
	cs_hex(id, len, name);
	strcat(name, ".pthread-tid");
	return rv_cache_file(cache_dir, name);
}

static bool cache_load(const char *path, struct cs_pthread_tid *ret)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	uint64_t off, size;
	bool ok = f && fscanf(f, "%" SCNu64 " %" SCNu64, &off, &size) == 2 &&
		  (size == 4 || size == 8) && off < (1u << 20);
	if (f)
		fclose(f);
	if (ok)
		*ret = (struct cs_pthread_tid){true, off, size};
	return ok;
}

/* Best effort, through a temporary file renamed into place. */
static void cache_save(const char *path, const struct cs_pthread_tid *l)
{
	char *tmp = NULL;
	if (!path || asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0)
		return;
	FILE *f = rv_cache_mkdirs(tmp) ? fopen(tmp, "we") : NULL;
	bool ok = f && fprintf(f, "%" PRIu64 " %" PRIu64 "\n", l->offset,
			       l->size) > 0;
	if (f)
		ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0)
		unlink(tmp);
	free(tmp);
}

static void from_dwarf(const struct cs_target *img, const struct cs_mapping *m,
		       const char *const *debug_dirs,
		       struct cs_pthread_tid *ret)
{
	char *host = cs_target_host_path(img, m->path);
	struct dw_module *mod = NULL;
	struct dw_index *idx = NULL;
	struct cs_error *err = host ? dw_module_open(host, debug_dirs, &mod)
				    : &cs_error_nomem;
	if (!err)
		err = dw_index_create(mod, &idx);
	/* glibc defines struct pthread for nptl; pthread_create.c uses it */
	static const char *const units[] = {"pthread_create.c", NULL};
	Dwarf_Die die;
	struct dw_member tid;
	struct cs_error *merr = NULL;
	if (!err &&
	    dw_index_find(idx, DW_NAME_STRUCT, "pthread", units, 0, &die,
			  NULL) &&
	    !(merr = dw_type_member(&die, "tid", &tid)) &&
	    (tid.size == 4 || tid.size == 8) && !tid.bit_size)
		*ret = (struct cs_pthread_tid){
			.known = true, .offset = tid.offset, .size = tid.size};
	cs_error_destroy(merr);
	cs_error_destroy(err);
	dw_index_destroy(idx);
	dw_module_close(mod);
	free(host);
}

void cs_pthread_tid_layout(const struct cs_target *img,
			   const char *const *debug_dirs, const char *cache_dir,
			   struct cs_pthread_tid *ret)
{
	*ret = (struct cs_pthread_tid){0};
	const struct cs_mapping *m = cs_target_find_mapping(img, "libc.so");
	if (!m)
		m = cs_target_find_mapping(img, "libc-");
	if (!m || m->file_offset != 0)
		return;
	char *cache = cache_of(img, m, cache_dir);
	if (!cache_load(cache, ret)) {
		from_dwarf(img, m, debug_dirs, ret);
		if (ret->known) /* not "none": debug info may come later */
			cache_save(cache, ret);
	}
	free(cache);
}

int64_t cs_pthread_tid_read(const struct cs_pthread_tid *l,
			    const struct cs_memory *mem, uint64_t pthread)
{
	if (!l->known || !pthread)
		return -1;
	uint64_t v = 0; /* little-endian: a 4-byte tid in the low bytes */
	struct cs_error *err =
		cs_memory_read(mem, pthread + l->offset, &v, l->size);
	if (err) {
		cs_error_destroy(err);
		return -1;
	}
	int64_t tid = l->size == 4 ? (int64_t)(int32_t)v : (int64_t)v;
	return tid > 0 ? tid : -1;
}
