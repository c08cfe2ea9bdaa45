/* corestack record: a sampling profile of every thread of a live Ruby.
 *
 *   corestack record --pid PID [--duration S] [--rate HZ] [--nonblocking]
 *                    [--format collapsed|speedscope|flamegraph|summary|pprof|
 *                              firefox]
 *                    [--on-cpu] [--state LIST] [--subprocesses]
 *                    [-o FILE]
 *   corestack record [options] -- COMMAND ARGS...
 *
 * The layout is resolved once and the process attached once; each sample
 * is one snapshot of every thread (paused by default: every thread is
 * stopped for the read and runs between samples). A sample that cannot be read (a stack changing under a
 * nonblocking read, the process exiting) is counted as lost, never
 * printed. Stops at --duration, on SIGINT/SIGTERM, or when the target
 * exits, and writes what it has. With --subprocesses the target's Ruby
 * descendants are sampled on the same ticks (follow.h). On a terminal a
 * progress line on stderr says how it goes. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../util/cli_args.h"
#include "../rubyvm/model.h"
#include "../process/live.h"
#include "../sampling/follow.h"
#include "../profile/profile.h"
#include "../profile/profile_format.h"
#include "../engine/engine.h"
#include "../sampling/sampler.h"
#include "sampling_args.h"
#include "../sampling/sampling_loop.h"

enum { EXIT_OK = 0, EXIT_UNUSABLE = 2, EXIT_USAGE = 64 };

#define PROG "corestack record"

static atomic_int stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_requested, 1);
}

struct record_options {
	int pid;
	double duration; /* seconds; 0 = until stopped */
	double rate;     /* Hz */
	int nonblocking;
	unsigned states;  /* the states kept (profile.h); 0: all */
	int subprocesses; /* its descendants too */
	const struct cs_profile_format *format;
	const char *out;
	char **command; /* after "--" */
};

static void record_usage(FILE *out)
{
	fputs("usage: corestack record --pid PID [options]\n"
	      "       corestack record [options] -- COMMAND [ARGS...]\n"
	      "\n"
	      "  --duration S       seconds to record (default: until Ctrl-C\n"
	      "                     or the target exits)\n"
	      "  --rate HZ          samples per second (default 100)\n"
	      "  --nonblocking      read without pausing the target\n"
	      "  --format F         collapsed (default with -o), speedscope\n"
	      "                     (JSON for speedscope.app), flamegraph\n"
	      "                     (SVG), summary, pprof (gzipped\n"
	      "                     profile.proto for go tool pprof) or\n"
	      "                     firefox (JSON for the Firefox Profiler);\n"
	      "                     without it, -o's name chooses: .folded,\n"
	      "                     .collapsed, .speedscope.json, .svg,\n"
	      "                     .pb.gz, .pprof (else collapsed)\n" CS_SAMPLING_STATE_HELP
	      "  --subprocesses     sample its Ruby descendants too (forked\n"
	      "                     workers, also those started later), each\n"
	      "                     thread labelled with its process\n"
	      "  -o FILE            write the profile to FILE\n"
	      "\n"
	      "With -- COMMAND, a command still running when the recording\n"
	      "ends (--duration, Ctrl-C) is sent SIGTERM, which stderr says.\n",
	      out);
}

static void unknown_format(const char *name)
{
	fputs(PROG ": --format is one of ", stderr);
	for (const struct cs_profile_format *f = cs_profile_formats; f->name;
	     f++)
		fprintf(stderr, "%s%s", f == cs_profile_formats ? "" : ", ",
			f->name);
	fprintf(stderr, ", not '%s'\n", name);
}

