/* The table of profile formats (profile_format.h). */
#include "profile_format.h"

#include <string.h>

const struct cs_profile_format cs_profile_formats[] = {
	{"collapsed", cs_profile_write_collapsed},
	{"speedscope", cs_profile_write_speedscope},
	{"flamegraph", cs_profile_write_flamegraph},
	{"summary", cs_profile_write_summary},
	{"pprof", cs_profile_write_pprof},
	{"firefox", cs_profile_write_firefox},
	{NULL, NULL},
};

const struct cs_profile_format *cs_profile_format_find(const char *name)
{
	for (const struct cs_profile_format *f = cs_profile_formats; f->name;
	     f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}
