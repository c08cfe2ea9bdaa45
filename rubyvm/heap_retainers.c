/* What keeps an object alive: a breadth-first search from the roots
 * heap_roots.c reads, in its order (the first of equally short paths
 * wins), over the references heap_refs.c decodes, so the first path to
 * reach an object is a shortest one. References of types heap_refs.c does
 * not decode are not followed: an object held only through those is
 * reported not found, with how many objects were not followed. */
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

/* A root: kept (with copies of its strings) when v is a live object no
 * root before reached. */
static bool add_root(void *ctx, const struct rv_root *root, uint64_t v)
{
	struct search *w = ctx;
	int found = 0;
	if (u64map_get(&w->seen, v, &found))
		return true;
	if (w->nroots == w->roots_cap) {
		size_t cap = w->roots_cap ? w->roots_cap * 2 : 256;
		struct rv_root *m = realloc(w->roots, cap * sizeof(*m));
		if (!m)
			return false;
		w->roots = m;
		w->roots_cap = cap;
	}
	struct rv_root *r = &w->roots[w->nroots];
	*r = *root;
	r->name = root->name ? strdup(root->name) : NULL;
	r->frame = root->frame ? strdup(root->frame) : NULL;
	if ((root->name && !r->name) || (root->frame && !r->frame)) {
		free(r->name);
		free(r->frame);
		return false;
	}
	w->nroots++;
	size_t before = w->nrecords;
	if (!reach(w, v, -1, NULL))
		return false;
	if (w->nrecords == before) { /* no live object: not a root */
		w->nroots--;
		free(r->name);
		free(r->frame);
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
	if (!rv_failed(rv_read_member(s, obj, RVL_basic_klass, &klass)) &&
	    klass && !rv_failed(rv_real_class(s, klass, true, &real)) && real &&
	    !rv_failed(rv_stable_class_name(s, real, &name)))
		return name;
	const char *names[RV_CENSUS_MAX_TYPES];
	rv_heap_type_names(s, names);
	if (rv_failed(rv_builtin_type(s, obj, &type, &flags)) ||
	    type >= RV_CENSUS_MAX_TYPES || !names[type])
		return strdup("(unknown)");
	size_t n = strlen(names[type]) + 3;
	if ((name = malloc(n)))
		snprintf(name, n, "(%s)", names[type]);
	return name;
}

/* A class's or module's own name, NULL for other objects. */
static char *module_name(struct rv_session *s, uint64_t obj)
{
	uint64_t type = 0, flags = 0;
	char *name = NULL;
	if (!rv_failed(rv_builtin_type(s, obj, &type, &flags)) &&
	    (type == (uint64_t)RV_VAL(s, t_class) ||
	     type == (uint64_t)RV_VAL(s, t_module)) &&
	    !rv_failed(rv_stable_class_name(s, obj, &name)))
		return name;
	return NULL;
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
		h->name = module_name(s, rec->object);
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
		uint64_t bytes = rv_object_bytes(&x->sizer,
						 p->start + i * p->stride, type,
						 flags, slot, p->stride);
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
	if (x.n)
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
		r->paths[0].bytes =
			rv_object_bytes(&z, addr, type, flags, buf, size);
	else if (size > sizeof(buf)) {
		uint8_t *big = malloc(size);
		if (big && rv_try_read(s, addr, big, size))
			r->paths[0].bytes = rv_object_bytes(&z, addr, type,
							    flags, big, size);
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
	if (!err)
		err = rv_heap_roots(s, &req->stacks, add_root, &w, &r->error);
	r->machine_unread = req->machine_unread;
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
		if (r->paths[i].error ||
		    (!r->paths[i].found &&
		     (r->not_decoded || r->machine_unread)))
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
			free(p->hops[k].name);
			rv_ref_label_free(&p->hops[k].via);
		}
		free(p->hops);
	}
	free(r->paths);
	free(r->error);
	free(r->bad_input);
	memset(r, 0, sizeof(*r));
}
