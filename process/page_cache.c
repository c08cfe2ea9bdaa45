#include "page_cache.h"

#include <stdlib.h>
#include <string.h>

/* What a clear reads again of a used page: the bytes used, out to these
 * boundaries and one more step either side. A stack a frame deeper next
 * time still falls inside, and a few hundred bytes more to copy cost far
 * less than a system call for the page later. Copying whole pages was a
 * third of a sample; the parts used are a few kilobytes. */
#define RANGE_STEP 256

int cs_page_cache_init(struct cs_page_cache *c, const struct cs_memory *inner)
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

static struct cs_page_slot *slot_for(struct cs_page_cache *c, uint64_t page)
{
	size_t i = slot_of(page);
	struct cs_page_slot *sl = &c->slots[i];
	if (!sl->listed) {
		sl->listed = true;
		c->active[c->nactive++] = (uint16_t)i;
	}
	return sl;
}

static void set_valid(struct cs_page_cache *c, uint64_t page, size_t lo,
		      size_t hi)
{
	struct cs_page_slot *sl = slot_for(c, page);
	sl->tag = page + 1;
	sl->valid_lo = (uint16_t)lo;
	sl->valid_hi = (uint16_t)hi;
}

/* The range of the slot's recent page a clear reads again. */
static void read_ahead_range(const struct cs_page_slot *sl, uint64_t *addr,
			     size_t *len)
{
	size_t lo = sl->used_lo / RANGE_STEP * RANGE_STEP;
	size_t hi = (sl->used_hi + RANGE_STEP - 1) / RANGE_STEP * RANGE_STEP;
	lo = lo >= RANGE_STEP ? lo - RANGE_STEP : 0;
	hi = hi + RANGE_STEP <= CS_PAGE_SIZE ? hi + RANGE_STEP : CS_PAGE_SIZE;
	*addr = sl->recent - 1 + lo;
	*len = hi - lo;
}

void cs_page_cache_clear(struct cs_page_cache *c)
{
	uint64_t addrs[CS_PAGE_PREFETCH];
	void *bufs[CS_PAGE_PREFETCH];
	size_t lens[CS_PAGE_PREFETCH];
	size_t n = 0, kept = 0;
	c->clears++;
	c->nunreadable = 0;
	/* Every tag goes; a slot stays listed while its recent page is kept
	 * for read-ahead. */
	for (size_t k = 0; k < c->nactive; k++) {
		struct cs_page_slot *sl = &c->slots[c->active[k]];
		sl->tag = 0;
		if (sl->recent && c->clears - sl->recent_clear > CS_PAGE_KEEP)
			sl->recent = 0;
		if (!sl->recent) {
			sl->listed = false;
			continue;
		}
		c->active[kept++] = c->active[k];
		if (!c->read_ranges || n == CS_PAGE_PREFETCH)
			continue;
		read_ahead_range(sl, &addrs[n], &lens[n]);
		bufs[n] = c->pages[c->active[k]] + addrs[n] % CS_PAGE_SIZE;
		n++;
	}
	c->nactive = kept;
	/* A range that cannot be read (unmapped since) ends a batch: it is
	 * forgotten, and the rest read in another. */
	for (size_t done = 0; done < n;) {
		size_t got = c->read_ranges(c->read_ranges_priv, addrs + done,
					    bufs + done, lens + done, n - done);
		for (size_t i = done; i < done + got && i < n; i++) {
			size_t lo = (size_t)(addrs[i] % CS_PAGE_SIZE);
			set_valid(c, addrs[i] - lo, lo, lo + lens[i]);
		}
		c->prefetched += got;
		done += got;
		if (done < n)
			c->slots[slot_of(addrs[done++])].recent = 0;
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
	return c->slots[slot_of(page)].tag == page + 1;
}

/* Whether bytes [off, off + n) of page are cached. */
static bool holds(const struct cs_page_slot *sl, uint64_t page, size_t off,
		  size_t n)
{
	return sl->tag == page + 1 && off >= sl->valid_lo &&
	       off + n <= sl->valid_hi;
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
		struct cs_error *err = cs_memory_read(
			&c->inner, page, c->pages[slot_of(page)], CS_PAGE_SIZE);
		if (!err)
			set_valid(c, page, 0, CS_PAGE_SIZE);
		return err;
	}
	static uint8_t run[MAX_RUN * CS_PAGE_SIZE];
	struct cs_error *err =
		cs_memory_read(&c->inner, page, run, n * CS_PAGE_SIZE);
	if (err) /* part of the run may be unreadable: the first alone */
		return cs_error_destroy(err), fill(c, page, page);
	for (size_t i = 0; i < n; i++) {
		uint64_t p = page + i * CS_PAGE_SIZE;
		memcpy(c->pages[slot_of(p)], run + i * CS_PAGE_SIZE,
		       CS_PAGE_SIZE);
		set_valid(c, p, 0, CS_PAGE_SIZE);
	}
	return NULL;
}

static bool known_unreadable(const struct cs_page_cache *c, uint64_t page)
{
	for (size_t i = 0; i < c->nunreadable; i++)
		if (c->unreadable_pages[i] == page)
			return true;
	return false;
}

/* The first page of a read could not be read: with a whole-page target,
 * the read fails there, and later reads in the page need not ask. */
static struct cs_error *unreadable_at(struct cs_page_cache *c, uint64_t page,
				      uint64_t addr, size_t len)
{
	if (!known_unreadable(c, page) && c->nunreadable < CS_PAGE_UNREADABLE)
		c->unreadable_pages[c->nunreadable++] = page;
	return c->unreadable(c->unreadable_priv, addr, len);
}

static void note_use(struct cs_page_cache *c, struct cs_page_slot *sl,
		     uint64_t page, size_t off, size_t n)
{
	if (sl->recent != page + 1) {
		sl = slot_for(c, page);
		sl->recent = page + 1;
		sl->used_lo = (uint16_t)off;
		sl->used_hi = (uint16_t)(off + n);
	}
	if (off < sl->used_lo)
		sl->used_lo = (uint16_t)off;
	if (off + n > sl->used_hi)
		sl->used_hi = (uint16_t)(off + n);
	sl->recent_clear = c->clears;
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
		struct cs_page_slot *sl = &c->slots[slot];
		if (!holds(sl, page, off, n)) {
			/* the read's first page, known unreadable */
			bool first = out == buf;
			if (first && c->unreadable && known_unreadable(c, page))
				return c->unreadable(c->unreadable_priv, addr,
						     len);
			sl->tag = 0; /* absent, or only partly there */
			struct cs_error *err = fill(c, page, last);
			if (err) {
				bool fault = err->code == CS_ERR_FAULT &&
					     err->has_address &&
					     err->address == page;
				cs_error_destroy(err);
				if (first && fault && c->unreadable)
					return unreadable_at(c, page, addr,
							     len);
				/* A page only partly readable: read exactly
				 * what was asked, uncached. */
				return cs_memory_read(&c->inner, addr, out,
						      len);
			}
			c->filled++;
		} else {
			c->hits++;
		}
		note_use(c, sl, page, off, n);
		memcpy(out, c->pages[slot] + off, n);
		out += n;
		addr += n;
		len -= n;
	}
	return NULL;
}

struct cs_memory cs_page_cache_target(struct cs_page_cache *c)
{
	struct cs_memory t = {cached_read, c};
	return t;
}
