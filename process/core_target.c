/* An ELF core file as a target: its tables are the core reader's, and
 * each operation is the reader's own. */
#include "core_target.h"
#include "open.h"

#include <stdlib.h>

static struct cs_error *core_read(void *p, uint64_t addr, void *buf, size_t len)
{
	return cs_core_read(p, addr, buf, len);
}

static void core_prefetch(void *p, uint64_t addr, size_t len)
{
	cs_core_prefetch(p, addr, len);
}

static struct cs_error *core_build_id(void *p, uint64_t start, uint8_t *buf,
				      size_t bufsize, size_t *len)
{
	return cs_core_module_build_id(p, start, buf, bufsize, len);
}

static char *core_host_path(void *p, const char *path)
{
	return cs_core_host_path(p, path);
}

static void core_use_module_search(void *p, struct cs_module_search *s)
{
	cs_core_use_module_search(p, s);
}

static const struct cs_module_found *
core_module_found(void *p, const struct cs_mapping *m)
{
	return cs_core_module_found(p, m);
}

static const char *core_mapping_gap(const void *p)
{
	return cs_core_mapping_gap(p);
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
	.module_build_id = core_build_id, .host_path = core_host_path,      \
	.mapping_gap = core_mapping_gap, .check_files = core_check_files,   \
	.warning_count = core_warning_count, .warning_at = core_warning_at, \
	.truncation = core_truncation,                                      \
	.use_module_search = core_use_module_search,                        \
	.module_found = core_module_found

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
		.tables = cs_core_tables(core),
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
	cs_core_set_file_map(core, req->file_map);
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
