/* The descendants of a recorded process that `corestack record
 * --subprocesses` follows (forked workers, children started after the
 * recording began): found in /proc every so often, each Ruby among them
 * opened with a session, an attachment and a page cache of its own, and
 * sampled on the same ticks as the recorded process, each into the
 * profile under its pid. A descendant that is not a Ruby (a shell, a
 * program a Ruby ran) is left alone, its children still looked for; one
 * that ends is dropped. */
#ifndef CS_CORESTACK_FOLLOW_H
#define CS_CORESTACK_FOLLOW_H

#include <stddef.h>

#include "../profile/profile.h"

struct cs_followed;
struct cs_follow_skipped;

struct cs_follow {
	int root; /* the recorded process, sampled by the caller */
	int pause;
	unsigned states; /* kept (profile.h); 0: all */
	struct cs_followed *procs;
	size_t nprocs;
	/* descendants that are not Ruby (or could not be read), and their
	 * executable then: looked at again only when it changes (exec) */
	struct cs_follow_skipped *skipped;
	size_t nskipped;
	double next_scan; /* cs_sampling_now() of the next look */
	size_t lost;      /* samples of followed processes lost */
	size_t ever;      /* processes followed in all, ended ones too */
	char *command;    /* the root's command line at the start */
};

void cs_follow_init(struct cs_follow *f, int root, int pause, unsigned states);
/* Look for new descendants when it is time to, then take one sample of
 * each followed process into prof. prof->pid is the root's again after. */
void cs_follow_sample(struct cs_follow *f, struct cs_profile *prof);
/* The title of the root and of each followed process into prof: its
 * command line, when it is no longer the root's at the start (Ruby's $0=
 * in a forked worker). Done on every look for descendants, and once more
 * before the profile is written. */
void cs_follow_titles(const struct cs_follow *f, struct cs_profile *prof);
/* Let every followed process run on and free what f holds. */
void cs_follow_free(struct cs_follow *f);

#endif
