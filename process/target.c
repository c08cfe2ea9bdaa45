/* The target interface's defaults: what an operation a kind leaves out
 * means. */
#include "target.h"

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

size_t cs_target_thread_count(const struct cs_target *t)
{
	return t->ops->thread_count ? t->ops->thread_count(t->priv) : 0;
}

const struct cs_thread *cs_target_thread_at(const struct cs_target *t, size_t i)
{
	return t->ops->thread_at ? t->ops->thread_at(t->priv, i) : NULL;
}

bool cs_target_has_registers(const struct cs_target *t)
{
	return !t->ops->has_registers || t->ops->has_registers(t->priv);
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
	return t->ops->mapping_count(t->priv);
}

const struct cs_mapping *cs_target_mapping_at(const struct cs_target *t,
					      size_t i)
{
	return t->ops->mapping_at(t->priv, i);
}

const struct cs_mapping *cs_target_mapping_of(const struct cs_target *t,
					      uint64_t addr)
{
	return t->ops->mapping_of(t->priv, addr);
}

const struct cs_mapping *cs_target_find_mapping(const struct cs_target *t,
						const char *prefix)
{
	return t->ops->find_mapping(t->priv, prefix);
}

uint64_t cs_target_auxv(const struct cs_target *t, uint64_t type)
{
	return t->ops->auxv(t->priv, type);
}

const char *cs_target_executable(const struct cs_target *t)
{
	return t->ops->executable(t->priv);
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

const char *cs_target_mapping_gap(const struct cs_target *t)
{
	return t->ops->mapping_gap ? t->ops->mapping_gap(t->priv) : NULL;
}

bool cs_target_knows_regions(const struct cs_target *t)
{
	return t->ops->region_of != NULL;
}

bool cs_target_region_of(const struct cs_target *t, uint64_t addr,
			 struct cs_region *ret)
{
	return t->ops->region_of && t->ops->region_of(t->priv, addr, ret);
}

struct cs_writable_regions cs_target_writable_regions(const struct cs_target *t)
{
	return (struct cs_writable_regions){t->ops->writable_next, t->priv};
}

int cs_target_pid(const struct cs_target *t)
{
	return t->ops->pid ? t->ops->pid(t->priv) : -1;
}

const char *cs_target_command(const struct cs_target *t)
{
	return t->ops->command ? t->ops->command(t->priv) : NULL;
}

const char *cs_target_cwd(const struct cs_target *t)
{
	return t->ops->cwd ? t->ops->cwd(t->priv) : NULL;
}

const struct cs_siginfo *cs_target_siginfo(const struct cs_target *t)
{
	return t->ops->siginfo ? t->ops->siginfo(t->priv) : NULL;
}

int64_t cs_target_crash_tid(const struct cs_target *t)
{
	return t->ops->crash_tid ? t->ops->crash_tid(t->priv) : -1;
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
