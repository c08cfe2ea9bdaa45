/* The census of the GC heap, over the page walk of heap.c.
 *
 * Every slot of every page in the sorted page list is counted as
 * ObjectSpace.count_objects counts it: TOTAL is the pages' total_slots,
 * FREE the slots whose flags are 0, and any other slot counts for its type
 * (flags & T_MASK), T_NONE, T_ZOMBIE and T_MOVED included. A type is named
 * by its enumerator of enum ruby_value_type in the Ruby's DWARF; a value no
 * enumerator has is a corrupt slot, skipped and counted.
 *
 * An object's bytes are its slot's size and, for a String, an Array or a
 * Hash, what it owns outside the heap as memsize_of counts it
 * (object_bytes.c). Other types count their slot only (docs/heap.md).
 *
 * By class: each object's class pointer is gathered first (one map entry
 * per class pointer), then each checked once: it must be the start of a
 * live slot of type T_CLASS; its name is the stable name (stable_names.c)
 * of its real class, past singleton and include classes, what Object#class
 * returns. Classes whose names are the same (anonymous ones) are one row.
 * Objects with no class pointer (hidden) and internal types (T_IMEMO,
 * T_NODE, T_ICLASS, T_ZOMBIE, T_MOVED, a T_NONE with flags) have rows of
 * their own named after their type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap_census.h"
#include "session.h"

/* The types a census names, by their layout items. */
static const enum rv_item_id type_items[] = {
	RVL_t_none,     RVL_t_object, RVL_t_class, RVL_t_module, RVL_t_float,
	RVL_t_string,   RVL_t_regexp, RVL_t_array, RVL_t_hash,   RVL_t_struct,
	RVL_t_bignum,   RVL_t_file,   RVL_t_data,  RVL_t_match,  RVL_t_complex,
	RVL_t_rational, RVL_t_nil,    RVL_t_true,  RVL_t_false,  RVL_t_symbol,
	RVL_t_fixnum,   RVL_t_undef,  RVL_t_imemo, RVL_t_node,   RVL_t_iclass,
	RVL_t_zombie,   RVL_t_moved,
};
/* Internal objects: no class Ruby shows (internal_object_p). */
static const enum rv_item_id internal_items[] = {
	RVL_t_none,   RVL_t_imemo,  RVL_t_node,
	RVL_t_iclass, RVL_t_zombie, RVL_t_moved,
};

/* The objects of one class pointer, or of one internal type or the
 * hidden objects of one type (klass 0, by type). */
struct group {
	uint64_t klass, type;
	uint64_t count, bytes;
};

struct census_walk {
	struct rv_session *s;
	struct rv_census *c;
	uint64_t flags_off, klass_off, t_mask;
	bool internal[RV_CENSUS_MAX_TYPES];
	struct rv_object_sizer sizer;
	uint64_t t_string, t_array;
	struct u64map by_klass; /* class pointer -> struct group */
	struct group by_type[2][RV_CENSUS_MAX_TYPES]; /* internal, hidden */
	struct group *last; /* the class pointer seen last */
	bool nomem;
};

static uint64_t word(const uint8_t *slot, uint64_t off)
{
	uint64_t v;
	memcpy(&v, slot + off, 8);
	return v;
}

/* The value of the layout item id in the slot; false when the layout
 * lacks it or it lies past the slot. */
static bool field_of(struct rv_session *s, const uint8_t *slot, uint64_t stride,
		     enum rv_item_id id, uint64_t *v)
{
	const struct rv_item *it = &s->layout.items[id];
	uint64_t size = it->size ? (uint64_t)it->size : 8;
	if (it->source == RV_MISSING || it->value < 0 || size > 8 ||
	    (uint64_t)it->value + size > stride)
		return false;
	*v = 0;
	memcpy(v, slot + it->value, size); /* little-endian */
	return true;
}

/* A String's length in bytes, or an Array's in elements, from its slot,
 * where value.c says it is for a String or Array read from memory. */
static bool length_of(struct rv_session *s, bool string, uint64_t flags,
		      const uint8_t *slot, uint64_t stride, uint64_t *len)
{
	if (!string)
		return rv_array_flags_len(s, flags, len) ||
		       field_of(s, slot, stride, RVL_rarray_heap_len, len);
	enum rv_item_id at = rv_string_len_item(s, flags);
	if (at != RVL_rstring_embed_len_mask)
		return field_of(s, slot, stride, at, len);
	*len = rv_string_flags_len(s, flags);
	return true;
}

