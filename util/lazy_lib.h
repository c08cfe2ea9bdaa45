/* A shared library loaded the first time a feature needs it, never at
 * start-up: one that only some runs use (libdebuginfod, which brings
 * libcurl and TLS with it; libzstd, liblz4 and libbz2, for cores compressed
 * with zstd, lz4 or bzip2). */
#ifndef CS_UTIL_LAZY_LIB_H
#define CS_UTIL_LAZY_LIB_H

#include <pthread.h>

struct cs_lazy_lib {
	const char *soname;       /* as dlopen takes it: "libzstd.so.1" */
	const char *const *names; /* the functions used, NULL-terminated */
	void **syms;              /* filled, one per name */
	/* private */
	pthread_mutex_t lock;
	int tried;
	char why[256];
};

#define CS_LAZY_LIB(soname_, names_, syms_)                              \
	{                                                                \
		.soname = (soname_), .names = (names_), .syms = (syms_), \
		.lock = PTHREAD_MUTEX_INITIALIZER,                       \
	}

/* NULL once every function is resolved (the library loaded at the first
 * call, RTLD_LOCAL, and never unloaded); else a sentence naming the
 * library and why it could not be loaded, the same for every call. */
const char *cs_lazy_lib_load(struct cs_lazy_lib *lib);

#endif
