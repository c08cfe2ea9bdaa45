/* Frames served from the sampler's frame cache (rv_options.reuse_frames)
 * must read exactly as a fresh decode of the same memory.
 *
 *   check-frame-reuse CORE [EXECUTABLE]
 *
 * On a real core: a reusing session takes one snapshot to fill its cache.
 * Then, for each thread, the pc of its innermost Ruby frame is moved (in
 * an overlay over the core; the file is not touched) a few instructions
 * either way, far outside its iseq, and back; after each move the reusing
 * session and a fresh one each take a snapshot, and every frame of every
 * thread must be the same in both. A frame the reusing session serves
 * from its cache after its pc moved counts as "moved": the run fails if
 * none was, since the comparison would then test nothing new.
 *
 * Exit 0 when all agree, 1 on a difference (each printed), 2 on a setup
 * error. */
#include "process/core.h"
#include "process/core_target.h"
#include "engine/vm_module.h"
#include "rubyvm/layout.h"
#include "rubyvm/model.h"
#include "rubyvm/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The core, with 8 bytes at `at` reading as `value` when active. */
struct overlay {
	struct cs_memory core;
	uint64_t at, value;
	int active;
};

static struct cs_error *overlay_read(void *priv, uint64_t addr, void *buf,
				     size_t len)
{
	struct overlay *o = priv;
	struct cs_error *err = cs_memory_read(&o->core, addr, buf, len);
	if (err || !o->active)
		return err;
	for (size_t i = 0; i < 8; i++)
		if (o->at + i >= addr && o->at + i < addr + len)
			((uint8_t *)buf)[o->at + i - addr] =
				(uint8_t)(o->value >> (8 * i));
	return NULL;
}

