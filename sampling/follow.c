/* The descendants `record --subprocesses` follows (follow.h). */
#include "follow.h"

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../process/open.h"
#include "../process/live.h"
#include "../engine/engine.h"
#include "sampler.h"
#include "sampling_loop.h"

/* How often /proc is looked through for new descendants: a worker forked
 * now is sampled within this, and reading every process's stat costs. */
#define SCAN_SECONDS 0.25
/* A followed process whose samples all fail this many times in a row
 * (it ran exec, say) is dropped, and looked at again if it runs exec. */
#define GIVE_UP 50

struct cs_followed {
	int pid;
	struct cs_engine *engine; /* the live Ruby sampled */
	unsigned failed;          /* samples lost in a row */
};

struct cs_follow_skipped {
	int pid;
	char *exe; /* NULL: unknown */
};

struct proc_entry {
	int pid, ppid;
	bool dead; /* a zombie or going */
};

void cs_follow_init(struct cs_follow *f, int root, int pause, unsigned states)
{
	*f = (struct cs_follow){.root = root,
				.pause = pause,
				.states = states,
				.command = cs_live_read_command(root)};
}

/* pid's title, when its command line is no longer the target's first
 * (a forking server's $0=); kept as it was when unreadable (it ended). */
static void title_of(const struct cs_follow *f, int pid,
		     struct cs_profile *prof)
{
	char *now = cs_live_read_command(pid);
	if (!now)
		return;
	bool same = f->command && strcmp(now, f->command) == 0;
	/* without memory a process is only labelled by its pid */
	(void)cs_profile_set_title(prof, pid, same ? NULL : now);
	free(now);
}

void cs_follow_titles(const struct cs_follow *f, struct cs_profile *prof)
{
	title_of(f, f->root, prof);
	for (size_t i = 0; i < f->nprocs; i++)
		title_of(f, f->procs[i].pid, prof);
}

/* The executable of pid as /proc names it, malloc'd; NULL if unknown. */
static char *exe_of(int pid)
{
	char path[64], buf[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

static bool read_stat(int pid, struct proc_entry *e)
{
	char buf[512];
	const char *fields = cs_proc_stat_fields(pid, buf, sizeof(buf));
	char state;
	int ppid;
	if (!fields || sscanf(fields, " %c %d", &state, &ppid) != 2)
		return false;
	*e = (struct proc_entry){pid, ppid, state == 'Z' || state == 'X'};
	return true;
}

/* Every process with its parent; NULL (n 0) when /proc cannot be read. */
static struct proc_entry *all_processes(size_t *n)
{
	*n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return NULL;
	struct proc_entry *list = NULL;
	size_t cap = 0;
	for (struct dirent *de; (de = readdir(d));) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		struct proc_entry e;
		if (*end || pid <= 0 || pid > INT_MAX ||
		    !read_stat((int)pid, &e))
			continue;
		if (*n == cap) {
			size_t c = cap ? 2 * cap : 256;
			struct proc_entry *grown =
				reallocarray(list, c, sizeof(*grown));
			if (!grown)
				break;
			list = grown;
			cap = c;
		}
		list[(*n)++] = e;
	}
	closedir(d);
	return list;
}

static bool in(const int *pids, size_t n, int pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

static struct cs_followed *followed(struct cs_follow *f, int pid)
{
	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i].pid == pid)
			return &f->procs[i];
	return NULL;
}

static struct cs_follow_skipped *skipped(struct cs_follow *f, int pid)
{
	for (size_t i = 0; i < f->nskipped; i++)
		if (f->skipped[i].pid == pid)
			return &f->skipped[i];
	return NULL;
}

/* Forget the skipped process at i. */
static void unskip(struct cs_follow *f, size_t i)
{
	free(f->skipped[i].exe);
	f->skipped[i] = f->skipped[f->nskipped - 1];
	f->skipped[--f->nskipped].exe = NULL;
}

static void skip(struct cs_follow *f, int pid, char *exe)
{
	struct cs_follow_skipped *grown =
		reallocarray(f->skipped, f->nskipped + 1, sizeof(*grown));
	if (!grown) {
		free(exe);
		return;
	}
	f->skipped = grown;
	grown[f->nskipped++] = (struct cs_follow_skipped){pid, exe};
}

/* Open the Ruby of pid as record opens its target; false when it is not
 * one (or cannot be read, or stopped when paused): nothing is said, it is
 * skipped. */
