/* libFuzzer harness for the Ruby model (rubyvm/): rv_session_create,
 * rv_snapshot with fibers and locals, the heap census, dump and
 * retention search over a layout and target memory both
 * taken from the input, in the format of tests/fuzz/model_seed.h. Seeds
 * come from tests/fuzz/make_model_seed.c (a real core's layout plus every
 * region the walker read), so mutations land on exactly the bytes the
 * walker reads.
 *
 * By default the layout is fuzzed too (it comes from DWARF or the on-disk
 * layout cache, so it is input as well). With FUZZ_MODEL_LAYOUT=SEEDFILE
 * in the environment, every input's layout (and load bias) is replaced by
 * that seed's, so only target memory varies: for campaigns on the walker's
 * handling of corrupt memory, which layout bugs would otherwise drown.
 * Build: see tests/fuzz/Makefile.inc (make fuzz-build). */
#include "rubyvm/heap_census.h"
#include "rubyvm/heap_dump.h"
#include "rubyvm/heap_retainers.h"
#include "rubyvm/layout.h"
#include "rubyvm/model.h"
#include "process/memory.h"
#include "tests/fuzz/model_seed.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REGIONS 4096

struct region {
	uint64_t addr, len;
	const uint8_t *bytes;
};

struct mem {
	struct region r[MAX_REGIONS];
	size_t n;
};

