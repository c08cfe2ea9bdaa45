/* A small page cache in front of a slow target (a live process: every read
 * is a system call). A snapshot reads the same pages again and again: iseq
 * bodies, strings, the ID table. Clear it between snapshots of a running
 * process, since the pages change. */
#ifndef CS_CORESTACK_PAGE_CACHE_H
#define CS_CORESTACK_PAGE_CACHE_H

#include <stdint.h>

#include "../rubyvm/target.h"

#define CS_PAGE_SIZE 4096
#define CS_PAGE_SLOTS 512 /* 2 MiB, direct-mapped */

/* Pages read ahead at each clear, at most. */
#define CS_PAGE_PREFETCH 64

/* Reads whole pages in one go (cs_live_read_pages); returns how many, from
 * the first, were read. */
typedef size_t (*cs_read_pages_fn)(void *priv, const uint64_t *pages,
				   void *const *bufs, size_t n,
				   size_t page_size);

struct cs_page_cache {
	struct rv_target inner;
	uint64_t tags[CS_PAGE_SLOTS]; /* page address + 1; 0 = empty */
	uint8_t used[CS_PAGE_SLOTS];  /* read from since the last clear */
	uint8_t (*pages)[CS_PAGE_SIZE];
	uint64_t hits, misses, prefetched;
	uint64_t filled; /* pages read on demand (not ahead) and kept */
	/* Optional. When set, a clear reads the pages the last snapshot used
	 * again, all in one call: the next snapshot of a process mostly walks
	 * the same pages, and a call per page is most of a sample's cost. */
	cs_read_pages_fn read_pages;
	void *read_pages_priv;
};

/* 0 on allocation failure. */
int cs_page_cache_init(struct cs_page_cache *c, const struct rv_target *inner);
/* Forget every page (the target ran); with read_pages set, read again at
 * once the pages used since the last clear. */
void cs_page_cache_clear(struct cs_page_cache *c);
void cs_page_cache_free(struct cs_page_cache *c);
struct rv_target cs_page_cache_target(struct cs_page_cache *c);

#endif
