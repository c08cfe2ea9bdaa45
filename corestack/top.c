/* corestack top: a live view of the hottest Ruby methods of a process.
 *
 *   corestack top --pid PID [--rate HZ] [--nonblocking] [--duration S]
 *                 [--state LIST] [--on-cpu] [--subprocesses]
 *
 * Samples as `corestack record` does (one attachment, one session, the
 * sampling loop, paused by default, its Ruby descendants followed as
 * record follows them) and redraws a table of the functions sampled, by
 * self or total, about once a second. Keys are read between samples. The
 * terminal is given back and the target let go on every way out: q,
 * Ctrl-C, SIGINT/SIGTERM/SIGHUP, --duration, the target's exit (whose
 * last table stays on the screen), an error. */
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../util/cli_args.h"
#include "../rubyvm/model.h"
#include "../process/live.h"
#include "../profile/profile.h"
#include "../engine/engine.h"
#include "../sampling/follow.h"
#include "../sampling/sampler.h"
#include "sampling_args.h"
#include "../sampling/sampling_loop.h"
#include "term.h"
#include "top_table.h"

enum { EXIT_OK = 0, EXIT_UNUSABLE = 2, EXIT_USAGE = 64 };

#define PROG "corestack top"
#define REFRESH 1.0 /* seconds between redraws */
#define HEADER_LINES 5

static atomic_int stop_requested;
static volatile sig_atomic_t resized;

static void on_stop_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, 1);
}

static void on_winch(int sig)
{
	(void)sig;
	resized = 1;
}

struct top_options {
	int pid;
	double duration; /* seconds; 0 = until quit */
	double rate;     /* Hz */
	int nonblocking;
	unsigned states;  /* the states kept (profile.h); 0: all */
	int subprocesses; /* its Ruby descendants too */
};

static void top_usage(FILE *out)
{
	fputs("usage: corestack top --pid PID [options]\n"
	      "\n"
	      "A live view of the Ruby methods a process spends its time in,\n"
	      "redrawn every second: their self and total share of the last\n"
	      "second, their samples and seconds since the start. Keys: q\n"
	      "quit, s sort by self or total, t all threads or one thread\n"
	      "after another.\n"
	      "\n"
	      "  --rate HZ          samples per second (default 100)\n"
	      "  --nonblocking      read without pausing the target\n"
	      "  --duration S       seconds to run (default: until q)\n" CS_SAMPLING_STATE_HELP
	      "  --subprocesses     its Ruby descendants too (forked workers,\n"
	      "                     also those started later), each thread\n"
	      "                     labelled with its process\n"
	      "\n"
	      "Standard output must be a terminal (else exit 64).\n",
	      out);
}

