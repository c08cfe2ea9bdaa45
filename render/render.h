/* Snapshot renderers: each writes a whole report in one format, and the
 * CLI (--json) and the debuggers' ruby-bt choose one from cs_renderers by
 * name. A report with native stacks (--native) carries them to every
 * renderer, which writes them as its format does.
 *
 * A new format is one file with its render function, declared here, and
 * one entry in render.c's table. */
#ifndef CS_CORESTACK_RENDER_H
#define CS_CORESTACK_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "../util/error.h"
#include "../engine/report.h"

struct cs_renderer {
	const char *name;
	void (*render)(FILE *out, const struct cs_report *r);
};

/* Every renderer, the default (text) first; ends with a NULL name. */
extern const struct cs_renderer cs_renderers[];

/* The renderer called name, or NULL. */
const struct cs_renderer *cs_renderer_find(const char *name);

/* The table's entries. */
void cs_render_text(FILE *out, const struct cs_report *r); /* render_text.c */
void cs_render_json(FILE *out, const struct cs_report *r); /* render_json.c */

/* With --json, input unusable as a whole (exit 2) still gives a document
 * on stdout, since tools parse stdout: the error's code and message and the
 * core (NULL for a live process) or the pid (<= 0 for a core) it was
 * reading. render_error.c */
void cs_render_error_json(FILE *out, const struct cs_error *err,
			  const char *core, int pid);

/* One frame as the text report prints it, unindented, with its newline. */
void cs_render_frame_text(FILE *out, const struct rv_process *p,
			  const struct rv_frame *f);
/* A frame's locals (rv_snapshot_locals) as the text format shows them under
 * the frame, one a line at indent; nothing when it has none. */
void cs_render_locals_text(FILE *out, const struct rv_frame *f, int indent);

#endif
