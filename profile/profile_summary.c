/* The summary: the frames most often innermost (self) and how often each
 * is anywhere in a stack (total), counted by name over the collapsed
 * lines; the thread is left out. Then the share of thread samples in each
 * state, all threads together and each thread, with what its blocked
 * samples waited on. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "profile_format.h"

struct tally {
	size_t name;
	size_t self, total;
	size_t line; /* the last line that counted it in total, + 1 */
};

static int by_self(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;
	return x->self != y->self
		       ? (x->self < y->self ? 1 : -1)
		       : (x->total < y->total) - (x->total > y->total);
}

/* Names in the order the lines first show them: ties keep that order
 * into the sort. */
static struct tally *tally_of(struct tally **t, size_t *n, size_t *at,
			      size_t name)
{
	if (at[name] != SIZE_MAX)
		return &(*t)[at[name]];
	struct tally *grown = realloc(*t, (*n + 1) * sizeof(**t));
	if (!grown)
		return NULL;
	*t = grown;
	grown[*n] = (struct tally){.name = name};
	at[name] = *n;
	return &grown[(*n)++];
}

static void write_shares(FILE *out, const uint64_t *by_state)
{
	uint64_t all = 0;
	for (int i = 0; i < CS_PROFILE_NSTATES; i++)
		all += by_state[i];
	fprintf(out, "%9.1f%% %14.1f%% %7.1f%% %7.1f%%  ",
		all ? 100.0 * (double)by_state[CS_PROFILE_RUNNING] / (double)all
		    : 0,
		all ? 100.0 * (double)by_state[CS_PROFILE_WAITING_GVL] /
				(double)all
		    : 0,
		all ? 100.0 * (double)by_state[CS_PROFILE_BLOCKED] / (double)all
		    : 0,
		all ? 100.0 * (double)by_state[CS_PROFILE_GC] / (double)all
		    : 0);
}

/* The kinds of wait the blocked samples of thread show, as "; blocked
 * on sleep, queue". */
static void write_waits(FILE *out, const struct cs_profile *p, size_t thread)
{
	bool seen[RV_WAIT_PROCESS + 1] = {false};
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct cs_profile_sample *s = &p->samples[i];
		if (s->state == CS_PROFILE_BLOCKED &&
		    s->wait <= RV_WAIT_PROCESS && s->thread == thread)
			seen[s->wait] = true;
	}
	const char *sep = "; blocked on ";
	for (int k = RV_WAIT_NONE + 1; k <= RV_WAIT_PROCESS; k++)
		if (seen[k]) {
			fprintf(out, "%s%s", sep, rv_wait_kind_name(k));
			sep = ", ";
		}
}

static void write_states(FILE *out, const struct cs_profile *p)
{
	uint64_t *by =
		calloc((p->nthreads + 1) * CS_PROFILE_NSTATES, sizeof(*by));
	if (!by)
		return;
	uint64_t *all = &by[p->nthreads * CS_PROFILE_NSTATES];
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct cs_profile_sample *s = &p->samples[i];
		if ((unsigned)s->state >= CS_PROFILE_NSTATES)
			continue;
		by[s->thread * CS_PROFILE_NSTATES + s->state] += s->weight;
		all[s->state] += s->weight;
	}
	fprintf(out, "\n%10s %15s %8s %8s  %s\n",
		cs_profile_state_name(CS_PROFILE_RUNNING),
		cs_profile_state_name(CS_PROFILE_WAITING_GVL),
		cs_profile_state_name(CS_PROFILE_BLOCKED),
		cs_profile_state_name(CS_PROFILE_GC), "thread");
	uint64_t total = 0;
	for (int i = 0; i < CS_PROFILE_NSTATES; i++)
		total += all[i];
	write_shares(out, all);
	fprintf(out, "(all threads, %llu samples)\n",
		(unsigned long long)total);
	for (size_t t = 0; t < p->nthreads; t++) {
		uint64_t *mine = &by[t * CS_PROFILE_NSTATES], n = 0;
		for (int i = 0; i < CS_PROFILE_NSTATES; i++)
			n += mine[i];
		if (!n)
			continue;
		write_shares(out, mine);
		fprintf(out, "%s (%llu samples",
			cs_profile_display(p, p->threads[t].label),
			(unsigned long long)n);
		write_waits(out, p, t);
		fputs(")\n", out);
	}
	free(by);
}

void cs_profile_write_summary(FILE *out, const struct cs_profile *p,
			      const struct cs_profile_run *run)
{
	struct tally *t = NULL;
	size_t n = 0, stacks = 0;
	size_t *at = malloc((p->names.count + 1) * sizeof(*at));
	for (size_t i = 0; at && i < p->names.count; i++)
		at[i] = SIZE_MAX;
	for (size_t i = 0; at && i < p->nline_slots; i++) {
		const struct cs_profile_line *l = &p->lines[i];
		const struct cs_profile_stack *s = &p->stacks[l->stack];
		if (!l->count || !s->nframes)
			continue; /* a thread without frames */
		stacks += l->count;
		for (size_t j = 0; j < s->nframes; j++) {
			size_t name = cs_profile_frame_name(p, s->frames[j]);
			struct tally *x = tally_of(&t, &n, at, name);
			if (!x)
				continue;
			if (x->line != i + 1) /* once per stack */
				x->total += l->count;
			x->line = i + 1;
			if (j + 1 == s->nframes)
				x->self += l->count;
		}
	}
	free(at);
	if (n)
		qsort(t, n, sizeof(*t), by_self);
	/* each tick samples every process: the target's count is the rate */
	fprintf(out, "%zu samples in %.1f s (%.0f Hz), %zu lost",
		run->taken ? run->taken : p->snapshots, run->seconds, run->rate,
		run->lost);
	if (run->processes > 1)
		fprintf(out, ", of each of %zu processes", run->processes);
	fprintf(out, "; %zu thread stacks with Ruby frames\n\n", stacks);
	fprintf(out, "%7s %7s %7s  %s\n", "self", "self%", "total", "frame");
	for (size_t i = 0; i < n && i < 20; i++)
		fprintf(out, "%7zu %6.1f%% %7zu  %s\n", t[i].self,
			stacks ? 100.0 * (double)t[i].self / (double)stacks : 0,
			t[i].total, cs_profile_display(p, t[i].name));
	free(t);
	write_states(out, p);
}
