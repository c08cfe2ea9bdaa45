/* A sampling profile: stacks counted as collapsed lines
 * ("thread;outermost;...;innermost"), written as collapsed stacks (the input
 * of flamegraph.pl, inferno and speedscope) or as a summary table. */
#ifndef CS_CORESTACK_PROFILE_H
#define CS_CORESTACK_PROFILE_H

#include <stddef.h>
#include <stdio.h>

#include "../rubyvm/model.h"

struct cs_profile {
	char **keys;      /* collapsed stacks, open addressing */
	size_t *counts;
	size_t nslots, nkeys;
	size_t samples;   /* snapshots added */
};

void cs_profile_init(struct cs_profile *p);
/* Count every thread's stack of one snapshot; 0 on allocation failure. */
int cs_profile_add(struct cs_profile *p, const struct rv_process *proc);
void cs_profile_write_collapsed(const struct cs_profile *p, FILE *out);
void cs_profile_write_summary(const struct cs_profile *p, FILE *out,
			      size_t lost, double seconds, double rate);
void cs_profile_free(struct cs_profile *p);

#endif
