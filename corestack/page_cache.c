#include "page_cache.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* What a clear reads again of a used page: the bytes used, out to these
 * boundaries and one more step either side. A stack a frame deeper next
 * time still falls inside, and a few hundred bytes more to copy cost far
 * less than a system call for the page later. Copying whole pages was a
 * third of a sample; the parts used are a few kilobytes. */
#define RANGE_STEP 256

int cs_page_cache_init(struct cs_page_cache *c, const struct rv_target *inner)
{
	memset(c, 0, sizeof(*c));
	c->inner = *inner;
	c->pages = malloc((size_t)CS_PAGE_SLOTS * CS_PAGE_SIZE);
	return c->pages != NULL;
}

static size_t slot_of(uint64_t page)
{
	return (size_t)(page / CS_PAGE_SIZE) % CS_PAGE_SLOTS;
}

static void set_valid(struct cs_page_cache *c, uint64_t page, size_t lo,
		      size_t hi)
{
	size_t slot = slot_of(page);
	c->tags[slot] = page + 1;
	c->valid_lo[slot] = (uint16_t)lo;
	c->valid_hi[slot] = (uint16_t)hi;
}

/* The range of slot's page a clear reads again. */
static void read_ahead_range(const struct cs_page_cache *c, size_t slot,
			     uint64_t *addr, size_t *len)
{
	size_t lo = c->used_lo[slot] / RANGE_STEP * RANGE_STEP;
	size_t hi = (c->used_hi[slot] + RANGE_STEP - 1) / RANGE_STEP *
		    RANGE_STEP;
	lo = lo >= RANGE_STEP ? lo - RANGE_STEP : 0;
	hi = hi + RANGE_STEP <= CS_PAGE_SIZE ? hi + RANGE_STEP : CS_PAGE_SIZE;
	*addr = c->recent[slot] - 1 + lo;
	*len = hi - lo;
}

void cs_page_cache_clear(struct cs_page_cache *c)
{
	uint64_t addrs[CS_PAGE_PREFETCH];
	void *bufs[CS_PAGE_PREFETCH];
	size_t lens[CS_PAGE_PREFETCH];
	size_t n = 0;
	memset(c->tags, 0, sizeof(c->tags));
	c->clears++;
	for (size_t slot = 0; c->read_ranges && slot < CS_PAGE_SLOTS &&
			      n < CS_PAGE_PREFETCH; slot++) {
		if (!c->recent[slot])
			continue;
		if (c->clears - c->recent_clear[slot] > CS_PAGE_KEEP) {
			c->recent[slot] = 0;
			continue;
		}
		read_ahead_range(c, slot, &addrs[n], &lens[n]);
		bufs[n] = c->pages[slot] + addrs[n] % CS_PAGE_SIZE;
		n++;
	}
	/* A range that cannot be read (unmapped since) ends a batch: it is
	 * forgotten, and the rest read in another. */
	for (size_t done = 0; done < n;) {
		size_t got = c->read_ranges(c->read_ranges_priv, addrs + done,
					    bufs + done, lens + done,
					    n - done);
		for (size_t i = done; i < done + got && i < n; i++) {
			size_t lo = (size_t)(addrs[i] % CS_PAGE_SIZE);
			set_valid(c, addrs[i] - lo, lo, lo + lens[i]);
		}
		c->prefetched += got;
		done += got;
		if (done < n)
			c->recent[slot_of(addrs[done++])] = 0;
	}
}

void cs_page_cache_free(struct cs_page_cache *c)
{
	free(c->pages);
	c->pages = NULL;
}

/* Pages a single read may bring in together: one system call for a run
 * of missing pages (control frames span several) instead of one each. */
#define MAX_RUN 8

static bool cached(const struct cs_page_cache *c, uint64_t page)
{
	return c->tags[slot_of(page)] == page + 1;
}

/* Whether bytes [off, off + n) of page are cached. */
static bool holds(const struct cs_page_cache *c, uint64_t page, size_t off,
		  size_t n)
{
	size_t slot = slot_of(page);
	return c->tags[slot] == page + 1 && off >= c->valid_lo[slot] &&
	       off + n <= c->valid_hi[slot];
}

/* Bring in whole the run of pages starting at page, up to last, that are
 * not cached at all. */
static struct cs_error *fill(struct cs_page_cache *c, uint64_t page,
			     uint64_t last)
{
	size_t n = 1;
	while (n < MAX_RUN && page + n * CS_PAGE_SIZE <= last &&
	       !cached(c, page + n * CS_PAGE_SIZE))
		n++;
	c->misses += n;
	if (n == 1) {
		struct cs_error *err = rv_target_read(
			&c->inner, page, c->pages[slot_of(page)], CS_PAGE_SIZE);
		if (!err)
			set_valid(c, page, 0, CS_PAGE_SIZE);
		return err;
	}
	static uint8_t run[MAX_RUN * CS_PAGE_SIZE];
	struct cs_error *err =
		rv_target_read(&c->inner, page, run, n * CS_PAGE_SIZE);
	if (err) /* part of the run may be unreadable: the first alone */
		return cs_error_destroy(err),
		       fill(c, page, page);
	for (size_t i = 0; i < n; i++) {
		uint64_t p = page + i * CS_PAGE_SIZE;
		memcpy(c->pages[slot_of(p)], run + i * CS_PAGE_SIZE,
		       CS_PAGE_SIZE);
		set_valid(c, p, 0, CS_PAGE_SIZE);
	}
	return NULL;
}

static void note_use(struct cs_page_cache *c, uint64_t page, size_t off,
		     size_t n)
{
	size_t slot = slot_of(page);
	if (c->recent[slot] != page + 1) {
		c->recent[slot] = page + 1;
		c->used_lo[slot] = (uint16_t)off;
		c->used_hi[slot] = (uint16_t)(off + n);
	}
	if (off < c->used_lo[slot])
		c->used_lo[slot] = (uint16_t)off;
	if (off + n > c->used_hi[slot])
		c->used_hi[slot] = (uint16_t)(off + n);
	c->recent_clear[slot] = c->clears;
}

static struct cs_error *cached_read(void *priv, uint64_t addr, void *buf,
				    size_t len)
{
	struct cs_page_cache *c = priv;
	uint8_t *out = buf;
	uint64_t last = len ? (addr + len - 1) & ~(uint64_t)(CS_PAGE_SIZE - 1)
			    : 0;
	while (len) {
		uint64_t page = addr & ~(uint64_t)(CS_PAGE_SIZE - 1);
		size_t off = (size_t)(addr - page);
		size_t n = CS_PAGE_SIZE - off < len ? CS_PAGE_SIZE - off : len;
		size_t slot = slot_of(page);
		if (!holds(c, page, off, n)) {
			if (cached(c, page)) /* only partly: read it whole */
				c->tags[slot] = 0;
			struct cs_error *err = fill(c, page, last);
			if (err) {
				/* A page only partly readable: read exactly
				 * what was asked, uncached. */
				cs_error_destroy(err);
				c->tags[slot] = 0;
				return rv_target_read(&c->inner, addr, out, len);
			}
			c->filled++;
		} else {
			c->hits++;
		}
		note_use(c, page, off, n);
		memcpy(out, c->pages[slot] + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return NULL;
}

struct rv_target cs_page_cache_target(struct cs_page_cache *c)
{
	struct rv_target t = {cached_read, c};
	return t;
}
