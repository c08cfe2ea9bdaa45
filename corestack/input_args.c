/* See input_args.h. */
#include "input_args.h"

#include <stdio.h>

enum input_arg input_args_take(struct input_args *a, const char *prog, int c,
			       const char *arg)
{
	switch (c) {
	case 'd':
		if (a->ndebug_dirs == INPUT_ARGS_MAX_DEBUG_DIRS) {
			fprintf(stderr, "%s: too many --debug-dir\n", prog);
			return INPUT_ARG_BAD;
		}
		a->debug_dirs[a->ndebug_dirs++] = arg;
		return INPUT_ARG_TAKEN;
	case 'S':
		a->sysroot = arg;
		return INPUT_ARG_TAKEN;
	case 'L':
		a->lib_search_path = arg;
		return INPUT_ARG_TAKEN;
	case 'c':
		a->cache_dir = arg;
		return INPUT_ARG_TAKEN;
	case 'n':
		a->cache_dir = "";
		return INPUT_ARG_TAKEN;
	default:
		return INPUT_ARG_OTHER;
	}
}

void input_args_finish(struct input_args *a)
{
	a->debug_dirs[a->ndebug_dirs++] = "/usr/lib/debug";
	a->debug_dirs[a->ndebug_dirs] = NULL;
}

bool input_args_fit_pid(const struct input_args *a, const char *prog)
{
	if (!a->sysroot && !a->lib_search_path)
		return true;
	fprintf(stderr, "%s: --sysroot and --lib-search-path go with a core\n",
		prog);
	return false;
}
