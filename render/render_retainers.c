/* What keeps objects alive (corestack heap --retainers) as text and JSON.
 * Formatting only. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/json.h"
#include "render_heap.h"

static const char *root_kind(enum rv_root_kind k)
{
	switch (k) {
	case RV_ROOT_GLOBAL:
		return "global";
	case RV_ROOT_CONSTANT:
		return "constant";
	case RV_ROOT_LOCAL:
		return "local";
	case RV_ROOT_SELF:
		return "self";
	case RV_ROOT_VM_STACK:
		return "vm_stack";
	case RV_ROOT_REGISTER:
		return "register";
	case RV_ROOT_MACHINE_STACK:
		return "machine_stack";
	case RV_ROOT_FIBER_STACK:
		return "fiber_machine_stack";
	case RV_ROOT_REGISTERED:
		return "registered_address";
	case RV_ROOT_MARK_OBJECT:
		return "mark_object";
	case RV_ROOT_FINALIZER:
		return "finalizer";
	}
	return "unknown";
}

/* "global $x", "local keep in Foo#bar of thread 2 (0x...)" */
static void root_text(FILE *out, const struct rv_root *r)
{
	switch (r->kind) {
	case RV_ROOT_GLOBAL:
		fprintf(out, "global variable %s", r->name ? r->name : "?");
		return;
	case RV_ROOT_CONSTANT:
		fprintf(out, "constant %s", r->name ? r->name : "?");
		return;
	case RV_ROOT_LOCAL:
		fprintf(out, "local %s in %s", r->name ? r->name : "?",
			r->frame ? r->frame : "?");
		break;
	case RV_ROOT_SELF:
		fprintf(out, "self of %s", r->frame ? r->frame : "?");
		break;
	case RV_ROOT_VM_STACK:
		fputs("the VM stack", out);
		break;
	case RV_ROOT_REGISTER:
		fprintf(out, "register %s (conservatively)",
			r->name ? r->name : "?");
		break;
	case RV_ROOT_MACHINE_STACK:
		fputs("the machine stack (conservatively)", out);
		break;
	case RV_ROOT_FIBER_STACK:
		fputs("the saved machine stack (conservatively)", out);
		break;
	case RV_ROOT_REGISTERED:
		fprintf(out, "the C global at %s (rb_gc_register_address)",
			r->name ? r->name : "?");
		return;
	case RV_ROOT_MARK_OBJECT:
		fputs("the VM's mark objects (rb_gc_register_mark_object)",
		      out);
		return;
	case RV_ROOT_FINALIZER:
		fprintf(out, "the finalizers of %s", r->name ? r->name : "?");
		return;
	}
	fprintf(out, " of thread %zu (0x%" PRIx64 ")", r->thread_index + 1,
		r->thread);
	if (r->fiber)
		fprintf(out, ", fiber 0x%" PRIx64, r->fiber);
}

/* How the hop before holds this one: "@items", "[1]", "value of "k"",
 * "field owner" (an imemo's member), "data +16" (a T_DATA's). */
static void via_text(FILE *out, const struct rv_ref_label *v)
{
	const char *kind = v->kind ? v->kind : "?";
	if (!strcmp(kind, "constant"))
		fprintf(out, "::%s", v->name ? v->name : "?");
	else if (!strcmp(kind, "local"))
		fprintf(out, "local %s", v->name ? v->name : "?");
	else if (!strcmp(kind, "env"))
		fputs("captured env", out);
	else if (!strcmp(kind, "outer"))
		fputs("outer env", out);
	else if (!strcmp(kind, "field"))
		fprintf(out, "field %s", v->name ? v->name : "?");
	else if (!strcmp(kind, "data"))
		fprintf(out, "data +%" PRId64, v->index);
	else if (v->name) /* an ivar */
		fputs(v->name, out);
	else if (!strcmp(kind, "value"))
		fprintf(out, "value of key %s", v->key ? v->key : "?");
	else if (!strcmp(kind, "key"))
		fprintf(out, "key of entry %" PRId64, v->index);
	else if (!strcmp(kind, "member"))
		fprintf(out, "member %" PRId64, v->index);
	else if (!strcmp(kind, "element"))
		fprintf(out, "[%" PRId64 "]", v->index);
	else
		fputs(kind, out);
}

