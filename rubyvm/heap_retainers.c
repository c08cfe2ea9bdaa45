/* What keeps an object alive: a breadth-first search from the roots over
 * the references heap_refs.c decodes, so the first path to reach an
 * object is a shortest one.
 *
 * The roots, in the order they are searched (the first of equally short
 * paths wins): the global variables (rb_global_tbl: a variable's data is
 * the value itself, or for one C code defined, where the value is), the
 * top-level constants (Object's), then of every thread, and of every
 * fiber not running, the locals of each Ruby frame (its own scope's and
 * those around a block), each frame's self, and the other words of its VM
 * stack up to the innermost frame's sp, as the GC marks them. Not yet
 * roots: machine stacks and registers, the VM's own tables
 * (rb_gc_register_address, mark_object_ary), finalizers; and references
 * of types heap_refs.c does not decode are not followed: an object held
 * only through those is reported not found, with how many objects were
 * not followed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap_census.h"
#include "heap_retainers.h"
#include "session.h"

/* One object reached: by whom (an index into the records, or -1 for a
 * root, root then its index) and how. */
struct record {
	uint64_t object;
	int64_t parent;
	size_t root;
	struct rv_ref ref;
};

struct search {
	struct rv_session *s;
	struct rv_retention *r;
	struct rv_root *roots;
	size_t nroots, roots_cap;
	struct record *records;
	size_t nrecords, records_cap;
	struct u64map seen;    /* object -> 1 + its record */
	struct u64map targets; /* object -> 1 + its path */
	size_t left;           /* targets not reached yet */
	uint64_t t_mask;
};

static bool push(struct search *w, uint64_t obj, int64_t parent, size_t root,
		 const struct rv_ref *ref)
{
	if (w->nrecords == w->records_cap) {
		size_t cap = w->records_cap ? w->records_cap * 2 : 4096;
		struct record *m = realloc(w->records, cap * sizeof(*m));
		if (!m)
			return false;
		w->records = m;
		w->records_cap = cap;
	}
	w->records[w->nrecords] = (struct record){
		obj, parent, root, ref ? *ref : (struct rv_ref){0}};
	if (!u64map_put(&w->seen, obj, (void *)(uintptr_t)(w->nrecords + 1)))
		return false;
	w->nrecords++;
	int found = 0;
	uintptr_t t = (uintptr_t)u64map_get(&w->targets, obj, &found);
	if (found && t) {
		struct rv_retainer_path *p = &w->r->paths[t - 1];
		if (!p->found) {
			p->found = true;
			w->left--;
		}
	}
	return true;
}

/* Reach v from parent (-1: from the root last added) unless it was
 * reached before or is no live object. */
static bool reach(struct search *w, uint64_t v, int64_t parent,
		  const struct rv_ref *ref)
{
	uint64_t size;
	char why[128];
	int found = 0;
	if (!v || rv_special_const(w->s, v) || u64map_get(&w->seen, v, &found))
		return true;
	if (rv_heap_slot(w->s, v, &size, why, sizeof(why)) != RV_SLOT_LIVE)
		return true;
	return push(w, v, parent, parent < 0 ? w->nroots - 1 : 0, ref);
}

static bool add_root(struct search *w, enum rv_root_kind kind, char *name,
		     const char *frame, uint64_t thread, uint64_t fiber,
		     size_t thread_index, uint64_t v)
{
	int found = 0;
	if (!v || rv_special_const(w->s, v) ||
	    u64map_get(&w->seen, v, &found)) {
		free(name);
		return true;
	}
	if (w->nroots == w->roots_cap) {
		size_t cap = w->roots_cap ? w->roots_cap * 2 : 256;
		struct rv_root *m = realloc(w->roots, cap * sizeof(*m));
		if (!m) {
			free(name);
			return false;
		}
		w->roots = m;
		w->roots_cap = cap;
	}
	char *f = frame ? strdup(frame) : NULL;
	if (frame && !f) {
		free(name);
		return false;
	}
	w->roots[w->nroots++] =
		(struct rv_root){kind, name, f, thread, fiber, thread_index};
	size_t before = w->nrecords;
	if (!reach(w, v, -1, NULL))
		return false;
	if (w->nrecords == before) { /* no live object: not a root */
		w->nroots--;
		free(w->roots[w->nroots].name);
		free(w->roots[w->nroots].frame);
	}
	return true;
}

