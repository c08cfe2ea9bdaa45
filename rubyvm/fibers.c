/* Every fiber of the process, grouped under the thread it belongs to.
 *
 * A fiber's execution context is fiber->cont.saved_ec in place, and th->ec
 * points at the one running on the thread: a fiber is current when its
 * saved_ec is th->ec, and belongs to the thread saved_ec.thread_ptr names.
 * Suspended fibers are reachable from nothing but their Fiber objects, so
 * the GC heap is walked for them (heap.c); where it cannot be (a GC loaded
 * from RUBY_GC_LIBRARY without the default GC's heap pages, or without
 * debug info), or when asked to (opts.fibers_by_scan), writable memory is
 * searched for Fiber objects instead (memory_scan.c), each believed only
 * when its rb_fiber_t points back at it, and the report says so
 * (fibers_found_by, fibers_note). A thread's root fiber is
 * malloc'd and has an object only once Ruby code asked for it
 * (Fiber.current, or a first switch): it is th->root_fiber when set, else
 * the fiber of th->ec (the only fiber the thread ever ran). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* Upper bound on fibers kept, as for threads: the heap bounds it anyway. */
#define MAX_FIBERS ((size_t)1 << 24)

const char *rv_fiber_status_name(enum rv_fiber_status st)
{
	switch (st) {
	case RV_FIBER_CREATED:
		return "created";
	case RV_FIBER_RESUMED:
		return "resumed";
	case RV_FIBER_SUSPENDED:
		return "suspended";
	case RV_FIBER_TERMINATED:
		return "terminated";
	default:
		return "unknown";
	}
}

struct candidate {
	uint64_t fiber, object;
	size_t thread; /* index into the thread list, or SIZE_MAX */
};

struct thread_fibers {
	uint64_t ec, root;
};

static int by_fiber(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	return x->fiber < y->fiber ? -1 : x->fiber > y->fiber;
}

/* Root first, then the current fiber, then by object address. */
static int display_order(const void *a, const void *b)
{
	const struct rv_fiber *x = a, *y = b;
	if (x->is_root != y->is_root)
		return x->is_root ? -1 : 1;
	if (x->is_current != y->is_current)
		return x->is_current ? -1 : 1;
	return x->object < y->object ? -1 : x->object > y->object;
}

static enum rv_fiber_status fiber_status(struct rv_session *s, uint64_t v)
{
	if (v == (uint64_t)RV_VAL(s, fiber_created))
		return RV_FIBER_CREATED;
	if (v == (uint64_t)RV_VAL(s, fiber_resumed))
		return RV_FIBER_RESUMED;
	if (v == (uint64_t)RV_VAL(s, fiber_suspended))
		return RV_FIBER_SUSPENDED;
	if (v == (uint64_t)RV_VAL(s, fiber_terminated))
		return RV_FIBER_TERMINATED;
	return RV_FIBER_UNKNOWN;
}

static void set_error(struct rv_fiber *f, struct cs_error *err)
{
	if (!f->error)
		f->error = strdup(err->message);
	cs_error_destroy(err);
}

/* Status, flags and (when not running) the stack of one fiber. */
static void read_fiber(struct rv_session *s, const struct candidate *c,
		       const struct thread_fibers *tf, struct rv_fiber *f)
{
	uint64_t ec = c->fiber + (uint64_t)RV_VAL(s, fiber_saved_ec), v;
	memset(f, 0, sizeof(*f));
	f->addr = c->fiber;
	f->object = c->object;
	f->blocking = -1;
	f->stuck_behind = f->wait.waits_for = -1;
	if (!f->object && RV_HAS(s, fiber_self) &&
	    rv_try_member(s, c->fiber, RVL_fiber_self, &v))
		f->object = v;
	if (tf) {
		f->is_root = c->fiber == tf->root;
		f->is_current = ec == tf->ec;
	}
	struct cs_error *err =
		rv_read_member(s, c->fiber, RVL_fiber_status, &v);
	if (err) {
		set_error(f, cs_error_wrap(err, "fiber 0x%llx",
					   (unsigned long long)c->fiber));
		return;
	}
	f->status = fiber_status(s, v);
	if (RV_HAS(s, fiber_blocking) &&
	    rv_try_member(s, c->fiber, RVL_fiber_blocking, &v))
		f->blocking = v != 0;
	if (f->is_current ||
	    (f->status != RV_FIBER_SUSPENDED && f->status != RV_FIBER_RESUMED))
		return;
	/* The frame walker fills a thread; borrow one for the fiber. */
	struct rv_thread stack = {0};
	struct rv_view ecv;
	rv_ec_view_read(s, ec, &ecv);
	err = rv_walk_ec(s, &ecv, &stack);
	f->frames = stack.frames;
	f->nframes = stack.nframes;
	f->truncated = stack.truncated;
	f->frames_cut = stack.frames_cut;
	if (err)
		set_error(f, cs_error_wrap(err, "fiber 0x%llx",
					   (unsigned long long)c->fiber));
	rv_fiber_wait_read(s, f);
	rv_fiber_locks_read(s, f);
}

