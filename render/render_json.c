/* JSON output for tools: the schema is documented in docs/json-schema.md;
 * CS_JSON_SCHEMA changes on any incompatible change. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../util/json.h"
#include "../process/crash_signal.h"
#include "render.h"

static void process(struct json *j, const struct cs_report *r)
{
	json_begin_object(j, "process");
	if (r->pid >= 0)
		json_int(j, "pid", r->pid);
	else
		json_null(j, "pid");
	json_string(j, "command", r->command);
	json_string(j, "cwd", r->cwd);
	json_string(j, "executable", r->executable);
	json_string(j, "ruby_module", r->vm_module);
	json_string(j, "ruby_version", r->ruby->ruby_version);
	json_string(j, "core", r->core_path);
	json_string(j, "source", r->core_path ? "core" : "live");
	if (r->bundle) {
		json_begin_object(j, "bundle");
		json_string(j, "file", r->bundle->source);
		json_int(j, "files", (int64_t)r->bundle->n - 1);
		json_end_object(j);
	} else {
		json_null(j, "bundle");
	}
	const struct cs_siginfo *si = r->siginfo;
	if (si && si->present && si->signo)
		cs_render_signal_json(j, "signal", si);
	else
		json_null(j, "signal");
	json_begin_array(j, "modules_found");
	for (size_t i = 0; i < r->nmodules_found; i++) {
		const struct cs_module_found *f = &r->modules_found[i];
		json_begin_object(j, NULL);
		json_string(j, "mapped", f->mapped);
		json_string(j, "file", f->file);
		json_string(j, "found_by", "build_id");
		json_string(j, "found_in", f->dir);
		json_string(j, "build_id", f->build_id);
		json_end_object(j);
	}
	json_end_array(j);
	json_end_object(j);
}

/* A target address as "0x..." (JSON numbers lose 64-bit precision), or
 * null when there is none. */
static void frame(struct json *j, const struct rv_frame *f)
{
	json_begin_object(j, NULL);
	json_string(j, "kind", f->kind == RV_FRAME_RUBY ? "ruby" : "cfunc");
	json_string(j, "label", f->label);
	json_string(j, "path", f->path);
	json_string(j, "absolute_path", f->realpath);
	json_int(j, "lineno", f->lineno);
	json_string(j, "qualified", f->qualified);
	json_string(j, "stable", f->stable);
	json_string(j, "error", f->error);
	json_address(j, "cfp", f->cfp);
	json_address(j, "iseq", f->iseq);
	json_address(j, "pc", f->pc);
	json_address(j, "cfunc", f->cfunc);
	json_bool(j, "pc_stale", f->pc_stale);
	json_bool(j, "jit_frame", f->jit_record);
	json_bool(j, "as_c_method", f->c_like != RV_NOT_C_LIKE);
	if (f->locals_read) { /* --locals */
		json_begin_array(j, "locals");
		for (size_t i = 0; i < f->nlocals; i++) {
			const struct rv_local *l = &f->locals[i];
			json_begin_object(j, NULL);
			json_string(j, "name", l->name);
			json_string(j, "value", l->value);
			json_string(j, "class", l->class_name);
			json_bool(j, "argument", l->argument);
			json_int(j, "outer", l->outer);
			json_end_object(j);
		}
		json_end_array(j);
		json_string(j, "locals_error", f->locals_error);
		if (f->self_value) {
			json_begin_object(j, "self");
			json_string(j, "value", f->self_value);
			json_string(j, "class", f->self_class);
			json_end_object(j);
		} else {
			json_null(j, "self");
		}
	}
	json_end_object(j);
}

static void waiting_on(struct json *j, const struct cs_report *r, size_t i)
{
	const struct rv_wait *w = &r->ruby->threads[i].wait;
	if (w->kind == RV_WAIT_NONE) {
		json_null(j, "waiting_on");
		return;
	}
	json_begin_object(j, "waiting_on");
	cs_render_wait_head_json(j, w);
	cs_render_waits_for_json(j, w);
	cs_render_wait_objects_json(j, w);
	cs_render_wait_target_json(j, r, i);
	json_end_object(j);
}

static void ractor_of(struct json *j, const struct rv_ractor *r)
{
	if (!r->present) {
		json_null(j, "ractor");
		return;
	}
	json_begin_object(j, "ractor");
	json_int(j, "id", r->id);
	json_string(j, "name", r->name);
	json_end_object(j);
}