static void note(struct search *w, struct cs_error *err, const char *what)
{
	if (!w->r->error && err) {
		size_t n = strlen(what) + strlen(err->message) + 3;
		w->r->error = malloc(n);
		if (w->r->error)
			snprintf(w->r->error, n, "%s: %s", what, err->message);
	}
	cs_error_destroy(err);
}

struct gvar_ctx {
	struct search *w;
	bool nomem;
};

/* A global variable: its data is the value (a variable Ruby code set),
 * or where C code keeps it. A live object's slot is never where a C
 * global is, so the two are told apart by what data points to. */
static struct cs_error *global_root(struct rv_session *s, uint64_t serial,
				    uint64_t entry, void *ctx)
{
	struct gvar_ctx *g = ctx;
	uint64_t var = 0, data = 0, size, v = 0;
	char why[128];
	struct cs_error *err =
		rv_read_member(s, entry, RVL_global_entry_var, &var);
	if (!err)
		err = rv_read_member(s, var, RVL_global_variable_data, &data);
	if (err)
		return err;
	if (!data || rv_special_const(s, data))
		return NULL;
	if (rv_heap_slot(s, data, &size, why, sizeof(why)) == RV_SLOT_LIVE)
		v = data;
	else if (!rv_try_read(s, data, &v, sizeof(v)))
		return NULL;
	char *name = NULL;
	if (rv_failed(rv_id_serial_name(s, serial, &name)))
		name = NULL;
	if (!add_root(g->w, RV_ROOT_GLOBAL, name, NULL, 0, 0, 0, v))
		g->nomem = true;
	return NULL;
}

static struct cs_error *constant_root(struct rv_session *s, uint64_t serial,
				      uint64_t entry, void *ctx)
{
	struct gvar_ctx *g = ctx;
	uint64_t v = 0;
	char *name = NULL;
	struct cs_error *err =
		rv_read_member(s, entry, RVL_const_entry_value, &v);
	if (err)
		return err;
	if (rv_failed(rv_id_serial_name(s, serial, &name)))
		name = NULL;
	if (!add_root(g->w, RV_ROOT_CONSTANT, name, NULL, 0, 0, 0, v))
		g->nomem = true;
	return NULL;
}

static bool global_roots(struct search *w)
{
	struct rv_session *s = w->s;
	struct gvar_ctx g = {w, false};
	uint64_t tbl = 0, object = 0, ext = 0, consts = 0;
	struct cs_error *err = NULL;
	if (!RV_HAS(s, var_global_tbl) || !RV_HAS(s, global_entry_var) ||
	    !RV_HAS(s, global_variable_data))
		err = rv_missing(RVL_var_global_tbl);
	else if (!rv_try_var(s, RVL_var_global_tbl, 8, &tbl) || !tbl)
		err = cs_error_create(CS_ERR_CORRUPT,
				      "rb_global_tbl unreadable");
	else
		err = rv_id_table_each(s, tbl, global_root, &g);
	note(w, err, "global variables not read");
	err = NULL;
	if (!RV_HAS(s, var_cobject) || !RV_HAS(s, classext_const_tbl) ||
	    !RV_HAS(s, const_entry_value))
		err = rv_missing(RVL_classext_const_tbl);
	else if (!rv_try_var(s, RVL_var_cobject, 8, &object) || !object)
		err = cs_error_create(CS_ERR_CORRUPT, "rb_cObject unreadable");
	else if (!(err = rv_classext(s, object, &ext)) &&
		 !(err = rv_read_member(s, ext, RVL_classext_const_tbl,
					&consts)) &&
		 consts)
		err = rv_id_table_each(s, consts, constant_root, &g);
	note(w, err, "top-level constants not read");
	return !g.nomem;
}

