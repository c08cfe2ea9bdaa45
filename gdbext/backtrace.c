#include "backtrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../corestack/core.h"
#include "../corestack/crash_signal.h"
#include "../corestack/live.h"
#include "../corestack/page_cache.h"
#include "../corestack/render.h"
#include "../corestack/thread_tids.h"
#include "../corestack/vm_module.h"
#include "../corestack/ruby_open.h"

/* The inferior opened for one command. */
struct opened {
	struct cs_core *core;
	struct cs_live *live;
	struct cs_page_cache cache; /* in front of the debugger's reads */
	int cached;
	struct cs_image img;
	struct rv_target target;
};

/* Put a page cache in front of *target. */
static struct cs_error *cached(struct opened *o, struct rv_target *target)
{
	if (!cs_page_cache_init(&o->cache, target))
		return &cs_error_nomem;
	o->cached = 1;
	*target = cs_page_cache_target(&o->cache);
	return NULL;
}

static struct cs_error *open_source(const struct gx_source *src,
				    struct opened *o)
{
	memset(o, 0, sizeof(*o));
	struct cs_error *err;
	switch (src->kind) {
	case GX_SOURCE_CORE:
		if ((err = cs_core_open(src->core_path, &o->core)) ||
		    (err = cs_core_set_executable(o->core, src->executable)))
			return err;
		o->img = cs_image_of_core(o->core);
		o->target = cs_core_target(o->core);
		return NULL;
	case GX_SOURCE_LIVE:
		/* Unpaused: the debugger holds the process stopped already,
		 * and as its tracer it forbids a second one. */
		if ((err = cs_live_attach(src->pid, 0, &o->live)))
			return err;
		o->img = cs_image_of_live(o->live);
		/* Every read is a system call, and the process stands still
		 * while the debugger holds it: cache pages for this command. */
		o->target = cs_live_target(o->live);
		return cached(o, &o->target);
	case GX_SOURCE_DEBUGGER:
		/* Every read is a round trip through the debugger: keep the
		 * pages a snapshot reads again and again. */
		o->img = gx_debugger_image(src->debugger);
		o->target = gx_debugger_image_target(src->debugger);
		return cached(o, &o->target);
	}
	return cs_error_create(CS_ERR_USAGE, "unknown source");
}

static void close_source(struct opened *o)
{
	cs_live_close(o->live);
	cs_core_close(o->core);
	if (o->cached)
		cs_page_cache_free(&o->cache);
}

/* The kernel threads to find the Ruby threads' tids among: the core's
 * or, for other sources, the debugger's (asked only when a Ruby thread has
 * no kernel tid of its own). *store holds what the debugger gave. */
static struct cs_error *kernel_threads(const struct opened *o,
				       const struct rv_process *p,
				       const struct gx_backtrace_request *req,
				       const struct cs_core_thread ***ret,
				       size_t *n, struct cs_core_thread **store)
{
	*ret = NULL;
	*n = 0;
	*store = NULL;
	size_t count = o->core ? cs_core_thread_count(o->core) : 0;
	struct gx_thread_hint *hints = NULL;
	bool needed = false;
	for (size_t i = 0; i < p->nthreads; i++)
		needed |= p->threads[i].tid < 0 && p->threads[i].pthread_id;
	if (!o->core && needed && req->hints &&
	    !req->hints(req->hints_ctx, &hints, &count)) {
		free(hints);
		hints = NULL;
		count = 0;
	}
	if (!o->core && !hints)
		count = 0;
	*ret = calloc(count + 1, sizeof(**ret));
	*store = calloc(count + 1, sizeof(**store));
	if (!*ret || !*store) {
		free(hints);
		return &cs_error_nomem;
	}
	for (size_t k = 0; k < count; k++) {
		if (o->core) {
			(*ret)[k] = cs_core_thread_at(o->core, k);
			continue;
		}
		(*store)[k].tid = (int)hints[k].tid;
		(*store)[k].fs_base = hints[k].fs_base;
		(*ret)[k] = &(*store)[k];
	}
	*n = count;
	free(hints);
	return NULL;
}

/* Which threads to show; CS_ERR_LOOKUP naming a tid no Ruby thread has
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
		if (!found)
			return cs_error_create(
				CS_ERR_LOOKUP,
				"LWP %lld runs no Ruby thread; "
				"'ruby-bt all' shows every Ruby thread",
				(long long)req->only_tids[k]);
	}
	return NULL;
}

/* Not one Ruby thread read: an error, not an empty report, so that the
 * debugger shows one line (the CLI reports it as partial output). */
static struct cs_error *nothing_read(const struct gx_source *src,
				     const struct rv_process *p)
{
	if (p->nthreads > 0 || !p->error)
		return NULL;
	return cs_error_create(
		CS_ERR_FAULT,
		"no Ruby thread could be read: %s (the Ruby VM's memory is "
		"missing or damaged%s)",
		p->error,
		src->kind == GX_SOURCE_LIVE
			? "; try again, or take a core with gcore"
		: src->kind == GX_SOURCE_CORE || src->debugger_is_core
			? ": is the core complete? take a new one if you can"
			: "; try again");
}

