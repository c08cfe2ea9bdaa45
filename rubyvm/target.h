/* The memory interface the Ruby model reads through.
 *
 * The model never does I/O itself: a front end (ELF core, live process, gdb,
 * lldb) supplies an rv_target. Addresses are virtual addresses of the target
 * process. A read that cannot be satisfied completely is an error (code
 * CS_ERR_FAULT): bytes missing from a core are never silently zeros. */
#ifndef CS_RUBYVM_TARGET_H
#define CS_RUBYVM_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"

struct rv_target {
	struct cs_error *(*read)(void *priv, uint64_t addr, void *buf,
				 size_t len);
	void *priv;
};

/* An optional hint to a target whose first read of a page is slow (a core
 * file not yet in the page cache): the model is about to read these
 * ranges, scattered over the target, and the target may start fetching
 * them all at once. Reads stay correct without it. */
struct rv_prefetcher {
	void (*prefetch)(void *priv, uint64_t addr, size_t len);
	void *priv;
};

static inline struct cs_error *rv_target_read(const struct rv_target *t,
					      uint64_t addr, void *buf,
					      size_t len)
{
	return t->read(t->priv, addr, buf, len);
}

#endif
