#include "page_cache.h"

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
	memset(c->tags, 0, sizeof(c->tags));
}

void cs_page_cache_free(struct cs_page_cache *c)
{
	free(c->pages);
	c->pages = NULL;
}

static struct cs_error *cached_read(void *priv, uint64_t addr, void *buf,
				    size_t len)
{
	struct cs_page_cache *c = priv;
	uint8_t *out = buf;
	while (len) {
		uint64_t page = addr & ~(uint64_t)(CS_PAGE_SIZE - 1);
		size_t off = (size_t)(addr - page);
		size_t n = CS_PAGE_SIZE - off < len ? CS_PAGE_SIZE - off : len;
		size_t slot = (size_t)(page / CS_PAGE_SIZE) % CS_PAGE_SLOTS;
		if (c->tags[slot] != page + 1) {
			c->misses++;
			struct cs_error *err = rv_target_read(
				&c->inner, page, c->pages[slot], CS_PAGE_SIZE);
			if (err) {
				/* A page only partly readable: read exactly
				 * what was asked, uncached. */
				cs_error_destroy(err);
				c->tags[slot] = 0;
				return rv_target_read(&c->inner, addr, out, len);
			}
			c->tags[slot] = page + 1;
		} else {
			c->hits++;
		}
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
