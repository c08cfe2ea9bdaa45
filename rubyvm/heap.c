/* Walking the GC heap for the typed data objects of one data type.
 *
 * Every heap page is listed in objspace->heap_pages.sorted: a plain array
 * of allocated_pages entries (2.7 to 3.3, vm->objspace), or an rb_darray
 * carrying its own size (3.4+, vm->gc.objspace: the GC became a module). A
 * page's slots start at page->start: total_slots of them, slot_size bytes
 * apart where pages carry a slot size (3.1+, size pools), else
 * sizeof(RVALUE). A slot holds T_DATA when (flags & T_MASK) == T_DATA, and
 * the object we look for when its type is the rb_data_type_t asked for:
 * the low bits of type are cleared first (4.0 keeps "embedded" there; the
 * struct holds pointers, so its address has them free), and where RTypedData
 * has a typed_flag it must be set (the same word is dfree in an untyped
 * RData), or else the RBasic flag that says typed (4.0); where RData keeps
 * a _reserved word in type's place, the type word alone decides.
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

static bool add_found(struct rv_heap_scan *scan, uint64_t object, uint64_t data)
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
	uint64_t flags_off, type_off, data_off, need;
	uint64_t min_slot;      /* an RBasic: flags and klass */
	int64_t typed_flag_off; /* -1: no typed_flag (4.0+) */
	uint64_t typed_fl;      /* RBasic flag for typed data, 0 if none */
	uint64_t t_mask, t_data, type, type_mask;
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
	if (!RV_HAS(s, page_slot_size))
		stride = (uint64_t)RV_VAL(s, rvalue_size);
	else if (!rv_try_member(s, page, RVL_page_slot_size, &stride))
		stride = 0;
	/* A page whose objects were all swept waits in the pool of empty
	 * pages with no slots and no start (its slot size cleared too, where
	 * pages have one): nothing to read, and nothing wrong. */
	if (total == 0 && start == 0 &&
	    (!RV_HAS(s, page_slot_size) || stride == 0)) {
		scan->empty_pages++;
		return true;
	}
	/* A page of slots too small for the object (the smallest size pools)
	 * cannot hold one; a slot too small for an RBasic, or whose size is
	 * no multiple of a VALUE, is corrupt. */
	if (RV_HAS(s, page_slot_size) && stride >= r->min_slot &&
	    stride < r->need && stride % 8 == 0) {
		scan->small_pages++;
		return true;
	}
	/* total_slots and slot_size are shorts: a "negative" one is corrupt. */
	uint64_t sign = (uint64_t)1
			<< (RV_ITEM(s, page_total_slots)->size * 8 - 1);
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
		uint64_t flags, type, typed_flag = 1, data;
		memcpy(&flags, slot + r->flags_off, 8);
		if ((flags & r->t_mask) != r->t_data ||
		    (r->typed_fl && !(flags & r->typed_fl)))
			continue;
		memcpy(&type, slot + r->type_off, 8);
		if (r->typed_flag_off >= 0)
			memcpy(&typed_flag, slot + r->typed_flag_off, 8);
		if ((type & r->type_mask) != r->type || !typed_flag)
			continue;
		memcpy(&data, slot + r->data_off, 8);
		if (!add_found(scan, start + i * stride, data))
			return false;
	}
	return true;
}

/* A GC loaded from RUBY_GC_LIBRARY (a Ruby built --with-modular-gc) keeps
 * the objects in its own heap, which libruby's DWARF does not describe
 * (and MMTk's has no pages): its objspace must not be read as the default
 * GC's. */
bool rv_modular_gc_loaded(struct rv_session *s)
{
	uint64_t loaded;
	return RV_HAS(s, gc_functions) && RV_HAS(s, gc_functions_modular) &&
	       rv_try_member(s,
			     s->load_bias + (uint64_t)RV_VAL(s, gc_functions),
			     RVL_gc_functions_modular, &loaded) &&
	       loaded;
}

uint64_t rv_objspace(struct rv_session *s, uint64_t vm, const char **why)
{
	uint64_t objspace = 0;
	*why = NULL;
	if (rv_modular_gc_loaded(s))
		*why = "this Ruby runs a GC loaded from RUBY_GC_LIBRARY "
		       "(modular GC), whose heap corestack cannot read";
	else if (!RV_HAS(s, vm_gc_objspace) && !RV_HAS(s, vm_objspace))
		*why = "the debug info has neither vm->objspace nor "
		       "vm->gc.objspace";
	else if (!rv_try_member(s, vm,
				RV_HAS(s, vm_gc_objspace) ? RVL_vm_gc_objspace
							  : RVL_vm_objspace,
				&objspace))
		objspace = 0;
	return *why ? 0 : objspace;
}

