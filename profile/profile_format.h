/* Profile formats: each writes a whole profile (profile.h) from its
 * tables, and `corestack record --format` and the debuggers' ruby-sample
 * choose one from cs_profile_formats by name.
 *
 * A new format is one file with its write function, declared here, and
 * one entry in profile_format.c's table. */
#ifndef CS_CORESTACK_PROFILE_FORMAT_H
#define CS_CORESTACK_PROFILE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"

/* How the recording went, for the formats that say so. */
struct cs_profile_run {
	size_t lost;      /* samples that could not be read */
	double seconds;   /* the recording's length */
	double rate;      /* samples per second asked for */
	int64_t pid;      /* the target's process id; 0: unknown */
	size_t taken;     /* samples of the target; 0: the profile's count */
	size_t processes; /* the target and those followed; 0: one */
};

struct cs_profile_format {
	const char *name;
	void (*write)(FILE *out, const struct cs_profile *p,
		      const struct cs_profile_run *run);
	/* the endings of a file name that choose it (-o without --format);
	 * NULL after the last */
	const char *suffixes[3];
	bool binary; /* not for a terminal */
};

/* Every format, in the order --format lists them; ends with a NULL name. */
extern const struct cs_profile_format cs_profile_formats[];

/* The format called name, or NULL. */
const struct cs_profile_format *cs_profile_format_find(const char *name);
/* The format whose suffix ends path (the longest that does), or NULL. */
const struct cs_profile_format *cs_profile_format_for_path(const char *path);

/* The table's entries. */
/* Collapsed stacks, one line each (flamegraph.pl, inferno, speedscope). */
void cs_profile_write_collapsed(FILE *out, const struct cs_profile *p,
				const struct cs_profile_run *run);
/* speedscope's file format: one sampled profile per thread, frames shared;
 * its samples in time order, weighed in nanoseconds. */
void cs_profile_write_speedscope(FILE *out, const struct cs_profile *p,
				 const struct cs_profile_run *run);
/* A flame graph, standalone SVG. */
void cs_profile_write_flamegraph(FILE *out, const struct cs_profile *p,
				 const struct cs_profile_run *run);
/* pprof's profile.proto, gzipped (go tool pprof, Pyroscope, Parca). */
void cs_profile_write_pprof(FILE *out, const struct cs_profile *p,
			    const struct cs_profile_run *run);
/* The Firefox Profiler's Gecko profile format: one thread per Ruby
 * thread, its samples in time order. */
void cs_profile_write_firefox(FILE *out, const struct cs_profile *p,
			      const struct cs_profile_run *run);
/* The frames most often innermost, as a table for people. */
void cs_profile_write_summary(FILE *out, const struct cs_profile *p,
			      const struct cs_profile_run *run);

#endif
