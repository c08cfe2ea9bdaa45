/* See bug_reporters.h. */
#include "bug_reporters.h"

#include <string.h>

/* error.c's entries to report_bug(), the report itself
 * (rb_vm_bugreport) and the steps around it. The names are looked up in
 * the binary: one it lacks is simply not there. */
const char *const cs_bug_reporters[] = {
	"rb_bug",
	"rb_bug_errno",
	"rb_bug_context",
	"rb_bug_for_fatal_signal",
	"rb_bug_without_die",
	"rb_bug_without_die_internal",
	"rb_assert_failure",
	"rb_assert_failure_detail",
	"rb_async_bug_errno",
	"report_bug",
	"report_bug_valist",
	"bug_report_begin",
	"bug_report_begin_valist",
	"bug_report_end",
	"rb_vm_bugreport",
};
const size_t cs_nbug_reporters =
	sizeof(cs_bug_reporters) / sizeof(*cs_bug_reporters);

bool cs_is_bug_reporter(const char *function)
{
	if (!function)
		return false;
	size_t len = strcspn(function, ".");
	for (size_t i = 0; i < cs_nbug_reporters; i++)
		if (strlen(cs_bug_reporters[i]) == len &&
		    memcmp(function, cs_bug_reporters[i], len) == 0)
			return true;
	return false;
}
