/* Many cores at once (a directory of them, as CI collects): each core's
 * crash signature, the cores grouped by it, and the summary written as
 * text, JSON, Markdown (a CI job summary) or JUnit XML (one failing test
 * case per group).
 *
 * A crash signature is what stays the same when the same bug crashes
 * again, in another process or another build: the crash kind, the native
 * function that faulted (or sent the signal; for a call to no code, the
 * function that made the call), and the stable names (docs/names.md) of
 * the innermost Ruby frames of the thread that crashed. No address, no
 * line number. A core whose process did not crash (gcore of a running
 * process) has none: it is listed as "no crash".
 *
 * A set owns copies of everything it keeps: a core's report may be freed
 * as soon as it is added, and nothing of one core outlives its engine. */
#ifndef CS_CORESTACK_CRASH_GROUPS_H
#define CS_CORESTACK_CRASH_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "../engine/report.h"

/* Innermost Ruby frames in a signature at most. */
#define CS_SIGNATURE_FRAMES 3

struct cs_crash_signature {
	const char *kind; /* cs_crash_kind_name: a static string */
	char *function;   /* NULL: unknown */
	/* stable names, innermost first; on a thread that runs no Ruby, the
	 * caller into the faulting module ("crashtest.so: run"), if known */
	char *frames[CS_SIGNATURE_FRAMES];
	size_t nframes;
};

struct cs_crash_group {
	struct cs_crash_signature sig;
	char **files; /* the cores, by name, sorted */
	size_t nfiles;
	/* the first core's crash summary and Ruby stack, as text */
	char *stack;
};

struct cs_broken_core {
	char *file;
	char *reason; /* the one-line message */
};

struct cs_core_set {
	const char *name; /* the directory (or the one core) read */
	struct cs_crash_group *groups;
	size_t ngroups;
	char **no_crash;
	size_t nno_crash;
	struct cs_broken_core *broken;
	size_t nbroken;
	size_t skipped; /* files that are not cores, and non-regular files */
	size_t partial; /* cores read, but not whole (their exit 1) */
	bool oom;       /* a copy failed: the summary may miss a core */
};

/* Add the core file (a name, as it is shown) whose report is r: to its
 * crash group, or to the cores that did not crash. */
void cs_core_set_add(struct cs_core_set *s, const char *file,
		     const struct cs_report *r);
/* Add a core that could not be read, with the one-line reason. */
void cs_core_set_add_broken(struct cs_core_set *s, const char *file,
			    const char *reason);
/* Order groups by count, most frequent first, then by signature; each
 * list by file name. Call before rendering. */
void cs_core_set_sort(struct cs_core_set *s);
void cs_core_set_free(struct cs_core_set *s);
/* How many cores crashed. */
size_t cs_core_set_crashes(const struct cs_core_set *s);

/* The signature as one line: "memory_access in ct_segv <-
 * CrashTest.segv <- Job.crash"; a malloc'ed string, NULL on no memory. */
char *cs_crash_signature_text(const struct cs_crash_signature *sig);

/* The summary after the reports of a directory. */
void cs_core_set_text(FILE *out, const struct cs_core_set *s);
struct json;
/* "groups", "no_crash", "broken" and "skipped" of a JSON document. */
void cs_core_set_json(struct json *j, const struct cs_core_set *s);
/* render_ci.c: a Markdown job summary, and a JUnit XML document. */
void cs_core_set_markdown(FILE *out, const struct cs_core_set *s);
void cs_core_set_junit(FILE *out, const struct cs_core_set *s);

#endif
