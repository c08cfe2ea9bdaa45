#include "debuginfod.h"
#include "../util/lazy_lib.h"

#include <elfutils/debuginfod.h>

enum { BEGIN, FIND_DEBUGINFO, END, NSYMS };
static const char *const names[] = {
	[BEGIN] = "debuginfod_begin",
	[FIND_DEBUGINFO] = "debuginfod_find_debuginfo",
	[END] = "debuginfod_end",
	[NSYMS] = NULL,
};
static void *syms[NSYMS];
static struct cs_lazy_lib lib = CS_LAZY_LIB(DW_DEBUGINFOD_SONAME, names, syms);

int dw_debuginfod_find_debuginfo(const uint8_t *build_id, size_t len,
				 char **path, const char **why)
{
	*path = NULL;
	const char *failed = cs_lazy_lib_load(&lib);
	if (failed) {
		*why = failed;
		return -1;
	}
	/* typed as the header declares them */
	__typeof__(debuginfod_begin) *begin = syms[BEGIN];
	__typeof__(debuginfod_find_debuginfo) *find = syms[FIND_DEBUGINFO];
	__typeof__(debuginfod_end) *end = syms[END];
	debuginfod_client *client = begin();
	if (!client)
		return -1;
	int fd = find(client, build_id, (int)len, path);
	end(client);
	return fd;
}