/* The locals and selves of a stack's frames. */
static bool frame_roots(struct search *w, const struct rv_frame *frames,
			size_t n, uint64_t thread, uint64_t fiber, size_t ti)
{
	for (size_t i = 0; i < n; i++) {
		const struct rv_frame *f = &frames[i];
		const char *label = f->qualified ? f->qualified : f->label;
		for (size_t j = 0; j < f->nlocals; j++) {
			const struct rv_local *l = &f->locals[j];
			char *name = l->name ? strdup(l->name) : NULL;
			if ((l->name && !name) ||
			    !add_root(w, RV_ROOT_LOCAL, name, label, thread,
				      fiber, ti, l->object))
				return false;
		}
		if (f->self_value && !add_root(w, RV_ROOT_SELF, NULL, label,
					       thread, fiber, ti, f->self))
			return false;
	}
	return true;
}

/* The words of the VM stack of the ec at ec, up to its innermost frame's
 * sp: temporaries and what no local names. */
static bool stack_roots(struct search *w, uint64_t ec, uint64_t thread,
			uint64_t fiber, size_t ti)
{
	struct rv_session *s = w->s;
	uint64_t stack = 0, size = 0, cfp = 0, sp = 0;
	if (!RV_HAS(s, cfp_sp) ||
	    !rv_try_member(s, ec, RVL_ec_vm_stack, &stack) ||
	    !rv_try_member(s, ec, RVL_ec_vm_stack_size, &size) ||
	    !rv_try_member(s, ec, RVL_ec_cfp, &cfp) ||
	    !rv_try_member(s, cfp, RVL_cfp_sp, &sp)) {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "the VM stack of ec 0x%" PRIx64
				     " is unreadable",
				     ec),
		     "VM stack not read");
		return true;
	}
	uint64_t vsize = (uint64_t)RV_VAL(s, value_size);
	if (sp < stack || (sp - stack) / vsize > size || size > (1 << 26)) {
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "sp 0x%" PRIx64 " outside the VM stack "
				     "at 0x%" PRIx64,
				     sp, stack),
		     "VM stack not read");
		return true;
	}
	uint64_t n = (sp - stack) / vsize;
	uint64_t *words = malloc((n ? n : 1) * sizeof(*words));
	if (!words)
		return false;
	bool ok = true;
	if (!rv_try_read(s, stack, words, n * sizeof(*words)))
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "the VM stack at 0x%" PRIx64
				     " is unreadable",
				     stack),
		     "VM stack not read");
	else
		for (uint64_t i = 0; ok && i < n; i++)
			ok = add_root(w, RV_ROOT_VM_STACK, NULL, NULL, thread,
				      fiber, ti, words[i]);
	free(words);
	return ok;
}

static bool thread_roots(struct search *w, const struct rv_process *p)
{
	struct rv_session *s = w->s;
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rv_thread *t = &p->threads[i];
		if (!frame_roots(w, t->frames, t->nframes, t->addr, 0, i))
			return false;
		for (size_t j = 0; j < t->nfibers; j++) {
			const struct rv_fiber *f = &t->fibers[j];
			if (!f->is_current &&
			    !frame_roots(w, f->frames, f->nframes, t->addr,
					 f->addr, i))
				return false;
		}
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rv_thread *t = &p->threads[i];
		uint64_t ec = 0;
		if (rv_try_member(s, t->addr, RVL_th_ec, &ec) && ec &&
		    !stack_roots(w, ec, t->addr, 0, i))
			return false;
		for (size_t j = 0; j < t->nfibers; j++) {
			const struct rv_fiber *f = &t->fibers[j];
			if (!f->is_current && RV_HAS(s, fiber_saved_ec) &&
			    !stack_roots(w,
					 f->addr + (uint64_t)RV_VAL(
							   s, fiber_saved_ec),
					 t->addr, f->addr, i))
				return false;
		}
	}
	return true;
}

