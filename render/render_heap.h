/* The heap census (corestack heap) and what keeps objects alive
 * (--retainers) as text or JSON (render_heap.c, render_retainers.c; the
 * JSON is documented in docs/json-schema.md, "The heap census"). */
#ifndef CS_RENDER_HEAP_H
#define CS_RENDER_HEAP_H

#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>

#include "../util/json.h"

#include "../rubyvm/heap_census.h"
#include "../rubyvm/heap_dump.h"
#include "../rubyvm/heap_retainers.h"

/* Bump on incompatible changes of the heap document; the minor on
 * compatible additions. */
#define CS_HEAP_SCHEMA 1
#define CS_HEAP_SCHEMA_MINOR 3

/* Where the census was taken: a core (core set) or a live process. */
struct cs_heap_source {
	const char *core;
	int pid;    /* <= 0: unknown */
	size_t top; /* class rows shown at most */
};

/* The head every heap document starts with: its schema numbers, kind,
 * completeness and source; the caller closes the object. */
void cs_render_heap_head(struct json *j, const char *kind, bool complete,
			 const struct cs_heap_source *src);
void cs_render_heap_text(FILE *out, const struct rv_census *c,
			 const struct cs_heap_source *src);
void cs_render_heap_json(FILE *out, const struct rv_census *c,
			 const struct cs_heap_source *src);

void cs_render_retainers_text(FILE *out, const struct rv_retention *r,
			      const struct cs_heap_source *src);
void cs_render_retainers_json(FILE *out, const struct rv_retention *r,
			      const struct cs_heap_source *src);

/* The heap dump (render_heap_dump.c), through a JSON lines writer
 * (j->lines) the caller finishes: one ROOT line of a category's roots,
 * one line of an object. false when writing failed. */
bool cs_render_dump_roots(struct json *j, const char *category,
			  const uint64_t *refs, size_t n);
bool cs_render_dump_object(struct json *j, const struct rv_dump_object *o);
/* Writes the dump's lines to a stream as rv_heap_dump hands them over
 * (malloc it: it holds the JSON writer's buffer). finish: the last lines
 * out and flushed; false when writing failed. */
struct cs_dump_writer {
	struct json j;
};
struct rv_dump_callbacks cs_dump_writer_start(struct cs_dump_writer *w,
					      FILE *out);
bool cs_dump_writer_finish(struct cs_dump_writer *w);
/* What a dump wrote to path, for the console (text or JSON). */
void cs_render_dump_summary_text(FILE *out, const struct rv_dump_stats *st,
				 const char *path);
void cs_render_dump_summary_json(FILE *out, const struct rv_dump_stats *st,
				 const struct cs_heap_source *src,
				 const char *path);

#endif
