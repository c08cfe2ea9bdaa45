/* Walking the GC heap for the typed data objects of one data type.
 *
 * Every heap page is listed in objspace->heap_pages.sorted (2.7 to 3.3;
 * vm->objspace). A page's slots start at page->start: total_slots of them,
 * slot_size bytes apart where pages carry a slot size (3.1+, size pools),
 * else sizeof(RVALUE). A slot holds T_DATA when (flags & T_MASK) == T_DATA;
 * a typed one has bit 0 of typed_flag set and its rb_data_type_t in type.
 *
 * The heap of a crashed process may be corrupt: every count and size is
 * bounded, a page that cannot be read is skipped and named, and a walk that
 * hits a bound says it stopped early. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* Bounds: far above any real heap (2^22 pages of 64 KiB is 256 GiB). */
#define MAX_HEAP_PAGES ((uint64_t)1 << 22)
#define MAX_PAGE_BYTES ((uint64_t)16 << 20)
#define MAX_SLOT_SIZE ((uint64_t)1 << 16)
#define PAGE_POINTER_CHUNK 1024

__attribute__((format(printf, 2, 3))) static void
note(struct rv_heap_scan *scan, const char *fmt, ...)
{
	if (scan->error)
		return; /* the first problem explains the rest */
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	scan->error = strdup(buf);
}

static bool add_found(struct rv_heap_scan *scan, uint64_t object,
		      uint64_t data)
{
	if (scan->count == scan->capacity) {
		size_t cap = scan->capacity ? scan->capacity * 2 : 64;
		struct rv_heap_object *n =
			realloc(scan->found, cap * sizeof(*n));
		if (!n)
			return false;
		scan->found = n;
		scan->capacity = cap;
	}
	scan->found[scan->count++] = (struct rv_heap_object){object, data};
	return true;
}

struct slot_reader {
	uint64_t flags_off, type_off, typed_flag_off, data_off, need;
	uint64_t t_mask, t_data, type;
};

/* The slots of one page, read in one go. False only when out of memory. */
static bool scan_page(struct rv_session *s, const struct slot_reader *r,
		      uint64_t page, uint8_t **buf, size_t *bufsize,
		      struct rv_heap_scan *scan)
{
	uint64_t total, stride, start;
	if (!rv_try_member(s, page, RVL_page_total_slots, &total) ||
	    !rv_try_member(s, page, RVL_page_start, &start)) {
		note(scan, "heap page 0x%llx unreadable",
		     (unsigned long long)page);
		return true;
	}
	stride = (uint64_t)RV_VAL(s, rvalue_size);
	if (RV_HAS(s, page_slot_size) &&
	    !rv_try_member(s, page, RVL_page_slot_size, &stride))
		stride = 0;
	/* total_slots and slot_size are shorts: a "negative" one is corrupt. */
	uint64_t sign = (uint64_t)1 << (RV_ITEM(s, page_total_slots)->size * 8 - 1);
	if (total >= sign || total > MAX_PAGE_BYTES || stride < r->need ||
	    stride > MAX_SLOT_SIZE || total * stride > MAX_PAGE_BYTES ||
	    !start) {
		note(scan, "heap page 0x%llx implausible (%llu slots)",
		     (unsigned long long)page, (unsigned long long)total);
		return true;
	}
	size_t bytes = (size_t)(total * stride);
	if (bytes > *bufsize) {
		uint8_t *n = realloc(*buf, bytes);
		if (!n)
			return false;
		*buf = n;
		*bufsize = bytes;
	}
	if (!rv_try_read(s, start, *buf, bytes)) {
		note(scan, "heap page at 0x%llx (%llu bytes) unreadable",
		     (unsigned long long)start, (unsigned long long)bytes);
		return true;
	}
	scan->pages++;
	scan->bytes += bytes;
	for (uint64_t i = 0; i < total; i++) {
		const uint8_t *slot = *buf + i * stride;
		uint64_t flags, type, typed_flag, data;
		memcpy(&flags, slot + r->flags_off, 8);
		if ((flags & r->t_mask) != r->t_data)
			continue;
		memcpy(&type, slot + r->type_off, 8);
		memcpy(&typed_flag, slot + r->typed_flag_off, 8);
		if (type != r->type || !(typed_flag & 1))
			continue;
		memcpy(&data, slot + r->data_off, 8);
		if (!add_found(scan, start + i * stride, data))
			return false;
	}
	return true;
}

