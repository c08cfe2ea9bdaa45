#include "debuginfod.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <pthread.h>
#include <stdio.h>

/* The three functions used, typed as the header declares them. */
static struct {
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_end) *end;
	char why[256]; /* "" once loaded */
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void load(void)
{
	/* RTLD_LOCAL: its symbols (libcurl's among them) stay out of the
	 * global scope, where a debugger hosting the module has its own. It
	 * is never unloaded: libcurl is not made to be. */
	void *h = dlopen(DW_DEBUGINFOD_SONAME, RTLD_LAZY | RTLD_LOCAL);
	if (h) {
		lib.begin = (__typeof__(lib.begin))dlsym(h, "debuginfod_begin");
		lib.find_debuginfo = (__typeof__(lib.find_debuginfo))dlsym(
			h, "debuginfod_find_debuginfo");
		lib.end = (__typeof__(lib.end))dlsym(h, "debuginfod_end");
		if (lib.begin && lib.find_debuginfo && lib.end)
			return;
	}
	const char *err = dlerror();
	snprintf(lib.why, sizeof(lib.why), "%s could not be loaded (%s)",
		 DW_DEBUGINFOD_SONAME, err ? err : "a function is missing");
	lib.begin = NULL;
}

int dw_debuginfod_find_debuginfo(const uint8_t *build_id, size_t len,
				 char **path, const char **why)
{
	*path = NULL;
	pthread_once(&lib_once, load);
	if (!lib.begin) {
		*why = lib.why;
		return -1;
	}
	debuginfod_client *client = lib.begin();
	if (!client)
		return -1;
	int fd = lib.find_debuginfo(client, build_id, (int)len, path);
	lib.end(client);
	return fd;
}