/* The sorted page array: where its entries are and how many. */
static bool page_array(struct rv_session *s, uint64_t objspace,
		       uint64_t *entries, uint64_t *npages)
{
	uint64_t sorted;
	if (!rv_try_member(s, objspace, RVL_objspace_sorted, &sorted))
		return false;
	if (RV_HAS(s, sorted_darray_data) && RV_HAS(s, sorted_darray_size)) {
		*entries = sorted + (uint64_t)RV_VAL(s, sorted_darray_data);
		return sorted &&
		       rv_try_member(s, sorted, RVL_sorted_darray_size, npages);
	}
	*entries = sorted;
	return RV_HAS(s, objspace_allocated_pages) &&
	       rv_try_member(s, objspace, RVL_objspace_allocated_pages, npages);
}

struct cs_error *rv_heap_find_typed_data(struct rv_session *s, uint64_t vm,
					 uint64_t type,
					 struct rv_heap_scan *scan)
{
	memset(scan, 0, sizeof(*scan));
	/* sizeof(RVALUE) only where pages carry no slot size (2.7; 3.4
	 * has no RVALUE) */
	const enum rv_item_id needed[] = {RVL_objspace_sorted,
					  RVL_page_total_slots,
					  RVL_page_start,
					  RV_HAS(s, page_slot_size)
						  ? RVL_page_slot_size
						  : RVL_rvalue_size,
					  RVL_t_data,
					  RVL_typeddata_type,
					  RVL_typeddata_data};
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (s->layout.items[needed[i]].source == RV_MISSING) {
			note(scan,
			     "GC heap not walked: the debug info lacks "
			     "'%s'",
			     rv_layout_item_name(needed[i]));
			return NULL;
		}
	uint64_t value_size = (uint64_t)RV_VAL(s, value_size);
	struct slot_reader r = {
		.flags_off = (uint64_t)RV_VAL(s, basic_flags),
		.type_off = (uint64_t)RV_VAL(s, typeddata_type),
		.typed_flag_off = RV_HAS(s, typeddata_typed_flag)
					  ? RV_VAL(s, typeddata_typed_flag)
					  : -1,
		.typed_fl =
			RV_HAS(s, typed_fl_is_typed_data)
				? (uint64_t)RV_VAL(s, typed_fl_is_typed_data)
				: 0,
		.data_off = (uint64_t)RV_VAL(s, typeddata_data),
		.t_mask = (uint64_t)RV_VAL(s, t_mask),
		.t_data = (uint64_t)RV_VAL(s, t_data),
		.type = type,
		.type_mask = ~(value_size - 1),
	};
	if (r.typed_flag_off < 0 && !r.typed_fl &&
	    !(RV_HAS(s, rdata_reserved) &&
	      RV_VAL(s, rdata_reserved) == RV_VAL(s, typeddata_type))) {
		note(scan, "GC heap not walked: RTypedData has no typed_flag, "
			   "the debug info lacks "
			   "'RUBY_TYPED_FL_IS_TYPED_DATA' and RData no "
			   "_reserved word where RTypedData has type");
		return NULL;
	}
	const uint64_t offs[] = {
		r.flags_off, r.type_off,
		r.typed_flag_off < 0 ? 0 : (uint64_t)r.typed_flag_off,
		r.data_off};
	bool plausible = value_size == 8;
	for (size_t i = 0; i < 4; i++) {
		plausible &= offs[i] <= 256;
		if (offs[i] + 8 > r.need)
			r.need = offs[i] + 8; /* a slot must hold them all */
	}
	r.min_slot = (uint64_t)RV_VAL(s, basic_klass) + 8;
	if (r.min_slot < r.flags_off + 8)
		r.min_slot = r.flags_off + 8;
	plausible &= r.min_slot <= 256;
	if (!plausible) {
		scan->error = strdup("GC heap not walked: implausible "
				     "RTypedData layout");
		return NULL;
	}
	const char *why = NULL;
	uint64_t objspace = rv_objspace(s, vm, &why), sorted, npages;
	if (why && !objspace) {
		note(scan, "GC heap not walked: %s%s", why,
		     rv_modular_gc_loaded(s)
			     ? "; suspended fibers are not listed"
			     : "");
		return NULL;
	}
	if (!objspace || !page_array(s, objspace, &sorted, &npages)) {
		scan->error = strdup("GC heap not walked: the object space or "
				     "its page list unreadable");
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
		uint64_t n = npages - i < PAGE_POINTER_CHUNK
				     ? npages - i
				     : PAGE_POINTER_CHUNK;
		if (!rv_try_read(s, sorted + i * 8, pages, n * 8)) {
			note(scan,
			     "GC heap page list unreadable at entry %llu "
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
