/* A live process as a target: each operation is the live reader's. Its
 * files are on this machine at their paths (the default host_path). */
#include "live_target.h"
#include "open.h"

#include <stdlib.h>

static struct cs_error *live_read(void *p, uint64_t addr, void *buf, size_t len)
{
	return cs_live_read(p, addr, buf, len);
}

static size_t live_thread_count(const void *p)
{
	return cs_live_thread_count(p);
}

static const struct cs_thread *live_thread_at(const void *p, size_t i)
{
	return cs_live_thread_at(p, i);
}

static bool live_has_registers(const void *p)
{
	return cs_live_has_registers(p);
}

static size_t live_mapping_count(const void *p)
{
	return cs_live_mapping_count(p);
}

static const struct cs_mapping *live_mapping_at(const void *p, size_t i)
{
	return cs_live_mapping_at(p, i);
}

static const struct cs_mapping *live_mapping_of(const void *p, uint64_t addr)
{
	return cs_live_mapping_of(p, addr);
}

static const struct cs_mapping *live_find_mapping(const void *p,
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

static bool live_writable_next(const void *p, uint64_t addr, uint64_t *start,
			       uint64_t *end)
{
	/* the regions are read on first use: the cache is not the target */
	return cs_live_writable_next((struct cs_live *)p, addr, start, end);
}

static int live_pid(const void *p)
{
	return cs_live_pid(p);
}

static const char *live_command(const void *p)
{
	return cs_live_command(p);
}

static const char *live_cwd(const void *p)
{
	return cs_live_cwd(p);
}

static bool live_region_of(const void *p, uint64_t addr, struct cs_region *ret)
{
	/* the regions are read on first use: the cache is not the target */
	return cs_live_region_of((struct cs_live *)p, addr, ret);
}

static void live_release(void *p)
{
	cs_live_detach(p);
}

static void live_close(void *p)
{
	cs_live_close(p);
}

/* Every operation but close: a view leaves the attachment open. */
#define LIVE_OPS                                                               \
	.read = live_read, .thread_count = live_thread_count,                  \
	.thread_at = live_thread_at, .has_registers = live_has_registers,      \
	.mapping_count = live_mapping_count, .mapping_at = live_mapping_at,    \
	.mapping_of = live_mapping_of, .find_mapping = live_find_mapping,      \
	.auxv = live_auxv, .executable = live_executable,                      \
	.module_build_id = live_build_id, .pid = live_pid,                     \
	.command = live_command, .cwd = live_cwd, .region_of = live_region_of, \
	.release = live_release, .writable_next = live_writable_next

static const struct cs_target_ops live_view_ops = {LIVE_OPS};
static const struct cs_target_ops live_owned_ops = {LIVE_OPS,
						    .close = live_close};

static struct cs_target live_target(struct cs_live *live,
				    const struct cs_target_ops *ops)
{
	struct cs_target t = {
		.ops = ops,
		.priv = live,
		.name = cs_live_name(live),
		.comm = "",
		.what = "process",
	};
	return t;
}

struct cs_target cs_target_of_live(struct cs_live *live)
{
	return live_target(live, &live_view_ops);
}

static bool wanted(const struct cs_target_request *req)
{
	return req->pid > 0;
}

static struct cs_error *open_target(const struct cs_target_request *req,
				    struct cs_target **ret)
{
	*ret = NULL;
	struct cs_live *live;
	struct cs_error *err = cs_live_attach(req->pid, req->pause, &live);
	if (err)
		return err;
	if (!(*ret = malloc(sizeof(**ret)))) {
		cs_live_close(live);
		return &cs_error_nomem;
	}
	**ret = live_target(live, &live_owned_ops);
	return NULL;
}

/* Listed in process/open.c. */
extern const struct cs_target_kind cs_live_target_kind;
const struct cs_target_kind cs_live_target_kind = {
	.name = "process",
	.wanted = wanted,
	.open = open_target,
};
