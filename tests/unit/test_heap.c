/* The GC heap walk (rubyvm/heap.c) on a synthetic heap: the typed data
 * objects of one type are found across pages of different slot sizes, in
 * each shape CRuby's heap has had (a page array with a count beside it; an
 * rb_darray reached through vm->gc, 3.4; RTypedData without typed_flag,
 * 4.0; RData with a _reserved word in type's place), empty pages and
 * pages of slots too small for the object are passed over without
 * complaint, a GC loaded from RUBY_GC_LIBRARY is refused with a reason, and
 * corrupt heaps (a huge page count, a negative slot count, a tiny slot
 * size, an unreadable page, a missing layout item) stop or skip with a
 * reason instead of crashing or running away. The memory scan
 * (rubyvm/memory_scan.c) finds the same objects in the same memory
 * without the page list, and says when its bound or unreadable memory
 * cut it short. The layout values here are
 * this test's own, not CRuby's. */
#include <stdlib.h>
#include <string.h>

#include "../../rubyvm/session.h"
#include "check.h"

#define BASE 0x100000ULL
#define MEM_SIZE 0x10000
#define TYPE 0x7777000ULL

static uint8_t mem[MEM_SIZE];

static struct cs_error *read_mem(void *priv, uint64_t addr, void *buf,
				 size_t len)
{
	(void)priv;
	if (addr < BASE || addr - BASE > MEM_SIZE ||
	    len > MEM_SIZE - (addr - BASE))
		return cs_error_create(CS_ERR_FAULT,
				       "0x%llx not in the test heap",
				       (unsigned long long)addr);
	memcpy(buf, mem + (addr - BASE), len);
	return NULL;
}

static void put(uint64_t addr, uint64_t v, size_t size)
{
	memcpy(mem + (addr - BASE), &v, size);
}

static void member(struct rv_session *s, enum rv_item_id id, int64_t off,
		   uint32_t size)
{
	s->layout.items[id] = (struct rv_item){
		.value = off, .size = size, .source = RV_FROM_DWARF};
}

/* vm at BASE -> objspace -> 2 pages: 4 slots of 40 bytes, 3 of 80. */
static void build(struct rv_session *s)
{
	memset(mem, 0, sizeof(mem));
	memset(s, 0, sizeof(*s));
	s->target = (struct cs_memory){.read = read_mem};
	member(s, RVL_vm_objspace, 8, 8);
	member(s, RVL_objspace_sorted, 0, 8);
	member(s, RVL_objspace_allocated_pages, 8, 8);
	member(s, RVL_page_slot_size, 0, 2);
	member(s, RVL_page_total_slots, 2, 2);
	member(s, RVL_page_start, 8, 8);
	member(s, RVL_rvalue_size, 40, 0);
	member(s, RVL_basic_flags, 0, 8);
	member(s, RVL_basic_klass, 8, 8);
	member(s, RVL_typeddata_type, 16, 8);
	member(s, RVL_typeddata_typed_flag, 24, 8);
	member(s, RVL_typeddata_data, 32, 8);
	member(s, RVL_t_mask, 0x1f, 0);
	member(s, RVL_t_data, 0x0c, 0);
	member(s, RVL_value_size, 8, 0);
	put(BASE + 8, BASE + 0x100, 8);     /* vm->objspace */
	put(BASE + 0x100, BASE + 0x200, 8); /* sorted */
	put(BASE + 0x108, 2, 8);            /* allocated_pages */
	put(BASE + 0x200, BASE + 0x400, 8);
	put(BASE + 0x208, BASE + 0x500, 8);
	put(BASE + 0x400, 40, 2);            /* slot_size */
	put(BASE + 0x402, 4, 2);             /* total_slots */
	put(BASE + 0x408, BASE + 0x1000, 8); /* start */
	put(BASE + 0x500, 80, 2);
	put(BASE + 0x502, 3, 2);
	put(BASE + 0x508, BASE + 0x2000, 8);
	/* page 1: a match, another type, a String, an untyped T_DATA */
	uint64_t p1 = BASE + 0x1000;
	put(p1, 0x0c, 8), put(p1 + 16, TYPE, 8), put(p1 + 24, 1, 8);
	put(p1 + 32, 0xaaa1, 8);
	put(p1 + 40, 0x0c, 8), put(p1 + 56, TYPE + 8, 8), put(p1 + 64, 1, 8);
	put(p1 + 80, 0x05, 8), put(p1 + 96, TYPE, 8);
	put(p1 + 120, 0x0c, 8), put(p1 + 136, TYPE, 8);
	/* page 2: a match in its second 80-byte slot */
	uint64_t p2 = BASE + 0x2000 + 80;
	put(p2, 0x40c, 8), put(p2 + 16, TYPE, 8), put(p2 + 24, 1, 8);
	put(p2 + 32, 0xaaa2, 8);
}

