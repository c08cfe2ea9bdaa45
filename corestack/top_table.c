#include "top_table.h"

#include <stdint.h>
#include <stdlib.h>

/* A count of one function or frame, and the last line that counted it
 * in total (+ 1): a recursive stack counts once. */
struct tally {
	size_t self, total, mark;
};

static void count(struct tally *t, size_t line, size_t n, bool innermost)
{
	if (t->mark != line + 1)
		t->total += n;
	t->mark = line + 1;
	if (innermost)
		t->self += n;
}

static bool hotter(const struct tally *a, const struct tally *b)
{
	return a->self != b->self ? a->self > b->self : a->total > b->total;
}

static int compare(const void *a, const void *b, void *total_first)
{
	const struct cs_top_row *x = a, *y = b;
	bool by_total = *(const bool *)total_first;
	size_t x1 = by_total ? x->total : x->self;
	size_t y1 = by_total ? y->total : y->self;
	size_t x2 = by_total ? x->self : x->total;
	size_t y2 = by_total ? y->self : y->total;
	if (x1 != y1)
		return x1 < y1 ? 1 : -1;
	if (x2 != y2)
		return x2 < y2 ? 1 : -1;
	return (x->function > y->function) - (x->function < y->function);
}

/* Tally every line in view into functions and frames; the number of
 * stacks counted. */
static size_t tally_lines(const struct cs_profile *p, size_t label,
			  struct tally *fn, struct tally *fr)
{
	size_t stacks = 0;
	for (size_t i = 0; i < p->nline_slots; i++) {
		const struct cs_profile_line *l = &p->lines[i];
		const struct cs_profile_stack *s = &p->stacks[l->stack];
		if (!l->count || !s->nframes)
			continue;
		if (label != SIZE_MAX && p->threads[l->thread].label != label)
			continue;
		stacks += l->count;
		for (size_t j = 0; j < s->nframes; j++) {
			size_t f = s->frames[j];
			bool inner = j + 1 == s->nframes;
			count(&fr[f], i, l->count, inner);
			count(&fn[p->frames[f].function], i, l->count, inner);
		}
	}
	return stacks;
}

bool cs_top_table_build(const struct cs_profile *p, size_t label,
			bool total_first, struct cs_top_table *t)
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
	t->stacks = tally_lines(p, label, fn, fr);
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
			.line = best[i] == SIZE_MAX ? 0
						    : p->frames[best[i]].line,
		};
	}
	if (t->nrows)
		qsort_r(t->rows, t->nrows, sizeof(*t->rows), compare,
			&total_first);
	free(fn);
	free(fr);
	free(best);
	return true;
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
