/* The target interface: the lookups in the tables, the same for every
 * kind, and the defaults of the operations a kind leaves out. */
#include "target.h"
#include "build_id.h"

#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct cs_memory cs_target_memory(const struct cs_target *t)
{
	/* Straight to the kind's read: one indirection per read, which the
	 * model does millions of times. */
	struct cs_memory m = {.read = t->ops->read, .priv = t->priv};
	return m;
}

struct cs_prefetcher cs_target_prefetcher(const struct cs_target *t)
{
	struct cs_prefetcher p = {.prefetch = t->ops->prefetch,
				  .priv = t->priv};
	return p;
}

/* ---- the tables ---- */

const struct cs_thread *cs_tables_thread_at(const struct cs_target_tables *tt,
					    size_t i)
{
	return i < tt->nthreads ? &tt->threads[i] : NULL;
}

const struct cs_mapping *cs_tables_mapping_at(const struct cs_target_tables *tt,
					      size_t i)
{
	return i < tt->nmaps ? &tt->maps[i] : NULL;
}

/* How many of the n elements of size bytes at base have a key (the
 * uint64_t at offset in each, ascending) at most addr. */
static size_t rank_of(const void *base, size_t n, size_t size, size_t offset,
		      uint64_t addr)
{
	const unsigned char *p = base;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t key;
		memcpy(&key, p + mid * size + offset, sizeof(key));
		if (key <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct cs_mapping *cs_tables_mapping_of(const struct cs_target_tables *tt,
					      uint64_t addr)
{
	size_t r = rank_of(tt->maps, tt->nmaps, sizeof(*tt->maps),
			   offsetof(struct cs_mapping, start), addr);
	if (r == 0 || addr >= tt->maps[r - 1].end)
		return NULL;
	return &tt->maps[r - 1];
}

const struct cs_mapping *
cs_tables_find_mapping(const struct cs_target_tables *tt, const char *prefix)
{
	size_t plen = strlen(prefix);
	for (size_t i = 0; i < tt->nmaps; i++) {
		const char *path = tt->maps[i].path;
		const char *slash = strrchr(path, '/');
		const char *base = slash ? slash + 1 : path;
		if (strncmp(base, prefix, plen) == 0)
			return &tt->maps[i];
	}
	return NULL;
}

uint64_t cs_tables_auxv(const struct cs_target_tables *tt, uint64_t type)
{
	for (size_t i = 0; i < tt->nauxv; i++) {
		if (tt->auxv[2 * i] == AT_NULL)
			break;
		if (tt->auxv[2 * i] == type)
			return tt->auxv[2 * i + 1];
	}
	return 0;
}

/* The first region that ends above addr (nregions if none). */
static size_t region_after(const struct cs_target_tables *tt, uint64_t addr)
{
	return rank_of(tt->regions, tt->nregions, sizeof(*tt->regions),
		       offsetof(struct cs_region, end), addr);
}

bool cs_tables_region_of(const struct cs_target_tables *tt, uint64_t addr,
			 struct cs_region *ret)
{
	size_t i = region_after(tt, addr);
	if (i == tt->nregions || addr < tt->regions[i].start)
		return false;
	*ret = tt->regions[i];
	return true;
}

bool cs_tables_writable_next(const struct cs_target_tables *tt, uint64_t addr,
			     uint64_t *start, uint64_t *end)
{
	for (size_t i = region_after(tt, addr); i < tt->nregions; i++)
		if (tt->regions[i].write) {
			*start = tt->regions[i].start;
			*end = tt->regions[i].end;
			return true;
		}
	return false;
}

/* ---- the target ---- */

size_t cs_target_thread_count(const struct cs_target *t)
{
	return t->tables->nthreads;
}

const struct cs_thread *cs_target_thread_at(const struct cs_target *t, size_t i)
{
	return cs_tables_thread_at(t->tables, i);
}

bool cs_target_has_registers(const struct cs_target *t)
{
	return t->tables->has_registers;
}

const struct cs_thread **cs_target_threads(const struct cs_target *t)
{
	size_t n = cs_target_thread_count(t);
	const struct cs_thread **threads = calloc(n + 1, sizeof(*threads));
	for (size_t i = 0; threads && i < n; i++)
		threads[i] = cs_target_thread_at(t, i);
	return threads;
}

size_t cs_target_mapping_count(const struct cs_target *t)
{
	return t->tables->nmaps;
}

const struct cs_mapping *cs_target_mapping_at(const struct cs_target *t,
					      size_t i)
{
	return cs_tables_mapping_at(t->tables, i);
}

const struct cs_mapping *cs_target_mapping_of(const struct cs_target *t,
					      uint64_t addr)
{
	return cs_tables_mapping_of(t->tables, addr);
}

const struct cs_mapping *cs_target_find_mapping(const struct cs_target *t,
						const char *prefix)
{
	return cs_tables_find_mapping(t->tables, prefix);
}

uint64_t cs_target_auxv(const struct cs_target *t, uint64_t type)
{
	return cs_tables_auxv(t->tables, type);
}

const char *cs_target_executable(const struct cs_target *t)
{
	return t->tables->executable;
}

struct cs_error *cs_target_module_build_id(const struct cs_target *t,
					   uint64_t start, uint8_t *buf,
					   size_t bufsize, size_t *len)
{
	return t->ops->module_build_id(t->priv, start, buf, bufsize, len);
}

char *cs_target_host_path(const struct cs_target *t, const char *path)
{
	return t->ops->host_path ? t->ops->host_path(t->priv, path)
				 : strdup(path);
}

void cs_target_use_module_search(const struct cs_target *t,
				 struct cs_module_search *s)
{
	if (t->ops->use_module_search)
		t->ops->use_module_search(t->priv, s);
}

const struct cs_module_found *cs_target_module_found(const struct cs_target *t,
						     struct cs_module_search *s,
						     const struct cs_mapping *m)
{
	if (t->ops->module_found)
		return t->ops->module_found(t->priv, m);
	uint8_t want[64], have[64];
	size_t want_len = 0;
	struct cs_error *err = cs_target_module_build_id(
		t, m->start, want, sizeof(want), &want_len);
	if (err || !s) { /* not an ELF module, or its build-id unknown */
		cs_error_destroy(err);
		return NULL;
	}
	char *host = cs_target_host_path(t, m->path);
	size_t have_len = host ? cs_build_id_of_path(host, have, sizeof(have))
			       : 0;
	free(host);
	if (cs_build_id_same(have, have_len, want, want_len))
		return NULL; /* its own file will do */
	return cs_module_search_find(s, m->path, want, want_len, NULL);
}

const char *cs_target_mapping_gap(const struct cs_target *t)
{
	return t->ops->mapping_gap ? t->ops->mapping_gap(t->priv) : NULL;
}

bool cs_target_knows_regions(const struct cs_target *t)
{
	return t->tables->knows_regions;
}

/* The region table, current; false when none is known. */
static bool current_regions(const struct cs_target *t)
{
	return t->tables->knows_regions &&
	       (!t->ops->update_regions || t->ops->update_regions(t->priv));
}

bool cs_target_region_of(const struct cs_target *t, uint64_t addr,
			 struct cs_region *ret)
{
	return current_regions(t) && cs_tables_region_of(t->tables, addr, ret);
}

static bool writable_next(const void *priv, uint64_t addr, uint64_t *start,
			  uint64_t *end)
{
	const struct cs_target *t = priv;
	return current_regions(t) &&
	       cs_tables_writable_next(t->tables, addr, start, end);
}

struct cs_writable_regions cs_target_writable_regions(const struct cs_target *t)
{
	if (!t->tables->knows_regions)
		return (struct cs_writable_regions){NULL, NULL};
	return (struct cs_writable_regions){writable_next, t};
}

int cs_target_pid(const struct cs_target *t)
{
	return t->tables->pid;
}

const char *cs_target_command(const struct cs_target *t)
{
	return t->tables->command;
}

const char *cs_target_cwd(const struct cs_target *t)
{
	return t->tables->cwd;
}

const struct cs_siginfo *cs_target_siginfo(const struct cs_target *t)
{
	return t->tables->siginfo;
}

int64_t cs_target_crash_tid(const struct cs_target *t)
{
	return t->tables->crash_tid;
}

void cs_target_check_files(const struct cs_target *t)
{
	if (t->ops->check_files)
		t->ops->check_files(t->priv);
}

size_t cs_target_warning_count(const struct cs_target *t)
{
	return t->ops->warning_count ? t->ops->warning_count(t->priv) : 0;
}

const char *cs_target_warning_at(const struct cs_target *t, size_t i)
{
	return t->ops->warning_at ? t->ops->warning_at(t->priv, i) : NULL;
}

struct cs_error *cs_target_truncation(const struct cs_target *t)
{
	return t->ops->truncation ? t->ops->truncation(t->priv) : NULL;
}

bool cs_target_thread_syscall(const struct cs_target *t, int tid,
			      uint64_t nr_args[7], uint64_t *pc)
{
	return t->ops->thread_syscall &&
	       t->ops->thread_syscall(t->priv, tid, nr_args, pc);
}

bool cs_target_thread_blocked(const struct cs_target *t, int tid,
			      uint64_t *mask)
{
	return t->ops->thread_blocked &&
	       t->ops->thread_blocked(t->priv, tid, mask);
}

char *cs_target_describe_fd(const struct cs_target *t, int fd)
{
	return t->ops->describe_fd ? t->ops->describe_fd(t->priv, fd) : NULL;
}

void cs_target_release(const struct cs_target *t)
{
	if (t->ops->release)
		t->ops->release(t->priv);
}

void cs_target_close(struct cs_target *t)
{
	if (!t)
		return;
	if (t->ops->close)
		t->ops->close(t->priv);
	free(t);
}
