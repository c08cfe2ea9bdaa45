#include "lazy_lib.h"

#include <dlfcn.h>
#include <stdio.h>

static void load(struct cs_lazy_lib *lib)
{
	/* RTLD_LOCAL: its symbols stay out of the global scope, where a
	 * debugger hosting the module has its own. */
	void *h = dlopen(lib->soname, RTLD_LAZY | RTLD_LOCAL);
	const char *err = NULL;
	for (size_t i = 0; h && lib->names[i]; i++) {
		lib->syms[i] = dlsym(h, lib->names[i]);
		if (!lib->syms[i]) {
			err = dlerror();
			break;
		}
	}
	if (!h)
		err = dlerror();
	else if (!err)
		return;
	snprintf(lib->why, sizeof(lib->why), "%s could not be loaded (%s)",
		 lib->soname, err ? err : "unknown reason");
}

const char *cs_lazy_lib_load(struct cs_lazy_lib *lib)
{
	pthread_mutex_lock(&lib->lock);
	if (!lib->tried) {
		lib->tried = 1;
		load(lib);
	}
	pthread_mutex_unlock(&lib->lock);
	return lib->why[0] ? lib->why : NULL;
}