static bool open_ruby(struct cs_follow *f, int pid)
{
	struct cs_followed *grown =
		reallocarray(f->procs, f->nprocs + 1, sizeof(*grown));
	if (!grown)
		return false;
	f->procs = grown;
	struct cs_engine_request req = {
		.target = {.pid = pid, .pause = f->pause != 0}};
	struct cs_engine *engine;
	struct cs_error *err = cs_engine_open_sampling(&req, &engine);
	if (err) {
		cs_error_destroy(err);
		return false;
	}
	grown[f->nprocs++] = (struct cs_followed){.pid = pid, .engine = engine};
	f->ever++;
	return true;
}

static void close_followed(struct cs_followed *p)
{
	cs_engine_close(p->engine);
}

/* Drop the followed process at i; skipped from now on if it still runs
 * (until it runs exec). */
static void drop(struct cs_follow *f, size_t i, bool ended)
{
	int pid = f->procs[i].pid;
	close_followed(&f->procs[i]);
	memmove(&f->procs[i], &f->procs[i + 1],
		(f->nprocs - i - 1) * sizeof(*f->procs));
	f->nprocs--;
	if (!ended)
		skip(f, pid, exe_of(pid));
}

/* The descendants of the root and of every followed process (a follower
 * whose parent ended is reparented, and its children are still ours). */
static int *descendants(const struct cs_follow *f, const struct proc_entry *all,
			size_t n, size_t *count)
{
	int *d = malloc((n + f->nprocs + 1) * sizeof(*d));
	*count = 0;
	if (!d)
		return NULL;
	d[(*count)++] = f->root;
	for (size_t i = 0; i < f->nprocs; i++)
		d[(*count)++] = f->procs[i].pid;
	for (size_t added = 1; added;) {
		added = 0;
		for (size_t i = 0; i < n; i++)
			if (!in(d, *count, all[i].pid) &&
			    in(d, *count, all[i].ppid)) {
				d[(*count)++] = all[i].pid;
				added++;
			}
	}
	return d;
}

/* Follow every Ruby among the descendants not followed yet. */
static void scan(struct cs_follow *f)
{
	size_t n, nd;
	struct proc_entry *all = all_processes(&n);
	int *d = descendants(f, all, n, &nd);
	/* skipped processes that ended are forgotten */
	for (size_t i = 0; d && i < f->nskipped;) {
		if (in(d, nd, f->skipped[i].pid))
			i++;
		else
			unskip(f, i);
	}
	for (size_t i = 0; d && i < n; i++) {
		int pid = all[i].pid;
		if (all[i].dead || pid == f->root || !in(d, nd, pid) ||
		    followed(f, pid))
			continue;
		char *exe = exe_of(pid);
		struct cs_follow_skipped *s = skipped(f, pid);
		if (s && (s->exe == exe ||
			  (s->exe && exe && strcmp(s->exe, exe) == 0))) {
			free(exe);
			continue;
		}
		if (s) /* it ran exec: look again */
			unskip(f, (size_t)(s - f->skipped));
		if (open_ruby(f, pid))
			free(exe);
		else
			skip(f, pid, exe);
	}
	free(d);
	free(all);
}

void cs_follow_sample(struct cs_follow *f, struct cs_profile *prof)
{
	double now = cs_sampling_now();
	if (now >= f->next_scan) {
		scan(f);
		cs_follow_titles(f, prof);
		f->next_scan = now + SCAN_SECONDS;
	}
	for (size_t i = 0; i < f->nprocs;) {
		struct cs_followed *p = &f->procs[i];
		prof->pid = p->pid;
		int r = cs_sample_once(p->engine, f->states, prof);
		if (r == 0 && cs_live_exited(p->pid))
			r = -1;
		if (r > 0) {
			p->failed = 0;
		} else if (r < 0) {
			drop(f, i, true);
			continue;
		} else {
			f->lost++;
			if (++p->failed >= GIVE_UP) {
				drop(f, i, false);
				continue;
			}
		}
		i++;
	}
	prof->pid = f->root;
}

void cs_follow_free(struct cs_follow *f)
{
	for (size_t i = 0; i < f->nprocs; i++)
		close_followed(&f->procs[i]);
	for (size_t i = 0; i < f->nskipped; i++)
		free(f->skipped[i].exe);
	free(f->procs);
	free(f->skipped);
	free(f->command);
	*f = (struct cs_follow){0};
}
