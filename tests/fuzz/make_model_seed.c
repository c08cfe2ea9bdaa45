/* Writes a seed for fuzz_model (format: tests/fuzz/model_seed.h) from a
 * real core: the layout of its Ruby VM module, then every region of target
 * memory a snapshot reads, merged and rounded out to whole pages.
 *
 *   make_model_seed [-g GRAIN] CORE [EXECUTABLE] OUT
 *
 * GRAIN (default 4096, a page) is the alignment regions are rounded out
 * to; a small one (64) gives a denser seed whose bytes are nearly all read.
 *
 *   make_model_seed -a [-g GRAIN] CORE [EXECUTABLE] OUT
 *
 * also attaches the C extensions' modules (objspace.so) and records what
 * reading ObjectSpace.trace_object_allocations' table reads (the heap
 * dump's first step, rv_alloc_sites_read): a seed for the allocation
 * sites. The seed format has one load bias, so an extension's variable is
 * written at its address less the VM module's bias.
 *
 * It opens the core, finds the VM module (cs_vm_module_open: libruby.so or a
 * static ruby, checked by build-id), resolves its layout (without the
 * on-disk cache), then runs rv_snapshot through a recording cs_memory that
 * forwards to cs_core_memory and logs each read, and writes the layout plus
 * the pages read. It also prints the snapshot's threads and frame counts,
 * and checks that a replay from the written regions alone gives the same
 * counts. */
#include "process/core.h"
#include "process/core_target.h"
#include "engine/ext_module.h"
#include "engine/vm_module.h"
#include "rubyvm/alloc_sites.h"
#include "rubyvm/session.h"
#include "rubyvm/layout.h"
#include "rubyvm/model.h"
#include "tests/fuzz/model_seed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t PAGE = 4096;

struct span {
	uint64_t start, end;
};

struct recorder {
	struct cs_memory inner;
	struct span *v;
	size_t n, cap;
	struct cs_core *core;
	int replay; /* serve only recorded pages */
};

static struct cs_error *rec_read(void *priv, uint64_t addr, void *buf,
				 size_t len)
{
	struct recorder *r = priv;
	if (r->replay) {
		for (size_t i = 0; i < r->n; i++)
			if (addr >= r->v[i].start && len <= r->v[i].end - addr)
				return cs_memory_read(&r->inner, addr, buf,
						      len);
		return cs_error_create(CS_ERR_FAULT, "not recorded: 0x%llx",
				       (unsigned long long)addr);
	}
	struct cs_error *err = cs_memory_read(&r->inner, addr, buf, len);
	if (err || len == 0)
		return err;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		if (!r->v)
			abort();
	}
	r->v[r->n++] = (struct span){addr, addr + len};
	return NULL;
}

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Round out to pages, keeping only bytes the core has, then merge. */
static void merge(struct recorder *r)
{
	size_t out = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct span s = r->v[i];
		uint64_t lo = s.start & ~(PAGE - 1);
		uint64_t hi = (s.end + PAGE - 1) & ~(PAGE - 1);
		/* a page's outer parts may be missing (end of a mapping) */
		if (lo < s.start) {
			uint8_t *tmp = malloc(s.start - lo);
			struct cs_error *err =
				cs_core_read(r->core, lo, tmp, s.start - lo);
			if (err)
				lo = s.start;
			cs_error_destroy(err);
			free(tmp);
		}
		if (hi > s.end) {
			uint8_t *tmp = malloc(hi - s.end);
			struct cs_error *err =
				cs_core_read(r->core, s.end, tmp, hi - s.end);
			if (err)
				hi = s.end;
			cs_error_destroy(err);
			free(tmp);
		}
		r->v[out++] = (struct span){lo, hi};
	}
	r->n = out;
	qsort(r->v, r->n, sizeof(*r->v), by_start);
	out = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (out && r->v[i].start <= r->v[out - 1].end) {
			if (r->v[i].end > r->v[out - 1].end)
				r->v[out - 1].end = r->v[i].end;
		} else {
			r->v[out++] = r->v[i];
		}
	}
	r->n = out;
}

static void le(FILE *f, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		fputc((int)(uint8_t)(v >> (8 * i)), f);
}

static int fail(struct cs_error *err, const char *what)
{
	fprintf(stderr, "make_model_seed: %s: %s\n", what, err->message);
	cs_error_destroy(err);
	return 1;
}

static void summary(const char *what, const struct rv_process *p)
{
	size_t frames = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		frames += p->threads[i].nframes;
	printf("%s: ruby %s, %zu threads, %zu frames%s\n", what,
	       p->ruby_version ? p->ruby_version : "?", p->nthreads, frames,
	       rv_process_complete(p) ? "" : " (incomplete)");
}

/* The allocation table read through s, after its extensions attached:
 * the session's layout then has their items, kept in *ext with each
 * extension variable moved to the VM module's bias. */
