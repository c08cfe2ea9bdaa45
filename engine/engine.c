/* The engine handle: the target, the page cache in front of it, the Ruby
 * found there and the options, opened in one place for every front end,
 * so that how a target is opened for a snapshot or for sampling is
 * written once. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "ext_module.h"
#include "read_counts.h"

/* Put a page cache in front of the target's memory for the session. */
static struct cs_error *cache_pages(struct cs_engine *e)
{
	struct cs_memory mem = cs_target_memory(e->target);
	if (!cs_page_cache_init(&e->cache, &mem))
		return &cs_error_nomem;
	e->cached = true;
	e->memory = cs_page_cache_target(&e->cache);
	return NULL;
}

static struct cs_error *open_ruby(struct cs_engine *e)
{
	const struct cs_engine_request *r = &e->request;
	struct cs_ruby_options opts = {
		.executable = r->target.executable,
		.debug_dirs = r->debug_dirs,
		.debug_dir_advice = r->debug_dir_advice,
		.cache_dir = r->cache_dir,
		.model = r->model,
		.memory = e->cached || e->request.count_reads ? &e->memory
							      : NULL,
	};
	return cs_ruby_open(e->target, &opts, &e->ruby);
}

/* The Ruby's own directories, where a module whose file is gone is
 * looked for: its $LOAD_PATH and its features' (rv_load_dirs). */
static void ruby_dirs(void *ctx, char ***dirs, size_t *n)
{
	const struct cs_engine *e = ctx;
	struct cs_error *err = rv_load_dirs(e->ruby.session, dirs, n);
	cs_error_destroy(err);
}

static char *host_of(void *ctx, const char *path)
{
	const struct cs_engine *e = ctx;
	return cs_target_host_path(e->target, path);
}

/* The target looks for a module whose file cannot be used in the
 * directories the request names (--lib-search-path, the debug
 * directories), and with ruby (the Ruby open), in the Ruby's own too. */
static struct cs_error *search_modules(struct cs_engine *e, bool ruby)
{
	const struct cs_engine_request *r = &e->request;
	if (!e->search && !(e->search = cs_module_search_new(
				    r->target.lib_search_path, r->debug_dirs)))
		return &cs_error_nomem;
	if (ruby)
		cs_module_search_set_target_dirs(e->search, ruby_dirs, e,
						 host_of, e);
	cs_target_use_module_search(e->target, e->search);
	return NULL;
}

/* The handle with the request's target open; *ret NULL on failure. */
static struct cs_error *open_target(const struct cs_engine_request *r,
				    struct cs_engine **ret)
{
	*ret = NULL;
	struct cs_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return &cs_error_nomem;
	e->request = *r;
	struct cs_error *err = NULL;
	if (r->borrowed)
		e->target = r->borrowed;
	else if (!(err = cs_target_open(&r->target, &e->owned)))
		e->target = e->owned;
	if (err) {
		free(e);
		return err;
	}
	*ret = e;
	return NULL;
}

struct cs_error *cs_engine_open(const struct cs_engine_request *r,
				struct cs_engine **ret)
{
	struct cs_engine *e;
	struct cs_error *err = open_target(r, &e);
	if (!err)
		err = search_modules(e, false);
	if (!err && r->page_cache)
		err = cache_pages(e);
	if (!err && r->count_reads)
		cs_engine_count_reads(e);
	if (!err)
		err = open_ruby(e);
	if (!err)
		err = search_modules(e, true);
	if (!err && !r->model.no_locks) /* monitor.so: what locks.c reads */
		err = cs_ext_modules_attach(e->target, e->search,
					    e->ruby.session, r->debug_dirs,
					    r->debug_dir_advice, r->cache_dir);
	if (err) {
		cs_engine_close(e);
		e = NULL;
	}
	*ret = e;
	return err;
}

struct cs_error *cs_engine_open_sampling(const struct cs_engine_request *r,
					 struct cs_engine **ret)
{
	/* A first look, not paused, resolves everything once. */
	struct cs_engine_request first = *r;
	first.target.pause = false;
	first.page_cache = false;
	first.model.reuse_frames = true; /* the same stacks, again and again */
	first.model.no_locks = true;     /* a sample shows no holders */
	struct cs_engine *e;
	struct cs_error *err = open_target(&first, &e);
	if (!err && !(err = open_ruby(e)))
		e->ruby_version = rv_ruby_version(e->ruby.session);
	if (e) {
		e->request.target.pause = r->target.pause;
		cs_target_close(
			e->owned); /* each sample attaches its own way */
		e->owned = NULL;
		e->target = NULL;
	}
	struct cs_memory none = {0};
	if (!err && !cs_page_cache_init(&e->cache, &none))
		err = &cs_error_nomem;
	else if (!err)
		e->cached = true;
	if (!err && e->request.target.pause &&
	    !(err = cs_live_attach(e->request.target.pid, 1, &e->kept))) {
		cs_live_without_registers(e->kept);
		err = cs_live_resume(e->kept);
	}
	if (err) {
		cs_engine_close(e);
		e = NULL;
	}
	*ret = e;
	return err;
}

void cs_engine_let_go(struct cs_engine *e)
{
	cs_live_close(e->kept);
	e->kept = NULL;
}

void cs_engine_close(struct cs_engine *e)
{
	if (!e)
		return;
	cs_live_close(e->kept);
	if (e->target && e->search) /* a borrowed target outlives e */
		cs_target_use_module_search(e->target, NULL);
	cs_module_search_free(e->search);
	cs_ruby_close(&e->ruby);
	if (e->cached)
		cs_page_cache_free(&e->cache);
	cs_target_close(e->owned);
	free(e->read_log);
	free(e->ruby_version);
	free(e);
}