/* Breadth first from the roots until every target is reached. */
static struct cs_error *search(struct search *w)
{
	struct rv_session *s = w->s;
	struct rv_refs refs = {0};
	struct cs_error *err = NULL;
	for (size_t i = 0; i < w->nrecords && w->left; i++) {
		uint64_t obj = w->records[i].object, flags = 0;
		bool decoded = false;
		refs.n = 0;
		if (!rv_try_member(s, obj, RVL_basic_flags, &flags)) {
			w->r->unreadable++;
			continue;
		}
		err = rv_object_refs(s, obj, flags, &refs, &decoded);
		if (err == &cs_error_nomem)
			break;
		if (err) {
			w->r->unreadable++;
			note(w, err, "references not read");
			err = NULL;
		} else if (!decoded) {
			w->r->not_decoded++;
		}
		for (size_t k = 0; k < refs.n; k++)
			if (!reach(w, refs.items[k].value, (int64_t)i,
				   &refs.items[k])) {
				err = &cs_error_nomem;
				break;
			}
		if (err)
			break;
	}
	rv_refs_free(&refs);
	w->r->reached = w->nrecords;
	return err;
}

/* "(T_DATA)" for an object of no class Ruby shows. */
static char *class_of(struct rv_session *s, uint64_t obj)
{
	uint64_t klass = 0, real = 0, type = 0, flags = 0;
	char *name = NULL;
	if (!rv_failed(rv_builtin_type(s, obj, &type, &flags)) &&
	    (type == (uint64_t)RV_VAL(s, t_class) ||
	     type == (uint64_t)RV_VAL(s, t_module)) &&
	    !rv_failed(rv_stable_class_name(s, obj, &name)))
		return name;
	if (!rv_failed(rv_read_member(s, obj, RVL_basic_klass, &klass)) &&
	    klass && !rv_failed(rv_real_class(s, klass, true, &real)) && real &&
	    !rv_failed(rv_stable_class_name(s, real, &name)))
		return name;
	return strdup("(no class)");
}

/* The path of p, from its record back to its root. */
static struct cs_error *describe(struct search *w, struct rv_retainer_path *p)
{
	struct rv_session *s = w->s;
	int found = 0;
	uintptr_t at = (uintptr_t)u64map_get(&w->seen, p->target, &found);
	size_t n = 0;
	for (int64_t i = (int64_t)at - 1; i >= 0; i = w->records[i].parent)
		n++;
	p->hops = calloc(n ? n : 1, sizeof(*p->hops));
	if (!p->hops)
		return &cs_error_nomem;
	p->nhops = n;
	size_t k = n;
	for (int64_t i = (int64_t)at - 1; i >= 0; i = w->records[i].parent) {
		const struct record *rec = &w->records[i];
		struct rv_retain_hop *h = &p->hops[--k];
		h->object = rec->object;
		if (!(h->class_name = class_of(s, rec->object)))
			return &cs_error_nomem;
		if (rec->parent < 0) {
			const struct rv_root *root = &w->roots[rec->root];
			p->root = *root;
			p->root.name = root->name ? strdup(root->name) : NULL;
			p->root.frame = root->frame ? strdup(root->frame)
						    : NULL;
			if ((root->name && !p->root.name) ||
			    (root->frame && !p->root.frame))
				return &cs_error_nomem;
			continue;
		}
		uint64_t parent = w->records[rec->parent].object, flags = 0;
		struct cs_error *err =
			rv_read_member(s, parent, RVL_basic_flags, &flags);
		if (!err)
			err = rv_ref_describe(s, parent, flags, &rec->ref,
					      &h->via);
		if (err == &cs_error_nomem)
			return err;
		if (err) {
			if (!p->error)
				p->error = strdup(err->message);
			cs_error_destroy(err);
			h->via.kind = rv_ref_kind_name(rec->ref.kind);
			h->via.index = (int64_t)rec->ref.index;
		}
	}
	return NULL;
}

/* The instances of the class named name, largest first. */
struct instances {
	struct rv_session *s;
	const char *name;
	struct rv_object_sizer sizer;
	struct u64map classes; /* class pointer -> 1 matches, 2 does not */
	struct rv_retainer_path *found;
	size_t n, cap, top;
	uint64_t count;
	bool nomem;
};

static bool class_matches(struct instances *x, uint64_t klass)
{
	int found = 0;
	uintptr_t m = (uintptr_t)u64map_get(&x->classes, klass, &found);
	if (found)
		return m == 1;
	uint64_t real = 0;
	char *name = NULL;
	bool match = !rv_failed(rv_real_class(x->s, klass, true, &real)) &&
		     real &&
		     !rv_failed(rv_stable_class_name(x->s, real, &name)) &&
		     !strcmp(name, x->name);
	free(name);
	if (!u64map_put(&x->classes, klass, (void *)(uintptr_t)(match ? 1 : 2)))
		x->nomem = true;
	return match;
}

