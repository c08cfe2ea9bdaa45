#include "source_choice.h"

#include <unistd.h>

size_t gx_source_order(const struct gx_facts *f,
		       enum gx_source_kind order[GX_SOURCES_MAX])
{
	size_t n = 0;
	if (!f->via_debugger && f->is_core && f->core_path &&
	    access(f->core_path, R_OK) == 0)
		order[n++] = GX_SOURCE_CORE;
	else if (!f->via_debugger && !f->is_core && f->local && f->pid > 0)
		order[n++] = GX_SOURCE_LIVE;
	order[n++] = GX_SOURCE_DEBUGGER;
	return n;
}

struct cs_error *gx_sample_check(const struct gx_facts *f)
{
	if (!f->is_core && f->local && f->pid > 0)
		return NULL;
	return cs_error_create(CS_ERR_USAGE,
			       "sampling needs a live local process; this "
			       "inferior is a %s",
			       f->is_core ? "core file" : "remote target");
}

bool gx_source_retry(const struct cs_error *err)
{
	return err->code != CS_ERR_NO_THREAD;
}
