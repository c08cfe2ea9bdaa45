#include "sample.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../process/open.h"
#include "../process/live.h"
#include "../process/page_cache.h"
#include "../profile/profile.h"
#include "../profile/profile_format.h"
#include "../sampling/sampler.h"
#include "../sampling/sampling_loop.h"
#include "../engine/engine.h"
#include "guard.h"

struct gx_sampler {
	int pid, interrupt_signal;
	int guard; /* gx_guard_start's descriptor, or -1 */
	double seconds, rate;
	unsigned states;          /* kept; 0: all */
	struct cs_engine *engine; /* the live Ruby, read unpaused */
	struct cs_profile prof;
	pthread_t thread;
	atomic_int stop;
	/* written by the thread, read after the join */
	struct cs_sampling_loop loop;
	atomic_int interrupted; /* the signal was sent */
	volatile sig_atomic_t quit_signal;
	struct sigaction old_term, old_hup;
	FILE *out; /* --out, opened before the inferior runs */
	char *out_path;
	const struct cs_profile_format *format; /* of out */
};

/* The sampler whose inferior runs: what a SIGTERM or SIGHUP to the
 * debugger cuts short. One at a time (the debugger runs one command). */
static struct gx_sampler *volatile running;

/* Send the interrupt signal once, whoever asks first. */
static void interrupt(struct gx_sampler *s)
{
	if (!atomic_exchange(&s->interrupted, 1))
		kill(s->pid, s->interrupt_signal);
}

/* A debugger told to quit while the inferior runs (gdb 13 can fail an
 * internal check then, and hang or abort with the inferior stopped): stop
 * the inferior the usual way now; the caller quits once the debugger
 * holds it again (gx_sampler_finish's *quit_signal). */
static void on_quit(int sig)
{
	struct gx_sampler *s = running;
	if (!s)
		return;
	s->quit_signal = sig;
	interrupt(s);
}

static void hold_quit_signals(struct gx_sampler *s)
{
	struct sigaction sa = {.sa_handler = on_quit, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	running = s;
	sigaction(SIGTERM, &sa, &s->old_term);
	sigaction(SIGHUP, &sa, &s->old_hup);
}

static void release_quit_signals(struct gx_sampler *s)
{
	sigaction(SIGTERM, &s->old_term, NULL);
	sigaction(SIGHUP, &s->old_hup, NULL);
	running = NULL;
}

static int take(void *arg)
{
	struct gx_sampler *s = arg;
	return cs_sample_once(s->engine, s->states, &s->prof);
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
	cs_engine_let_go(s->engine);
	if (s->interrupt_signal && !atomic_load(&s->stop) &&
	    kill(s->pid, 0) == 0)
		interrupt(s);
	return NULL;
}

static struct cs_error *start_thread(struct gx_sampler *s)
{
	s->guard = gx_guard_start(s->pid);
	if (s->interrupt_signal)
		hold_quit_signals(s);
	/* The thread takes none of the debugger's signals: its handlers
	 * (SIGTERM, SIGINT, SIGCHLD) expect one of its own threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&s->thread, NULL, run, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!e)
		return NULL;
	if (s->interrupt_signal)
		release_quit_signals(s);
	return cs_error_create(
		CS_ERR_OS, "cannot start the sampling thread: %s", strerror(e));
}

static void destroy(struct gx_sampler *s)
{
	gx_guard_release(s->guard);
	if (s->out)
		fclose(s->out);
	free(s->out_path);
	cs_profile_free(&s->prof);
	cs_engine_close(s->engine);
	free(s);
}

struct cs_error *gx_sampler_start(const struct gx_sample_request *req,
				  struct gx_sampler **ret)
{
	*ret = NULL;
	struct gx_sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return &cs_error_nomem;
	s->pid = req->pid;
	s->format =
		cs_profile_format_find(req->format ? req->format : "collapsed");
	if (!s->format)
		s->format = cs_profile_format_find("collapsed");
	s->seconds = req->seconds;
	s->rate = req->rate;
	s->states = req->states;
	s->interrupt_signal = req->interrupt_signal;
	s->guard = -1;
	cs_profile_init(&s->prof);
	struct cs_error *err = NULL;
	/* A bad --out costs nothing: found before the inferior runs. */
	if (req->out_path && (!(s->out_path = strdup(req->out_path)) ||
			      !(s->out = fopen(req->out_path, "w"))))
		err = s->out_path
			      ? cs_error_create(CS_ERR_OS,
						"cannot write %s: %s",
						req->out_path, strerror(errno))
			      : &cs_error_nomem;
	/* Resolve everything once, before the inferior runs; unpaused: the
	 * debugger holds the process (cs_engine_open_sampling). */
	struct cs_engine_request ereq = {
		.target = {.pid = req->pid, .executable = req->executable},
		.debug_dirs = req->debug_dirs,
		.debug_dir_advice = req->debug_dir_advice};
	if (!err)
		err = cs_engine_open_sampling(&ereq, &s->engine);
	if (!err)
		err = start_thread(s);
	if (err) {
		destroy(s);
		return err;
	}
	*ret = s;
	return NULL;
}

/* The profile into the file opened at the start; a line that says where
 * it went, or why it did not, into the summary m. */
static void write_out(struct gx_sampler *s, const struct cs_profile_run *run,
		      FILE *m)
{
	if (!s->out)
		return;
	s->format->write(s->out, &s->prof, run);
	int failed = ferror(s->out);
	if (fclose(s->out) != 0)
		failed = 1;
	s->out = NULL;
	bool collapsed = strcmp(s->format->name, "collapsed") == 0;
	const char *what = collapsed ? "collapsed stacks" : s->format->name;
	if (failed)
		fprintf(m, "cannot write the %s%s to %s: %s\n", what,
			collapsed ? "" : " profile", s->out_path,
			strerror(errno));
	else
		fprintf(m, "%s%s written to %s\n", what,
			collapsed ? "" : " profile", s->out_path);
}

struct cs_error *gx_sampler_finish(struct gx_sampler *s, char **summary,
				   struct gx_sample_end *end)
{
	*summary = NULL;
	atomic_store(&s->stop, 1);
	pthread_join(s->thread, NULL);
	if (s->interrupt_signal)
		release_quit_signals(s);
	end->interrupted = atomic_load(&s->interrupted);
	end->quit_signal = s->quit_signal;
	struct cs_error *err = NULL;
	/* On failure it is whole, with a late-named thread twice. */
	(void)cs_profile_settle(&s->prof);
	const struct cs_sampling_loop *l = &s->loop;
	struct cs_profile_run run = {
		.lost = l->lost,
		.seconds = l->elapsed,
		.rate = s->rate,
		.pid = s->pid,
		.taken = l->taken,
	};
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	if (!m) {
		err = &cs_error_nomem;
	} else {
		cs_profile_format_find("summary")->write(m, &s->prof, &run);
		size_t tries = l->taken + l->lost;
		/* The summary's first line has the counts already. */
		fprintf(m, "\n%.1f Hz achieved, %.1f us per stack read\n",
			l->elapsed > 0 ? (double)tries / l->elapsed : 0.0,
			tries ? l->reading / (double)tries * 1e6 : 0.0);
		write_out(s, &run, m);
		if (fclose(m) != 0)
			err = &cs_error_nomem;
		else
			*summary = text;
	}
	destroy(s);
	return err;
}
