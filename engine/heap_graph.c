/* The roots on stacks need a snapshot with every fiber and every frame's
 * locals; the model then walks the heap from them. */
#include <string.h>

#include "heap_graph.h"

static struct cs_error *stacks(struct rv_session *s, struct rv_process **p)
{
	struct cs_error *err = rv_snapshot(s, p);
	if (!err)
		err = rv_snapshot_fibers(s, *p);
	if (!err)
		err = rv_snapshot_locals(s, *p);
	return err;
}

struct cs_error *cs_engine_retainers(struct cs_engine *e,
				     const struct rv_retention_request *req,
				     struct rv_retention *ret)
{
	struct rv_session *s = e->ruby.session;
	struct rv_process *p = NULL;
	struct rv_retention_request with = *req;
	memset(ret, 0, sizeof(*ret));
	struct cs_error *err = stacks(s, &p);
	with.process = p;
	if (!err)
		err = rv_heap_retainers(s, &with, ret);
	rv_process_destroy(p);
	return err;
}

struct cs_error *cs_engine_dump(struct cs_engine *e,
				const struct rv_dump_callbacks *cb,
				struct rv_dump_stats *st)
{
	struct rv_session *s = e->ruby.session;
	struct rv_process *p = NULL;
	memset(st, 0, sizeof(*st));
	struct cs_error *err = stacks(s, &p);
	if (!err)
		err = rv_heap_dump(s, p, cb, st);
	rv_process_destroy(p);
	return err;
}