static void count_length(struct census_walk *w, uint64_t type, uint64_t flags,
			 const uint8_t *slot, uint64_t stride, uint64_t bytes)
{
	struct rv_census *c = w->c;
	bool string = type == w->t_string && c->strings_known;
	uint64_t len;
	if ((!string && (type != w->t_array || !c->arrays_known)) ||
	    !length_of(w->s, string, flags, slot, stride, &len))
		return;
	unsigned k = len ? 64 - (unsigned)__builtin_clzll(len) : 0;
	struct rv_census_bucket *b = string ? &c->strings[k] : &c->arrays[k];
	b->count++;
	b->bytes += bytes;
}

static struct group *group_of(struct census_walk *w, uint64_t klass)
{
	if (w->last && w->last->klass == klass)
		return w->last;
	int found = 0;
	struct group *g = u64map_get(&w->by_klass, klass, &found);
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g || !u64map_put(&w->by_klass, klass, g)) {
			free(g);
			w->nomem = true;
			return NULL;
		}
		g->klass = klass;
	}
	return w->last = g;
}

static bool census_page(void *ctx, const struct rv_heap_page *p)
{
	struct census_walk *w = ctx;
	struct rv_census *c = w->c;
	c->total_slots += p->total;
	if (!c->slot_size_min || p->stride < c->slot_size_min)
		c->slot_size_min = p->stride;
	if (p->stride > c->slot_size_max)
		c->slot_size_max = p->stride;
	for (uint64_t i = 0; i < p->total; i++) {
		const uint8_t *slot = p->slots + i * p->stride;
		uint64_t flags = word(slot, w->flags_off);
		if (!flags) {
			c->free_slots++;
			continue;
		}
		uint64_t type = flags & w->t_mask;
		struct rv_census_type *t = &c->types[type];
		if (!t->name) {
			c->bad_types++;
			continue;
		}
		uint64_t bytes = rv_object_bytes(&w->sizer,
						 p->start + i * p->stride, type,
						 flags, slot, p->stride);
		t->count++;
		t->bytes += bytes;
		c->live++;
		c->live_bytes += bytes;
		uint64_t klass = word(slot, w->klass_off);
		struct group *g;
		if (w->internal[type])
			g = &w->by_type[0][type];
		else if (!klass)
			g = &w->by_type[1][type];
		else if (!(g = group_of(w, klass)))
			return false;
		if (klass && !w->internal[type])
			count_length(w, type, flags, slot, p->stride, bytes);
		g->count++;
		g->bytes += bytes;
	}
	return true;
}

/* The name of the objects of class pointer klass; NULL with *why when it
 * is no class. */
static struct cs_error *class_name(struct rv_session *s, uint64_t klass,
				   char **name, const char **why)
{
	uint64_t size, type, flags, real = 0;
	char buf[128];
	*name = NULL;
	*why = NULL;
	if (rv_heap_slot(s, klass, &size, buf, sizeof(buf)) == RV_SLOT_NONE) {
		*why = "class pointer not to a live object of the heap";
		return NULL;
	}
	if (rv_failed(rv_builtin_type(s, klass, &type, &flags)) ||
	    type != (uint64_t)RV_VAL(s, t_class)) {
		*why = "class pointer not to a class";
		return NULL;
	}
	struct cs_error *err = rv_real_class(s, klass, true, &real);
	if (!err && real)
		err = rv_stable_class_name(s, real, name);
	if (err == &cs_error_nomem)
		return err;
	if (err || !real || !*name) {
		cs_error_destroy(err);
		free(*name);
		*name = NULL;
		*why = "class name unreadable";
	}
	return NULL;
}

static int by_name(const void *a, const void *b)
{
	const struct rv_census_class *x = a, *y = b;
	return strcmp(x->name, y->name);
}