static int parse(int argc, char **argv, struct record_options *o)
{
	static const struct option longopts[] = {
		CS_SAMPLING_LONGOPTS,
		{"format", required_argument, NULL, 'f'},
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
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		if (cs_sampling_opt(c)) {
			if (!cs_sampling_arg(PROG, c, optarg, &to))
				return EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 'f':
			if (!(o->format = cs_profile_format_find(optarg))) {
				unknown_format(optarg);
				return EXIT_USAGE;
			}
			break;
		case 'F':
			o->subprocesses = 1;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'h':
			record_usage(stdout);
			exit(EXIT_OK);
		default:
			cli_unknown_option(PROG, c, argv);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		o->command = argv + optind;
	if (!o->pid == !o->command) {
		fputs(o->pid ? PROG ": --pid PID or -- COMMAND, not both\n"
			     : PROG ": name what to record: --pid PID or -- "
				    "COMMAND [ARGS...] (see " PROG " --help)\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (!o->format && o->out)
		o->format = cs_profile_format_for_path(o->out);
	if (!o->format)
		o->format = cs_profile_format_find(o->out ? "collapsed"
							  : "summary");
	/* as gzip does: binary on a terminal helps nobody */
	if (o->format->binary && !o->out && isatty(STDOUT_FILENO)) {
		fprintf(stderr,
			PROG ": --format %s is binary, not for a terminal: "
			     "give -o FILE or redirect standard output\n",
			o->format->name);
		return EXIT_USAGE;
	}
	return 0;
}

/* -o FILE must be writable before anything is recorded: a recording lost
 * to a typo in a path is the worst time to learn of it. The file itself is
 * only written at the end (an existing profile stays until then). */
static bool output_writable(const char *path)
{
	struct stat st;
	const char *why = NULL;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			why = "it is a directory";
		else if (access(path, W_OK) != 0)
			why = strerror(errno);
	} else if (errno != ENOENT) {
		why = strerror(errno);
	} else {
		char *copy = strdup(path);
		if (!copy)
			return false;
		const char *dir = dirname(copy);
		/* each failing call leaves its reason in errno */
		if (stat(dir, &st) != 0 ||
		    (S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) != 0))
			why = strerror(errno);
		else if (!S_ISDIR(st.st_mode))
			why = "its directory is not a directory";
		free(copy);
	}
	if (why)
		fprintf(stderr, PROG ": cannot write the profile to %s: %s\n",
			path, why);
	return !why;
}

/* What each sample of the loop needs. */
struct recording {
	const struct record_options *o;
	int pid;
	int *child; /* our own child, 0 once it is reaped */
	struct cs_engine *engine;
	struct cs_profile *prof;
	struct cs_follow *follow; /* NULL: the target only */
	int interactive;
	double shown;    /* when the progress line was last written */
	int shown_width; /* its width */
	/* CORESTACK_READ_STATS: the reads' counters after the first sample,
	 * which reads and decodes what the later ones mostly find again */
	uint64_t first_calls, first_bytes, first_ns;
};

/* Our own child lingers as a zombie: reap it to see it end. */
static bool child_running(void *ctx)
{
	struct recording *r = ctx;
	if (*r->child && waitpid(*r->child, NULL, WNOHANG) == *r->child) {
		*r->child = 0;
		return false;
	}
	return true;
}

static int take(void *ctx)
{
	struct recording *r = ctx;
	int taken = cs_sample_once(r->engine, r->o->states, r->prof);
	const struct cs_target_reads *reads = &r->engine->target_reads;
	if (!r->first_calls) {
		r->first_calls = reads->calls;
		r->first_bytes = reads->bytes;
		r->first_ns = reads->ns;
	}
	/* An exited target that nobody reaped (our own child whose traced
	 * threads we still hold, or another process's) fails every sample
	 * until --duration. */
	if (taken == 0 && cs_live_exited(r->pid))
		return -1;
	if (r->follow)
		cs_follow_sample(r->follow, r->prof);
	return taken;
}

/* On a terminal, the progress line, rewritten in place a few times a
 * second. */
static void progress(void *ctx, const struct cs_sampling_loop *l)
{
	struct recording *r = ctx;
	double now = cs_sampling_now();
	if (!r->interactive || now - r->shown < 0.25)
		return;
	r->shown = now;
	int n = fprintf(stderr, "\r" PROG ": %zu samples, %zu lost, %.1f s",
			l->taken, l->lost, now - l->start);
	if (r->follow)
		n += fprintf(stderr, ", %zu processes", 1 + r->follow->nprocs);
	/* a shorter line than the last leaves none of it behind */
	if (n < r->shown_width)
		fprintf(stderr, "%*s", r->shown_width - n, "");
	if (n > r->shown_width)
		r->shown_width = n;
}

/* Clear the progress line before the summary. */
static void progress_end(const struct recording *r)
{
	if (r->shown_width)
		fprintf(stderr, "\r%*s\r", r->shown_width, "");
}

static int start_command(char **command)
{
	pid_t pid = fork();
	if (pid == 0) {
		execvp(command[0], command);
		fprintf(stderr, "corestack record: cannot run %s: %s\n",
			command[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

/* CORESTACK_READ_STATS (tests/bench_sampling.py): what the samples'
 * reads of the process cost, the floor a sample is measured against. */
static void read_stats(const struct cs_engine *e,
		       const struct cs_sampling_loop *l,
		       const struct recording *r)
{
	const struct cs_target_reads *t = &e->target_reads;
	size_t tries = l->taken + l->lost;
	double n = tries ? (double)tries : 1.0;
	double later = tries > 1 ? (double)(tries - 1) : 1.0;
	fprintf(stderr,
		"corestack record: read stats: %llu system calls reading %llu "
		"ranges, %llu bytes, in %.1f ms; a sample: %.1f calls, %.0f "
		"bytes, %.1f us in them\n",
		(unsigned long long)t->calls, (unsigned long long)t->ranges,
		(unsigned long long)t->bytes, (double)t->ns / 1e6,
		(double)t->calls / n, (double)t->bytes / n,
		(double)t->ns / n / 1e3);
	/* the first sample apart: it decodes every frame once */
	fprintf(stderr,
		"corestack record: read stats: the first sample %.1f us (%.1f "
		"us of CPU); after it, a sample: %.1f us (%.1f us of CPU), "
		"%.1f calls, %.0f bytes, %.1f us in them\n",
		l->first * 1e6, l->first_cpu * 1e6,
		(l->reading - l->first) / later * 1e6,
		(l->reading_cpu - l->first_cpu) / later * 1e6,
		(double)(t->calls - r->first_calls) / later,
		(double)(t->bytes - r->first_bytes) / later,
		(double)(t->ns - r->first_ns) / later / 1e3);
	/* CORESTACK_READ_LOG=FILE: the ranges one whole sample read, the
	 * one before the last, "address length" a line
	 * (tests/bench/read_floor.c reads them again in one call) */
	const char *log = getenv("CORESTACK_READ_LOG");
	FILE *f = log && t->nlast && !t->last_cut ? fopen(log, "w") : NULL;
	if (!f)
		return;
	for (size_t i = 0; i < t->nlast; i++)
		fprintf(f, "0x%llx %llu\n", (unsigned long long)t->last[i].addr,
			(unsigned long long)t->last[i].len);
	fclose(f);
}

int cs_record_main(int argc, char **argv)
{
	struct record_options o = {0};
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	if (o.out && !output_writable(o.out))
		return EXIT_UNUSABLE;
	int pid = o.pid, child = 0;
	if (o.command) {
		pid = child = start_command(o.command);
		if (pid < 0) {
			perror("corestack record: fork");
			return EXIT_UNUSABLE;
		}
		usleep(200000); /* let the Ruby VM come up before the first look */
		int status;
		if (waitpid(child, &status, WNOHANG) == child) {
			/* ours to reap: not "a zombie its parent has not
			 * reaped", which attaching would say */
			fprintf(stderr,
				PROG ": %s ended before it could be "
				     "sampled (%s %d)\n",
				o.command[0],
				WIFEXITED(status) ? "exit status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status)
						  : WTERMSIG(status));
			return EXIT_UNUSABLE;
		}
	}
	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* Resolve everything once; paused, one attachment for all samples,
	 * taken now (cs_engine_open_sampling). */
	struct cs_engine_request req = {
		.target = {.pid = pid, .pause = !o.nonblocking},
		/* for the benchmarks only: no option, no effect on output */
		.time_target_reads = getenv("CORESTACK_READ_STATS") != NULL};
	struct cs_engine *engine;
	struct cs_error *err = cs_engine_open_sampling(&req, &engine);
	if (err) {
		fprintf(stderr, "corestack record: %s\n", err->message);
		cs_error_destroy(err);
		if (child)
			kill(child, SIGTERM);
		return EXIT_UNUSABLE;
	}

	struct cs_profile prof;
	cs_profile_init(&prof);
	struct cs_follow follow;
	cs_follow_init(&follow, pid, !o.nonblocking, o.states);
	if (o.subprocesses)
		prof.pid = pid; /* every thread labelled with its process */
	/* Our sleeps pace the samples and wait for the target's threads to
	 * stop: the kernel's default 50 us of timer slack would stretch each
	 * of them, and so the time the target spends stopped. */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	struct recording rec = {
		.o = &o,
		.pid = pid,
		.child = &child,
		.engine = engine,
		.prof = &prof,
		.follow = o.subprocesses ? &follow : NULL,
		.interactive = isatty(STDERR_FILENO),
	};
	struct cs_sampling_loop loop = {
		.rate = o.rate,
		.duration = o.duration,
		.stop = &stop_requested,
		.take = take,
		.before = child_running,
		.after = progress,
		.ctx = &rec,
	};
	cs_sampling_run(&loop);
	cs_engine_let_go(engine);
	if (o.subprocesses)
		cs_follow_titles(&follow, &prof);
	size_t followed = follow.ever, follow_lost = follow.lost;
	cs_follow_free(&follow);
	progress_end(&rec);

	if (!cs_profile_settle(&prof))
		fprintf(stderr, PROG ": out of memory: threads named after "
				     "their first samples are written twice\n");
	FILE *out = o.out ? fopen(o.out, "w") : stdout;
	if (!out) {
		fprintf(stderr, "corestack record: cannot write %s: %s\n",
			o.out, strerror(errno));
		rc = EXIT_UNUSABLE;
	} else {
		struct cs_profile_run run = {
			.lost = loop.lost,
			.seconds = loop.elapsed,
			.rate = o.rate,
			.pid = pid,
			.taken = loop.taken,
			.processes = o.subprocesses ? 1 + followed : 1,
		};
		o.format->write(out, &prof, &run);
		if (o.out)
			fclose(out);
	}
	size_t tries = loop.taken + loop.lost;
	/* a snapshot of a Ruby starting or ending can list no thread: taken,
	 * yet no thread's sample (said, or the files' counts fall short) */
	size_t threadless =
		cs_profile_threadless(&prof, o.subprocesses ? pid : 0);
	char none[64] = "";
	if (threadless)
		snprintf(none, sizeof(none), ", %zu with no Ruby thread",
			 threadless);
	fprintf(stderr,
		"corestack record: %zu samples in %.1f s (%.0f Hz asked, %.1f "
		"achieved), %zu lost%s, %.1f us per sample (%.1f us of CPU)\n",
		loop.taken, loop.elapsed, o.rate,
		loop.elapsed > 0 ? (double)tries / loop.elapsed : 0.0,
		loop.lost, none,
		tries ? loop.reading / (double)tries * 1e6 : 0.0,
		tries ? loop.reading_cpu / (double)tries * 1e6 : 0.0);
	if (req.time_target_reads)
		read_stats(engine, &loop, &rec);
	if (o.subprocesses)
		fprintf(stderr,
			PROG ": %zu processes followed besides the target, "
			     "%zu of their samples lost\n",
			followed, follow_lost);
	cs_profile_free(&prof);
	cs_engine_close(engine);
	/* The command outlived the recording: end it, and say so, since
	 * what it was doing stops here. */
	if (child && waitpid(child, NULL, WNOHANG) == 0) {
		kill(child, SIGTERM);
		fprintf(stderr,
			PROG ": the recording ended: sent SIGTERM to %s (pid "
			     "%d), still running\n",
			o.command[0], (int)child);
		waitpid(child, NULL, 0);
	}
	return rc;
}
