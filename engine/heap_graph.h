/* The heap as a graph, in the process an engine holds (heap_graph.c):
 * what keeps objects alive (`corestack heap --retainers`, `ruby-heap
 * --retainers`) and every object with its references (`--dump`). */
#ifndef CS_ENGINE_HEAP_GRAPH_H
#define CS_ENGINE_HEAP_GRAPH_H

#include "../rubyvm/heap_dump.h"
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

/* The same roots, then every object, handed to cb (rv_heap_dump); *st is
 * always safe to free with rv_dump_stats_free. */
struct cs_error *cs_engine_dump(struct cs_engine *e,
				const struct rv_dump_callbacks *cb,
				struct rv_dump_stats *st);

#endif
