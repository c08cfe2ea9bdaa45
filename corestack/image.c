#include "image.h"

#include <stdio.h>

#include "live.h"

#include <string.h>

static size_t core_mapping_count(const void *p)
{
	return cs_core_mapping_count(p);
}

static const struct cs_core_mapping *core_mapping_at(const void *p, size_t i)
{
	return cs_core_mapping_at(p, i);
}

static const struct cs_core_mapping *core_mapping_of(const void *p,
						     uint64_t addr)
{
	return cs_core_mapping_of(p, addr);
}

static const struct cs_core_mapping *core_find_mapping(const void *p,
						       const char *prefix)
{
	return cs_core_find_mapping(p, prefix);
}

static uint64_t core_auxv(const void *p, uint64_t type)
{
	return cs_core_auxv(p, type);
}

static const char *core_executable(void *p)
{
	return cs_core_executable(p);
}

static struct cs_error *core_build_id(void *p, uint64_t start, uint8_t *buf,
				      size_t bufsize, size_t *len)
{
	return cs_core_module_build_id(p, start, buf, bufsize, len);
}

static char *core_host_path(const void *p, const char *path)
{
	return cs_core_host_path(p, path);
}

static const char *core_mapping_gap(const void *p)
{
	return cs_core_mapping_gap(p);
}

static bool core_region_of(const void *priv, uint64_t addr,
			   struct cs_region *ret)
{
	return cs_core_region_of(priv, addr, ret);
}

static const struct cs_image_ops core_ops = {
	core_mapping_count, core_mapping_at, core_mapping_of,
	core_find_mapping,  core_auxv,       core_executable,
	core_build_id,      core_host_path,  core_mapping_gap,
	core_region_of,
};

struct cs_image cs_image_of_core(struct cs_core *core)
{
	const struct cs_core_process *p = cs_core_process(core);
	struct cs_image img = {
		.ops = &core_ops,
		.priv = core,
		.name = cs_core_path(core),
		.comm = p->present ? p->fname : "",
		.what = "core",
	};
	return img;
}

static size_t live_mapping_count(const void *p)
{
	return cs_live_mapping_count(p);
}

static const struct cs_core_mapping *live_mapping_at(const void *p, size_t i)
{
	return cs_live_mapping_at(p, i);
}

static const struct cs_core_mapping *live_mapping_of(const void *p,
						     uint64_t addr)
{
	return cs_live_mapping_of(p, addr);
}

static const struct cs_core_mapping *live_find_mapping(const void *p,
						       const char *prefix)
{
	return cs_live_find_mapping(p, prefix);
}

static uint64_t live_auxv(const void *p, uint64_t type)
{
	return cs_live_auxv(p, type);
}

static const char *live_executable(void *p)
{
	return cs_live_executable(p);
}

static struct cs_error *live_build_id(void *p, uint64_t start, uint8_t *buf,
				      size_t bufsize, size_t *len)
{
	return cs_live_module_build_id(p, start, buf, bufsize, len);
}

/* A live process's files are on this machine, at their paths. */
static char *live_host_path(const void *p, const char *path)
{
	(void)p;
	return strdup(path);
}

static const struct cs_image_ops live_ops = {
	live_mapping_count, live_mapping_at, live_mapping_of,
	live_find_mapping,  live_auxv,       live_executable,
	live_build_id,      live_host_path,  NULL,
	NULL,
};

struct cs_image cs_image_of_live(struct cs_live *live)
{
	struct cs_image img = {
		.ops = &live_ops,
		.priv = live,
		.name = cs_live_name(live),
		.comm = "",
		.what = "process",
	};
	return img;
}
