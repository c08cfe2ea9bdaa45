#include "backtrace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/report.h"
#include "../render/render.h"
#include "../render/render_heap.h"
#include "../engine/heap_graph.h"
#include "../rubyvm/heap_census.h"
#include "../util/cli_args.h"
#include "../engine/engine.h"

/* The engine over the inferior the source names: a core file, a live
 * process without ptrace (the debugger is the tracer and holds it
 * stopped), or the debugger's inferior as a target (remote targets),
 * which debugger keeps for the engine's life. */
static struct cs_error *open_engine(const struct gx_source *src,
				    const struct gx_backtrace_request *req,
				    struct cs_target *debugger,
				    struct cs_engine **ret)
{
	struct cs_engine_request r = {
		.debug_dirs = src->debug_dirs,
		.debug_dir_advice = src->debug_dir_advice,
		.model = {.frame_flags = req->frame_flags},
	};
	r.target.executable = src->executable;
	switch (src->kind) {
	case GX_SOURCE_CORE:
		r.target.core = src->core_path;
		r.target.sysroot = src->sysroot;
		r.target.lib_search_path = src->lib_search_path;
		break;
	case GX_SOURCE_LIVE:
		/* Unpaused: the debugger holds the process stopped already,
		 * and as its tracer it forbids a second one. Every read is a
		 * system call, and the process stands still while the
		 * debugger holds it: cache pages for this command. */
		r.target.pid = src->pid;
		r.target.stopped = src->stopped;
		r.target.stop_signal = src->stop_signal;
		r.target.threads = src->threads;
		r.target.nthreads = src->nthreads;
		r.page_cache = true;
		break;
	case GX_SOURCE_DEBUGGER:
		/* Every read is a round trip through the debugger: keep the
		 * pages a snapshot reads again and again. */
		*debugger = gx_inferior_target(src->debugger);
		r.borrowed = debugger;
		r.page_cache = true;
		break;
	default:
		*ret = NULL;
		return cs_error_create(CS_ERR_USAGE, "unknown source");
	}
	return cs_engine_open(&r, ret);
}

/* The kernel threads to find the Ruby threads' tids among: the target's
 * when they carry registers or, for other targets, the debugger's (asked
 * only when a Ruby thread has no kernel tid of its own). */
struct hinted {
	const struct gx_backtrace_request *req;
	struct cs_thread *store; /* what the debugger gave */
};

static struct cs_error *kernel_threads(void *ctx, const struct cs_target *t,
				       const struct rv_process *p,
				       const struct cs_thread ***ret, size_t *n)
{
	struct hinted *h = ctx;
	*ret = NULL;
	*n = 0;
	bool own = cs_target_has_registers(t) && cs_target_thread_count(t) > 0;
	size_t count = own ? cs_target_thread_count(t) : 0;
	struct gx_thread_hint *hints = NULL;
	bool needed = false;
	for (size_t i = 0; i < p->nthreads; i++)
		needed |= p->threads[i].tid < 0 && p->threads[i].pthread_id;
	if (!own && needed && h->req->hints &&
	    !h->req->hints(h->req->hints_ctx, &hints, &count)) {
		free(hints);
		hints = NULL;
		count = 0;
	}
	if (!own && !hints)
		count = 0;
	*ret = calloc(count + 1, sizeof(**ret));
	h->store = calloc(count + 1, sizeof(*h->store));
	if (!*ret || !h->store) {
		free(hints);
		return &cs_error_nomem;
	}
	for (size_t k = 0; k < count; k++) {
		if (own) {
			(*ret)[k] = cs_target_thread_at(t, k);
			continue;
		}
		h->store[k].tid = (int)hints[k].tid;
		h->store[k].fs_base = hints[k].fs_base;
		h->store[k].rsp = hints[k].rsp;
		(*ret)[k] = &h->store[k];
	}
	*n = count;
	free(hints);
	return NULL;
}

/* Which threads to show; CS_ERR_NO_THREAD naming a tid no Ruby thread has
 * (CS_ERR_FAULT when the thread list could not be read to the end: then
 * it may well have one). */
