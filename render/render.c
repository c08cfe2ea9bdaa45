/* The table of snapshot renderers (render.h). */
#include "render.h"

#include <string.h>

const struct cs_renderer cs_renderers[] = {
	{"text", cs_render_text},
	{"json", cs_render_json},
	{NULL, NULL},
};

const struct cs_renderer *cs_renderer_find(const char *name)
{
	for (const struct cs_renderer *r = cs_renderers; r->name; r++)
		if (strcmp(r->name, name) == 0)
			return r;
	return NULL;
}
