/* A live process as a target: its tables are the live reader's, and each
 * operation is the reader's own. Its files are on this machine at their
 * paths (the default host_path). */
#include "live_target.h"
#include "open.h"

#include <stdlib.h>

static struct cs_error *live_read(void *p, uint64_t addr, void *buf, size_t len)
{
	return cs_live_read(p, addr, buf, len);
}

static struct cs_error *live_build_id(void *p, uint64_t start, uint8_t *buf,
				      size_t bufsize, size_t *len)
{
	return cs_live_module_build_id(p, start, buf, bufsize, len);
}

static bool live_update_regions(void *p)
{
	return cs_live_update_regions(p);
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
#define LIVE_OPS                                             \
	.read = live_read, .module_build_id = live_build_id, \
	.update_regions = live_update_regions, .release = live_release

static const struct cs_target_ops live_view_ops = {LIVE_OPS};
static const struct cs_target_ops live_owned_ops = {LIVE_OPS,
						    .close = live_close};

static struct cs_target live_target(struct cs_live *live,
				    const struct cs_target_ops *ops)
{
	struct cs_target t = {
		.ops = ops,
		.priv = live,
		.tables = cs_live_tables(live),
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