static int by_bytes(const void *a, const void *b)
{
	const struct rv_retainer_path *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->target < y->target ? -1 : x->target > y->target;
}

static bool instances_page(void *ctx, const struct rv_heap_page *p)
{
	struct instances *x = ctx;
	struct rv_session *s = x->s;
	uint64_t flags_off = (uint64_t)RV_VAL(s, basic_flags);
	uint64_t klass_off = (uint64_t)RV_VAL(s, basic_klass);
	uint64_t t_mask = (uint64_t)RV_VAL(s, t_mask);
	for (uint64_t i = 0; i < p->total && !x->nomem; i++) {
		const uint8_t *slot = p->slots + i * p->stride;
		uint64_t flags, klass;
		memcpy(&flags, slot + flags_off, 8);
		memcpy(&klass, slot + klass_off, 8);
		uint64_t type = flags & t_mask;
		if (!flags || !klass || type == (uint64_t)RV_VAL(s, t_none) ||
		    type == (uint64_t)RV_VAL(s, t_imemo) ||
		    (RV_HAS(s, t_iclass) &&
		     type == (uint64_t)RV_VAL(s, t_iclass)) ||
		    (RV_HAS(s, t_zombie) &&
		     type == (uint64_t)RV_VAL(s, t_zombie)) ||
		    (RV_HAS(s, t_moved) &&
		     type == (uint64_t)RV_VAL(s, t_moved)) ||
		    !class_matches(x, klass))
			continue;
		x->count++;
		uint64_t bytes = rv_object_bytes(&x->sizer, type, flags, slot,
						 p->stride);
		struct rv_retainer_path cand = {
			.target = p->start + i * p->stride, .bytes = bytes};
		/* keep the top largest: a sorted array, cut back when full */
		if (x->n == x->cap) {
			if (x->n >= 2 * x->top) {
				qsort(x->found, x->n, sizeof(*x->found),
				      by_bytes);
				x->n = x->top;
			} else {
				size_t cap = x->cap ? x->cap * 2 : 16;
				struct rv_retainer_path *m =
					realloc(x->found, cap * sizeof(*m));
				if (!m) {
					x->nomem = true;
					return false;
				}
				x->found = m;
				x->cap = cap;
			}
		}
		x->found[x->n++] = cand;
	}
	return !x->nomem;
}

static struct cs_error *find_instances(struct rv_session *s,
				       const struct rv_retention_request *req,
				       struct rv_retention *r)
{
	uint64_t vm = 0;
	if (rv_failed(rv_read_u64(s, s->load_bias + (uint64_t)RV_VAL(s, vm_ptr),
				  &vm)) ||
	    !vm) {
		r->bad_input = strdup("the VM is unreadable");
		return r->bad_input ? NULL : &cs_error_nomem;
	}
	struct instances x = {.s = s,
			      .name = req->class_name,
			      .top = req->top ? req->top : 1};
	rv_object_sizer_init(s, &x.sizer);
	uint64_t need = (uint64_t)RV_VAL(s, basic_flags) + 8;
	if ((uint64_t)RV_VAL(s, basic_klass) + 8 > need)
		need = (uint64_t)RV_VAL(s, basic_klass) + 8;
	const struct rv_heap_walk walk = {.need = need,
					  .min_slot = need,
					  .visit = instances_page,
					  .ctx = &x};
	struct rv_heap_scan scan = {0};
	struct cs_error *err = rv_heap_walk(s, vm, &walk, &scan);
	u64map_free(&x.classes, NULL);
	if (x.nomem)
		err = &cs_error_nomem;
	if (scan.error && !r->error)
		r->error = scan.error;
	else
		free(scan.error);
	if (err) {
		free(x.found);
		return err;
	}
	qsort(x.found, x.n, sizeof(*x.found), by_bytes);
	r->paths = x.found;
	r->npaths = x.n < x.top ? x.n : x.top;
	r->instances = x.count;
	if (!x.count && !(r->bad_input = malloc(strlen(req->class_name) + 64)))
		return &cs_error_nomem;
	if (!x.count)
		sprintf(r->bad_input, "no live instance of %s in the heap",
			req->class_name);
	return NULL;
}