static bool add_candidate(struct candidate **list, size_t *n, size_t *cap,
			  uint64_t fiber, uint64_t object)
{
	if (!fiber || *n >= MAX_FIBERS)
		return true;
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct candidate *grown = realloc(*list, ncap * sizeof(*grown));
		if (!grown)
			return false;
		*list = grown;
		*cap = ncap;
	}
	(*list)[(*n)++] = (struct candidate){fiber, object, SIZE_MAX};
	return true;
}

/* Fibers named by the threads: each one's root and current fiber. */
static bool thread_candidates(struct rv_session *s, struct rv_process *p,
			      struct thread_fibers *tf, struct candidate **list,
			      size_t *n, size_t *cap)
{
	for (size_t i = 0; i < p->nthreads; i++) {
		uint64_t th = p->threads[i].addr, ec = 0, current = 0, root = 0;
		if (!rv_try_member(s, th, RVL_th_ec, &ec) || !ec)
			continue;
		tf[i].ec = ec;
		if (RV_HAS(s, ec_fiber_ptr))
			rv_try_member(s, ec, RVL_ec_fiber_ptr, &current);
		if (RV_HAS(s, th_root_fiber))
			rv_try_member(s, th, RVL_th_root_fiber, &root);
		tf[i].root = root ? root : current;
		if (!add_candidate(list, n, cap, current, 0) ||
		    !add_candidate(list, n, cap, tf[i].root, 0))
			return false;
	}
	return true;
}

/* Sort by rb_fiber_t and fold duplicates (a fiber both current and in the
 * heap), keeping the object address that is known. */
static size_t dedup(struct candidate *list, size_t n)
{
	if (n == 0) /* list may be NULL: qsort must not see it */
		return 0;
	qsort(list, n, sizeof(*list), by_fiber);
	size_t out = 0;
	for (size_t i = 0; i < n; i++) {
		if (out && list[out - 1].fiber == list[i].fiber) {
			if (!list[out - 1].object)
				list[out - 1].object = list[i].object;
			continue;
		}
		list[out++] = list[i];
	}
	return out;
}

/* A Fiber object the memory scan found is believed only when its data is
 * a fiber that points back at it: cont.self the object, saved_ec.fiber_ptr
 * the fiber itself, a status Ruby has. A copy of an object's bytes left
 * elsewhere fails the first. */
static bool fiber_points_back(struct rv_session *s, uint64_t object,
			      uint64_t fiber)
{
	uint64_t self, fiber_ptr, status;
	uint64_t ec = fiber + (uint64_t)RV_VAL(s, fiber_saved_ec);
	return fiber && !(fiber & 7) &&
	       rv_try_member(s, fiber, RVL_fiber_self, &self) &&
	       self == object &&
	       rv_try_member(s, ec, RVL_ec_fiber_ptr, &fiber_ptr) &&
	       fiber_ptr == fiber &&
	       rv_try_member(s, fiber, RVL_fiber_status, &status) &&
	       fiber_status(s, status) != RV_FIBER_UNKNOWN;
}

/* The memory scan in place of the heap walk: why says why (taken). */
static struct cs_error *scan_candidates(struct rv_session *s,
					struct rv_process *p, uint64_t type,
					char *why, struct rv_heap_scan *scan)
{
	struct cs_error *err = NULL;
	if (!RV_HAS(s, fiber_self) || !RV_HAS(s, ec_fiber_ptr)) {
		memset(scan, 0, sizeof(*scan));
		rv_heap_note(scan,
			     "memory not scanned: the debug info lacks "
			     "'%s'",
			     rv_layout_item_name(RV_HAS(s, fiber_self)
							 ? RVL_ec_fiber_ptr
							 : RVL_fiber_self));
		scan->not_begun = true;
	} else {
		err = rv_memory_find_typed_data(s, type, scan);
	}
	if (!err && scan->not_begun) { /* neither way: say why for both */
		char *both = NULL;
		if (asprintf(&both, "%s; %s", why,
			     scan->error ? scan->error : "?") < 0)
			both = NULL;
		free(why);
		free(scan->error);
		scan->error = both;
		return both ? NULL : &cs_error_nomem;
	}
	p->fibers_found_by = RV_FIBERS_MEMORY_SCAN;
	p->fibers_note = why;
	size_t kept = 0;
	for (size_t i = 0; !err && i < scan->count; i++)
		if (fiber_points_back(s, scan->found[i].object,
				      scan->found[i].data))
			scan->found[kept++] = scan->found[i];
	scan->count = kept;
	return err;
}

