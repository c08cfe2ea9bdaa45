/* Whether a VALUE is a live object: the start of a used slot of a GC heap
 * page, as CRuby's own GET_HEAP_PAGE finds it.
 *
 * Page bodies are HEAP_PAGE_ALIGN-aligned and begin with a header holding
 * their struct heap_page, whose slots are total_slots of slot_size bytes
 * (sizeof(RVALUE) where pages carry no slot size) from start. Any address
 * may be asked about, so the page must agree with where it was found: its
 * slots inside that body (and its body pointing back where it has one).
 * A page found so is remembered per session by its body, and used again
 * while the header still points at it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "session.h"

#define MAX_SLOT_SIZE ((uint64_t)1 << 16)
#define MIN_SLOT_SIZE 16      /* an RBasic */
#define MAX_CACHED_PAGES 4096 /* then the cache starts over */

struct page_geometry {
	uint64_t page, start, stride, total;
};

static bool have_facts(struct rv_session *s)
{
	return RV_HAS(s, heap_page_align_mask) && RV_HAS(s, page_body_page) &&
	       RV_HAS(s, page_total_slots) && RV_HAS(s, page_start) &&
	       (RV_HAS(s, page_slot_size) || RV_HAS(s, rvalue_size)) &&
	       RV_HAS(s, t_none) && rv_gc_layout_known(s);
}

/* The page at page, if it is the one of the body at base. */
static bool read_page(struct rv_session *s, uint64_t base, uint64_t page,
		      struct page_geometry *g)
{
	uint64_t align = (uint64_t)RV_VAL(s, heap_page_align_mask) + 1;
	uint64_t total, start, stride, body;
	if (!page || !rv_try_member(s, page, RVL_page_total_slots, &total) ||
	    !rv_try_member(s, page, RVL_page_start, &start))
		return false;
	if (!RV_HAS(s, page_slot_size))
		stride = (uint64_t)RV_VAL(s, rvalue_size);
	else if (!rv_try_member(s, page, RVL_page_slot_size, &stride))
		return false;
	if (RV_HAS(s, page_body) &&
	    (!rv_try_member(s, page, RVL_page_body, &body) || body != base))
		return false;
	if (stride < MIN_SLOT_SIZE || stride > MAX_SLOT_SIZE ||
	    total > align / MIN_SLOT_SIZE || start <= base ||
	    start - base > align || total * stride > align - (start - base))
		return false;
	*g = (struct page_geometry){page, start, stride, total};
	return true;
}

/* The page of the body at base, NULL when there is none. A body whose
 * header names no page is remembered too (its stride 0), so that the many
 * words of a machine stack that point into one such block of memory cost
 * one read of its header each, not a failed read of what it names. */
static const struct page_geometry *page_of(struct rv_session *s, uint64_t base)
{
	uint64_t page;
	if (!base || !rv_try_member(s, base, RVL_page_body_page, &page))
		return NULL;
	int found = 0;
	struct page_geometry *g = u64map_get(&s->heap_pages, base, &found);
	if (g && g->page == page)
		return g->stride ? g : NULL;
	struct page_geometry fresh = {page, 0, 0, 0};
	bool ok = page % (uint64_t)RV_VAL(s, value_size) == 0 &&
		  read_page(s, base, page, &fresh);
	if (!g) {
		if (s->heap_pages.count >= MAX_CACHED_PAGES)
			rv_heap_slots_destroy(s);
		g = malloc(sizeof(*g));
		if (!g)
			return NULL;
		if (!u64map_put(&s->heap_pages, base, g)) {
			free(g);
			return NULL;
		}
	}
	*g = fresh;
	return ok ? g : NULL;
}

enum rv_slot rv_heap_slot(struct rv_session *s, uint64_t v, uint64_t *slot_size,
			  char *why, size_t n)
{
	*slot_size = 0;
	if (!have_facts(s))
		return RV_SLOT_UNKNOWN;
	uint64_t base = v & ~(uint64_t)RV_VAL(s, heap_page_align_mask);
	const struct page_geometry *g = page_of(s, base);
	if (!g) {
		snprintf(why, n, "not in the Ruby heap");
		return RV_SLOT_NONE;
	}
	if (v < g->start || v - g->start >= g->total * g->stride) {
		snprintf(why, n, "not in a slot of the heap page at 0x%" PRIx64,
			 base);
		return RV_SLOT_NONE;
	}
	uint64_t off = (v - g->start) % g->stride, flags, type;
	if (off) {
		snprintf(why, n, "inside the heap slot at 0x%" PRIx64, v - off);
		return RV_SLOT_NONE;
	}
	if (!rv_try_member(s, v, RVL_basic_flags, &flags)) {
		snprintf(why, n, "its heap slot is unreadable");
		return RV_SLOT_NONE;
	}
	type = flags & (uint64_t)RV_VAL(s, t_mask);
	const char *dead = NULL;
	if (type == (uint64_t)RV_VAL(s, t_none))
		dead = "a free heap slot";
	else if (RV_HAS(s, t_moved) && type == (uint64_t)RV_VAL(s, t_moved))
		dead = "the slot of an object the GC moved";
	else if (RV_HAS(s, t_zombie) && type == (uint64_t)RV_VAL(s, t_zombie))
		dead = "the slot of a dead object awaiting its finalizer";
	if (dead) {
		snprintf(why, n, "%s", dead);
		return RV_SLOT_NONE;
	}
	*slot_size = g->stride;
	return RV_SLOT_LIVE;
}

void rv_heap_slots_destroy(struct rv_session *s)
{
	u64map_free(&s->heap_pages, free);
}
