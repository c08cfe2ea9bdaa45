/* Many cores in one run: every core of a directory (as CI collects them),
 * or one core, read one after the other, each by its own engine closed
 * before the next is opened, then summarized by crash signature
 * (render/crash_groups.h) as text, JSON, Markdown or JUnit XML.
 *
 * Exit codes (docs/usage.md "Exit codes"): CS_EXIT_CRASHES when a core
 * crashed, whatever else was found, so that CI fails visibly; else 2 when
 * a core could not be read (or the directory), 1 when one was read only
 * in part, 0 when every core was read whole and none crashed. */
#ifndef CS_CLI_CORE_DIR_H
#define CS_CLI_CORE_DIR_H

#include <stdbool.h>
#include <stddef.h>

#include "../engine/engine.h"

enum cs_exit {
	CS_EXIT_COMPLETE = 0,
	CS_EXIT_PARTIAL = 1,
	CS_EXIT_UNUSABLE = 2,
	CS_EXIT_CRASHES = 3, /* many cores: one or more crashed */
	CS_EXIT_USAGE = 64
};

enum cs_format {
	CS_FORMAT_TEXT,
	CS_FORMAT_JSON,
	CS_FORMAT_MARKDOWN,
	CS_FORMAT_JUNIT
};

struct cs_core_run {
	/* every core's request: target.core is set per core */
	struct cs_engine_request req;
	struct cs_snapshot_options snap;
	size_t max_output; /* --max-output; 0: by each core's size */
	enum cs_format format;
};

/* What the model may build for one core: max_output, or (0) tied to the
 * core's size (rv_options.max_output_bytes). */
size_t cs_output_budget(size_t max_output, const char *core);

/* Read every core of the directory path (directory true) or the one core
 * path, and write the reports and their summary on stdout in the run's
 * format. Returns the exit code. */
int cs_core_dir_run(const char *path, bool directory,
		    const struct cs_core_run *run);

#endif