static struct cs_error *alloc_sites(struct cs_target *img, struct rv_session *s,
				    struct rv_layout *ext)
{
	struct cs_module_search *search = cs_module_search_new(NULL, NULL);
	struct rv_alloc_sites a = {0};
	struct cs_error *err =
		search ? cs_ext_modules_attach(img, search, s, NULL, NULL, NULL)
		       : &cs_error_nomem;
	if (!err)
		err = rv_alloc_sites_read(s, &a);
	if (!err)
		printf("allocation table: %zu objects%s%s\n",
		       (size_t)a.by_object.count, a.error ? ", unread: " : "",
		       a.error ? a.error : "");
	for (int i = 0; !err && i < RVL_COUNT; i++) {
		const struct rv_item *it = &s->layout.items[i];
		if (!rv_layout_item_ext(i) || it->source == RV_MISSING)
			continue;
		ext->items[i] = *it;
		if (rv_layout_item_is_var(i))
			ext->items[i].value =
				(int64_t)(rv_var_address(s, i) - s->load_bias);
	}
	rv_alloc_sites_free(&a);
	cs_module_search_free(search);
	return err;
}

int main(int argc, char **argv)
{
	bool alloc = argc >= 2 && strcmp(argv[1], "-a") == 0;
	if (alloc) {
		argv++;
		argc--;
	}
	if (argc >= 3 && strcmp(argv[1], "-g") == 0) {
		PAGE = strtoull(argv[2], NULL, 0);
		if (!PAGE || (PAGE & (PAGE - 1))) {
			fprintf(stderr, "make_model_seed: -g: power of 2\n");
			return 2;
		}
		argv += 2;
		argc -= 2;
	}
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s [-g GRAIN] CORE [EXECUTABLE] OUT\n",
			argv[0]);
		return 2;
	}
	const char *exe = argc == 4 ? argv[2] : NULL, *out = argv[argc - 1];
	struct cs_core *core;
	struct cs_error *err = cs_core_open(argv[1], &core);
	if (err)
		return fail(err, argv[1]);
	struct cs_target img = cs_target_of_core(core);
	struct cs_vm_module vm;
	if ((err = cs_vm_module_open(&img, exe, NULL, &vm)))
		return fail(err, "finding the Ruby VM");
	struct rv_layout *layout = calloc(1, sizeof(*layout));
	int cached;
	if (!layout)
		abort();
	if ((err = rv_layout_for_module(vm.vm, "", layout, &cached)))
		return fail(err, "layout");

	struct recorder rec = {.inner = cs_core_memory(core), .core = core};
	struct cs_memory target = {.read = rec_read, .priv = &rec};
	struct rv_session *s;
	struct rv_process *proc;
	if ((err = rv_session_create(&target, layout, vm.vm->path, vm.load_bias,
				     NULL, &s)) ||
	    (err = rv_snapshot(s, &proc)))
		return fail(err, "snapshot");
	summary("recorded", proc);
	if (alloc && (err = alloc_sites(&img, s, layout)))
		return fail(err, "the allocation table");
	rv_process_destroy(proc);
	rv_session_destroy(s);
	size_t reads = rec.n;
	merge(&rec);

	rec.replay = 1;
	if ((err = rv_session_create(&target, layout, vm.vm->path, vm.load_bias,
				     NULL, &s)) ||
	    (err = rv_snapshot(s, &proc)))
		return fail(err, "replay");
	summary("replayed", proc);
	rv_process_destroy(proc);
	rv_session_destroy(s);

	FILE *f = fopen(out, "wb");
	if (!f) {
		perror(out);
		return 1;
	}
	fwrite(MODEL_SEED_MAGIC, 1, 8, f);
	le(f, vm.load_bias, 8);
	uint64_t nenums = 0;
	for (size_t k = 0; k < RVE_COUNT; k++)
		nenums += layout->enums[k].count;
	le(f, RVL_COUNT + nenums, 4);
	le(f, (uint64_t)layout->has_macros, 4);
	le(f, rv_layout_spec_hash(), 8);
	for (size_t i = 0; i < RVL_COUNT; i++) {
		const struct rv_item *it = &layout->items[i];
		const char *name = rv_layout_item_name((enum rv_item_id)i);
		le(f, strlen(name), 1);
		fwrite(name, 1, strlen(name), f);
		le(f, (uint64_t)it->value, 8);
		le(f, it->size, 4);
		le(f, it->bit_pos, 2);
		le(f, it->bit_size, 1);
		le(f, it->source, 1);
	}
	for (size_t k = 0; k < RVE_COUNT; k++)
		for (uint32_t j = 0; j < layout->enums[k].count; j++) {
			const struct rv_enumerator *e = &layout->enums[k].e[j];
			const char *list = rv_layout_enums_name(k);
			le(f, strlen(list) + 1 + strlen(e->name), 1);
			fprintf(f, "%s:%s", list, e->name);
			le(f, (uint64_t)e->value, 8);
			le(f, 0, 4);
			le(f, 0, 2);
			le(f, 0, 1);
			le(f, RV_FROM_DWARF, 1);
		}
	uint64_t total = 0;
	for (size_t i = 0; i < rec.n; i++) {
		uint64_t len = rec.v[i].end - rec.v[i].start;
		uint8_t *b = malloc(len);
		if (!b)
			abort();
		if ((err = cs_core_read(core, rec.v[i].start, b, len)))
			return fail(err, "reading a recorded region");
		le(f, rec.v[i].start, 8);
		le(f, len, 4);
		fwrite(b, 1, len, f);
		free(b);
		total += len;
	}
	if (fclose(f) != 0) {
		perror(out);
		return 1;
	}
	printf("%s: %zu reads -> %zu regions, %llu bytes of memory\n", out,
	       reads, rec.n, (unsigned long long)total);
	free(rec.v);
	free(layout);
	cs_vm_module_close(&vm);
	cs_core_close(core);
	return 0;
}
