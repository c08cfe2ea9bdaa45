/* The roots on stacks need a snapshot with every fiber and every frame's
 * locals; the model then searches the heap from them. */
#include <string.h>

#include "retainers.h"

struct cs_error *cs_engine_retainers(struct cs_engine *e,
				     const struct rv_retention_request *req,
				     struct rv_retention *ret)
{
	struct rv_session *s = e->ruby.session;
	struct rv_process *p = NULL;
	struct rv_retention_request with = *req;
	memset(ret, 0, sizeof(*ret));
	struct cs_error *err = rv_snapshot(s, &p);
	if (!err)
		err = rv_snapshot_fibers(s, p);
	if (!err)
		err = rv_snapshot_locals(s, p);
	with.process = p;
	if (!err)
		err = rv_heap_retainers(s, &with, ret);
	rv_process_destroy(p);
	return err;
}