static void stack(struct json *j, bool truncated, size_t cut,
		  const struct rv_frame *frames, size_t n, const char *error)
{
	json_bool(j, "truncated", truncated);
	if (truncated && cut)
		json_int(j, "frames_cut", (int64_t)cut);
	else if (truncated)
		json_null(j, "frames_cut");
	else
		json_int(j, "frames_cut", 0);
	json_begin_array(j, "frames");
	for (size_t i = 0; i < n; i++)
		frame(j, &frames[i]);
	json_end_array(j);
	json_string(j, "error", error);
}

/* The fibers of thread t (NULL: orphans). */
static void fiber_list(struct json *j, const char *key,
		       const struct rv_process *p, const struct rv_thread *t,
		       const struct rv_fiber *fibers, size_t n)
{
	if (!p->fibers_read) {
		json_null(j, key);
		return;
	}
	json_begin_array(j, key);
	for (size_t i = 0; i < n; i++) {
		const struct rv_fiber *f = &fibers[i];
		json_begin_object(j, NULL);
		json_address(j, "object", f->object);
		json_address(j, "fiber", f->addr);
		json_string(j, "status", rv_fiber_status_name(f->status));
		if (f->blocking < 0)
			json_null(j, "blocking");
		else
			json_bool(j, "blocking", f->blocking);
		json_bool(j, "root", f->is_root);
		json_bool(j, "current", f->is_current);
		cs_render_fiber_wait_json(j, f);
		cs_render_fiber_locks_json(j, p, t, f);
		stack(j, f->truncated, f->frames_cut, f->frames, f->nframes,
		      f->error);
		json_end_object(j);
	}
	json_end_array(j);
}

/* --native: native frames, merged stacks, threads that run no Ruby. */
static void native_frame(struct json *j, const struct cs_native_frame *f)
{
	json_string(j, "function", f->function);
	json_string(j, "file", f->file);
	json_int(j, "line", f->line);
	json_string(j, "module", f->module);
	json_hex_string(j, "pc", f->pc);
	json_bool(j, "inlined", f->inlined);
	json_bool(j, "handler", f->handler);
	if (f->jit) {
		json_begin_object(j, "jit");
		json_string(j, "name", f->jit);
		json_hex_string(j, "region_start", f->jit_start);
		json_hex_string(j, "region_end", f->jit_end);
		json_end_object(j);
	} else {
		json_null(j, "jit");
	}
	json_string(j, "found_by", cs_native_found_by_name(f->found_by));
	json_bool(j, "not_code", f->not_code);
}

static void native_frames(struct json *j, const char *key,
			  const struct cs_native_thread *t)
{
	json_begin_array(j, key);
	for (size_t k = 0; t && k < t->nframes; k++) {
		json_begin_object(j, NULL);
		native_frame(j, &t->frames[k]);
		json_end_object(j);
	}
	json_end_array(j);
}

/* Inside thread i's object: "native_tid", "native", "native_error",
 * "merged", "merge_error". */
static void native_stack(struct json *j, const struct cs_report *r, size_t i)
{
	const struct rv_thread *t = &r->ruby->threads[i];
	const struct cs_merged_stack *m = &r->merged[i];
	const struct cs_native_thread *nt = cs_report_native_of(r, i);
	if (nt)
		json_int(j, "native_tid", nt->tid);
	else
		json_null(j, "native_tid");
	native_frames(j, "native", nt);
	json_string(j, "native_error", nt ? nt->error : NULL);
	json_begin_array(j, "merged");
	for (size_t k = 0; k < m->nframes; k++) {
		const struct cs_merged_frame *f = &m->frames[k];
		json_begin_object(j, NULL);
		const char *kind = !f->ruby                          ? "native"
				   : f->ruby->kind == RV_FRAME_CFUNC ? "cfunc"
								     : "ruby";
		json_string(j, "kind", kind);
		if (f->ruby) {
			/* the frame's index in "frames" */
			json_int(j, "frame", (long long)(f->ruby - t->frames));
			json_string(j, "label", f->ruby->label);
		}
		if (f->native)
			native_frame(j, f->native);
		json_end_object(j);
	}
	json_end_array(j);
	json_string(j, "merge_error", m->error);
	if (m->cut)
		json_int(j, "merge_cut", (long long)m->cut_at);
	else
		json_null(j, "merge_cut");
	json_bool(j, "off_native", m->off_native);
}

