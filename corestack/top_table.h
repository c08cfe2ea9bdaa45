/* What `corestack top` shows: the functions of a profile with the samples
 * in which each is innermost (self) and anywhere on the stack (total),
 * counted over every thread or over one thread's label, since the start
 * and since the last refresh. */
#ifndef CS_CORESTACK_TOP_TABLE_H
#define CS_CORESTACK_TOP_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "../profile/profile.h"

struct cs_top_row {
	size_t function;            /* in the profile's functions */
	size_t self, total;         /* since the start */
	size_t new_self, new_total; /* since the base */
	int line; /* the function's line sampled most (0: none, C) */
};

struct cs_top_table {
	struct cs_top_row *rows; /* sorted, hottest first */
	size_t nrows;
	/* thread stacks with frames counted, since the start and since the
	 * base: the 100 % */
	size_t stacks, new_stacks;
};

/* The counts of one view at a refresh: what the next one's new counts
 * start from. Zero-filled: nothing counted yet. */
struct cs_top_base {
	size_t label;         /* the view's (below) */
	size_t *self, *total; /* by function id, n of them */
	size_t n, stacks;
};

/* All threads when label is SIZE_MAX, else the threads with that label
 * (a name id, cs_profile_thread.label). The new counts are those since
 * base, which then moves to now when advance (or when it was counted
 * for another view). Sorted by new self, or new total when by_total, then
 * by the counts since the start; false when out of memory. */
bool cs_top_table_build(const struct cs_profile *p, size_t label, bool by_total,
			struct cs_top_base *base, bool advance,
			struct cs_top_table *t);
void cs_top_table_free(struct cs_top_table *t);
void cs_top_base_free(struct cs_top_base *b);

/* The labels of the profile's threads, each once, in the order the
 * threads were first seen; *n of them. NULL when none (or out of
 * memory). */
size_t *cs_top_thread_labels(const struct cs_profile *p, size_t *n);

#endif
