/* A sampling profile: stacks counted as collapsed lines
 * ("thread;outermost;...;innermost"), written as collapsed stacks (the input
 * of flamegraph.pl, inferno and speedscope) or as a summary table. */
#ifndef CS_CORESTACK_PROFILE_H
#define CS_CORESTACK_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../rubyvm/model.h"

/* The stack last counted for one thread, by its frames' names_id. */
struct cs_profile_memo {
	uint64_t thread;   /* rv_thread.addr */
	int64_t tid;
	size_t index;      /* in the snapshot's thread list */
	char *name;        /* Thread#name then, NULL for none */
	uint64_t *ids;     /* innermost first */
	size_t nids, cap;
	bool valid;
	size_t slot;       /* where it was counted, while grown is the same */
	size_t grown;
};

struct cs_profile {
	char **keys;      /* collapsed stacks, open addressing */
	size_t *counts;
	size_t nslots, nkeys;
	size_t samples;   /* snapshots added */
	/* A thread whose frames have the names of its last sample's is
	 * counted again without its collapsed stack being built: in a deep
	 * stack, building it touched every frame's strings, most of a
	 * sample's cost to the profile. */
	struct cs_profile_memo *memos;
	size_t nmemos;
	size_t grown; /* times the slots were rehashed */
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