static struct cs_error *select_threads(const struct rv_process *p,
				       const int64_t *tids,
				       const struct gx_backtrace_request *req,
				       bool *shown)
{
	for (size_t i = 0; i < p->nthreads; i++)
		shown[i] = req->only_tids == NULL;
	for (size_t k = 0; req->only_tids && k < req->nonly; k++) {
		int found = 0;
		for (size_t i = 0; i < p->nthreads; i++)
			if (tids[i] == req->only_tids[k]) {
				shown[i] = true;
				found = 1;
			}
		if (!found && p->error)
			return cs_error_create(
				CS_ERR_FAULT,
				"LWP %lld is not among the Ruby threads read: "
				"the thread list is incomplete (%s); "
				"'ruby-bt all' shows those read",
				(long long)req->only_tids[k], p->error);
		if (!found && req->thread_name)
			return cs_error_create(
				CS_ERR_NO_THREAD,
				"%s (LWP %lld) runs no Ruby thread; "
				"'ruby-bt all' shows every Ruby thread",
				req->thread_name, (long long)req->only_tids[k]);
		if (!found)
			return cs_error_create(
				CS_ERR_NO_THREAD,
				"LWP %lld runs no Ruby thread; "
				"'ruby-bt all' shows every Ruby thread",
				(long long)req->only_tids[k]);
	}
	return NULL;
}

/* Not one Ruby thread read: an error, not an empty report, so that the
 * debugger shows one line (the CLI reports it as partial output). A fault
 * keeps the address that stopped the walk. */
static struct cs_error *nothing_read(void *ctx, const struct rv_process *p)
{
	const struct gx_source *src = ctx;
	if (p->nthreads > 0 || !p->error)
		return NULL;
	struct cs_error *err = cs_error_create(
		CS_ERR_FAULT,
		"no Ruby thread could be read: %s (the Ruby VM's memory is "
		"missing or damaged%s)",
		p->error,
		src->kind == GX_SOURCE_LIVE
			? "; try again, or take a core with gcore"
		: src->kind == GX_SOURCE_CORE || src->debugger->is_core
			? ": is the core complete? take a new one if you can"
			: "; try again");
	if (err != &cs_error_nomem) {
		err->has_address = p->has_error_address;
		err->address = p->error_address;
	}
	return err;
}

/* The report of s, with only the threads asked for, into *out. */
static struct cs_error *render(struct cs_snapshot *s,
			       const struct gx_backtrace_request *req,
			       char **out, int *complete)
{
	const struct rv_process *proc = s->proc;
	bool *shown = calloc(proc->nthreads + 1, sizeof(*shown));
	const char **names = calloc(proc->nthreads + 1, sizeof(*names));
	char *text = NULL;
	size_t size = 0;
	FILE *f = NULL;
	struct cs_error *err;
	if (!shown || !names) {
		err = &cs_error_nomem;
		goto out;
	}
	if ((err = select_threads(proc, s->tids.tids, req, shown)))
		goto out;
	/* One thread the debugger named: that thread alone, named so;
	 * else each thread by the debugger's name of its tid. */
	bool one = req->thread_name && req->nonly == 1;
	for (size_t i = 0; i < proc->nthreads; i++) {
		if (one) {
			names[i] = shown[i] ? req->thread_name : NULL;
			continue;
		}
		for (size_t k = 0; k < req->nnames; k++)
			if (s->tids.tids[i] >= 0 &&
			    req->name_tids[k] == s->tids.tids[i])
				names[i] = req->tid_names[k];
	}
	const struct cs_render_options options = {
		.shown = shown,
		.frame_numbers = true, /* what ruby-frame takes */
		.no_header = one,
		.thread_names = names,
		.locks_only = req->locks_only,
	};
	const struct cs_renderer *renderer = cs_renderer_find(req->format);
	if (!renderer) {
		err = cs_error_create(CS_ERR_USAGE, "no output format '%s'",
				      req->format);
		goto out;
	}
	if (!(f = open_memstream(&text, &size))) {
		err = &cs_error_nomem;
		goto out;
	}
	renderer->render(f, &s->report, &options);
	if (fclose(f) != 0) {
		err = &cs_error_nomem;
		free(text);
		goto out;
	}
	*out = text;
	*complete = s->report.complete;
out:
	free(names);
	free(shown);
	return err;
}