static int by_bytes(const void *a, const void *b)
{
	const struct rv_census_class *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

static bool add_class(struct rv_census *c, char *name, uint64_t count,
		      uint64_t bytes, size_t *cap)
{
	if (!name)
		return false;
	if (c->nclasses == *cap) {
		size_t n = *cap ? *cap * 2 : 64;
		struct rv_census_class *m = realloc(c->classes, n * sizeof(*m));
		if (!m) {
			free(name);
			return false;
		}
		c->classes = m;
		*cap = n;
	}
	c->classes[c->nclasses++] =
		(struct rv_census_class){name, count, bytes};
	return true;
}

static char *type_row(const char *fmt, const char *type)
{
	size_t n = strlen(fmt) + strlen(type);
	char *s = malloc(n);
	if (s)
		snprintf(s, n, fmt, type);
	return s;
}

/* The class rows: each class pointer named, the same names merged. */
static struct cs_error *name_classes(struct census_walk *w,
				     struct rv_heap_scan *scan)
{
	struct rv_census *c = w->c;
	size_t cap = 0;
	for (size_t i = 0; i < w->by_klass.nslots; i++) {
		const struct group *g = w->by_klass.values[i];
		if (!w->by_klass.keys[i] || !g)
			continue;
		char *name;
		const char *why;
		struct cs_error *err = class_name(w->s, g->klass, &name, &why);
		if (err)
			return err;
		if (why) {
			rv_heap_note(scan, "%llu objects skipped: %s 0x%llx",
				     (unsigned long long)g->count, why,
				     (unsigned long long)g->klass);
			c->bad_classes += g->count;
			continue;
		}
		if (!add_class(c, name, g->count, g->bytes, &cap))
			return &cs_error_nomem;
	}
	for (unsigned k = 0; k < 2; k++)
		for (unsigned t = 0; t < c->ntypes; t++) {
			const struct group *g = &w->by_type[k][t];
			if (!g->count)
				continue;
			char *name = type_row(k ? "(hidden %s)" : "(%s)",
					      c->types[t].name);
			if (!add_class(c, name, g->count, g->bytes, &cap))
				return &cs_error_nomem;
		}
	if (!c->nclasses)
		return NULL;
	qsort(c->classes, c->nclasses, sizeof(*c->classes), by_name);
	size_t kept = 0;
	for (size_t i = 0; i < c->nclasses; i++) {
		struct rv_census_class *k = &c->classes[kept];
		if (i && !strcmp(k->name, c->classes[i].name)) {
			k->count += c->classes[i].count;
			k->bytes += c->classes[i].bytes;
			free(c->classes[i].name);
			continue;
		}
		if (i)
			c->classes[++kept] = c->classes[i];
	}
	c->nclasses = kept + 1;
	qsort(c->classes, c->nclasses, sizeof(*c->classes), by_bytes);
	return NULL;
}

/* Whether Strings' and Arrays' lengths can be read (value.c reads the
 * same): the items rv_string_len_item and rv_array_flags_len name. */
static void lengths_layout(struct rv_session *s, struct rv_census *c)
{
	c->strings_known = RV_HAS(s, t_string) && RV_HAS(s, rstring_noembed) &&
			   (RV_HAS(s, rstring_len) ||
			    (RV_HAS(s, rstring_heap_len) &&
			     (RV_HAS(s, rstring_embed_len) ||
			      (RV_HAS(s, rstring_embed_len_mask) &&
			       RV_HAS(s, rstring_embed_len_shift) &&
			       RV_VAL(s, rstring_embed_len_shift) < 64))));
	c->arrays_known = RV_HAS(s, t_array) && RV_HAS(s, rarray_heap_len) &&
			  RV_HAS(s, rarray_embed_flag) &&
			  RV_HAS(s, rarray_embed_len_mask) &&
			  RV_HAS(s, rarray_embed_len_shift) &&
			  RV_VAL(s, rarray_embed_len_shift) < 64;
}

/* Objects of the type own bytes outside the heap that the census counts
 * (sized), when the type is one the flags can hold: a damaged layout's
 * enumerator may be any number. */
static void external_bytes(struct rv_census *c, bool sized, uint64_t type)
{
	if (sized && type < c->ntypes)
		c->types[type].external = c->types[type].name;
}

/* The layout the census reads; false with c->error when it lacks an
 * item it cannot do without. */
static bool census_layout(struct rv_session *s, struct census_walk *w)
{
	const enum rv_item_id needed[] = {RVL_basic_flags, RVL_basic_klass,
					  RVL_t_mask, RVL_t_class, RVL_vm_ptr};
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (s->layout.items[needed[i]].source == RV_MISSING) {
			char buf[160];
			snprintf(buf, sizeof(buf),
				 "GC heap not walked: the debug info lacks "
				 "'%s'",
				 rv_layout_item_name(needed[i]));
			w->c->error = strdup(buf);
			return false;
		}
	struct rv_census *c = w->c;
	w->flags_off = (uint64_t)RV_VAL(s, basic_flags);
	w->klass_off = (uint64_t)RV_VAL(s, basic_klass);
	w->t_mask = (uint64_t)RV_VAL(s, t_mask);
	if (w->t_mask >= RV_CENSUS_MAX_TYPES || w->flags_off > 256 ||
	    w->klass_off > 256) {
		w->c->error = strdup("GC heap not walked: implausible RBasic "
				     "layout");
		return false;
	}
	c->ntypes = (unsigned)w->t_mask + 1;
	const char *names[RV_CENSUS_MAX_TYPES];
	rv_heap_type_names(s, names);
	for (unsigned t = 0; t < c->ntypes; t++)
		c->types[t].name = names[t];
	for (size_t i = 0; i < sizeof(internal_items) / sizeof(*internal_items);
	     i++) {
		const struct rv_item *it = &s->layout.items[internal_items[i]];
		if (it->source != RV_MISSING && it->value >= 0 &&
		    (uint64_t)it->value <= w->t_mask)
			w->internal[it->value] = true;
	}
	w->t_string = (uint64_t)RV_VAL(s, t_string);
	w->t_array = (uint64_t)RV_VAL(s, t_array);
	rv_object_sizer_init(s, &w->sizer);
	external_bytes(c, w->sizer.strings, w->t_string);
	external_bytes(c, w->sizer.arrays, w->t_array);
	external_bytes(c, w->sizer.hashes, w->sizer.t_hash);
	external_bytes(c, w->sizer.structs, w->sizer.t_struct);
	external_bytes(c, w->sizer.bignums, w->sizer.t_bignum);
	lengths_layout(s, c);
	return true;
}

struct cs_error *rv_heap_census(struct rv_session *s, struct rv_census *c)
{
	memset(c, 0, sizeof(*c));
	struct census_walk w = {.s = s, .c = c};
	struct rv_heap_scan scan = {0};
	uint64_t vm = 0;
	if (!census_layout(s, &w)) {
		c->not_walked = true;
		return c->error ? NULL : &cs_error_nomem;
	}
	if (rv_failed(rv_read_u64(s, s->load_bias + (uint64_t)RV_VAL(s, vm_ptr),
				  &vm)) ||
	    !vm) {
		c->not_walked = true;
		c->error = strdup("GC heap not walked: ruby_current_vm_ptr "
				  "unreadable");
		return c->error ? NULL : &cs_error_nomem;
	}
	uint64_t need =
		(w.flags_off > w.klass_off ? w.flags_off : w.klass_off) + 8;
	const struct rv_heap_walk walk = {.need = need,
					  .min_slot = need,
					  .visit = census_page,
					  .ctx = &w};
	struct cs_error *err = rv_heap_walk(s, vm, &walk, &scan);
	if (w.nomem)
		err = &cs_error_nomem;
	if (!err && scan.pages)
		err = name_classes(&w, &scan);
	u64map_free(&w.by_klass, free);
	c->pages = scan.pages;
	c->empty_pages = scan.empty_pages;
	c->heap_bytes = scan.bytes;
	c->skipped_pages = scan.skipped_pages;
	c->skipped_slots = scan.skipped_slots;
	c->not_walked = scan.not_begun || (!scan.pages && scan.error);
	c->unwalkable = scan.unwalkable;
	if (c->bad_types && !scan.error)
		rv_heap_note(&scan,
			     "%llu slots skipped: their type is no "
			     "enumerator of ruby_value_type",
			     (unsigned long long)c->bad_types);
	c->error = scan.error;
	return err;
}

bool rv_census_partial(const struct rv_census *c)
{
	return c->error || c->skipped_pages || c->skipped_slots ||
	       c->bad_types || c->bad_classes;
}

void rv_census_free(struct rv_census *c)
{
	for (size_t i = 0; i < c->nclasses; i++)
		free(c->classes[i].name);
	free(c->classes);
	free(c->error);
	memset(c, 0, sizeof(*c));
}

void rv_heap_type_names(struct rv_session *s,
			const char *names[RV_CENSUS_MAX_TYPES])
{
	memset(names, 0, RV_CENSUS_MAX_TYPES * sizeof(*names));
	uint64_t mask = RV_HAS(s, t_mask) ? (uint64_t)RV_VAL(s, t_mask) : 0;
	for (size_t i = 0; i < sizeof(type_items) / sizeof(*type_items); i++) {
		const struct rv_item *it = &s->layout.items[type_items[i]];
		if (it->source == RV_MISSING || it->value < 0 ||
		    (uint64_t)it->value > mask ||
		    it->value >= RV_CENSUS_MAX_TYPES)
			continue;
		const char *name = rv_layout_item_subject(type_items[i]);
		names[it->value] = strncmp(name, "RUBY_", 5) ? name : name + 5;
	}
}