static void native_only(struct json *j, const struct cs_report *r)
{
	json_begin_array(j, "native_threads");
	for (size_t i = 0;
	     r->native_all && r->native && i < r->native->nthreads; i++) {
		const struct cs_native_thread *t = &r->native->threads[i];
		if (cs_report_is_ruby_tid(r, t->tid))
			continue;
		json_begin_object(j, NULL);
		json_int(j, "tid", t->tid);
		json_bool(j, "crashed", t->tid == r->crash_tid);
		native_frames(j, "native", t);
		json_string(j, "error", t->error);
		json_end_object(j);
	}
	json_end_array(j);
}

static void thread(struct json *j, const struct cs_report *r, size_t i)
{
	const struct rv_thread *t = &r->ruby->threads[i];
	int64_t tid = r->tids[i];
	json_begin_object(j, NULL);
	if (tid >= 0)
		json_int(j, "tid", tid);
	else
		json_null(j, "tid");
	json_string(j, "tid_error", r->tid_errors ? r->tid_errors[i] : NULL);
	json_address(j, "thread", t->addr);
	json_string(j, "name", t->name);
	json_bool(j, "main", t->is_main);
	json_bool(j, "gvl", t->holds_gvl);
	json_string(j, "status", rv_thread_status_name(t->status));
	json_string(j, "state", rv_thread_state_name(t->state));
	waiting_on(j, r, i);
	json_bool(j, "blocking_region", t->wait.blocking_region);
	cs_render_system_call_json(j, r, i);
	ractor_of(j, &t->ractor);
	cs_render_locks_json(j, r->ruby, i);
	cs_render_exception_json(j, t);
	stack(j, t->truncated, t->frames_cut, t->frames, t->nframes, t->error);
	fiber_list(j, "fibers", r->ruby, t, t->fibers, t->nfibers);
	json_bool(j, "crashed", r->crash_tid >= 0 && tid == r->crash_tid);
	if (r->native)
		native_stack(j, r, i);
	json_end_object(j);
}

void cs_render_json(FILE *out, const struct cs_report *r,
		    const struct cs_render_options *o)
{
	struct json j = {.out = out};
	cs_render_json_report(&j, NULL, r, o);
}

void cs_render_json_report(struct json *j, const char *key,
			   const struct cs_report *r,
			   const struct cs_render_options *o)
{
	const bool *shown = o ? o->shown : NULL;
	json_begin_object(j, key);
	json_int(j, "corestack_schema", CS_JSON_SCHEMA);
	json_int(j, "corestack_schema_minor", CS_JSON_SCHEMA_MINOR);
	process(j, r);
	cs_render_gc_json(j, r);
	cs_render_crash_json(j, r, shown);
	json_begin_array(j, "threads");
	for (size_t i = 0; i < r->ruby->nthreads; i++)
		if (!shown || shown[i])
			thread(j, r, i);
	json_end_array(j);
	cs_render_deadlocks_json(j, r->ruby);
	fiber_list(j, "orphan_fibers", r->ruby, NULL, r->ruby->orphan_fibers,
		   r->ruby->norphan_fibers);
	if (r->ruby->fibers_read) {
		static const char *const found_by[] = {
			[RV_FIBERS_HEAP_WALK] = "heap-walk",
			[RV_FIBERS_MEMORY_SCAN] = "memory-scan",
		};
		json_begin_object(j, "heap");
		json_string(j, "found_by", found_by[r->ruby->fibers_found_by]);
		json_int(j, "pages", (int64_t)r->ruby->heap_pages);
		json_int(j, "bytes", (int64_t)r->ruby->heap_bytes);
		json_string(j, "note", r->ruby->fibers_note);
		json_end_object(j);
	} else {
		json_null(j, "heap");
	}
	if (r->native_all)
		native_only(j, r);
	json_bool(j, "complete", r->complete);
	json_begin_array(j, "errors");
	if (r->ruby->error)
		json_string(j, NULL, r->ruby->error);
	if (r->ruby->fibers_error)
		json_string(j, NULL, r->ruby->fibers_error);
	json_end_array(j);
	json_begin_array(j, "warnings");
	for (size_t i = 0; i < r->nwarnings; i++)
		json_string(j, NULL, r->warnings[i]);
	json_end_array(j);
	json_end_object(j);
}