/* The same heap as 3.4 lays it out: vm->gc.objspace, sorted an rb_darray
 * {size, capa, data[]}, no RVALUE. */
static void build_darray(struct rv_session *s)
{
	build(s);
	s->layout.items[RVL_vm_objspace].source = RV_MISSING;
	s->layout.items[RVL_objspace_allocated_pages].source = RV_MISSING;
	s->layout.items[RVL_rvalue_size].source = RV_MISSING;
	member(s, RVL_vm_gc_objspace, 16, 8);
	member(s, RVL_sorted_darray_size, 0, 8);
	member(s, RVL_sorted_darray_data, 16, 0);
	put(BASE + 8, 0, 8);                /* no vm->objspace */
	put(BASE + 16, BASE + 0x100, 8);    /* vm->gc.objspace */
	put(BASE + 0x100, BASE + 0x600, 8); /* the darray */
	put(BASE + 0x108, 0, 8);
	put(BASE + 0x600, 2, 8);            /* meta.size */
	put(BASE + 0x608, 4, 8);            /* meta.capa */
	put(BASE + 0x610, BASE + 0x400, 8); /* data[] */
	put(BASE + 0x618, BASE + 0x500, 8);
}

/* 4.0's RTypedData: {basic, fields_obj, type | embedded, data}; typed is
 * a flag of RBasic. */
static void build_no_typed_flag(struct rv_session *s)
{
	build(s);
	s->layout.items[RVL_typeddata_typed_flag].source = RV_MISSING;
	member(s, RVL_typed_fl_is_typed_data, 0x100, 0);
	uint64_t p1 = BASE + 0x1000, p2 = BASE + 0x2000 + 80;
	put(p1, 0x10c, 8), put(p1 + 24, 0, 8);        /* typed, not embedded */
	put(p2, 0x50c, 8), put(p2 + 16, TYPE | 1, 8); /* embedded */
	/* an untyped T_DATA whose dmark happens to be TYPE */
	put(p1 + 120, 0x0c, 8), put(p1 + 136, TYPE, 8);
}

/* The test memory as the target's writable regions: one, or (limit
 * past MEM_SIZE) one reaching beyond what can be read. */
static uint64_t region_end = BASE + MEM_SIZE;

static bool next_region(const void *priv, uint64_t addr, uint64_t *start,
			uint64_t *end)
{
	(void)priv;
	if (addr >= region_end)
		return false;
	*start = BASE;
	*end = region_end;
	return true;
}

static void memory_scan(struct rv_session *s, struct rv_heap_scan *scan)
{
	struct cs_error *err = rv_memory_find_typed_data(s, TYPE, scan);
	CHECK(!err, "scan failed: %s", err ? err->message : "");
	cs_error_destroy(err);
}

static void walk(struct rv_session *s, struct rv_heap_scan *scan)
{
	struct cs_error *err = rv_heap_find_typed_data(s, BASE, TYPE, scan);
	CHECK(!err, "walk failed: %s", err ? err->message : "");
	cs_error_destroy(err);
}

static bool says(const struct rv_heap_scan *scan, const char *what)
{
	return scan->error && strstr(scan->error, what);
}

