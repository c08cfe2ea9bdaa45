/* corestack bundle (the subcommand), and a bundle given where a core is:
 * unpacked into a private directory for the analysis, removed at exit. */
#ifndef CS_CLI_BUNDLE_H
#define CS_CLI_BUNDLE_H

#include "../engine/engine.h"
#include "input_args.h"

/* The bundle's own directory, the user's, the default one. */
#define CS_BUNDLE_MAX_DEBUG_DIRS (1 + INPUT_ARGS_MAX_DEBUG_DIRS + 1)

/* corestack bundle ...: argv[0] is "bundle". Exit code as main's. */
int cs_bundle_main(int argc, char **argv);

/* A bundle unpacked for an analysis. */
struct cs_bundle_input {
	struct cs_bundle bundle;
	char *dir;      /* the private directory under $TMPDIR */
	char *core;     /* the unpacked core */
	char *lib_path; /* dir, then the user's --lib-search-path */
	char *sysroot;  /* an empty place in dir, unless the user gave one */
	const char *debug_dirs[CS_BUNDLE_MAX_DEBUG_DIRS + 2];
};

/* When the file at path is a bundle, unpack it and point req at what it
 * holds (the core, its files by the paths the core names, dir as a
 * library and debug directory before the user's, and, unless the user
 * gave a sysroot, a sysroot where nothing is, so that no other file the
 * core names is read from this machine); *is says whether it was one. On failure nothing is left on disk. The directory is removed
 * by cs_bundle_input_close, at exit, or on a signal that ends the
 * program. */
struct cs_error *cs_bundle_input_open(const char *path,
				      struct cs_engine_request *req,
				      struct cs_bundle_input *in, bool *is);
void cs_bundle_input_close(struct cs_bundle_input *in);

/* corestack bundle --extract FILE -o DIR (bundle_extract.c): lay the
 * bundle out in DIR for a debugger and print the commands that open it.
 * Exit code as cs_bundle_main's. */
int cs_bundle_extract_main(const char *bundle, const char *dir);

/* Remove what b made (cs_bundle_remove_files) at exit or on a signal
 * that ends the program, until called again with NULL. */
void cs_bundle_guard_extract(const struct cs_bundle *b);

#endif
