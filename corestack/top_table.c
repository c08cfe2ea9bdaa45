#include "top_table.h"

#include <stdint.h>
#include <stdlib.h>

/* A count of one function or frame, and the last sample that counted it
 * in total (+ 1): a recursive stack counts once. */
struct tally {
	size_t self, total, mark;
};

static void count(struct tally *t, size_t sample, size_t n, bool innermost)
{
	if (t->mark != sample + 1)
		t->total += n;
	t->mark = sample + 1;
	if (innermost)
		t->self += n;
}

static bool hotter(const struct tally *a, const struct tally *b)
{
	return a->self != b->self ? a->self > b->self : a->total > b->total;
}

/* Descending by a, then b, then c; ties keep the function order. */
static int order(size_t a, size_t b, size_t c, size_t ya, size_t yb, size_t yc)
{
	if (a != ya)
		return a < ya ? 1 : -1;
	if (b != yb)
		return b < yb ? 1 : -1;
	return c != yc ? (c < yc ? 1 : -1) : 0;
}

static int compare(const void *a, const void *b, void *total_first)
{
	const struct cs_top_row *x = a, *y = b;
	int o = *(const bool *)total_first
			? order(x->new_total, x->new_self, x->total,
				y->new_total, y->new_self, y->total)
			: order(x->new_self, x->new_total, x->self, y->new_self,
				y->new_total, y->self);
	return o ? o
		 : (x->function > y->function) - (x->function < y->function);
}

/* Tally every sample in view into functions and frames; the number of
 * stacks counted. The samples, not the collapsed lines: a line sums
 * stacks by their names, so it keeps no line numbers but its first
 * stack's. */
static size_t tally_samples(const struct cs_profile *p, size_t label,
			    struct tally *fn, struct tally *fr)
{
	size_t stacks = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct cs_profile_sample *x = &p->samples[i];
		const struct cs_profile_stack *s = &p->stacks[x->stack];
		size_t n = (size_t)x->weight;
		if (!n || !s->nframes)
			continue;
		if (label != SIZE_MAX && p->threads[x->thread].label != label)
			continue;
		stacks += n;
		for (size_t j = 0; j < s->nframes; j++) {
			size_t f = s->frames[j];
			bool inner = j + 1 == s->nframes;
			count(&fr[f], i, n, inner);
			count(&fn[p->frames[f].function], i, n, inner);
		}
	}
	return stacks;
}

static size_t since(size_t now, size_t then)
{
	return now > then ? now - then : 0;
}

/* The base moved to the counts of now. */
static bool advance_base(struct cs_top_base *b, size_t label,
			 const struct tally *fn, size_t n, size_t stacks)
{
	if (n > b->n) {
		size_t *self = realloc(b->self, n * sizeof(*self));
		if (self)
			b->self = self;
		size_t *total = self ? realloc(b->total, n * sizeof(*total))
				     : NULL;
		if (total)
			b->total = total;
		if (!total)
			return false;
	}
	for (size_t i = 0; i < n; i++) {
		b->self[i] = fn[i].self;
		b->total[i] = fn[i].total;
	}
	b->n = n;
	b->stacks = stacks;
	b->label = label;
	return true;
}

bool cs_top_table_build(const struct cs_profile *p, size_t label,
			bool total_first, struct cs_top_base *base,
			bool advance, struct cs_top_table *t)
{
	*t = (struct cs_top_table){0};
	struct tally *fn = calloc(p->nfunctions + 1, sizeof(*fn));
	struct tally *fr = calloc(p->nframes + 1, sizeof(*fr));
	size_t *best = malloc((p->nfunctions + 1) * sizeof(*best));
	t->rows = calloc(p->nfunctions + 1, sizeof(*t->rows));
	if (!fn || !fr || !best || !t->rows) {
		free(fn);
		free(fr);
		free(best);
		cs_top_table_free(t);
		return false;
	}
	t->stacks = tally_samples(p, label, fn, fr);
	bool same = base->label == label;
	size_t known = same ? base->n : 0;
	t->new_stacks = since(t->stacks, same ? base->stacks : 0);
	/* each function's line: the frame of it sampled most */
	for (size_t i = 0; i < p->nfunctions; i++)
		best[i] = SIZE_MAX;
	for (size_t f = 0; f < p->nframes; f++) {
		size_t *b = &best[p->frames[f].function];
		if (fr[f].total && (*b == SIZE_MAX || hotter(&fr[f], &fr[*b])))
			*b = f;
	}
	for (size_t i = 0; i < p->nfunctions; i++) {
		if (!fn[i].total)
			continue;
		t->rows[t->nrows++] = (struct cs_top_row){
			.function = i,
			.self = fn[i].self,
			.total = fn[i].total,
			.new_self = since(fn[i].self,
					  i < known ? base->self[i] : 0),
			.new_total = since(fn[i].total,
					   i < known ? base->total[i] : 0),
			.line = best[i] == SIZE_MAX ? 0
						    : p->frames[best[i]].line,
		};
	}
	if (t->nrows)
		qsort_r(t->rows, t->nrows, sizeof(*t->rows), compare,
			&total_first);
	bool ok = !(advance || !same) ||
		  advance_base(base, label, fn, p->nfunctions, t->stacks);
	free(fn);
	free(fr);
	free(best);
	if (!ok)
		cs_top_table_free(t);
	return ok;
}

void cs_top_base_free(struct cs_top_base *b)
{
	free(b->self);
	free(b->total);
	*b = (struct cs_top_base){0};
}

void cs_top_table_free(struct cs_top_table *t)
{
	free(t->rows);
	*t = (struct cs_top_table){0};
}

size_t *cs_top_thread_labels(const struct cs_profile *p, size_t *n)
{
	*n = 0;
	if (!p->nthreads)
		return NULL;
	size_t *labels = malloc(p->nthreads * sizeof(*labels));
	bool *seen = calloc(p->names.count + 1, sizeof(*seen));
	for (size_t i = 0; labels && seen && i < p->nthreads; i++) {
		size_t label = p->threads[i].label;
		if (!seen[label])
			labels[(*n)++] = label;
		seen[label] = true;
	}
	free(seen);
	return labels;
}
