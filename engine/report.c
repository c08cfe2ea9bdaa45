/* What renderers ask of a report beyond its fields. */
#include "report.h"

int cs_report_is_ruby_tid(const struct cs_report *r, int64_t tid)
{
	for (size_t i = 0; i < r->ruby->nthreads; i++)
		if (cs_report_native_tid(r, i) == tid)
			return 1;
	return 0;
}

int64_t cs_report_native_tid(const struct cs_report *r, size_t i)
{
	return r->native_tids ? r->native_tids[i] : r->tids[i];
}

/* Ruby thread i's native stack: none when its tid is not believed. */
const struct cs_native_thread *cs_report_native_of(const struct cs_report *r,
						   size_t i)
{
	if (r->tid_errors && r->tid_errors[i])
		return NULL;
	return cs_native_thread_of(r->native, cs_report_native_tid(r, i));
}