/* ruby-locals: frame req->frame of the one thread shown, and its locals. */
static struct cs_error *render_frame(struct cs_snapshot *s,
				     const struct gx_backtrace_request *req,
				     char **out)
{
	const struct rv_process *proc = s->proc;
	bool *shown = calloc(proc->nthreads + 1, sizeof(*shown));
	struct cs_error *err =
		shown ? select_threads(proc, s->tids.tids, req, shown)
		      : &cs_error_nomem;
	const struct rv_thread *t = NULL;
	for (size_t i = 0; !err && i < proc->nthreads; i++)
		if (shown[i] && !t)
			t = &proc->threads[i];
	free(shown);
	if (err)
		return err;
	if (!t)
		return cs_error_create(CS_ERR_LOOKUP, "no Ruby thread");
	long n = req->frame;
	for (size_t i = 0; n == GX_FRAME_INNERMOST && i < t->nframes; i++)
		if (t->frames[i].kind == RV_FRAME_RUBY)
			n = (long)i;
	if (n < 0 || (size_t)n >= t->nframes)
		return cs_error_create(CS_ERR_LOOKUP,
				       "%s (ruby-bt shows frames 0 to %zu)",
				       n < 0 ? "the thread has no Ruby frame"
					     : "no such frame",
				       t->nframes ? t->nframes - 1 : 0);
	size_t size = 0;
	FILE *f = open_memstream(out, &size);
	if (!f)
		return &cs_error_nomem;
	const struct rv_frame *fr = &t->frames[n];
	int w = fprintf(f, "#%-2ld ", n); /* as ruby-bt numbers it */
	int under = (w > 0 ? w : 0) + 4;  /* under the frame's text */
	cs_render_frame_text(f, proc, fr, under);
	if (fr->kind != RV_FRAME_RUBY)
		fprintf(f, "%*s(a C method: no locals)\n", under, "");
	else if (!fr->nlocals && !fr->locals_error)
		fprintf(f, "%*s(no locals)\n", under, "");
	return fclose(f) == 0 ? NULL : &cs_error_nomem;
}

/* ruby-print: one VALUE and its class. */
static struct cs_error *render_value(struct cs_ruby *ruby, uint64_t v,
				     char **out)
{
	char *text = NULL, *klass = NULL;
	struct cs_error *err = rv_value_show(ruby->session, v, &text, &klass);
	if (err)
		return err;
	int n = klass ? asprintf(out, "%s  (%s)\n", text, klass)
		      : asprintf(out, "%s\n", text);
	if (n < 0) {
		*out = NULL;
		err = &cs_error_nomem;
	}
	free(text);
	free(klass);
	return err;
}

struct cs_error *gx_with_snapshot(const struct gx_source *src,
				  const struct gx_backtrace_request *req,
				  gx_snapshot_fn fn, void *ctx)
{
	struct cs_target debugger;
	struct cs_engine *engine;
	struct cs_error *err = open_engine(src, req, &debugger, &engine);
	if (err)
		return err;
	struct hinted hinted = {.req = req};
	struct cs_snapshot_options sopts = {
		/* every fiber, as corestack lists them */
		.fibers = true,
		.locals = req->locals || req->frame != GX_FRAME_NONE,
		/* a second record of a tid; the only one next to the stack
		 * pointer where the debugger shows no fs_base */
		.glibc_tids = true,
		.pid_hint = -1,
		.kernel_threads = kernel_threads,
		.kernel_threads_ctx = &hinted,
		.check = nothing_read,
		.check_ctx = (void *)src,
	};
	struct cs_snapshot snap;
	if (!(err = cs_engine_snapshot(engine, &sopts, &snap)))
		err = fn(ctx, &snap);
	cs_snapshot_free(&snap);
	free(hinted.store);
	cs_engine_close(engine);
	/* fn's error is its own, not made from the snapshot */
	// cppcheck-suppress returnDanglingLifetime
	return err;
}

struct rendering {
	const struct gx_backtrace_request *req;
	char **out;
	int *complete;
};

static struct cs_error *render_snapshot(void *ctx, struct cs_snapshot *s)
{
	struct rendering *r = ctx;
	if (r->req->frame == GX_FRAME_NONE)
		return render(s, r->req, r->out, r->complete);
	*r->complete = s->report.complete;
	return render_frame(s, r->req, r->out);
}

/* Where the heap was read, as corestack heap names it. */
static struct cs_heap_source heap_source(const struct gx_source *src,
					 const struct gx_backtrace_request *req,
					 const struct cs_engine *engine)
{
	/* through the debugger, its inferior says whether it runs */
	const struct cs_target *t = engine->target;
	return (struct cs_heap_source){
		src->kind == GX_SOURCE_CORE ? src->core_path
		: t->dump                   ? t->name
					    : NULL,
		src->kind == GX_SOURCE_LIVE ? src->pid : cs_target_pid(t),
		req->heap_top};
}

/* ruby-heap --retainers: the paths as corestack heap --retainers renders
 * them; a request that names no object or class is an error. */
static struct cs_error *render_retainers(const struct gx_source *src,
					 const struct gx_backtrace_request *req,
					 struct cs_engine *engine, FILE *f,
					 int *complete)
{
	struct rv_retention_request rr = {.top = req->heap_top};
	if (!strncmp(req->heap_retainers, "0x", 2) &&
	    !cli_hex_address(req->heap_retainers, &rr.address))
		return cs_error_create(CS_ERR_USAGE,
				       "--retainers takes an address in hex "
				       "(0x7f0012345678) or a class name, not "
				       "'%s'",
				       req->heap_retainers);
	if (!rr.address)
		rr.class_name = req->heap_retainers;
	struct rv_retention r;
	struct cs_error *err = cs_engine_retainers(engine, &rr, &r);
	if (!err && r.bad_input)
		err = cs_error_create(CS_ERR_USAGE, "%s", r.bad_input);
	if (!err) {
		const struct cs_heap_source hs = heap_source(src, req, engine);
		if (!strcmp(req->format, "json"))
			cs_render_retainers_json(f, &r, &hs);
		else
			cs_render_retainers_text(f, &r, &hs);
		*complete = !rv_retention_partial(&r);
	}
	rv_retention_free(&r);
	return err;
}

