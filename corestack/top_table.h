/* What `corestack top` shows: the functions of a profile with the samples
 * in which each is innermost (self) and anywhere on the stack (total),
 * counted over every thread or over one thread's label. */
#ifndef CS_CORESTACK_TOP_TABLE_H
#define CS_CORESTACK_TOP_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "profile.h"

struct cs_top_row {
	size_t function; /* in the profile's functions */
	size_t self, total;
	int line; /* the function's line sampled most (0: none, C) */
};

struct cs_top_table {
	struct cs_top_row *rows; /* sorted, hottest first */
	size_t nrows;
	size_t stacks; /* thread stacks with frames counted: the 100 % */
};

/* All threads when label is SIZE_MAX, else the threads with that label
 * (a name id, cs_profile_thread.label). Sorted by self, or by total when
 * by_total; false when out of memory. */
bool cs_top_table_build(const struct cs_profile *p, size_t label, bool by_total,
			struct cs_top_table *t);
void cs_top_table_free(struct cs_top_table *t);

/* The labels of the profile's threads, each once, in the order the
 * threads were first seen; *n of them. NULL when none (or out of
 * memory). */
size_t *cs_top_thread_labels(const struct cs_profile *p, size_t *n);

#endif
