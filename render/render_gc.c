/* The GC state of a snapshot (rv_gc_state) in text and JSON. Formatting
 * only. */
#include <stdio.h>

#include "../util/json.h"
#include "../engine/report.h"

void cs_render_gc_text(FILE *out, const struct cs_report *r)
{
	const struct rv_gc_state *g = &r->ruby->gc;
	if (!g->known) {
		fprintf(out, "GC: unknown (%s)\n", g->error ? g->error : "?");
		return; /* the reason names a library it could not read */
	}
	if (g->during_gc)
		fprintf(out, "GC: running, %s", rv_gc_phase_name(g->phase));
	else if (g->phase != RV_GC_NONE) /* a lazy sweep between its steps */
		fprintf(out, "GC: not running (%s, incremental)",
			rv_gc_phase_name(g->phase));
	else
		fputs("GC: not running", out);
	if (g->count_known)
		fprintf(out, "; %llu GCs so far", (unsigned long long)g->count);
	if (g->library)
		fprintf(out, "; GC library %s", g->library);
	fputc('\n', out);
}

void cs_render_gc_json(struct json *j, const struct cs_report *r)
{
	const struct rv_gc_state *g = &r->ruby->gc;
	json_begin_object(j, "gc");
	if (g->known) {
		json_bool(j, "in_gc", g->during_gc);
		json_string(j, "phase", rv_gc_phase_name(g->phase));
	} else {
		json_null(j, "in_gc");
		json_null(j, "phase");
	}
	if (g->count_known)
		json_int(j, "count", (int64_t)g->count);
	else
		json_null(j, "count");
	json_string(j, "error", g->error);
	json_string(j, "library", g->library);
	json_end_object(j);
}
