/* What keeps objects alive in the process an engine holds (retainers.c):
 * for the CLI's `corestack heap --retainers` and the debuggers'
 * `ruby-heap --retainers`. */
#ifndef CS_ENGINE_RETAINERS_H
#define CS_ENGINE_RETAINERS_H

#include "../rubyvm/heap_retainers.h"
#include "engine.h"

/* The threads, their fibers and their frames' locals read (the roots on
 * stacks), then the paths to what req names (its process is ignored);
 * the target stays as it is (a live process stays paused until the engine
 * closes). Fails only when nothing can be said; *ret is always safe to
 * free with rv_retention_free. */
struct cs_error *cs_engine_retainers(struct cs_engine *e,
				     const struct rv_retention_request *req,
				     struct rv_retention *ret);

#endif
