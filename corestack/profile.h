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
/* Count every thread's stack of one snapshot (with on_cpu, only threads
 * holding the GVL: the one running Ruby code); 0 on allocation failure. */
int cs_profile_add(struct cs_profile *p, const struct rv_process *proc,
		   int on_cpu);
void cs_profile_write_collapsed(const struct cs_profile *p, FILE *out);
void cs_profile_write_summary(const struct cs_profile *p, FILE *out,
			      size_t lost, double seconds, double rate);
/* speedscope's file format: one sampled profile per thread, frames shared;
 * each distinct stack is one sample weighted by its count. */
void cs_profile_write_speedscope(const struct cs_profile *p, FILE *out);
/* A flame graph, standalone SVG (flamegraph.c). */
void cs_profile_write_flamegraph(const struct cs_profile *p, FILE *out);
void cs_profile_free(struct cs_profile *p);

#endif
