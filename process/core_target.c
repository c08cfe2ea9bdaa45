/* An ELF core file as a target: each operation is the core reader's. */
#include "core_target.h"
#include "open.h"

#include <stdlib.h>

#include "crash_signal.h"

static struct cs_error *core_read(void *p, uint64_t addr, void *buf, size_t len)
{
	return cs_core_read(p, addr, buf, len);
}

static void core_prefetch(void *p, uint64_t addr, size_t len)
{
	cs_core_prefetch(p, addr, len);
}

static size_t core_thread_count(const void *p)
{
	return cs_core_thread_count(p);
}

static const struct cs_thread *core_thread_at(const void *p, size_t i)
{
	return cs_core_thread_at(p, i);
}

static size_t core_mapping_count(const void *p)
{
	return cs_core_mapping_count(p);
}

static const struct cs_mapping *core_mapping_at(const void *p, size_t i)
{
	return cs_core_mapping_at(p, i);
}

static const struct cs_mapping *core_mapping_of(const void *p, uint64_t addr)
{
	return cs_core_mapping_of(p, addr);
}

static const struct cs_mapping *core_find_mapping(const void *p,
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

static bool core_region_of(const void *p, uint64_t addr, struct cs_region *ret)
{
	return cs_core_region_of(p, addr, ret);
}

static bool core_writable_next(const void *p, uint64_t addr, uint64_t *start,
			       uint64_t *end)
{
	return cs_core_writable_next(p, addr, start, end);
}

static int core_pid(const void *p)
{
	const struct cs_core_process *ps = cs_core_process(p);
	return ps->present ? ps->pid : -1;
}

static const char *core_command(const void *p)
{
	const struct cs_core_process *ps = cs_core_process(p);
	return ps->present ? ps->psargs : NULL;
}

static const struct cs_siginfo *core_siginfo(const void *p)
{
	return cs_core_siginfo(p);
}

static int64_t core_crash_tid(const void *p)
{
	return cs_core_crash_tid(p);
}

static void core_check_files(void *p)
{
	cs_core_check_files(p);
}

static size_t core_warning_count(const void *p)
{
	return cs_core_warning_count(p);
}

static const char *core_warning_at(const void *p, size_t i)
{
	return cs_core_warning_at(p, i);
}

static struct cs_error *core_truncation(const void *p)
{
	return cs_core_truncation(p);
}

static void core_close(void *p)
{
	cs_core_close(p);
}

/* Every operation but close: a view of a core leaves it open. */
#define CORE_OPS                                                            \
	.read = core_read, .prefetch = core_prefetch,                       \
	.thread_count = core_thread_count, .thread_at = core_thread_at,     \
	.mapping_count = core_mapping_count, .mapping_at = core_mapping_at, \
	.mapping_of = core_mapping_of, .find_mapping = core_find_mapping,   \
	.auxv = core_auxv, .executable = core_executable,                   \
	.module_build_id = core_build_id, .host_path = core_host_path,      \
	.mapping_gap = core_mapping_gap, .region_of = core_region_of,       \
	.writable_next = core_writable_next, .pid = core_pid,               \
	.command = core_command, .siginfo = core_siginfo,                   \
	.crash_tid = core_crash_tid, .check_files = core_check_files,       \
	.warning_count = core_warning_count, .warning_at = core_warning_at, \
	.truncation = core_truncation

static const struct cs_target_ops core_view_ops = {CORE_OPS};
static const struct cs_target_ops core_owned_ops = {CORE_OPS,
						    .close = core_close};

static struct cs_target core_target(struct cs_core *core,
				    const struct cs_target_ops *ops)
{
	const struct cs_core_process *p = cs_core_process(core);
	struct cs_target t = {
		.ops = ops,
		.priv = core,
		.name = cs_core_path(core),
		.comm = p->present ? p->fname : "",
		.what = "core",
		.dump = true,
	};
	return t;
}

struct cs_target cs_target_of_core(struct cs_core *core)
{
	return core_target(core, &core_view_ops);
}

static bool wanted(const struct cs_target_request *req)
{
	return req->core != NULL;
}

static struct cs_error *open_target(const struct cs_target_request *req,
				    struct cs_target **ret)
{
	*ret = NULL;
	struct cs_core *core = NULL;
	struct cs_error *err;
	if ((err = cs_core_open(req->core, &core)) ||
	    (err = cs_core_set_sysroot(core, req->sysroot)) ||
	    (err = cs_core_set_lib_search_path(core, req->lib_search_path)) ||
	    (err = cs_core_set_executable(core, req->executable))) {
		cs_core_close(core);
		return err;
	}
	if (!(*ret = malloc(sizeof(**ret)))) {
		cs_core_close(core);
		return &cs_error_nomem;
	}
	**ret = core_target(core, &core_owned_ops);
	return NULL;
}

/* Listed in process/open.c. */
extern const struct cs_target_kind cs_core_target_kind;
const struct cs_target_kind cs_core_target_kind = {
	.name = "core",
	.wanted = wanted,
	.open = open_target,
};