void cs_render_retainers_text(FILE *out, const struct rv_retention *r,
			      const struct cs_heap_source *src)
{
	(void)src;
	if (r->instances)
		fprintf(out, "%" PRIu64 " instances; the %zu largest:\n\n",
			r->instances, r->npaths);
	for (size_t i = 0; i < r->npaths; i++) {
		const struct rv_retainer_path *p = &r->paths[i];
		fprintf(out, "0x%" PRIx64 " %s (%" PRIu64 " bytes)", p->target,
			p->class_name ? p->class_name : "?", p->bytes);
		if (!p->found) {
			fputs(": no path from the roots read\n\n", out);
			continue;
		}
		fputs(" is kept alive by ", out);
		root_text(out, &p->root);
		fputs(":\n", out);
		for (size_t k = 0; k < p->nhops; k++) {
			const struct rv_retain_hop *h = &p->hops[k];
			fputs("  ", out);
			if (k)
				via_text(out, &h->via);
			else
				fputs("(root)", out);
			fprintf(out, " -> %s%s%s 0x%" PRIx64 "\n",
				h->class_name, h->name ? " " : "",
				h->name ? h->name : "", h->object);
		}
		if (p->error)
			fprintf(out, "  (a hop not described: %s)\n", p->error);
		fputc('\n', out);
	}
	fprintf(out,
		"%" PRIu64 " roots, %" PRIu64 " objects reached; %" PRIu64
		" of types whose references are not followed (docs/heap.md)\n",
		r->roots, r->reached, r->not_decoded);
	if (rv_retention_partial(r))
		fprintf(out, "Partial: %s\n",
			r->error ? r->error
				 : "objects whose references are not followed "
				   "may hold what has no path");
}

static void hop_json(struct json *j, const struct rv_retain_hop *h)
{
	json_begin_object(j, NULL);
	json_address(j, "object", h->object);
	json_string(j, "class", h->class_name);
	if (h->name)
		json_string(j, "name", h->name);
	if (h->via.kind) {
		json_begin_object(j, "via");
		json_string(j, "kind", h->via.kind);
		if (h->via.name)
			json_string(j, "name", h->via.name);
		if (h->via.key)
			json_string(j, "key", h->via.key);
		if (h->via.index >= 0)
			json_int(j, "index", h->via.index);
		json_end_object(j);
	} else {
		json_null(j, "via");
	}
	json_end_object(j);
}

void cs_render_retainers_json(FILE *out, const struct rv_retention *r,
			      const struct cs_heap_source *src)
{
	struct json j = {.out = out};
	cs_render_heap_head(&j, "heap_retainers", !rv_retention_partial(r),
			    src);
	if (r->instances)
		json_int(&j, "instances", (int64_t)r->instances);
	json_int(&j, "roots", (int64_t)r->roots);
	json_int(&j, "reached", (int64_t)r->reached);
	json_int(&j, "not_decoded", (int64_t)r->not_decoded);
	json_int(&j, "unreadable", (int64_t)r->unreadable);
	/* threads whose machine stack could not be read (no registers) */
	json_int(&j, "machine_stacks_unread", (int64_t)r->machine_unread);
	json_begin_array(&j, "targets");
	for (size_t i = 0; i < r->npaths; i++) {
		const struct rv_retainer_path *p = &r->paths[i];
		json_begin_object(&j, NULL);
		json_address(&j, "object", p->target);
		json_string(&j, "class", p->class_name);
		json_int(&j, "bytes", (int64_t)p->bytes);
		json_bool(&j, "found", p->found);
		if (p->found) {
			json_begin_object(&j, "root");
			json_string(&j, "kind", root_kind(p->root.kind));
			json_string(&j, "name", p->root.name);
			json_string(&j, "frame", p->root.frame);
			json_address(&j, "thread", p->root.thread);
			json_address(&j, "fiber", p->root.fiber);
			json_end_object(&j);
			json_begin_array(&j, "path");
			for (size_t k = 0; k < p->nhops; k++)
				hop_json(&j, &p->hops[k]);
			json_end_array(&j);
		}
		json_string(&j, "error", p->error);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_string(&j, "error", r->error);
	json_end_object(&j);
}