int main(void)
{
	struct rv_session s;
	struct rv_heap_scan scan;

	build(&s);
	walk(&s, &scan);
	CHECK(scan.count == 2 && !scan.error,
	      "intact heap: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	CHECK(scan.count == 2 && scan.found[0].object == BASE + 0x1000 &&
		      scan.found[0].data == 0xaaa1 &&
		      scan.found[1].object == BASE + 0x2050 &&
		      scan.found[1].data == 0xaaa2,
	      "intact heap: wrong objects");
	CHECK(scan.pages == 2 && scan.bytes == 4 * 40 + 3 * 80,
	      "intact heap: %llu pages, %llu bytes scanned",
	      (unsigned long long)scan.pages, (unsigned long long)scan.bytes);
	rv_heap_scan_free(&scan);

	build_darray(&s);
	walk(&s, &scan);
	CHECK(scan.count == 2 && !scan.error && scan.found[1].data == 0xaaa2,
	      "darray heap: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build_darray(&s);
	put(BASE + 0x600, (uint64_t)1 << 40, 8);
	walk(&s, &scan);
	CHECK(scan.count == 2 && says(&scan, "claims"),
	      "darray of 2^40 pages: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build_no_typed_flag(&s);
	walk(&s, &scan);
	CHECK(scan.count == 2 && !scan.error && scan.found[0].data == 0xaaa1 &&
		      scan.found[1].data == 0xaaa2,
	      "4.0 RTypedData: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build_no_typed_flag(&s);
	s.layout.items[RVL_typed_fl_is_typed_data].source = RV_MISSING;
	walk(&s, &scan);
	CHECK(scan.count == 0 && says(&scan, "RUBY_TYPED_FL_IS_TYPED_DATA"),
	      "no way to tell typed data: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	/* No typed_flag, no typed flag in RBasic: RData's _reserved word
	 * where RTypedData has type says the type word alone decides. */
	build_no_typed_flag(&s);
	s.layout.items[RVL_typed_fl_is_typed_data].source = RV_MISSING;
	member(&s, RVL_rdata_reserved, 16, 8);
	put(BASE + 0x1000 + 120, 0x0c, 8), put(BASE + 0x1000 + 136, 0, 8);
	walk(&s, &scan);
	CHECK(scan.count == 2 && !scan.error && scan.found[0].data == 0xaaa1 &&
		      scan.found[1].data == 0xaaa2,
	      "RData with _reserved: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	/* A page in the pool of empty pages (no start, no slots, no slot
	 * size) and a page of 32-byte slots: both skipped, no error. */
	build(&s);
	put(BASE + 0x400, 0, 2), put(BASE + 0x402, 0, 2);
	put(BASE + 0x408, 0, 8);
	walk(&s, &scan);
	CHECK(scan.count == 1 && !scan.error && scan.empty_pages == 1 &&
		      scan.found[0].data == 0xaaa2,
	      "empty page: %zu found, %llu empty, error %s", scan.count,
	      (unsigned long long)scan.empty_pages,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);
	build(&s);
	put(BASE + 0x400, 32, 2); /* too small for a 40-byte RTypedData */
	walk(&s, &scan);
	CHECK(scan.count == 1 && !scan.error && scan.small_pages == 1,
	      "32-byte slots: %zu found, %llu small, error %s", scan.count,
	      (unsigned long long)scan.small_pages,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	/* rb_gc_functions.modular_gc_loaded_p set: RUBY_GC_LIBRARY's GC */
	build_darray(&s);
	member(&s, RVL_gc_functions, 0x700, 0);
	member(&s, RVL_gc_functions_modular, 8, 1);
	s.load_bias = BASE;
	put(BASE + 0x708, 1, 1);
	walk(&s, &scan);
	CHECK(scan.count == 0 && says(&scan, "RUBY_GC_LIBRARY"),
	      "modular GC: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);
	/* ... walked with the library's layout once the session has it */
	struct rv_layout gc = s.layout;
	CHECK(!rv_session_set_gc_module(&s, &gc, "/lib/librubygc.x.so", NULL),
	      "set_gc_module failed");
	walk(&s, &scan);
	CHECK(scan.count == 2 && !scan.error,
	      "modular GC with its layout: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);
	/* ... and a library without heap pages (MMTk) cannot be walked */
	gc.items[RVL_objspace_sorted].source = RV_MISSING;
	CHECK(!rv_session_set_gc_module(&s, &gc, "/lib/librubygc.x.so", NULL),
	      "set_gc_module failed");
	walk(&s, &scan);
	CHECK(scan.count == 0 && scan.unwalkable &&
		      says(&scan, "librubygc.x.so lacks 'objspace_sorted'"),
	      "GC library without pages: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);
	free(s.gc_library);
	free(s.gc_why);
	s.gc_library = s.gc_why = NULL;
	s.gc_layout = false;
	member(&s, RVL_objspace_sorted, 0, 8);
	put(BASE + 0x708, 0, 1); /* built modular, running the default GC */
	walk(&s, &scan);
	CHECK(scan.count == 2 && !scan.error,
	      "modular build, default GC: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build(&s);
	put(BASE + 0x108, (uint64_t)1 << 40, 8);
	walk(&s, &scan);
	CHECK(scan.count == 2 && says(&scan, "claims"),
	      "2^40 pages: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build(&s);
	put(BASE + 0x402, 0x8000, 2); /* total_slots -32768 */
	walk(&s, &scan);
	CHECK(scan.count == 1 && says(&scan, "implausible"),
	      "negative slot count: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build(&s);
	put(BASE + 0x500, 8, 2); /* slot_size smaller than RTypedData */
	walk(&s, &scan);
	CHECK(scan.count == 1 && says(&scan, "implausible"),
	      "tiny slot size: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build(&s);
	put(BASE + 0x408, 0xdead0000, 8); /* page 1 body not in memory */
	walk(&s, &scan);
	CHECK(scan.count == 1 && says(&scan, "unreadable"),
	      "unreadable page: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build(&s);
	put(BASE + 0x100, 0xdead0000, 8); /* the page list itself */
	walk(&s, &scan);
	CHECK(scan.count == 0 && says(&scan, "page list unreadable"),
	      "unreadable page list: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build(&s);
	s.layout.items[RVL_typeddata_type].source = RV_MISSING;
	walk(&s, &scan);
	CHECK(scan.count == 0 && says(&scan, "typeddata_type"),
	      "missing layout item: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	/* The memory scan finds the same objects without the page list:
	 * the type word matches elsewhere too (a String, an untyped T_DATA,
	 * the page list's own bytes are no T_DATA) and is not believed. */
	build(&s);
	s.regions = (struct cs_writable_regions){.next = next_region};
	put(BASE + 0x100, 0xdead0000, 8); /* no page list to walk */
	memory_scan(&s, &scan);
	CHECK(scan.count == 2 && !scan.error && !scan.not_begun &&
		      scan.found[0].object == BASE + 0x1000 &&
		      scan.found[0].data == 0xaaa1 &&
		      scan.found[1].object == BASE + 0x2050 &&
		      scan.found[1].data == 0xaaa2 && scan.bytes == MEM_SIZE &&
		      scan.pages == 0,
	      "memory scan: %zu found, %llu bytes, error %s", scan.count,
	      (unsigned long long)scan.bytes, scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	build_no_typed_flag(&s);
	s.regions = (struct cs_writable_regions){.next = next_region};
	memory_scan(&s, &scan);
	CHECK(scan.count == 2 && !scan.error && scan.found[1].data == 0xaaa2,
	      "memory scan, 4.0 RTypedData: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	/* The bound cuts the scan short, and says so. */
	build(&s);
	s.regions = (struct cs_writable_regions){.next = next_region};
	s.opts.max_scan_bytes = 0x1800;
	memory_scan(&s, &scan);
	CHECK(scan.count == 1 && says(&scan, "bound") && scan.bytes == 0x1800,
	      "memory scan past its bound: %zu found, %llu bytes, error %s",
	      scan.count, (unsigned long long)scan.bytes,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	/* Memory that cannot be read is skipped page by page and named. */
	build(&s);
	s.regions = (struct cs_writable_regions){.next = next_region};
	region_end = BASE + MEM_SIZE + 0x3000;
	memory_scan(&s, &scan);
	CHECK(scan.count == 2 && says(&scan, "12288 bytes") &&
		      scan.bytes == MEM_SIZE,
	      "memory scan with unreadable pages: %zu found, error %s",
	      scan.count, scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);
	region_end = BASE + MEM_SIZE;

	build(&s);
	memory_scan(&s, &scan);
	CHECK(scan.count == 0 && scan.not_begun && says(&scan, "list"),
	      "memory scan without regions: %zu found, error %s", scan.count,
	      scan.error ? scan.error : "none");
	rv_heap_scan_free(&scan);

	return check_summary("heap");
}
