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

struct cs_page_cache {
	struct rv_target inner;
	uint64_t tags[CS_PAGE_SLOTS]; /* page address + 1; 0 = empty */
	uint8_t (*pages)[CS_PAGE_SIZE];
	uint64_t hits, misses;
};

/* 0 on allocation failure. */
int cs_page_cache_init(struct cs_page_cache *c, const struct rv_target *inner);
void cs_page_cache_clear(struct cs_page_cache *c);
void cs_page_cache_free(struct cs_page_cache *c);
struct rv_target cs_page_cache_target(struct cs_page_cache *c);

#endif