static struct cs_error *one_object(struct rv_session *s, uint64_t addr,
				   struct rv_retention *r)
{
	uint64_t size = 0, type = 0, flags = 0;
	char why[160];
	enum rv_slot slot = rv_heap_slot(s, addr, &size, why, sizeof(why));
	if (slot != RV_SLOT_LIVE) {
		r->bad_input = malloc(256);
		if (!r->bad_input)
			return &cs_error_nomem;
		snprintf(r->bad_input, 256,
			 "0x%" PRIx64 " is no live object: %s", addr,
			 slot == RV_SLOT_UNKNOWN
				 ? "the debug info lacks the heap's layout"
				 : why);
		return NULL;
	}
	r->paths = calloc(1, sizeof(*r->paths));
	if (!r->paths)
		return &cs_error_nomem;
	r->npaths = 1;
	r->paths[0].target = addr;
	r->paths[0].bytes = size;
	uint8_t buf[64] = {0};
	struct rv_object_sizer z;
	rv_object_sizer_init(s, &z);
	if (!rv_failed(rv_builtin_type(s, addr, &type, &flags)) &&
	    size <= sizeof(buf) && rv_try_read(s, addr, buf, size))
		r->paths[0].bytes = rv_object_bytes(&z, type, flags, buf, size);
	else if (size > sizeof(buf)) {
		uint8_t *big = malloc(size);
		if (big && rv_try_read(s, addr, big, size))
			r->paths[0].bytes =
				rv_object_bytes(&z, type, flags, big, size);
		free(big);
	}
	return NULL;
}

static void free_roots(struct search *w)
{
	for (size_t i = 0; i < w->nroots; i++) {
		free(w->roots[i].name);
		free(w->roots[i].frame);
	}
	free(w->roots);
}

struct cs_error *rv_heap_retainers(struct rv_session *s,
				   const struct rv_retention_request *req,
				   struct rv_retention *r)
{
	memset(r, 0, sizeof(*r));
	struct cs_error *err = req->class_name ? find_instances(s, req, r)
					       : one_object(s, req->address, r);
	if (err || r->bad_input)
		return err;
	struct search w = {.s = s, .r = r, .left = r->npaths};
	for (size_t i = 0; i < r->npaths; i++) {
		struct rv_retainer_path *p = &r->paths[i];
		if (!(p->class_name = class_of(s, p->target)) ||
		    !u64map_put(&w.targets, p->target,
				(void *)(uintptr_t)(i + 1)))
			err = &cs_error_nomem;
	}
	if (!err && (!global_roots(&w) ||
		     (req->process && !thread_roots(&w, req->process))))
		err = &cs_error_nomem;
	r->roots = w.nroots;
	if (!err)
		err = search(&w);
	for (size_t i = 0; !err && i < r->npaths; i++)
		if (r->paths[i].found)
			err = describe(&w, &r->paths[i]);
	free_roots(&w);
	free(w.records);
	u64map_free(&w.seen, NULL);
	u64map_free(&w.targets, NULL);
	return err;
}

bool rv_retention_partial(const struct rv_retention *r)
{
	if (r->unreadable || r->error)
		return true;
	for (size_t i = 0; i < r->npaths; i++)
		if (r->paths[i].error || (!r->paths[i].found && r->not_decoded))
			return true;
	return false;
}

void rv_retention_free(struct rv_retention *r)
{
	for (size_t i = 0; i < r->npaths; i++) {
		struct rv_retainer_path *p = &r->paths[i];
		free(p->class_name);
		free(p->error);
		free(p->root.name);
		free(p->root.frame);
		for (size_t k = 0; k < p->nhops; k++) {
			free(p->hops[k].class_name);
			rv_ref_label_free(&p->hops[k].via);
		}
		free(p->hops);
	}
	free(r->paths);
	free(r->error);
	free(r->bad_input);
	memset(r, 0, sizeof(*r));
}
