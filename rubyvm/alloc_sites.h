/* Where each object was allocated, as ObjectSpace.trace_object_allocations
 * recorded it in the objspace extension's table (rubyvm/alloc_sites.c;
 * docs/heap.md "The heap dump"): what dump_all writes as file, line,
 * method and generation. */
#ifndef CS_RUBYVM_ALLOC_SITES_H
#define CS_RUBYVM_ALLOC_SITES_H

#include <stdbool.h>
#include <stdint.h>

#include "../util/error.h"
#include "../util/u64map.h"

struct rv_session;

/* One object's allocation as the extension recorded it. Strings are the
 * table's (rv_alloc_sites), NULL where it recorded none. */
struct rv_alloc_site {
	const char *path;
	uint64_t line;
	const char *method;
	uint64_t generation;
	bool unreadable; /* its record could not be read: none of it known */
};

struct rv_alloc_sites {
	struct u64map by_object; /* VALUE -> struct rv_alloc_site */
	/* the texts, each read once: by a path's address, by a method's
	 * Symbol */
	struct u64map paths, methods;
	/* the table could not be read (all keys left out): why; NULL if it
	 * was, or there is none */
	char *error;
	/* objspace.so is loaded but its debug info does not describe the
	 * table: why (what was recorded, if anything, is not known) */
	const char *undescribed;
};

/* Read the table once, into a. No table (the extension not loaded, or
 * tracing never ran) leaves a empty. Fails only when out of memory. */
struct cs_error *rv_alloc_sites_read(struct rv_session *s,
				     struct rv_alloc_sites *a);
/* The allocation recorded for obj, NULL when none was. */
const struct rv_alloc_site *rv_alloc_site_of(const struct rv_alloc_sites *a,
					     uint64_t obj);
void rv_alloc_sites_free(struct rv_alloc_sites *a);

#endif