static uint64_t get(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static int by_addr(const void *a, const void *b)
{
	const struct region *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The region holding addr, the one starting last at or below it among
 * those that contain it; NULL if none does. Regions are sorted by addr. */
static const struct region *region_of(const struct mem *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) { /* first region with start > addr */
		size_t mid = lo + (hi - lo) / 2;
		if (m->r[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* overlapping regions after mutation: scan back a little */
	for (size_t i = lo; i-- > 0 && lo - i <= 8;)
		if (addr - m->r[i].addr < m->r[i].len)
			return &m->r[i];
	return NULL;
}

static struct cs_error *mem_read(void *priv, uint64_t addr, void *buf,
				 size_t len)
{
	const struct mem *m = priv;
	uint8_t *out = buf;
	uint64_t a = addr;
	size_t left = len;
	while (left) {
		const struct region *r = region_of(m, a);
		if (!r)
			return cs_error_create(
				CS_ERR_FAULT, "cannot read %zu bytes at 0x%llx",
				len, (unsigned long long)addr);
		uint64_t avail = r->len - (a - r->addr);
		size_t n = avail < left ? (size_t)avail : left;
		memcpy(out, r->bytes + (a - r->addr), n);
		out += n;
		left -= n;
		a += n;
		if (left && a == 0) /* wrapped around the address space */
			return cs_error_create(CS_ERR_FAULT,
					       "read wraps at 0x%llx",
					       (unsigned long long)addr);
	}
	return NULL;
}

static struct mem mem; /* big: static, reset per input */

/* The item a seed record names, RVL_COUNT if this build has none such. */
static size_t item_named(const uint8_t *name, size_t n)
{
	for (size_t i = 0; i < RVL_COUNT; i++) {
		const char *known = rv_layout_item_name((enum rv_item_id)i);
		if (strlen(known) == n && memcmp(known, name, n) == 0)
			return i;
	}
	return RVL_COUNT;
}

/* A record "LIST:ENUMERATOR" (an ENUMS list's name, one of its
 * enumerators) appended to that list, as far as it has room. */
static void enum_record(const uint8_t *name, size_t n, int64_t value,
			struct rv_layout *layout)
{
	const uint8_t *colon = memchr(name, ':', n);
	if (!colon)
		return;
	size_t len = (size_t)(colon - name), rest = n - len - 1;
	for (size_t k = 0; k < RVE_COUNT; k++) {
		const char *list = rv_layout_enums_name((enum rv_enums_id)k);
		struct rv_enum_list *l = &layout->enums[k];
		if (strlen(list) != len || memcmp(list, name, len) != 0 ||
		    l->count >= RV_ENUM_MAX || rest >= RV_ENUM_NAME_MAX)
			continue;
		struct rv_enumerator *e = &l->e[l->count++];
		memcpy(e->name, colon + 1, rest);
		e->name[rest] = '\0';
		e->value = value;
	}
}

/* The header and items at data into layout and *bias; returns where the
 * regions start, or NULL when the input is not a seed. */
static const uint8_t *parse_layout(const uint8_t *data, size_t size,
				   struct rv_layout *layout, uint64_t *bias)
{
	if (size < MODEL_SEED_HEADER || memcmp(data, MODEL_SEED_MAGIC, 8) != 0)
		return NULL;
	const uint8_t *end = data + size;
	uint32_t nitems = (uint32_t)get(data + 16, 4);
	memset(layout, 0, sizeof(*layout));
	*bias = get(data + 8, 8);
	layout->has_macros = (int)get(data + 20, 4);
	const uint8_t *p = data + MODEL_SEED_HEADER;
	for (uint32_t k = 0; k < nitems; k++) {
		if (end - p < 1 ||
		    (size_t)(end - p) < 1u + p[0] + MODEL_SEED_ITEM)
			return NULL;
		size_t i = item_named(p + 1, p[0]);
		if (i == RVL_COUNT)
			enum_record(p + 1, p[0], (int64_t)get(p + 1 + p[0], 8),
				    layout);
		p += 1 + p[0];
		if (i < RVL_COUNT) {
			struct rv_item *it = &layout->items[i];
			it->value = (int64_t)get(p, 8);
			it->size = (uint32_t)get(p + 8, 4);
			it->bit_pos = (uint16_t)get(p + 12, 2);
			it->bit_size = p[14];
			it->source = p[15];
		}
		p += MODEL_SEED_ITEM;
	}
	return p;
}

/* FUZZ_MODEL_LAYOUT: that seed's layout and load bias, read once. */
static struct rv_layout fixed_layout;
static uint64_t fixed_bias;
static int fixed_state; /* 0 unread, 1 none, 2 loaded */

static void load_fixed_layout(void)
{
	fixed_state = 1;
	const char *path = getenv("FUZZ_MODEL_LAYOUT");
	if (!path || !*path)
		return;
	static uint8_t buf[1 << 16];
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (!f || !parse_layout(buf, n, &fixed_layout, &fixed_bias)) {
		fprintf(stderr, "FUZZ_MODEL_LAYOUT=%s: not a seed\n", path);
		abort();
	}
	fclose(f);
	fixed_state = 2;
}

/* The dump's lines, looked at as a writer would: every reference read. */
static bool dump_roots(void *ctx, const char *category, const uint64_t *refs,
		       size_t n)
{
	(void)ctx;
	uint64_t sum = strlen(category);
	for (size_t i = 0; i < n; i++)
		sum += refs[i];
	return sum != 1; /* never stops: the sum only keeps the reads */
}

static bool dump_object(void *ctx, const struct rv_dump_object *o)
{
	(void)ctx;
	uint64_t sum = strlen(o->type) + (o->name ? strlen(o->name) : 0) +
		       (o->value ? strnlen(o->value, o->value_len) : 0) +
		       (o->encoding ? strlen(o->encoding) : 0) +
		       (o->coderange ? strlen(o->coderange) : 0) +
		       o->superclass + o->gc_flags + (uint64_t)o->shape_id;
	for (size_t i = 0; i < o->nrefs; i++)
		sum += o->refs[i];
	return sum != 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p0 = data;
	if (!fixed_state)
		load_fixed_layout();
	struct rv_layout *layout = calloc(1, sizeof(*layout));
	if (!layout)
		return 0;
	uint64_t load_bias = 0;
	const uint8_t *p,
		*regions = parse_layout(data, size, layout, &load_bias);
	if (!regions) {
		free(layout);
		return 0;
	}
	if (fixed_state == 2) {
		*layout = fixed_layout;
		load_bias = fixed_bias;
	}
	p = regions;
	const uint8_t *end = p0 + size;
	mem.n = 0;
	while ((size_t)(end - p) >= MODEL_SEED_REGION_HEADER &&
	       mem.n < MAX_REGIONS) {
		uint64_t addr = get(p, 8), len = get(p + 8, 4);
		p += MODEL_SEED_REGION_HEADER;
		if (len > (uint64_t)(end - p))
			break;
		if (len && addr + len - 1 >= addr) /* no wrap-around */
			mem.r[mem.n++] = (struct region){addr, len, p};
		p += len;
	}
	qsort(mem.r, mem.n, sizeof(mem.r[0]), by_addr);

	struct cs_memory target = {.read = mem_read, .priv = &mem};
	/* The CLI's defaults would let a cyclic list cost 10^5 x 10^5 steps;
	 * smaller bounds keep each input fast without hiding memory bugs. The
	 * output budget is tied to the input's size, as the CLI ties it to
	 * the core's, and checked below. */
	size_t budget = 4 * size + 4096;
	struct rv_options opts = {.max_frames = 2000,
				  .max_threads = 64,
				  .max_output_bytes = budget};
	struct rv_session *s = NULL;
	struct cs_error *err = rv_session_create(
		&target, layout, "fuzz/libruby.so", load_bias, &opts, &s);
	if (!err) {
		struct rv_process *proc = NULL;
		err = rv_snapshot(s, &proc);
		if (!err) /* the GC heap walk and every fiber's stack too */
			err = rv_snapshot_fibers(s, proc);
		if (!err) /* the locals: roots of the heap searches below */
			err = rv_snapshot_locals(s, proc);
		if (!err) {
			(void)rv_process_complete(proc);
			size_t built = 0;
			for (size_t i = 0; i < proc->nthreads; i++) {
				(void)rv_thread_status_name(
					proc->threads[i].status);
				built += proc->threads[i].nframes *
					 sizeof(struct rv_frame);
			}
			if (built > budget)
				abort(); /* the bound did not hold */
		}
		struct rv_census census; /* the heap census's walk too */
		cs_error_destroy(rv_heap_census(s, &census));
		rv_census_free(&census);
		/* every object and its references, and the search from the
		 * roots for a class's instances */
		const struct rv_dump_callbacks cb = {dump_roots, dump_object,
						     NULL};
		struct rv_dump_stats st;
		const struct rv_root_stacks stacks = {.process = err ? NULL
								     : proc};
		cs_error_destroy(rv_heap_dump(s, &stacks, &cb, &st));
		rv_dump_stats_free(&st);
		const struct rv_retention_request req = {
			.class_name = "Object", .top = 3, .stacks = stacks};
		struct rv_retention r;
		cs_error_destroy(rv_heap_retainers(s, &req, &r));
		rv_retention_free(&r);
		rv_process_destroy(proc);
		rv_session_destroy(s);
	}
	cs_error_destroy(err);
	free(layout);
	return 0;
}