static struct cs_error *heap_candidates(struct rv_session *s,
					struct rv_process *p,
					struct candidate **list, size_t *n,
					size_t *cap)
{
	uint64_t type = 0, vm;
	if (RV_HAS(s, fiber_data_type))
		type = s->load_bias + (uint64_t)RV_VAL(s, fiber_data_type);
	else if (RV_HAS(s, rb_fiber_data_type))
		type = s->load_bias + (uint64_t)RV_VAL(s, rb_fiber_data_type);
	if (!type) {
		p->fibers_error = strdup("suspended fibers not listed: no "
					 "fiber_data_type in the debug info");
		return NULL;
	}
	if (rv_failed(rv_read_u64(s, s->load_bias + (uint64_t)RV_VAL(s, vm_ptr),
				  &vm)) ||
	    !vm) {
		p->fibers_error = strdup("suspended fibers not listed: "
					 "ruby_current_vm_ptr unreadable");
		return NULL;
	}
	struct rv_heap_scan scan;
	struct cs_error *err = NULL;
	if (s->opts.fibers_by_scan) {
		char *why = strdup("the memory scan was asked for in place "
				   "of the heap walk");
		err = why ? scan_candidates(s, p, type, why, &scan)
			  : &cs_error_nomem;
	} else {
		p->fibers_found_by = RV_FIBERS_HEAP_WALK;
		err = rv_heap_find_typed_data(s, vm, type, &scan);
		if (!err && scan.unwalkable) {
			/* The GC's heap has no layout to walk: search
			 * memory instead, and say why. */
			char *why = scan.error;
			scan.error = NULL;
			rv_heap_scan_free(&scan);
			p->fibers_found_by = RV_FIBERS_NOT_SEARCHED;
			err = why ? scan_candidates(s, p, type, why, &scan)
				  : &cs_error_nomem;
		} else if (!err && scan.not_begun) {
			p->fibers_found_by = RV_FIBERS_NOT_SEARCHED;
		}
	}
	if (err) {
		rv_heap_scan_free(&scan);
		return err;
	}
	p->heap_pages = scan.pages;
	p->heap_bytes = scan.bytes;
	if (scan.error) {
		p->fibers_error = scan.error;
		scan.error = NULL;
	}
	if (scan.count > MAX_FIBERS && !p->fibers_error)
		p->fibers_error =
			strdup("more Fiber objects in the GC heap than "
			       "corestack lists (16M): the rest left out");
	for (size_t i = 0; !err && i < scan.count; i++)
		if (!add_candidate(list, n, cap, scan.found[i].data,
				   scan.found[i].object))
			err = &cs_error_nomem;
	rv_heap_scan_free(&scan);
	return err;
}

/* Which thread each candidate belongs to: saved_ec.thread_ptr. */
static void assign_threads(struct rv_session *s, struct rv_process *p,
			   struct candidate *list, size_t n,
			   struct u64map *thread_index)
{
	uint64_t ec_off = (uint64_t)RV_VAL(s, fiber_saved_ec), th;
	for (size_t i = 0; list && i < n; i++) {
		int found = 0;
		if (!rv_try_member(s, list[i].fiber + ec_off, RVL_ec_thread_ptr,
				   &th) ||
		    !th)
			continue;
		void *v = u64map_get(thread_index, th, &found);
		if (found && (uintptr_t)v - 1 < p->nthreads)
			list[i].thread = (uintptr_t)v - 1;
	}
}

/* The pages of a fiber's VM stack a walk reads first: the control frames
 * at its top and the environments at its bottom. Hinted for every fiber
 * before any is walked, so that a core not yet in memory is read in one
 * batch instead of a wait per fiber. */
#define PREFETCH_MAX ((uint64_t)64 << 10)