static int same_text(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static const char *show(const char *t)
{
	return t ? t : "(none)";
}

/* 1 when the two frames read the same; prints the first difference. */
static int same_frame(const struct rv_frame *a, const struct rv_frame *b,
		      const char *where)
{
	const char *what = NULL;
	if (a->kind != b->kind)
		what = "kind";
	else if (!same_text(a->label, b->label))
		what = "label";
	else if (!same_text(a->path, b->path))
		what = "path";
	else if (a->lineno != b->lineno)
		what = "lineno";
	else if (!same_text(a->qualified, b->qualified))
		what = "qualified";
	else if (!same_text(a->stable, b->stable))
		what = "stable";
	else if (!same_text(a->error, b->error))
		what = "error";
	else if (a->pc_stale != b->pc_stale)
		what = "pc_stale";
	else if (a->cfp != b->cfp || a->iseq != b->iseq || a->pc != b->pc ||
		 a->cfunc != b->cfunc)
		what = "addresses";
	if (!what)
		return 1;
	printf("DIFF %s: %s: reused %s:%d %s [%s] error %s stale %d; "
	       "fresh %s:%d %s [%s] error %s stale %d\n",
	       where, what, show(a->path), a->lineno, show(a->label),
	       show(a->qualified), show(a->error), a->pc_stale, show(b->path),
	       b->lineno, show(b->label), show(b->qualified), show(b->error),
	       b->pc_stale);
	return 0;
}

static int same_process(const struct rv_process *a, const struct rv_process *b,
			const char *move)
{
	char where[160];
	if (a->nthreads != b->nthreads) {
		printf("DIFF %s: %zu threads reused, %zu fresh\n", move,
		       a->nthreads, b->nthreads);
		return 0;
	}
	for (size_t t = 0; t < a->nthreads; t++) {
		const struct rv_thread *x = &a->threads[t], *y = &b->threads[t];
		if (x->nframes != y->nframes ||
		    !same_text(x->error, y->error)) {
			printf("DIFF %s: thread %zu: %zu frames (%s) reused, "
			       "%zu (%s) fresh\n",
			       move, t, x->nframes, show(x->error), y->nframes,
			       show(y->error));
			return 0;
		}
		for (size_t i = 0; i < x->nframes; i++) {
			snprintf(where, sizeof(where),
				 "%s, thread %zu frame %zu", move, t, i);
			if (!same_frame(&x->frames[i], &y->frames[i], where))
				return 0;
		}
	}
	return 1;
}

static int setup_failed(struct cs_error *err, const char *what)
{
	fprintf(stderr, "check-frame-reuse: %s: %s\n", what, err->message);
	cs_error_destroy(err);
	return 2;
}

/* The innermost Ruby frame of a thread, or NULL. */
static const struct rv_frame *innermost_ruby(const struct rv_thread *th)
{
	for (size_t i = 0; i < th->nframes; i++)
		if (th->frames[i].kind == RV_FRAME_RUBY && th->frames[i].pc)
			return &th->frames[i];
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: %s CORE [EXECUTABLE]\n", argv[0]);
		return 2;
	}
	struct cs_core *core;
	struct cs_error *err = cs_core_open(argv[1], &core);
	if (err)
		return setup_failed(err, argv[1]);
	struct cs_target img = cs_target_of_core(core);
	struct cs_vm_module vm;
	if ((err = cs_vm_module_open(&img, argc == 3 ? argv[2] : NULL, NULL,
				     &vm)))
		return setup_failed(err, "finding the Ruby VM");
	struct rv_layout *layout = calloc(1, sizeof(*layout));
	int cached;
	if (!layout)
		return 2;
	if ((err = rv_layout_for_module(vm.vm, "", layout, &cached)))
		return setup_failed(err, "layout");
	struct overlay ov = {.core = cs_core_memory(core)};
	struct cs_memory target = {overlay_read, &ov};
	struct rv_options reuse = {.reuse_frames = true};
	struct rv_session *s;
	struct rv_process *first;
	if ((err = rv_session_create(&target, layout, vm.vm->path, vm.load_bias,
				     &reuse, &s)) ||
	    (err = rv_snapshot(s, &first)))
		return setup_failed(err, "snapshot");
	const int64_t pc_at = RV_VAL(s, cfp_pc);
	/* Each thread's innermost Ruby frame: where its pc is, and what. */
	size_t n = 0;
	uint64_t *cfps = calloc(first->nthreads + 1, sizeof(*cfps));
	uint64_t *pcs = calloc(first->nthreads + 1, sizeof(*pcs));
	if (!cfps || !pcs)
		return 2;
	for (size_t t = 0; t < first->nthreads; t++) {
		const struct rv_frame *f = innermost_ruby(&first->threads[t]);
		if (f) {
			cfps[n] = f->cfp;
			pcs[n++] = f->pc;
		}
	}
	rv_process_destroy(first);
	/* In VALUE-sized steps, as instructions are; the last is far
	 * outside any iseq, and 0 puts the pc back. */
	const int64_t moves[] = {8, 16, -8, 24, -16, 1 << 20, 0};
	int compared = 0, moved = 0, differ = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t m = 0; m < sizeof(moves) / sizeof(*moves); m++) {
			char what[96];
			snprintf(what, sizeof(what), "pc of cfp 0x%llx %+lld",
				 (unsigned long long)cfps[i],
				 (long long)moves[m]);
			ov.at = cfps[i] + (uint64_t)pc_at;
			ov.value = pcs[i] + (uint64_t)moves[m];
			ov.active = 1;
			struct rv_session *fresh;
			struct rv_process *a, *b;
			if ((err = rv_snapshot(s, &a)))
				return setup_failed(err, what);
			if ((err = rv_session_create(&target, layout,
						     vm.vm->path, vm.load_bias,
						     NULL, &fresh)) ||
			    (err = rv_snapshot(fresh, &b)))
				return setup_failed(err, what);
			compared++;
			differ += !same_process(a, b, what);
			for (size_t t = 0; t < a->nthreads; t++)
				for (size_t j = 0; j < a->threads[t].nframes;
				     j++) {
					const struct rv_frame *f =
						&a->threads[t].frames[j];
					moved += f->cfp == cfps[i] &&
						 f->borrowed && moves[m];
				}
			rv_process_destroy(a);
			rv_process_destroy(b);
			rv_session_destroy(fresh);
		}
	}
	printf("%d snapshots compared over %zu threads, %d moved frames "
	       "served from the cache, %d differ\n",
	       compared, n, moved, differ);
	rv_session_destroy(s);
	free(cfps);
	free(pcs);
	free(layout);
	cs_vm_module_close(&vm);
	cs_core_close(core);
	if (differ)
		return 1;
	if (!moved) {
		printf("FAIL no moved frame was served from the cache\n");
		return 1;
	}
	return 0;
}
