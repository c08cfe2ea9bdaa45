#include "page_cache.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int cs_page_cache_init(struct cs_page_cache *c, const struct rv_target *inner)
{
	memset(c, 0, sizeof(*c));
	c->inner = *inner;
	c->pages = malloc((size_t)CS_PAGE_SLOTS * CS_PAGE_SIZE);
	return c->pages != NULL;
}

void cs_page_cache_clear(struct cs_page_cache *c)
{
	uint64_t want[CS_PAGE_PREFETCH];
	void *bufs[CS_PAGE_PREFETCH];
	size_t n = 0;
	for (size_t slot = 0; c->read_pages && slot < CS_PAGE_SLOTS &&
			      n < CS_PAGE_PREFETCH; slot++) {
		if (c->used[slot] && c->tags[slot]) {
			want[n] = c->tags[slot] - 1;
			bufs[n++] = c->pages[slot];
		}
	}
	memset(c->tags, 0, sizeof(c->tags));
	memset(c->used, 0, sizeof(c->used));
	if (!n)
		return;
	size_t got = c->read_pages(c->read_pages_priv, want, bufs, n,
				   CS_PAGE_SIZE);
	for (size_t i = 0; i < got && i < n; i++)
		c->tags[(size_t)(want[i] / CS_PAGE_SIZE) % CS_PAGE_SLOTS] =
			want[i] + 1;
	c->prefetched += got;
}

void cs_page_cache_free(struct cs_page_cache *c)
{
	free(c->pages);
	c->pages = NULL;
}

/* Pages a single read may bring in together: one system call for a run
 * of missing pages (control frames span several) instead of one each. */
#define MAX_RUN 8

static size_t slot_of(uint64_t page)
{
	return (size_t)(page / CS_PAGE_SIZE) % CS_PAGE_SLOTS;
}

static bool cached(const struct cs_page_cache *c, uint64_t page)
{
	return c->tags[slot_of(page)] == page + 1;
}

/* Bring in the run of missing pages starting at page, up to last. */
static struct cs_error *fill(struct cs_page_cache *c, uint64_t page,
			     uint64_t last)
{
	size_t n = 1;
	while (n < MAX_RUN && page + n * CS_PAGE_SIZE <= last &&
	       !cached(c, page + n * CS_PAGE_SIZE))
		n++;
	c->misses += n;
	if (n == 1)
		return rv_target_read(&c->inner, page, c->pages[slot_of(page)],
				      CS_PAGE_SIZE);
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
		if (i)
			c->tags[slot_of(p)] = p + 1;
	}
	return NULL;
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
		if (c->tags[slot] != page + 1) {
			struct cs_error *err = fill(c, page, last);
			if (err) {
				/* A page only partly readable: read exactly
				 * what was asked, uncached. */
				cs_error_destroy(err);
				c->tags[slot] = 0;
				return rv_target_read(&c->inner, addr, out, len);
			}
			c->tags[slot] = page + 1;
			c->filled++;
		} else {
			c->hits++;
		}
		c->used[slot] = 1;
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
