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
 * The objspace and its pages are the GC's: under a GC loaded from
 * RUBY_GC_LIBRARY they are read with that library's layout (its GC_*
 * items, rv_session_set_gc_module), never with libruby's built-in GC's.
 * A GC whose heap has no such layout (MMTk, a library without debug info)
 * cannot be walked: the walk says so (scan->unwalkable) and the caller
 * searches memory instead (memory_scan.c).
 *
 * The heap of a crashed process may be corrupt: every count and size is
 * bounded, a page that cannot be read is skipped and named, and a walk that
 * hits a bound says it stopped early. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lists.h"
#include "session.h"

/* Bounds: far above any real heap (2^22 pages of 64 KiB is 256 GiB). */
#define MAX_HEAP_PAGES ((uint64_t)1 << 22)
#define MAX_PAGE_BYTES ((uint64_t)16 << 20)
#define MAX_SLOT_SIZE ((uint64_t)1 << 16)
#define PAGE_POINTER_CHUNK 1024

void rv_heap_note(struct rv_heap_scan *scan, const char *fmt, ...)
{
	if (scan->error)
		return; /* the first problem explains the rest */
	char buf[1024]; /* a reason may quote another (a library's) */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	scan->error = strdup(buf);
}

bool rv_heap_add_found(struct rv_heap_scan *scan, uint64_t object,
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

bool rv_typed_data_match(const struct rv_typed_data_check *c,
			 const uint8_t *slot, uint64_t *data)
{
	uint64_t flags, type, typed_flag = 1;
	memcpy(&flags, slot + c->flags_off, 8);
	if ((flags & c->t_mask) != c->t_data ||
	    (c->typed_fl && !(flags & c->typed_fl)))
		return false;
	memcpy(&type, slot + c->type_off, 8);
	if (c->typed_flag_off >= 0)
		memcpy(&typed_flag, slot + c->typed_flag_off, 8);
	if ((type & c->type_mask) != c->type || !typed_flag)
		return false;
	memcpy(data, slot + c->data_off, 8);
	return true;
}

/* The slots of one page, read in one go and handed to w->visit. False
 * only when out of memory (or the visitor says stop). */
static bool walk_page(struct rv_session *s, const struct rv_heap_walk *w,
		      uint64_t page, uint8_t **buf, size_t *bufsize,
		      struct rv_heap_scan *scan)
{
	uint64_t total, stride, start;
	if (!rv_try_member(s, page, RVL_page_total_slots, &total) ||
	    !rv_try_member(s, page, RVL_page_start, &start)) {
		rv_heap_note(scan, "heap page 0x%llx unreadable",
			     (unsigned long long)page);
		scan->skipped_pages++;
		return true;
	}
	if (!RV_HAS(s, page_slot_size))
		stride = (uint64_t)RV_VAL(s, rvalue_size);
	else if (!rv_try_member(s, page, RVL_page_slot_size, &stride))
		stride = 0;
	/* A page without slots has nothing to read, and nothing wrong: one
	 * whose objects were all swept waits so in the pool of empty pages
	 * (no start, its slot size cleared too). */
	if (total == 0) {
		scan->empty_pages++;
		return true;
	}
	/* A page of slots too small for what the visitor reads (the
	 * smallest size pools) cannot hold it; a slot too small for an
	 * RBasic, or whose size is no multiple of a VALUE, is corrupt. */
	if (RV_HAS(s, page_slot_size) && stride >= w->min_slot &&
	    stride < w->need && stride % 8 == 0) {
		scan->small_pages++;
		return true;
	}
	/* total_slots and slot_size are shorts: a "negative" one is corrupt. */
	uint64_t sign = (uint64_t)1
			<< (RV_ITEM(s, page_total_slots)->size * 8 - 1);
	if (total >= sign || total > MAX_PAGE_BYTES || stride < w->need ||
	    stride > MAX_SLOT_SIZE || total * stride > MAX_PAGE_BYTES ||
	    !start) {
		rv_heap_note(scan, "heap page 0x%llx implausible (%llu slots)",
			     (unsigned long long)page,
			     (unsigned long long)total);
		scan->skipped_pages++;
		return true;
	}
	size_t bytes = (size_t)(total * stride);
	if (bytes > *bufsize || !*buf) { /* bytes > 0: total and stride are */
		uint8_t *n = realloc(*buf, bytes);
		if (!n)
			return false;
		*buf = n;
		*bufsize = bytes;
	}
	if (!rv_try_read(s, start, *buf, bytes)) {
		rv_heap_note(scan,
			     "heap page at 0x%llx (%llu bytes) unreadable",
			     (unsigned long long)start,
			     (unsigned long long)bytes);
		scan->skipped_pages++;
		scan->skipped_slots += total;
		return true;
	}
	scan->pages++;
	scan->bytes += bytes;
	scan->slots += total;
	const struct rv_heap_page p = {start, stride, total, *buf, page};
	return w->visit(w->ctx, &p);
}

struct typed_data_search {
	const struct rv_typed_data_check *check;
	struct rv_heap_scan *scan;
};

static bool typed_data_page(void *ctx, const struct rv_heap_page *p)
{
	const struct typed_data_search *t = ctx;
	for (uint64_t i = 0; i < p->total; i++) {
		uint64_t data;
		if (rv_typed_data_match(t->check, p->slots + i * p->stride,
					&data) &&
		    !rv_heap_add_found(t->scan, p->start + i * p->stride, data))
			return false;
	}
	return true;
}

/* A GC loaded from RUBY_GC_LIBRARY (a Ruby built --with-modular-gc) keeps
 * the objects in its own heap, which libruby's DWARF does not describe
 * (and MMTk's has no pages): its objspace is read only with the layout of
 * the library (rv_session_set_gc_module). */
bool rv_modular_gc_loaded(struct rv_session *s)
{
	uint64_t loaded;
	return RV_HAS(s, gc_functions) && RV_HAS(s, gc_functions_modular) &&
	       rv_try_member(s,
			     s->load_bias + (uint64_t)RV_VAL(s, gc_functions),
			     RVL_gc_functions_modular, &loaded) &&
	       loaded;
}

bool rv_gc_layout_known(struct rv_session *s)
{
	return s->gc_layout || !rv_modular_gc_loaded(s);
}

/* Why a GC library's layout is not known. */
static const char *library_why(struct rv_session *s)
{
	return s->gc_why ? s->gc_why
			 : "this Ruby runs a GC loaded from RUBY_GC_LIBRARY "
			   "(modular GC), whose library corestack did not "
			   "read";
}

/* Objspaces are per ractor where the ractor has one and the VM none. */
static bool per_ractor(struct rv_session *s)
{
	return !RV_HAS(s, vm_gc_objspace) && !RV_HAS(s, vm_objspace) &&
	       RV_HAS(s, ractor_objspace) && RV_HAS(s, vm_main_ractor);
}

uint64_t rv_objspace(struct rv_session *s, uint64_t vm, const char **why)
{
	uint64_t objspace = 0, main_ractor = 0;
	*why = NULL;
	if (!rv_gc_layout_known(s))
		*why = library_why(s);
	else if (per_ractor(s)) {
		if (!rv_try_member(s, vm, RVL_vm_main_ractor, &main_ractor) ||
		    !main_ractor ||
		    !rv_try_member(s, main_ractor, RVL_ractor_objspace,
				   &objspace))
			objspace = 0;
	} else if (!RV_HAS(s, vm_gc_objspace) && !RV_HAS(s, vm_objspace))
		*why = "the debug info has neither vm->objspace, "
		       "vm->gc.objspace nor a ractor's objspace";
	else if (!rv_try_member(s, vm,
				RV_HAS(s, vm_gc_objspace) ? RVL_vm_gc_objspace
							  : RVL_vm_objspace,
				&objspace))
		objspace = 0;
	return *why ? 0 : objspace;
}

/* Bounds of the per-ractor objspaces: far above any real process. */
#define MAX_RACTORS 100000
#define MAX_ZOMBIES 100000

static bool add_objspace(struct rv_list *out, uint64_t objspace)
{
	if (!objspace)
		return true;
	for (size_t i = 0; i < out->count; i++)
		if (out->items[i] == objspace)
			return true; /* a new ractor shares main's at first */
	return rv_list_push(out, objspace);
}

/* Every objspace whose pages hold objects: the VM's one, or with
 * per-ractor objspaces the main ractor's, each living ractor's, and those
 * of ractors that ended and were not yet merged. What cannot be read is
 * noted in scan; the walk goes on with the others. */
static struct cs_error *objspaces(struct rv_session *s, uint64_t vm,
				  struct rv_list *out,
				  struct rv_heap_scan *scan)
{
	const char *why = NULL;
	uint64_t first = rv_objspace(s, vm, &why);
	if (!add_objspace(out, first))
		return &cs_error_nomem;
	if (!per_ractor(s))
		return NULL;
	struct rv_list ractors = {0};
	struct cs_error *err = NULL;
	if (RV_HAS(s, vm_ractor_set) && RV_HAS(s, ractor_vmlr_node))
		err = rv_list_walk(s, vm + (uint64_t)RV_VAL(s, vm_ractor_set),
				   (uint64_t)RV_VAL(s, ractor_vmlr_node),
				   MAX_RACTORS, &ractors);
	if (err) {
		rv_heap_note(scan,
			     "GC heap: the ractor list is unreadable "
			     "(%s); objects of ractors past it not walked",
			     err->message);
		cs_error_destroy(err);
	}
	for (size_t i = 0; i < ractors.count; i++) {
		uint64_t objspace = 0;
		if (rv_try_member(s, ractors.items[i], RVL_ractor_objspace,
				  &objspace) &&
		    !add_objspace(out, objspace)) {
			rv_list_free(&ractors);
			return &cs_error_nomem;
		}
	}
	rv_list_free(&ractors);
	uint64_t zombies = 0, count = 0;
	if (!RV_HAS(s, vm_gc_zombies) || !RV_HAS(s, vm_gc_zombies_count) ||
	    !RV_HAS(s, zombie_objspace) || !RV_HAS(s, zombie_size) ||
	    !rv_try_member(s, vm, RVL_vm_gc_zombies, &zombies) ||
	    !rv_try_member(s, vm, RVL_vm_gc_zombies_count, &count))
		return NULL;
	if (count > MAX_ZOMBIES) {
		rv_heap_note(scan,
			     "GC heap: %llu objspaces of ended ractors "
			     "claimed; walked the first %d",
			     (unsigned long long)count, MAX_ZOMBIES);
		count = MAX_ZOMBIES;
	}
	for (uint64_t i = 0; i < count; i++) {
		uint64_t objspace = 0,
			 at = zombies + i * (uint64_t)RV_VAL(s, zombie_size);
		if (!rv_try_member(s, at, RVL_zombie_objspace, &objspace)) {
			rv_heap_note(scan,
				     "GC heap: the objspaces of ended "
				     "ractors are unreadable at %llu",
				     (unsigned long long)i);
			break;
		}
		if (!add_objspace(out, objspace))
			return &cs_error_nomem;
	}
	return NULL;
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

/* The layout of a typed data slot; else NULL with *missing the item the
 * debug info lacks, or the reason. */
static const char *typed_data_check(struct rv_session *s, uint64_t type,
				    struct rv_typed_data_check *c,
				    enum rv_item_id *missing)
{
	const enum rv_item_id needed[] = {RVL_t_data, RVL_typeddata_type,
					  RVL_typeddata_data};
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (s->layout.items[needed[i]].source == RV_MISSING) {
			*missing = needed[i];
			return "the debug info lacks an item";
		}
	uint64_t value_size = (uint64_t)RV_VAL(s, value_size);
	*c = (struct rv_typed_data_check){
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
	if (c->typed_flag_off < 0 && !c->typed_fl &&
	    !(RV_HAS(s, rdata_reserved) &&
	      RV_VAL(s, rdata_reserved) == RV_VAL(s, typeddata_type)))
		return "RTypedData has no typed_flag, the debug info lacks "
		       "'RUBY_TYPED_FL_IS_TYPED_DATA' and RData no _reserved "
		       "word where RTypedData has type";
	const uint64_t offs[] = {
		c->flags_off, c->type_off,
		c->typed_flag_off < 0 ? 0 : (uint64_t)c->typed_flag_off,
		c->data_off};
	bool plausible = value_size == 8;
	for (size_t i = 0; i < 4; i++) {
		plausible &= offs[i] <= 256;
		if (offs[i] + 8 > c->need)
			c->need = offs[i] + 8; /* a slot must hold them all */
	}
	c->min_slot = (uint64_t)RV_VAL(s, basic_klass) + 8;
	if (c->min_slot < c->flags_off + 8)
		c->min_slot = c->flags_off + 8;
	plausible &= c->min_slot <= 256;
	return plausible ? NULL : "implausible RTypedData layout";
}

bool rv_typed_data_check_init(struct rv_session *s, uint64_t type,
			      struct rv_typed_data_check *c,
			      struct rv_heap_scan *scan, const char *what)
{
	enum rv_item_id missing = RVL_COUNT;
	const char *why = typed_data_check(s, type, c, &missing);
	if (!why)
		return true;
	if (missing != RVL_COUNT)
		rv_heap_note(scan, "%s: the debug info lacks '%s'", what,
			     rv_layout_item_name(missing));
	else
		rv_heap_note(scan, "%s: %s", what, why);
	scan->not_begun = true;
	return false;
}

/* The layout of the GC's heap, complete; else the walk cannot begin and
 * scan says why. */
static bool heap_layout_known(struct rv_session *s, struct rv_heap_scan *scan)
{
	/* sizeof(RVALUE) only where pages carry no slot size (2.7; 3.4
	 * has no RVALUE) */
	const enum rv_item_id needed[] = {RVL_objspace_sorted,
					  RVL_page_total_slots, RVL_page_start,
					  RV_HAS(s, page_slot_size)
						  ? RVL_page_slot_size
						  : RVL_rvalue_size};
	if (!rv_gc_layout_known(s)) {
		rv_heap_note(scan, "GC heap not walked: %s", library_why(s));
		return false;
	}
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (s->layout.items[needed[i]].source == RV_MISSING) {
			if (s->gc_layout)
				rv_heap_note(
					scan,
					"GC heap not walked: the debug info of "
					"the GC library %s lacks '%s' (a GC "
					"without the default GC's heap pages)",
					s->gc_library ? s->gc_library : "?",
					rv_layout_item_name(needed[i]));
			else
				rv_heap_note(
					scan,
					"GC heap not walked: the debug info "
					"lacks '%s'",
					rv_layout_item_name(needed[i]));
			return false;
		}
	return true;
}

/* Every page of one objspace. */
static struct cs_error *walk_objspace(struct rv_session *s,
				      const struct rv_heap_walk *w,
				      uint64_t objspace,
				      struct rv_heap_scan *scan)
{
	uint64_t sorted, npages;
	if (!page_array(s, objspace, &sorted, &npages)) {
		rv_heap_note(scan, "GC heap not walked: the object space or "
				   "its page list unreadable");
		return NULL;
	}
	if (npages > MAX_HEAP_PAGES) {
		rv_heap_note(scan,
			     "GC heap claims %llu pages; walked the first %llu",
			     (unsigned long long)npages,
			     (unsigned long long)MAX_HEAP_PAGES);
		scan->skipped_pages += npages - MAX_HEAP_PAGES;
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
			rv_heap_note(
				scan,
				"GC heap page list unreadable at entry %llu "
				"of %llu; walk stopped there",
				(unsigned long long)i,
				(unsigned long long)npages);
			scan->skipped_pages += npages - i;
			break;
		}
		for (uint64_t j = 0; j < n; j++)
			if (!walk_page(s, w, pages[j], &buf, &bufsize, scan)) {
				free(buf);
				return &cs_error_nomem;
			}
	}
	free(buf);
	return NULL;
}

struct cs_error *rv_heap_walk(struct rv_session *s, uint64_t vm,
			      const struct rv_heap_walk *w,
			      struct rv_heap_scan *scan)
{
	if (!heap_layout_known(s, scan)) {
		scan->not_begun = scan->unwalkable = true;
		return NULL;
	}
	const char *why = NULL;
	uint64_t objspace = rv_objspace(s, vm, &why);
	if (why && !objspace) {
		rv_heap_note(scan, "GC heap not walked: %s", why);
		scan->not_begun = scan->unwalkable = true;
		return NULL;
	}
	struct rv_list all = {0};
	struct cs_error *err = objspaces(s, vm, &all, scan);
	if (!err && all.count == 0)
		rv_heap_note(scan, "GC heap not walked: the object space or "
				   "its page list unreadable");
	for (size_t i = 0; !err && i < all.count; i++)
		err = walk_objspace(s, w, all.items[i], scan);
	rv_list_free(&all);
	return err;
}

struct cs_error *rv_heap_find_typed_data(struct rv_session *s, uint64_t vm,
					 uint64_t type,
					 struct rv_heap_scan *scan)
{
	memset(scan, 0, sizeof(*scan));
	struct rv_typed_data_check r;
	if (!rv_typed_data_check_init(s, type, &r, scan, "GC heap not walked"))
		return NULL;
	struct typed_data_search t = {&r, scan};
	const struct rv_heap_walk w = {.need = r.need,
				       .min_slot = r.min_slot,
				       .visit = typed_data_page,
				       .ctx = &t};
	return rv_heap_walk(s, vm, &w, scan);
}

void rv_heap_scan_free(struct rv_heap_scan *scan)
{
	free(scan->found);
	free(scan->error);
	memset(scan, 0, sizeof(*scan));
}
