/* What a run found, ready to render: process header from the core or the
 * live process, plus the Ruby model's snapshot. Renderers only format; they
 * decide nothing. */
#ifndef CS_CORESTACK_REPORT_H
#define CS_CORESTACK_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "../rubyvm/model.h"
#include "core.h"

/* Bump on incompatible changes of the JSON output (docs/json-schema.md). */
#define CS_JSON_SCHEMA 1

struct cs_report {
	const char *core_path; /* NULL for a live process */
	const char *executable;
	const char *vm_module; /* libruby.so, or the executable if static */
	int pid;               /* -1 when unknown */
	const char *command;   /* NULL when unknown */
	const struct cs_core_siginfo *siginfo;
	const struct rv_process *ruby;
	const int64_t *tids;   /* per Ruby thread: kernel tid or -1 */
	const bool *shown;     /* per Ruby thread: rendered? NULL: all */
	char **warnings;
	size_t nwarnings;
	int complete;
};

void cs_render_text(FILE *out, const struct cs_report *r);
void cs_render_json(FILE *out, const struct cs_report *r);

#endif
