/* The table of profile formats (profile_format.h). */
#include "profile_format.h"

#include <string.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof(*(a)))

const struct cs_profile_format cs_profile_formats[] = {
	{"collapsed",
	 cs_profile_write_collapsed,
	 {".folded", ".collapsed"},
	 false},
	{"speedscope", cs_profile_write_speedscope, {".speedscope.json"}, false},
	{"flamegraph", cs_profile_write_flamegraph, {".svg"}, false},
	{"summary", cs_profile_write_summary, {NULL}, false},
	/* pprof's own files end so */
	{"pprof", cs_profile_write_pprof, {".pb.gz", ".pprof"}, true},
	/* a bare .json could be speedscope's too */
	{"firefox", cs_profile_write_firefox, {NULL}, false},
	{NULL, NULL, {NULL}, false},
};

const struct cs_profile_format *cs_profile_format_find(const char *name)
{
	for (const struct cs_profile_format *f = cs_profile_formats; f->name;
	     f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

const struct cs_profile_format *cs_profile_format_for_path(const char *path)
{
	const struct cs_profile_format *best = NULL;
	size_t len = strlen(path), best_len = 0;
	for (const struct cs_profile_format *f = cs_profile_formats; f->name;
	     f++) {
		for (size_t i = 0; i < ARRAY_LEN(f->suffixes) && f->suffixes[i];
		     i++) {
			size_t n = strlen(f->suffixes[i]);
			if (n < len && n > best_len &&
			    strcmp(path + len - n, f->suffixes[i]) == 0) {
				best = f;
				best_len = n;
			}
		}
	}
	return best;
}
