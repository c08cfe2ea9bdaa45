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

/* How to render a report: what the one asking chooses, never what the
 * report found. All zero (or a NULL pointer to it): the whole report. */
struct cs_render_options {
	const bool *shown; /* per Ruby thread: rendered? NULL: all */
	/* text: "#N " before each frame of a thread's own stack, the number
	 * a debugger's ruby-frame takes (not with native stacks) */
	bool frame_numbers;
	/* text: the threads without the process header (a debugger's stack
	 * of one thread, which the header would repeat) */
	bool no_header;
	/* text: per Ruby thread, the debugger's name for it, written after
	 * its tid ("tid 4242, gdb thread 3"), or NULL; NULL: none */
	const char *const *thread_names;
	/* text: who holds what alone (a debugger's ruby-locks): the
	 * deadlocks, then the line of each thread that waits on something
	 * or holds a mutex, without the process header, stacks and fibers */
	bool locks_only;
};

struct cs_renderer {
	const char *name;
	void (*render)(FILE *out, const struct cs_report *r,
		       const struct cs_render_options *o);
};

/* Every renderer, the default (text) first; ends with a NULL name. */
extern const struct cs_renderer cs_renderers[];

/* The renderer called name, or NULL. */
const struct cs_renderer *cs_renderer_find(const char *name);

/* The table's entries. */
void cs_render_text(FILE *out, const struct cs_report *r,
		    const struct cs_render_options *o); /* render_text.c */
void cs_render_json(FILE *out, const struct cs_report *r,
		    const struct cs_render_options *o); /* render_json.c */
struct json;
/* The JSON report as an object under key (NULL in an array) of a
 * document being written (a directory's per-core reports). */
void cs_render_json_report(struct json *j, const char *key,
			   const struct cs_report *r,
			   const struct cs_render_options *o);

/* With --json, input unusable as a whole (exit 2) still gives a document
 * on stdout, since tools parse stdout: the error's code and message and the
 * core (NULL for a live process) or the pid (<= 0 for a core) it was
 * reading. render_error.c */
void cs_render_error_json(FILE *out, const struct cs_error *err,
			  const char *core, int pid);

/* One frame as the text report prints it, unindented, with its newline,
 * and its locals (if read) at column under: under its text when the
 * caller printed something before it. */
void cs_render_frame_text(FILE *out, const struct rv_process *p,
			  const struct rv_frame *f, int under);
/* A frame's locals (rv_snapshot_locals) as the text format shows them under
 * the frame, one a line at indent; nothing when it has none. */
void cs_render_locals_text(FILE *out, const struct rv_frame *f, int indent);

#endif