struct cs_error *rv_heap_find_typed_data(struct rv_session *s, uint64_t vm,
					 uint64_t type,
					 struct rv_heap_scan *scan)
{
	memset(scan, 0, sizeof(*scan));
	const enum rv_item_id needed[] = {
		RVL_vm_objspace,      RVL_objspace_sorted,
		RVL_objspace_allocated_pages, RVL_page_total_slots,
		RVL_page_start,       RVL_rvalue_size,
		RVL_t_data,           RVL_typeddata_type,
		RVL_typeddata_typed_flag, RVL_typeddata_data};
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (s->layout.items[needed[i]].source == RV_MISSING) {
			note(scan, "GC heap not walked: the debug info lacks "
				   "'%s'",
			     rv_layout_item_name(needed[i]));
			return NULL;
		}
	struct slot_reader r = {
		.flags_off = (uint64_t)RV_VAL(s, basic_flags),
		.type_off = (uint64_t)RV_VAL(s, typeddata_type),
		.typed_flag_off = (uint64_t)RV_VAL(s, typeddata_typed_flag),
		.data_off = (uint64_t)RV_VAL(s, typeddata_data),
		.t_mask = (uint64_t)RV_VAL(s, t_mask),
		.t_data = (uint64_t)RV_VAL(s, t_data),
		.type = type,
	};
	const uint64_t offs[] = {r.flags_off, r.type_off, r.typed_flag_off,
				 r.data_off};
	bool plausible = true;
	for (size_t i = 0; i < 4; i++) {
		plausible &= offs[i] <= 256;
		if (offs[i] + 8 > r.need)
			r.need = offs[i] + 8; /* a slot must hold them all */
	}
	if (!plausible) {
		scan->error = strdup("GC heap not walked: implausible "
				     "RTypedData layout");
		return NULL;
	}
	uint64_t objspace, sorted, npages;
	if (!rv_try_member(s, vm, RVL_vm_objspace, &objspace) || !objspace ||
	    !rv_try_member(s, objspace, RVL_objspace_sorted, &sorted) ||
	    !rv_try_member(s, objspace, RVL_objspace_allocated_pages,
			   &npages)) {
		scan->error = strdup("GC heap not walked: vm->objspace or its "
				     "page list unreadable");
		return NULL;
	}
	if (npages > MAX_HEAP_PAGES) {
		note(scan, "GC heap claims %llu pages; walked the first %llu",
		     (unsigned long long)npages,
		     (unsigned long long)MAX_HEAP_PAGES);
		npages = MAX_HEAP_PAGES;
	}
	uint64_t pages[PAGE_POINTER_CHUNK];
	uint8_t *buf = NULL;
	size_t bufsize = 0;
	for (uint64_t i = 0; i < npages; i += PAGE_POINTER_CHUNK) {
		uint64_t n = npages - i < PAGE_POINTER_CHUNK ? npages - i
							     : PAGE_POINTER_CHUNK;
		if (!rv_try_read(s, sorted + i * 8, pages, n * 8)) {
			note(scan, "GC heap page list unreadable at entry %llu "
				   "of %llu; walk stopped there",
			     (unsigned long long)i, (unsigned long long)npages);
			break;
		}
		for (uint64_t j = 0; j < n; j++)
			if (!scan_page(s, &r, pages[j], &buf, &bufsize, scan)) {
				free(buf);
				return &cs_error_nomem;
			}
	}
	free(buf);
	return NULL;
}

void rv_heap_scan_free(struct rv_heap_scan *scan)
{
	free(scan->found);
	free(scan->error);
	memset(scan, 0, sizeof(*scan));
}
