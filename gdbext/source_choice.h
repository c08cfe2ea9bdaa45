/* Which way to read a debugger's inferior: the one policy gdb and lldb
 * share. Their loaders only report what their debugger knows; this
 * decides from it. */
#ifndef CS_GDBEXT_SOURCE_CHOICE_H
#define CS_GDBEXT_SOURCE_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

#include "../util/error.h"
#include "backtrace.h"

/* What the debugger knows of its inferior. */
struct gx_facts {
	bool is_core;          /* the inferior is a core file */
	const char *core_path; /* its path when the debugger names it */
	int pid;               /* the process's, or the core's; <= 0: none */
	/* the OS can read the inferior's memory: a process on this host (not
	 * through a remote stub) */
	bool local;
	/* the user asked for reads through the debugger (--via-debugger) */
	bool via_debugger;
};

#define GX_SOURCES_MAX 2

/* The ways to read the inferior, fastest first, into order; returns how
 * many. A core file the debugger names and this process can read, or a
 * local live process, is read directly; the debugger is always the last
 * way, as it can read whatever it shows. */
size_t gx_source_order(const struct gx_facts *f,
		       enum gx_source_kind order[GX_SOURCES_MAX]);

/* ruby-sample runs the sampler on the process itself: NULL for a local
 * live process, else a CS_ERR_USAGE saying what the inferior is. */
struct cs_error *gx_sample_check(const struct gx_facts *f);

/* After err from one way, is the next one worth trying? Not when every
 * way gives the same answer: a thread that runs no Ruby thread. */
bool gx_source_retry(const struct cs_error *err);

#endif
