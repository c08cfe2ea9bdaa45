/* The options every command that reads a Ruby's files shares: where the
 * target's files are (--debug-dir, --sysroot, --lib-search-path) and the
 * layout cache (--cache-dir, --no-cache). A command lists the getopt_long
 * entries below among its own and hands each option it gets to
 * input_args_take first, so that each option means one thing and says
 * one thing when it is wrong, in corestack, heap and bundle alike. */
#ifndef CS_CLI_INPUT_ARGS_H
#define CS_CLI_INPUT_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* --debug-dir may be given this often. */
#define INPUT_ARGS_MAX_DEBUG_DIRS 16

struct input_args {
	const char *sysroot;         /* --sysroot: the core's files under DIR */
	const char *lib_search_path; /* --lib-search-path DIRS, colon-separated */
	const char *cache_dir;       /* NULL: default; "": no layout cache */
	/* the --debug-dir DIRs, then /usr/lib/debug; NULL-terminated once
	 * input_args_finish ran */
	const char *debug_dirs[INPUT_ARGS_MAX_DEBUG_DIRS + 2];
	size_t ndebug_dirs;
};

/* getopt_long entries of the target's files and of the layout cache; the
 * characters they return are the ones input_args_take takes. */
/* clang-format off */
#define INPUT_ARGS_FILE_OPTIONS \
	{"debug-dir", required_argument, NULL, 'd'}, \
	{"sysroot", required_argument, NULL, 'S'}, \
	{"lib-search-path", required_argument, NULL, 'L'}
#define INPUT_ARGS_CACHE_OPTIONS \
	{"cache-dir", required_argument, NULL, 'c'}, \
	{"no-cache", no_argument, NULL, 'n'}
/* clang-format on */

enum input_arg { INPUT_ARG_OTHER, INPUT_ARG_TAKEN, INPUT_ARG_BAD };

/* Takes getopt_long's c and optarg: INPUT_ARG_TAKEN; INPUT_ARG_OTHER when
 * c is none of these options; INPUT_ARG_BAD (said on stderr, as prog)
 * when it cannot be taken. */
enum input_arg input_args_take(struct input_args *a, const char *prog, int c,
			       const char *arg);

/* After the options: the default debug directory last, then NULL. */
void input_args_finish(struct input_args *a);

/* Whether a is right for a live process: the options that name a core's
 * files are not (said on stderr, as prog). */
bool input_args_fit_pid(const struct input_args *a, const char *prog);

#endif
