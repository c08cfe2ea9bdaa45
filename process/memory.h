/* Reading a target's memory: the one thing the Ruby model, the build-id
 * reader and the native unwinder need of a target.
 *
 * The model never does I/O itself: a target (ELF core, live process, the
 * debugger's inferior; target.h) supplies a cs_memory. Addresses are
 * virtual addresses of the target process. A read that cannot be
 * satisfied completely is an error (code CS_ERR_FAULT): bytes missing from
 * a core are never silently zeros. */
#ifndef CS_TARGET_MEMORY_H
#define CS_TARGET_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"

struct cs_memory {
	struct cs_error *(*read)(void *priv, uint64_t addr, void *buf,
				 size_t len);
	void *priv;
};

/* An optional hint to a target whose first read of a page is slow (a core
 * file not yet in the page cache): the model is about to read these
 * ranges, scattered over the target, and the target may start fetching
 * them all at once. Reads stay correct without it. */
struct cs_prefetcher {
	void (*prefetch)(void *priv, uint64_t addr, size_t len);
	void *priv;
};

/* The target's writable memory, region by region in address order:
 * where a search for objects that nothing else locates looks (the Ruby
 * model's memory scan for fibers, when the GC heap cannot be walked). */
struct cs_writable_regions {
	/* The lowest writable region that ends above addr, [*start, *end);
	 * false when there is none. */
	bool (*next)(const void *priv, uint64_t addr, uint64_t *start,
		     uint64_t *end);
	const void *priv;
};

static inline struct cs_error *
cs_memory_read(const struct cs_memory *t, uint64_t addr, void *buf, size_t len)
{
	return t->read(t->priv, addr, buf, len);
}

#endif
