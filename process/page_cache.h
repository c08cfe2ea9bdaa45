/* A small page cache in front of a slow target (a live process: every read
 * is a system call). A snapshot reads the same pages again and again: iseq
 * bodies, strings, the ID table. Clear it between snapshots of a running
 * process, since the pages change. */
#ifndef CS_CORESTACK_PAGE_CACHE_H
#define CS_CORESTACK_PAGE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "memory.h"

#define CS_PAGE_SIZE 4096
#define CS_PAGE_SLOTS 512 /* 2 MiB, direct-mapped */

/* Pages read ahead at each clear, at most. */
#define CS_PAGE_PREFETCH 64
/* A page is read ahead at the clears that follow a snapshot using it, this
 * many: the top of a running stack alternates between a few methods, and
 * a page left out one time would cost a system call of its own the next. */
#define CS_PAGE_KEEP 8

/* Pages found unreadable that a cache remembers until its next clear. */
#define CS_PAGE_UNREADABLE 4

/* The error a read of len bytes at addr gets from a target whose memory is
 * readable or not by whole pages when addr's page cannot be read. */
typedef struct cs_error *(*cs_unreadable_fn)(void *priv, uint64_t addr,
					     size_t len);

/* Reads n ranges, lens[i] bytes at addrs[i] into bufs[i], in one go
 * (cs_live_read_ranges); returns how many, from the first, were read
 * whole. */
typedef size_t (*cs_read_ranges_fn)(void *priv, const uint64_t *addrs,
				    void *const *bufs, const size_t *lens,
				    size_t n);

/* What the cache knows of one slot: one cache line, as a sample after a
 * sleep finds its data cold and each line touched costs a memory access. */
struct cs_page_slot {
	uint64_t tag; /* page address + 1; 0 = empty */
	/* The page the slot last served (address + 1) and at which clear
	 * (cs_page_cache.clears), and the bytes [used_lo, used_hi) of it
	 * read since that page came into the slot. */
	uint64_t recent;
	uint32_t recent_clear;
	uint16_t used_lo, used_hi;
	/* The bytes [valid_lo, valid_hi) of the slot's page hold the
	 * target's: the whole page when read on demand, the part used lately
	 * (and a margin) when read ahead at a clear. */
	uint16_t valid_lo, valid_hi;
	bool listed; /* in cs_page_cache.active */
};

struct cs_page_cache {
	struct cs_memory inner;
	struct cs_page_slot slots[CS_PAGE_SLOTS];
	/* The slots with a tag or a recent page, so that a clear visits a
	 * dozen slots, not all of them. */
	uint16_t active[CS_PAGE_SLOTS];
	size_t nactive;
	uint32_t clears;
	uint8_t (*pages)[CS_PAGE_SIZE];
	uint64_t hits, misses, prefetched;
	uint64_t filled; /* pages read on demand (not ahead) and kept */
	/* Samples in a row whose walk needed bytes the clear had not read
	 * again: a sampler stops trying to walk a running process from them
	 * (cs_sample_once) and looks again now and then. */
	uint32_t unserved;
	/* Optional. When set, a clear reads again what the last snapshot
	 * used of each page, all in one call: the next snapshot of a process
	 * mostly walks the same bytes, and a call per page is most of a
	 * sample's cost. */
	cs_read_ranges_fn read_ranges;
	void *read_ranges_priv;
	/* Optional, for a target readable or not by whole pages (a live
	 * process): a page that could not be read is not asked for again
	 * until the next clear, and a read that begins in it fails with
	 * this error at once. A torn pointer of a running process leads
	 * a sample into the same unmapped page several times. */
	cs_unreadable_fn unreadable;
	void *unreadable_priv;
	uint64_t unreadable_pages[CS_PAGE_UNREADABLE];
	size_t nunreadable;
};

/* 0 on allocation failure. */
int cs_page_cache_init(struct cs_page_cache *c, const struct cs_memory *inner);
/* Forget every page (the target ran); with read_ranges set, read again at
 * once the parts of pages used in the last CS_PAGE_KEEP snapshots. */
void cs_page_cache_clear(struct cs_page_cache *c);
void cs_page_cache_free(struct cs_page_cache *c);
struct cs_memory cs_page_cache_target(struct cs_page_cache *c);

#endif
