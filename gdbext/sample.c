#include "sample.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../target/open.h"
#include "../target/live.h"
#include "../target/page_cache.h"
#include "../corestack/profile.h"
#include "../corestack/profile_format.h"
#include "../corestack/sampler.h"
#include "../corestack/sampling_loop.h"
#include "../corestack/vm_module.h"
#include "../corestack/ruby_open.h"

static const char *const debug_dirs[] = {"/usr/lib/debug", NULL};

struct gx_sampler {
	int pid, interrupt_signal;
	double seconds, rate;
	struct cs_ruby ruby;
	struct cs_page_cache cache;
	struct cs_profile prof;
	pthread_t thread;
	atomic_int stop;
	/* written by the thread, read after the join */
	struct cs_live *kept;
	struct cs_sampling_loop loop;
	int interrupted; /* the signal was sent */
};

static int take(void *arg)
{
	struct gx_sampler *s = arg;
	return cs_sample_once(s->ruby.session, s->pid, 0, 0, &s->kept,
			      &s->cache, &s->prof);
}

static void *run(void *arg)
{
	struct gx_sampler *s = arg;
	s->loop = (struct cs_sampling_loop){
		.rate = s->rate,
		.duration = s->seconds,
		.stop = &s->stop,
		.take = take,
		.ctx = s,
	};
	cs_sampling_run(&s->loop);
	cs_live_close(s->kept);
	s->kept = NULL;
	if (s->interrupt_signal && !atomic_load(&s->stop) &&
	    kill(s->pid, 0) == 0) {
		kill(s->pid, s->interrupt_signal);
		s->interrupted = 1;
	}
	return NULL;
}

static void destroy(struct gx_sampler *s)
{
	cs_profile_free(&s->prof);
	cs_page_cache_free(&s->cache);
	cs_ruby_close(&s->ruby);
	free(s);
}

struct cs_error *gx_sampler_start(int pid, const char *executable,
				  double seconds, double rate,
				  int interrupt_signal, struct gx_sampler **ret)
{
	*ret = NULL;
	struct gx_sampler *s = calloc(1, sizeof(*s));
	struct cs_memory none = {0};
	if (!s)
		return &cs_error_nomem;
	if (!cs_page_cache_init(&s->cache, &none)) {
		free(s);
		return &cs_error_nomem;
	}
	s->pid = pid;
	s->seconds = seconds;
	s->rate = rate;
	s->interrupt_signal = interrupt_signal;
	cs_profile_init(&s->prof);
	/* Resolve everything once, before the inferior runs. */
	struct cs_target_request req = {.pid = pid};
	struct cs_target *first;
	struct cs_error *err = cs_target_open(&req, &first);
	if (!err) {
		/* A sampler reads the same stacks again and again. */
		struct cs_ruby_options opts = {.executable = executable,
					       .debug_dirs = debug_dirs,
					       .model = {.reuse_frames = true}};
		err = cs_ruby_open(first, &opts, &s->ruby);
		cs_target_close(first);
	}
	if (!err) {
		int e = pthread_create(&s->thread, NULL, run, s);
		if (e)
			err = cs_error_create(CS_ERR_OS,
					      "cannot start the sampling "
					      "thread: %s",
					      strerror(e));
	}
	if (err) {
		destroy(s);
		return err;
	}
	*ret = s;
	return NULL;
}

struct cs_error *gx_sampler_finish(struct gx_sampler *s, const char *out_path,
				   const char *format, char **summary,
				   int *interrupted)
{
	*summary = NULL;
	const struct cs_profile_format *fmt =
		cs_profile_format_find(format ? format : "collapsed");
	if (!fmt)
		fmt = cs_profile_format_find("collapsed");
	atomic_store(&s->stop, 1);
	pthread_join(s->thread, NULL);
	*interrupted = s->interrupted;
	struct cs_error *err = NULL;
	const struct cs_sampling_loop *l = &s->loop;
	struct cs_profile_run run = {l->lost, l->elapsed, s->rate, s->pid};
	if (out_path) {
		FILE *f = fopen(out_path, "w");
		if (!f || (fmt->write(f, &s->prof, &run), fclose(f) != 0))
			err = cs_error_create(CS_ERR_OS, "cannot write %s: %s",
					      out_path, strerror(errno));
	}
	char *text = NULL;
	size_t size = 0;
	FILE *m = err ? NULL : open_memstream(&text, &size);
	if (!err && !m)
		err = &cs_error_nomem;
	if (!err) {
		cs_profile_format_find("summary")->write(m, &s->prof, &run);
		size_t tries = l->taken + l->lost;
		fprintf(m,
			"\n%zu samples in %.2f s (%.0f Hz asked, %.1f achieved), "
			"%zu lost, %.1f us per stack read\n",
			l->taken, l->elapsed, s->rate,
			l->elapsed > 0 ? (double)tries / l->elapsed : 0.0,
			l->lost,
			tries ? l->reading / (double)tries * 1e6 : 0.0);
		if (out_path && strcmp(fmt->name, "collapsed") == 0)
			fprintf(m, "collapsed stacks written to %s\n",
				out_path);
		else if (out_path)
			fprintf(m, "%s profile written to %s\n", fmt->name,
				out_path);
		if (fclose(m) != 0)
			err = &cs_error_nomem;
		else
			*summary = text;
	}
	destroy(s);
	return err;
}