static int parse(int argc, char **argv, struct top_options *o)
{
	static const struct option longopts[] = {
		CS_SAMPLING_LONGOPTS,
		{"subprocesses", no_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned given = 0;
	const struct cs_sampling_args to = {&o->pid,      &o->nonblocking,
					    &o->duration, &o->rate,
					    &o->states,   &given};
	o->rate = 100;
	int c;
	opterr = 0; /* our own one-line messages (cli_unknown_option) */
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (cs_sampling_opt(c)) {
			if (!cs_sampling_arg(PROG, c, optarg, &to))
				return EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 'F':
			o->subprocesses = 1;
			break;
		case 'h':
			top_usage(stdout);
			exit(EXIT_OK);
		default:
			cli_unknown_option(PROG, c, argv);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (!o->pid) {
		fputs(PROG ": name the process: --pid PID\n", stderr);
		return EXIT_USAGE;
	}
	return 0;
}

/* The view and what each sample needs. */
struct view {
	const struct top_options *o;
	struct cs_engine *engine;
	struct cs_profile *prof;
	struct cs_follow *follow; /* NULL: the target only */
	const char *version;
	bool by_total;
	size_t thread; /* 0: all threads; k: the k-th label */
	/* the counts at the last refresh, and when it was: the shares are
	 * of what was sampled since */
	struct cs_top_base base;
	double base_time;
	bool gone;  /* the target exited */
	bool plain; /* the last table, written below the shell's lines */
};

static int take(void *ctx)
{
	struct view *v = ctx;
	int taken = cs_sample_once(v->engine, v->o->states, v->prof);
	/* an exited target nobody reaped fails every sample */
	if (taken == 0 && cs_live_exited(v->o->pid))
		taken = -1;
	if (taken < 0)
		v->gone = true;
	else if (v->follow)
		cs_follow_sample(v->follow, v->prof);
	return taken;
}

/* One screen line at row y (1-based), cut to the width; plain: the next
 * line of the normal screen, without style. */
static void line_at(FILE *out, bool plain, int y, int cols, const char *style,
		    const char *text)
{
	char buf[1024];
	int used = 0;
	buf[0] = '\0';
	cs_term_put(buf, sizeof(buf), &used, cols, text);
	if (plain) {
		fprintf(out, "%s\n", buf);
		return;
	}
	fprintf(out, "\033[%d;1H%s%s", y, style, buf);
	if (*style) /* a styled line spans the width */
		fprintf(out, "%*s\033[0m", cols - used, "");
	fputs("\033[K", out);
}

static void row_text(char *buf, size_t cap, const struct cs_profile *p,
		     const struct cs_top_table *t, size_t i, double per_sample)
{
	const struct cs_top_row *r = &t->rows[i];
	const struct cs_profile_function *f = &p->functions[r->function];
	double all = t->new_stacks ? (double)t->new_stacks : 1;
	int n = snprintf(buf, cap, "%6.1f%% %6.1f%% %7zu %7zu %8.2f %8.2f  %s",
			 100.0 * (double)r->new_self / all,
			 100.0 * (double)r->new_total / all, r->self, r->total,
			 (double)r->self * per_sample,
			 (double)r->total * per_sample,
			 cs_profile_display(p, f->display));
	if (n < 0 || (size_t)n >= cap)
		return;
	if (f->file && r->line)
		snprintf(buf + n, cap - (size_t)n, " (%s:%d)", f->file,
			 r->line);
	else if (f->file)
		snprintf(buf + n, cap - (size_t)n, " (%s)", f->file);
	else
		snprintf(buf + n, cap - (size_t)n, " (C)");
}

/* A refresh (advance: the shares' interval starts again after it) or a
 * redraw for a key or a new size. */
static void draw(struct view *v, const struct cs_sampling_loop *l, bool advance)
{
	int rows, cols;
	cs_term_size(&rows, &cols);
	if (v->plain) /* room for the summary and the shell's prompt */
		rows -= 2;
	size_t nlabels;
	size_t *labels = cs_top_thread_labels(v->prof, &nlabels);
	if (v->thread > nlabels)
		v->thread = 0;
	size_t label = v->thread ? labels[v->thread - 1] : SIZE_MAX;
	struct cs_top_table t;
	bool ok = cs_top_table_build(v->prof, label, v->by_total, &v->base,
				     advance, &t);
	double now = cs_sampling_now();
	double elapsed = l->start > 0 ? now - l->start : 0;
	double interval = now - v->base_time;
	if (advance)
		v->base_time = now;
	size_t tries = l->taken + l->lost;

	char *screen = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&screen, &size);
	if (!out) {
		cs_top_table_free(&t);
		free(labels);
		return;
	}
	char text[1024], procs[64] = "";
	if (resized && !v->plain)
		fputs("\033[2J", out);
	resized = 0;
	if (v->follow)
		snprintf(procs, sizeof(procs), " and %zu descendants",
			 v->follow->nprocs);
	snprintf(text, sizeof(text),
		 "corestack top: pid %d%s%s, Ruby %s, %.0f Hz asked, %.1f "
		 "achieved%s",
		 v->o->pid, procs, v->gone ? " (exited)" : "",
		 v->version ? v->version : "version unknown", v->o->rate,
		 elapsed > 0 ? (double)tries / elapsed : 0.0,
		 v->o->nonblocking ? ", nonblocking" : "");
	line_at(out, v->plain, 1, cols, "", text);
	snprintf(text, sizeof(text),
		 "%zu samples, %zu lost, %.1f s; shares of the last %.1f s "
		 "(%zu thread stacks), counts since the start",
		 l->taken, l->lost, elapsed, interval, ok ? t.new_stacks : 0);
	line_at(out, v->plain, 2, cols, "", text);
	if (label == SIZE_MAX)
		snprintf(text, sizeof(text), "threads: all (%zu)", nlabels);
	else
		snprintf(text, sizeof(text), "thread %zu of %zu: %s", v->thread,
			 nlabels, cs_profile_display(v->prof, label));
	size_t at = strlen(text);
	snprintf(text + at, sizeof(text) - at, "; sorted by %s%s",
		 v->by_total ? "total" : "self",
		 v->plain ? "" : "; keys: q quit, s sort, t thread");
	line_at(out, v->plain, 3, cols, "", text);
	line_at(out, v->plain, 4, cols, "", "");
	line_at(out, v->plain, 5, cols, "\033[7m",
		"  %SELF  %TOTAL    SELF   TOTAL  SELF(s) TOTAL(s)  "
		"FUNCTION (FILE:LINE)");
	double per_sample = tries ? elapsed / (double)tries : 0;
	int y = HEADER_LINES + 1;
	for (size_t i = 0; ok && i < t.nrows && y <= rows; i++, y++) {
		row_text(text, sizeof(text), v->prof, &t, i, per_sample);
		line_at(out, v->plain, y, cols, "", text);
	}
	if (!ok)
		line_at(out, v->plain, y++, cols, "", "out of memory");
	if (y <= rows && !v->plain)
		fprintf(out, "\033[%d;1H\033[J", y);
	fclose(out);
	for (size_t done = 0; screen && done < size;) {
		ssize_t w = write(STDOUT_FILENO, screen + done, size - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	free(screen);
	cs_top_table_free(&t);
	free(labels);
}

/* Between samples: the keys typed, a redraw when one is due. */
static void between(void *ctx, const struct cs_sampling_loop *l)
{
	struct view *v = ctx;
	bool now = resized;
	for (int k; (k = cs_term_key()) >= 0;) {
		if (k == 'q' || k == 'Q' || k == 3 /* Ctrl-C */) {
			atomic_store(&stop_requested, 1);
			return;
		}
		if (k == 's' || k == 'S') {
			v->by_total = !v->by_total;
			now = true;
		} else if (k == 't' || k == 'T') {
			v->thread++; /* past the last: all again (draw) */
			now = true;
		}
	}
	bool due = cs_sampling_now() - v->base_time >= REFRESH;
	if (now || due)
		draw(v, l, due);
}

static void on_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL); /* the terminal closed */
	struct sigaction winch = {.sa_handler = on_winch,
				  .sa_flags = SA_RESTART};
	sigaction(SIGWINCH, &winch, NULL);
}

int cs_top_main(int argc, char **argv)
{
	struct top_options o = {0};
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	if (!isatty(STDOUT_FILENO)) {
		fputs(PROG ": standard output is not a terminal (corestack "
			   "record writes a profile)\n",
		      stderr);
		return EXIT_USAGE;
	}
	on_signals();
	/* Paused: attached now, so that what rules out stopping the target
	 * is said before the screen is taken (cs_engine_open_sampling). */
	struct cs_engine_request req = {
		.target = {.pid = o.pid, .pause = !o.nonblocking}};
	struct cs_engine *engine;
	struct cs_error *err = cs_engine_open_sampling(&req, &engine);
	if (err) {
		fprintf(stderr, PROG ": %s\n", err->message);
		cs_error_destroy(err);
		return EXIT_UNUSABLE;
	}
	struct cs_profile prof;
	cs_profile_init(&prof);
	struct cs_follow follow;
	cs_follow_init(&follow, o.pid, !o.nonblocking, o.states);
	if (o.subprocesses)
		prof.pid = o.pid; /* every thread labelled with its process */
	prctl(PR_SET_TIMERSLACK, 1000UL); /* as record: short, exact sleeps */
	struct view v = {
		.o = &o,
		.engine = engine,
		.prof = &prof,
		.follow = o.subprocesses ? &follow : NULL,
		.version = engine->ruby_version,
	};
	struct cs_sampling_loop loop = {
		.rate = o.rate,
		.duration = o.duration,
		.stop = &stop_requested,
		.take = take,
		.after = between,
		.ctx = &v,
	};
	cs_term_enter();
	v.base_time = cs_sampling_now();
	draw(&v, &loop, true);
	cs_sampling_run(&loop);
	cs_engine_let_go(engine);
	cs_follow_free(&follow);
	v.follow = NULL;
	cs_term_leave();
	if (v.gone) { /* what it last did stays in view */
		v.plain = true;
		draw(&v, &loop, false);
	}
	fprintf(stderr, PROG ": %zu samples in %.1f s, %zu lost%s\n",
		loop.taken, loop.elapsed, loop.lost,
		v.gone ? "; the process exited" : "");
	cs_top_base_free(&v.base);
	cs_profile_free(&prof);
	cs_engine_close(engine);
	return EXIT_OK;
}