/* ruby-heap --dump: every object into the file, what was written (as
 * corestack heap --dump says it) the output; a file that cannot be
 * written, or a heap that cannot be walked, is an error. */
static struct cs_error *render_dump(const struct gx_source *src,
				    const struct gx_backtrace_request *req,
				    struct cs_engine *engine, FILE *f,
				    int *complete)
{
	FILE *file = fopen(req->heap_dump, "w");
	if (!file)
		return cs_error_create(CS_ERR_OS, "cannot write %s: %s",
				       req->heap_dump, strerror(errno));
	struct cs_dump_writer *w = malloc(sizeof(*w));
	struct rv_dump_stats st = {0};
	struct cs_error *err = w ? NULL : &cs_error_nomem;
	bool written = false;
	if (w) {
		const struct rv_dump_callbacks cb =
			cs_dump_writer_start(w, file);
		err = cs_engine_dump(engine, &cb, &st);
		written = cs_dump_writer_finish(w);
	}
	free(w);
	if (fclose(file) != 0)
		written = false;
	if (!err && (!written || st.stopped))
		err = cs_error_create(CS_ERR_OS, "writing %s failed",
				      req->heap_dump);
	if (!err && st.not_walked)
		err = cs_error_create(CS_ERR_LOOKUP, "%s", st.error);
	if (!err) {
		const struct cs_heap_source hs = heap_source(src, req, engine);
		if (!strcmp(req->format, "json"))
			cs_render_dump_summary_json(f, &st, &hs,
						    req->heap_dump);
		else
			cs_render_dump_summary_text(f, &st, req->heap_dump);
		*complete = !rv_dump_partial(&st);
	}
	rv_dump_stats_free(&st);
	return err;
}

/* ruby-heap: the census as corestack heap renders it; complete when no
 * page or object was skipped. A heap that cannot be walked is an error. */
static struct cs_error *render_census(const struct gx_source *src,
				      const struct gx_backtrace_request *req,
				      struct cs_engine *engine, FILE *f,
				      int *complete)
{
	struct rv_census census;
	struct cs_error *err = rv_heap_census(engine->ruby.session, &census);
	if (!err && census.not_walked)
		err = cs_error_create(CS_ERR_LOOKUP, "%s", census.error);
	if (!err) {
		const struct cs_heap_source hs = heap_source(src, req, engine);
		if (!strcmp(req->format, "json"))
			cs_render_heap_json(f, &census, &hs);
		else
			cs_render_heap_text(f, &census, &hs);
		*complete = !rv_census_partial(&census);
	}
	rv_census_free(&census);
	return err;
}

static struct cs_error *render_heap(const struct gx_source *src,
				    const struct gx_backtrace_request *req,
				    struct cs_engine *engine, char **out,
				    int *complete)
{
	size_t len;
	FILE *f = open_memstream(out, &len);
	if (!f)
		return &cs_error_nomem;
	struct cs_error *err =
		req->heap_retainers
			? render_retainers(src, req, engine, f, complete)
		: req->heap_dump ? render_dump(src, req, engine, f, complete)
				 : render_census(src, req, engine, f, complete);
	if (fclose(f) != 0 || !*out) {
		cs_error_destroy(err);
		err = &cs_error_nomem;
	}
	if (err) {
		free(*out);
		*out = NULL;
		*complete = 0;
	}
	return err;
}

struct cs_error *gx_backtrace(const struct gx_source *src,
			      const struct gx_backtrace_request *req,
			      char **out, int *complete)
{
	*out = NULL;
	*complete = 0;
	if (req->heap || req->show_value) {
		/* no snapshot: the engine's Ruby alone */
		struct cs_target debugger;
		struct cs_engine *engine;
		struct cs_error *err =
			open_engine(src, req, &debugger, &engine);
		if (err)
			return err;
		if (req->heap) {
			err = render_heap(src, req, engine, out, complete);
		} else {
			err = render_value(&engine->ruby, req->value, out);
			*complete = !err;
		}
		cs_engine_close(engine);
		return err;
	}
	struct rendering r = {req, out, complete};
	return gx_with_snapshot(src, req, render_snapshot, &r);
}