static void prefetch_stacks(struct rv_session *s, const struct candidate *list,
			    size_t n)
{
	if (!s->prefetcher.prefetch)
		return;
	uint64_t ec_off = (uint64_t)RV_VAL(s, fiber_saved_ec);
	uint64_t value_size = (uint64_t)RV_VAL(s, value_size);
	for (size_t i = 0; i < n; i++) {
		uint64_t ec = list[i].fiber + ec_off, stack, size, cfp;
		if (!rv_try_member(s, ec, RVL_ec_vm_stack, &stack) || !stack ||
		    !rv_try_member(s, ec, RVL_ec_vm_stack_size, &size) ||
		    !rv_try_member(s, ec, RVL_ec_cfp, &cfp) ||
		    size > PREFETCH_MAX)
			continue;
		uint64_t end = stack + size * value_size;
		if (cfp < stack || cfp > end || end - cfp > PREFETCH_MAX)
			continue;
		rv_prefetch(s, stack, 4096);
		rv_prefetch(s, cfp, end - cfp);
	}
}

static struct cs_error *distribute(struct rv_session *s, struct rv_process *p,
				   const struct candidate *list, size_t n,
				   const struct thread_fibers *tf)
{
	size_t *counts = calloc(p->nthreads + 1, sizeof(*counts));
	if (!counts)
		return &cs_error_nomem;
	for (size_t i = 0; i < n; i++)
		counts[list[i].thread == SIZE_MAX ? p->nthreads
						  : list[i].thread]++;
	for (size_t t = 0; t <= p->nthreads; t++) {
		struct rv_fiber *arr =
			counts[t] ? calloc(counts[t], sizeof(*arr)) : NULL;
		if (counts[t] && !arr) {
			free(counts);
			return &cs_error_nomem;
		}
		if (t < p->nthreads)
			p->threads[t].fibers = arr;
		else
			p->orphan_fibers = arr;
	}
	for (size_t i = 0; i < n; i++) {
		size_t t = list[i].thread;
		struct rv_fiber *f;
		if (t == SIZE_MAX)
			f = &p->orphan_fibers[p->norphan_fibers++];
		else
			f = &p->threads[t].fibers[p->threads[t].nfibers++];
		read_fiber(s, &list[i], t == SIZE_MAX ? NULL : &tf[t], f);
	}
	for (size_t t = 0; t < p->nthreads; t++)
		if (p->threads[t].nfibers && p->threads[t].fibers)
			qsort(p->threads[t].fibers, p->threads[t].nfibers,
			      sizeof(struct rv_fiber), display_order);
	if (p->norphan_fibers && p->orphan_fibers)
		qsort(p->orphan_fibers, p->norphan_fibers,
		      sizeof(struct rv_fiber), display_order);
	free(counts);
	return NULL;
}

struct cs_error *rv_snapshot_fibers(struct rv_session *s, struct rv_process *p)
{
	p->fibers_read = true;
	const enum rv_item_id needed[] = {RVL_fiber_saved_ec, RVL_fiber_status,
					  RVL_ec_thread_ptr};
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (s->layout.items[needed[i]].source == RV_MISSING) {
			struct cs_error *err = rv_missing(needed[i]);
			p->fibers_error = strdup(err->message);
			cs_error_destroy(err);
			return NULL;
		}
	struct candidate *list = NULL;
	size_t n = 0, cap = 0;
	struct u64map thread_index = {0};
	struct thread_fibers *tf = calloc(p->nthreads + 1, sizeof(*tf));
	struct cs_error *err = NULL;
	if (!tf || !thread_candidates(s, p, tf, &list, &n, &cap))
		err = &cs_error_nomem;
	if (!err)
		err = heap_candidates(s, p, &list, &n, &cap);
	for (size_t i = 0; !err && i < p->nthreads; i++)
		if (!u64map_put(&thread_index, p->threads[i].addr,
				(void *)(uintptr_t)(i + 1)))
			err = &cs_error_nomem;
	if (!err) {
		n = dedup(list, n);
		assign_threads(s, p, list, n, &thread_index);
		prefetch_stacks(s, list, n);
		err = distribute(s, p, list, n, tf);
	}
	/* whom fibers wait for, and mutexes their fibers hold */
	if (!err)
		err = rv_locks_resolve(s, p);
	u64map_free(&thread_index, NULL);
	free(list);
	free(tf);
	return err;
}

void rv_fibers_free(struct rv_fiber *fibers, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < fibers[i].nframes; j++)
			rv_frame_free(&fibers[i].frames[j]);
		free(fibers[i].frames);
		free(fibers[i].error);
		free(fibers[i].wait.io_path);
		free(fibers[i].wait.ractor.name);
	}
	free(fibers);
}

bool rv_fibers_complete(const struct rv_fiber *fibers, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (fibers[i].error || fibers[i].truncated)
			return false;
		for (size_t j = 0; j < fibers[i].nframes; j++)
			if (fibers[i].frames[j].error)
				return false;
	}
	return true;
}