static struct cs_error *render(const struct gx_source *src,
			       const struct opened *o,
			       const struct cs_vm_module *vm,
			       const struct rv_process *proc,
			       const struct gx_backtrace_request *req, char **out,
			       int *complete)
{
	struct cs_thread_tids tids = {0};
	const struct cs_core_thread **natives = NULL;
	struct cs_core_thread *store = NULL;
	size_t nnatives = 0;
	bool *shown = calloc(proc->nthreads + 1, sizeof(*shown));
	struct cs_error *trunc = o->core ? cs_core_truncation(o->core) : NULL;
	struct cs_error *err = NULL;
	char *text = NULL;
	size_t size = 0;
	FILE *f = NULL;
	if (!shown) {
		err = &cs_error_nomem;
		goto out;
	}
	const struct cs_core_process *ps = o->core ? cs_core_process(o->core)
						   : NULL;
	int pid = o->live ? cs_live_pid(o->live)
		  : ps && ps->present ? ps->pid
				      : src->pid;
	if ((err = kernel_threads(o, proc, req, &natives, &nnatives, &store)) ||
	    (err = cs_thread_tids_find(proc, natives, nnatives, pid, NULL,
				       o->core ? cs_core_crash_tid(o->core)
					       : -1,
				       &tids)) ||
	    (err = select_threads(proc, tids.tids, req, shown)))
		goto out;
	char *warnings[8];
	size_t nwarnings = 0;
	for (size_t i = 0; i < vm->nwarnings; i++)
		warnings[nwarnings++] = vm->warnings[i];
	if (trunc)
		warnings[nwarnings++] = trunc->message;
	int is_core = o->core || (src->kind == GX_SOURCE_DEBUGGER &&
				  src->debugger_is_core);
	const struct cs_core_siginfo *report_signal = cs_crash_signal(
		o->core ? cs_core_siginfo(o->core) : src->siginfo);
	struct cs_report report = {
		.core_path = o->core ? src->core_path
			     : is_core ? src->debugger->name
				       : NULL,
		.executable = vm->exe->path,
		.vm_module = vm->vm->path,
		.pid = pid,
		.command = o->live ? cs_live_command(o->live)
			   : ps && ps->present ? ps->psargs
					       : src->command,
		.siginfo = report_signal,
		.ruby = proc,
		.tids = tids.tids,
		.tid_errors = tids.errors,
		.shown = shown,
		.crash_tid = o->core ? cs_core_crash_tid(o->core)
			     : report_signal ? src->crash_tid
					     : -1,
		.warnings = warnings,
		.nwarnings = nwarnings,
		.complete = rv_process_complete(proc) && !trunc && tids.ok,
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
	renderer->render(f, &report);
	if (fclose(f) != 0) {
		err = &cs_error_nomem;
		free(text);
		goto out;
	}
	*out = text;
	*complete = report.complete;
out:
	cs_error_destroy(trunc);
	cs_thread_tids_free(&tids, proc->nthreads);
	free(natives);
	free(store);
	free(shown);
	return err;
}

static struct cs_error *backtrace(const struct gx_source *src,
				  const struct gx_backtrace_request *req,
				  char **out, int *complete)
{
	*out = NULL;
	*complete = 0;
	struct opened o;
	struct cs_error *err = open_source(src, &o);
	if (err) {
		close_source(&o);
		return err;
	}
	struct cs_ruby ruby;
	struct cs_ruby_options opts = {.executable = src->executable,
				       .debug_dirs = src->debug_dirs};
	if ((err = cs_ruby_open(&o.img, &o.target, &opts, &ruby))) {
		struct cs_error *trunc = o.core ? cs_core_truncation(o.core)
						: NULL;
		if (trunc)
			err = cs_error_wrap(err, "%s", trunc->message);
		cs_error_destroy(trunc);
		close_source(&o);
		return err;
	}
	struct rv_process *proc = NULL;
	if (!(err = rv_snapshot(ruby.session, &proc)) &&
	    !(err = nothing_read(src, proc)) &&
	    /* every fiber, as corestack lists them */
	    !(err = rv_snapshot_fibers(ruby.session, proc)))
		err = render(src, &o, &ruby.vm, proc, req, out, complete);
	rv_process_destroy(proc);
	cs_ruby_close(&ruby);
	close_source(&o);
	return err;
}

/* The CLI's advice on debug directories (--debug-dir) is no use inside a
 * debugger: say the debugger's way instead. Consumes err. */
static struct cs_error *debugger_advice(struct cs_error *err,
					const char *advice)
{
	char *at = err && advice && err->code == CS_ERR_NO_DEBUG
			   ? strstr(err->message, DW_DEBUG_DIR_ADVICE)
			   : NULL;
	if (!at)
		return err;
	struct cs_error *told = cs_error_create(
		err->code, "%.*s%s%s", (int)(at - err->message), err->message,
		advice, at + strlen(DW_DEBUG_DIR_ADVICE));
	if (told == &cs_error_nomem)
		return err;
	cs_error_destroy(err);
	return told;
}

struct cs_error *gx_backtrace(const struct gx_source *src,
			      const struct gx_backtrace_request *req,
			      char **out, int *complete)
{
	return debugger_advice(backtrace(src, req, out, complete),
			       src->debug_dir_advice);
}
