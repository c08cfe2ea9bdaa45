/* Every object of the GC heap as ObjectSpace.dump_all describes it, over
 * the page walk of heap.c, and the roots of heap_roots.c in dump_all's
 * categories: the global variables' values under "global_tbl"; under
 * "vm" the class Object (through which the constants are reached) and
 * the live objects on the threads' and fibers' VM stacks; under
 * "machine_context" those in registers and on machine stacks; each once
 * a category.
 *
 * One object per used slot (flags not 0), as dump_all without full:
 * its type, slot size, class (none for imemos, nodes and hidden
 * objects), frozen, bytes as the census counts them (memsize), and by
 * type what dump_all adds that the model reads: a String's bytesize,
 * embedded or shared and fstring, its value when read whole and ASCII,
 * its encoding and coderange; a Float's value; an Array's length,
 * embedded, shared; a Hash's size and default Proc; a T_OBJECT's ivar
 * count; a class's or module's path and superclass (an iclass's too), a
 * class's variation count and singleton; a typed T_DATA's type name; a T_FILE's
 * descriptor; where the Ruby has shapes, every object's shape id; and
 * its GC flags, from its flags and its page's bitmaps (gc_bits_layout).
 * References are heap_refs.c's, for the types it decodes.
 *
 * What dump_all writes differs between Rubies; each difference is decided
 * by what the Ruby's binary has:
 * - shape_id: where objects have shapes (3.2+), the shape id of the flags
 *   (rb_shape_get_shape_id). Where shape ids carry flags above their
 *   offset (4.0+: a SHAPE_ID_HEAP_INDEX_MASK or SHAPE_ID_CAPACITY_MASK
 *   enumerator), only the offset bits (SHAPE_ID_OFFSET_MASK: the bits
 *   below that mask's lowest), none for an imemo but imemo_fields, and a
 *   class's or module's is its fields object's (0 without one:
 *   rb_obj_shape_id).
 * - coderange: where objects have shapes (written from 3.2, as
 *   shape_id). broken, of a String whose coderange bits say broken, on
 *   every Ruby (before 3.2 dump_all also scanned a String whose coderange
 *   was unknown, which the dump does not).
 * - a Float's value: "%#g" where heap pages carry a slot size (3.1+),
 *   "%g" before (2.7).
 * - superclass, and a class's singleton: where heap pages carry a slot
 *   size (3.1+).
 * - variation_count: where the classext has one (3.2+).
 * - file, line, method, generation: where the objspace extension's
 *   trace_object_allocations recorded the object's allocation
 *   (alloc_sites.c); line even when 0 where pages have no slot size
 *   (2.7's dump_all wrote it always).
 * - GC flags: rb_obj_gc_flags's, or where the GC has
 *   rb_gc_object_metadata (4.0+) its age, remembered, object_id and
 *   shareable too; the object id read from a T_OBJECT's fields (the
 *   field its shape's SHAPE_OBJ_ID transition added), none written for
 *   an object of another type with an object id (its fields not read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc_sites.h"
#include "heap_census.h"
#include "heap_dump.h"
#include "heap_refs.h"
#include "heap_roots.h"
#include "session.h"

/* A String's bytes shown at most (dump_all shows them all). */
#define MAX_VALUE_BYTES ((size_t)1 << 20)
/* Encoding indexes named at most (far above any inlined index, which is
 * below RUBY_ENCODING_INLINE_MAX), and the longest name read. */
#define MAX_ENCODINGS 1024
#define MAX_ENCODING_NAME 64
/* The words of a page's GC bitmap read at most (a page of 64 KiB has a
 * bit for each 40 bytes: 26 words). */
#define MAX_BITMAP_WORDS 512

/* The GC bitmaps of a heap page dump_all's flags come from. */
enum {
	BM_WB_UNPROTECTED,
	BM_UNCOLLECTIBLE,
	BM_MARKING,
	BM_MARK,
	BM_PINNED,
	BM_REMEMBERED,
	BM_COUNT
};

struct gc_bits {
	bool metadata;   /* rb_gc_object_metadata's: age, remembered, ... */
	bool slot_index; /* an object's bit is its slot's index in the page */
	uint64_t promoted, base_slot, align_mask, shareable, has_id;
	uint64_t off[BM_COUNT], words, maps, off_age, age_words;
	bool page_read; /* the current page's bitmaps were read */
	uint64_t page[BM_COUNT][MAX_BITMAP_WORDS];
	uint64_t age[2 * MAX_BITMAP_WORDS];
};

/* The encoding table: where its entries are, how many. */
struct enc_names {
	bool known;  /* the layout has it */
	bool global; /* ... as global_enc_table */
	bool read;   /* the table was read (once) */
	bool failed; /* ... and could not be */
	uint64_t list, count, entry_size;
	char *names[MAX_ENCODINGS];
	bool tried[MAX_ENCODINGS];
	uint64_t mask, shift, binary, inline_max;
};

struct dump_walk {
	struct rv_session *s;
	const struct rv_dump_callbacks *cb;
	struct rv_dump_stats *st;
	const char *names[RV_CENSUS_MAX_TYPES];
	struct rv_object_sizer sizer;
	uint64_t flags_off, klass_off, t_mask, freeze;
	uint64_t t_string, t_array, t_hash, t_object, t_class, t_module, t_data,
		t_file, t_imemo, t_node, t_float, t_iclass, t_struct;
	bool shapes;       /* shape_id written */
	bool shape_offset; /* ... its offset bits only (4.0+) */
	uint64_t shape_offset_mask;
	bool coderange; /* coderange written */
	bool cr_known;  /* the coderange bits known: broken written */
	uint64_t cr_mask, cr[4];
	bool superclass; /* superclass written */
	const char *float_format;
	uint64_t float_off; /* RFloat's value, 0: not read */
	struct enc_names enc;
	struct gc_bits *gc; /* NULL: no flags written */
	struct rv_alloc_sites sites;
	bool line_always; /* an allocation's line written even when 0 */
	struct rv_refs refs;
	uint64_t *values; /* the references' values, for the callback */
	size_t values_cap;
	/* the name dump_all gives each imemo type (its enumerator without
	 * "imemo_"), NULL for a value none has; imemo_types known */
	const char *imemo_names[64];
	bool imemo_types;
	/* a T_OBJECT's embedded written (where shapes have no
	 * SHAPE_CAPACITY_CHANGE: 3.3+), and the key of a too complex one */
	bool object_embedded;
	const char *complex_key;
	/* object -> its fields object, from generic_fields_tbl_, read when
	 * first needed (generic_fields_of) */
	struct u64map generic;
	bool generic_read, generic_ok;
	bool nomem;
};

/* Each imemo type's name from the Ruby's own enum imemo_type, every
 * enumerator of it, so a type a later Ruby adds is named too. */
static void imemo_names_init(struct dump_walk *w)
{
	struct rv_session *s = w->s;
	const struct rv_enum_list *list = &s->layout.enums[RVE_imemo_types];
	if (!RV_HAS(s, imemo_types) || !RV_HAS(s, imemo_mask) ||
	    !RV_HAS(s, fl_ushift) || RV_VAL(s, imemo_mask) < 0 ||
	    RV_VAL(s, imemo_mask) >= 64 || !rv_enum_list_valid(list))
		return;
	w->imemo_types = true;
	for (uint32_t k = 0; k < list->count; k++) {
		const struct rv_enumerator *e = &list->e[k];
		size_t prefix = strncmp(e->name, "imemo_", 6) == 0 ? 6 : 0;
		if (e->value < 0 || e->value > RV_VAL(s, imemo_mask) ||
		    w->imemo_names[e->value])
			continue;
		w->imemo_names[e->value] = e->name + prefix;
	}
}

static void note(struct dump_walk *w, struct cs_error *err, uint64_t obj);

/* A T_OBJECT's ivars (a too complex one's: its table's size), whether
 * its shape is too complex and, where dump_all writes it, whether it is
 * embedded. */
static void object_details(struct dump_walk *w, struct rv_dump_object *o,
			   uint64_t flags)
{
	struct rv_session *s = w->s;
	bool complex = false, embedded = false;
	size_t got = 0;
	uint64_t size = 0;
	struct cs_error *err = NULL;
	if (!w->shapes && RV_HAS(s, robject_numiv) &&
	    RV_HAS(s, robject_embed_len_max)) {
		/* before shapes dump_all writes ROBJECT_NUMIV: the room for
		 * ivars, in the slot or in the buffer */
		if (!(err = rv_object_embedded(s, o->address, flags,
					       &embedded)) &&
		    !embedded)
			err = rv_read_member(s, o->address, RVL_robject_numiv,
					     &size);
		else if (!err)
			size = (uint64_t)RV_VAL(s, robject_embed_len_max);
		if (err)
			note(w, err, o->address);
		else
			o->length = (int64_t)size;
		return;
	}
	if (w->shapes)
		err = rv_object_complex(s, o->address, flags, &complex, &size);
	else
		err = rv_object_ivars(s, o->address, flags, NULL, NULL, 0, &got,
				      &size);
	if (!err && complex)
		o->complex_key = w->complex_key;
	if (err)
		note(w, err, o->address);
	else
		o->length = (int64_t)size;
	if (!w->object_embedded)
		return;
	if ((err = rv_object_embedded(s, o->address, flags, &embedded)))
		note(w, err, o->address);
	else
		o->embedded = embedded;
}

/* An imemo's type, named as dump_all names it; one no enumerator this
 * Ruby has names is a counted skip. */
static void imemo_details(struct dump_walk *w, struct rv_dump_object *o,
			  uint64_t flags)
{
	struct rv_session *s = w->s;
	if (!w->imemo_types)
		return;
	uint64_t t = rv_shr(flags, RV_VAL(s, fl_ushift)) &
		     (uint64_t)RV_VAL(s, imemo_mask);
	o->imemo_type = w->imemo_names[t];
	if (!o->imemo_type)
		note(w,
		     cs_error_create(CS_ERR_CORRUPT,
				     "imemo type %llu, which no enumerator "
				     "of imemo_type has",
				     (unsigned long long)t),
		     o->address);
}

/* The values of one root category, each once. */
struct root_list {
	struct rv_session *s;
	uint64_t *refs;
	size_t n, cap;
	struct u64map seen;
};

static bool list_add(struct root_list *l, uint64_t v)
{
	uint64_t size;
	char why[96];
	int found = 0;
	if (u64map_get(&l->seen, v, &found) ||
	    rv_heap_slot(l->s, v, &size, why, sizeof(why)) != RV_SLOT_LIVE)
		return true;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		uint64_t *m = realloc(l->refs, cap * sizeof(*m));
		if (!m)
			return false;
		l->refs = m;
		l->cap = cap;
	}
	l->refs[l->n++] = v;
	return u64map_put(&l->seen, v, (void *)1);
}

struct root_lists {
	struct root_list globals, vm, machine;
};

static bool root_value(void *ctx, const struct rv_root *r, uint64_t v)
{
	struct root_lists *x = ctx;
	switch (r->kind) {
	case RV_ROOT_CONSTANT: /* reached through Object */
	/* not written yet: the categories dump_all gives them differ
	 * between Rubies; a fiber's stack the GC reaches through the fiber */
	case RV_ROOT_FIBER_STACK:
	case RV_ROOT_REGISTERED:
	case RV_ROOT_MARK_OBJECT:
	case RV_ROOT_FINALIZER:
		return true;
	case RV_ROOT_GLOBAL:
		return list_add(&x->globals, v);
	case RV_ROOT_REGISTER:
	case RV_ROOT_MACHINE_STACK:
		return list_add(&x->machine, v);
	default:
		return list_add(&x->vm, v);
	}
}

static void list_free(struct root_list *l)
{
	free(l->refs);
	u64map_free(&l->seen, NULL);
}

/* One ROOT line, when the category has roots. */
static void roots_line(struct dump_walk *w, const char *category,
		       const struct root_list *l)
{
	if (l->n && !w->st->stopped &&
	    !w->cb->roots(w->cb->ctx, category, l->refs, l->n))
		w->st->stopped = true;
}

static struct cs_error *dump_roots(struct dump_walk *w,
				   const struct rv_root_stacks *stacks)
{
	struct rv_session *s = w->s;
	struct root_lists x = {{.s = s}, {.s = s}, {.s = s}};
	uint64_t object = 0;
	struct cs_error *err = NULL;
	if (rv_try_var(s, RVL_var_cobject, 8, &object) &&
	    !list_add(&x.vm, object))
		err = &cs_error_nomem;
	if (!err)
		err = rv_heap_roots(s, stacks, root_value, &x, &w->st->error);
	if (!err) {
		roots_line(w, "vm", &x.vm);
		roots_line(w, "machine_context", &x.machine);
		roots_line(w, "global_tbl", &x.globals);
	}
	list_free(&x.globals);
	list_free(&x.vm);
	list_free(&x.machine);
	return err;
}

/* An object whose details were not all read, and why. */
static void skip(struct dump_walk *w, uint64_t obj, const char *why)
{
	w->st->unreadable++;
	if (!w->st->error) {
		char buf[512];
		snprintf(buf, sizeof(buf), "object 0x%llx: %s",
			 (unsigned long long)obj, why);
		w->st->error = strdup(buf);
	}
}

static void note(struct dump_walk *w, struct cs_error *err, uint64_t obj)
{
	if (err == &cs_error_nomem) {
		w->nomem = true;
		return;
	}
	skip(w, obj, err->message);
	cs_error_destroy(err);
}

/* 7-bit ASCII, as dump_all shows a String's value; without NULs, which
 * end a C string. */
static bool ascii(const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!b[i] || (unsigned char)b[i] >= 0x80)
			return false;
	return true;
}

/* The encoding table's entries and their count, read once. */
static bool enc_table(struct dump_walk *w)
{
	struct rv_session *s = w->s;
	struct enc_names *e = &w->enc;
	if (e->read)
		return !e->failed;
	e->read = true;
	e->failed = true;
	bool global = e->global;
	enum rv_item_id var = global ? RVL_global_enc_table : RVL_enc_table,
			list = global ? RVL_global_enc_table_list
				      : RVL_enc_table_list,
			count = global ? RVL_global_enc_table_count
				       : RVL_enc_table_count;
	uint64_t at = s->load_bias + (uint64_t)s->layout.items[var].value,
		 value_size = (uint64_t)RV_VAL(s, value_size), n = 0;
	const struct rv_item *l = &s->layout.items[list];
	e->entry_size = (uint64_t)RV_VAL(s, enc_entry_size);
	/* the list points to the entries, or holds them (an array of more
	 * than one entry, never a pointer's size) */
	if (l->size == value_size) {
		if (value_size > sizeof(e->list) ||
		    !rv_try_read(s, at + (uint64_t)l->value, &e->list,
				 value_size) ||
		    !e->list)
			return false;
	} else {
		e->list = at + (uint64_t)l->value;
	}
	/* an int: a negative one is corrupt, larger than any index */
	const struct rv_item *c = &s->layout.items[count];
	if (!c->size || c->size > sizeof(n) ||
	    !rv_try_read(s, at + (uint64_t)c->value, &n, c->size))
		return false;
	e->count = n;
	e->failed = false;
	return true;
}

/* The name of the encoding of index i, NULL when it cannot be read. */
static const char *encoding_name(struct dump_walk *w, uint64_t i)
{
	struct rv_session *s = w->s;
	struct enc_names *e = &w->enc;
	if (i >= MAX_ENCODINGS || !enc_table(w) || i >= e->count)
		return NULL;
	if (e->tried[i])
		return e->names[i];
	e->tried[i] = true;
	uint64_t enc = 0, name = 0;
	char buf[MAX_ENCODING_NAME];
	if (!rv_try_member(s, e->list + i * e->entry_size, RVL_enc_entry_enc,
			   &enc) ||
	    !enc || !rv_try_member(s, enc, RVL_encoding_name, &name) || !name ||
	    !rv_try_read(s, name, buf, sizeof(buf) - 1))
		return NULL;
	buf[sizeof(buf) - 1] = 0;
	size_t n = strlen(buf);
	if (!n || n == sizeof(buf) - 1)
		return NULL;
	for (size_t k = 0; k < n; k++)
		if (buf[k] <= ' ' || (unsigned char)buf[k] >= 0x7f ||
		    buf[k] == '"' || buf[k] == '\\')
			return NULL; /* no name of an encoding */
	e->names[i] = strdup(buf);
	if (!e->names[i])
		w->nomem = true;
	return e->names[i];
}

/* A String's encoding and coderange, from its flags. */
static void string_encoding(struct dump_walk *w, struct rv_dump_object *o,
			    uint64_t flags)
{
	static const char *const ranges[4] = {"unknown", "7bit", "valid",
					      "broken"};
	struct enc_names *e = &w->enc;
	if (w->cr_known) {
		uint64_t cr = flags & w->cr_mask;
		for (int i = 0; w->coderange && i < 4; i++)
			if (cr == w->cr[i])
				o->coderange = ranges[i];
		o->broken = cr == w->cr[3];
	}
	if (!e->known)
		return;
	uint64_t index = (flags & e->mask) >> e->shift;
	if (index == e->binary || index == e->inline_max)
		return; /* none written; one kept in an ivar not read */
	if (!(o->encoding = encoding_name(w, index)) && !w->nomem) {
		char why[96];
		snprintf(why, sizeof(why),
			 "the name of encoding %llu unreadable",
			 (unsigned long long)index);
		skip(w, o->address, why);
	}
}

/* A String's length, and its bytes when they are few and ASCII. */
static void string_details(struct dump_walk *w, struct rv_dump_object *o,
			   uint64_t flags, char **bytes)
{
	struct rv_session *s = w->s;
	o->embedded = !(flags & (uint64_t)RV_VAL(s, rstring_noembed));
	o->shared = !o->embedded && RV_HAS(s, elts_shared) &&
		    (flags & (uint64_t)RV_VAL(s, elts_shared));
	o->fstring = RV_HAS(s, rstring_fstr) &&
		     (flags & (uint64_t)RV_VAL(s, rstring_fstr));
	/* only where .debug_macro gives it: 3.4+, as dump_all */
	o->chilled = RV_HAS(s, str_chilled) &&
		     (flags & (uint64_t)RV_VAL(s, str_chilled));
	if (o->shared) /* dump_all tells nothing of its content */
		return;
	size_t got = 0;
	uint64_t len = 0;
	struct cs_error *err = rv_string_bytes(s, o->address, MAX_VALUE_BYTES,
					       bytes, &got, &len);
	if (err) {
		note(w, err, o->address);
		return;
	}
	o->length = (int64_t)len;
	if (got == len && ascii(*bytes, got)) {
		o->value = *bytes;
		o->value_len = got;
	}
}

/* A typed T_DATA's type's wrap_struct_name. Where RTypedData has a
 * typed_flag it is 1 (or 1 with the embedded bit) for a typed object;
 * in an untyped RData the same word is dfree, a function or -1. */
static void data_details(struct dump_walk *w, struct rv_dump_object *o,
			 uint64_t flags, const uint8_t *slot, char *name,
			 size_t n)
{
	struct rv_session *s = w->s;
	uint64_t type = 0, typed = 1, str = 0;
	if (!RV_HAS(s, typeddata_type) || !RV_HAS(s, data_type_name) ||
	    (uint64_t)RV_VAL(s, typeddata_type) + 8 > o->slot_size)
		return;
	if (RV_HAS(s, typed_fl_is_typed_data) &&
	    !(flags & (uint64_t)RV_VAL(s, typed_fl_is_typed_data)))
		return;
	if (RV_HAS(s, typeddata_typed_flag)) {
		uint64_t off = (uint64_t)RV_VAL(s, typeddata_typed_flag);
		if (off + 8 > o->slot_size)
			return;
		memcpy(&typed, slot + off, 8);
		if (!(typed & 1) || (typed & ~(uint64_t)3))
			return;
	}
	memcpy(&type, slot + RV_VAL(s, typeddata_type), 8);
	/* the low bits, free in an aligned address, may flag "embedded"
	 * (4.0), as the heap walk masks them */
	type &= ~((uint64_t)RV_VAL(s, value_size) - 1);
	if (!type || !rv_try_member(s, type, RVL_data_type_name, &str) ||
	    !str || !rv_try_read(s, str, name, n - 1))
		return;
	name[n - 1] = 0;
	if (strlen(name) && ascii(name, strlen(name)))
		o->name = name;
}

/* The shape id dump_all prints, in o->shape_id. */
static void shape_details(struct dump_walk *w, struct rv_dump_object *o,
			  uint64_t type, uint64_t flags)
{
	struct rv_session *s = w->s;
	uint64_t obj = o->address, sid = 0, fields = 0, ext = 0;
	unsigned bits;
	int64_t imemo = 0;
	struct cs_error *err = NULL;
	if (w->shape_offset && type == w->t_imemo) {
		if ((err = rv_imemo_type(s, obj, &imemo))) {
			note(w, err, obj);
			return;
		}
		if (!RV_HAS(s, imemo_fields) ||
		    imemo != RV_VAL(s, imemo_fields))
			return;
	}
	if (w->shape_offset && (type == w->t_class || type == w->t_module)) {
		/* its fields object's, the root shape's (0) without one */
		if (!RV_HAS(s, classext_fields_obj)) {
			o->shape_id = 0;
			return;
		}
		if ((err = rv_classext(s, obj, &ext)) ||
		    (err = rv_read_member(s, ext, RVL_classext_fields_obj,
					  &fields))) {
			note(w, err, obj);
			return;
		}
		if (!fields) {
			o->shape_id = 0;
			return;
		}
		if (rv_special_const(s, fields) ||
		    (err = rv_read_member(s, fields, RVL_basic_flags,
					  &flags))) {
			if (err)
				note(w, err, obj);
			else
				skip(w, obj, "its fields object is no object");
			return;
		}
		obj = fields;
	}
	if ((err = rv_shape_id(s, obj, flags, &sid, &bits))) {
		note(w, err, o->address);
		return;
	}
	o->shape_id =
		(int64_t)(w->shape_offset ? sid & w->shape_offset_mask : sid);
}

/* A heap Float's value, as dump_all formats it. */
static void float_details(struct dump_walk *w, struct rv_dump_object *o,
			  const uint8_t *slot, char *buf, size_t n)
{
	double d;
	if (!w->float_off || w->float_off + sizeof(d) > o->slot_size)
		return;
	memcpy(&d, slot + w->float_off, sizeof(d));
	snprintf(buf, n, w->float_format, d);
	o->value = buf;
	o->value_len = strlen(buf);
}

/* The age of the object whose bit is n: two bits, side by side in one
 * word, or the low one's and the high one's words one after the other
 * (where the bit is the slot's index); -1 past the bitmap. */
static int gc_age(const struct gc_bits *g, uint64_t n)
{
	if (g->slot_index) {
		uint64_t i = n / 64 * 2, shift = n % 64;
		if (i + 1 >= g->age_words)
			return -1;
		return (int)(((g->age[i] >> shift) & 1) |
			     (((g->age[i + 1] >> shift) & 1) << 1));
	}
	uint64_t i = n / 32, shift = n % 32 * 2;
	return i < g->age_words ? (int)((g->age[i] >> shift) & 3) : -1;
}

/* Bounds the generic fields table read whole: it holds an entry for each
 * object not a T_OBJECT given an ivar or an object id. */
#define MAX_GENERIC_FIELDS (1u << 22)

static struct cs_error *generic_entry(struct rv_session *s, uint64_t key,
				      uint64_t record, void *ctx)
{
	(void)s;
	struct dump_walk *w = ctx;
	if (key && !u64map_put(&w->generic, key, (void *)(uintptr_t)record))
		return &cs_error_nomem;
	return NULL;
}

/* The fields object generic_fields_tbl_ gives obj, 0 when it gives none
 * (obj holds its fields itself, or the table is not known); the table is
 * read whole on the first call, and when it cannot be, that is one skip
 * and every later call gives 0. */
static uint64_t generic_fields_of(struct dump_walk *w, uint64_t obj)
{
	struct rv_session *s = w->s;
	if (!w->generic_read) {
		w->generic_read = true;
		uint64_t tbl = 0;
		struct cs_error *err = NULL;
		if (!RV_HAS(s, var_generic_fields_tbl))
			return 0;
		if (!rv_try_var(s, RVL_var_generic_fields_tbl, 8, &tbl))
			err = cs_error_create(CS_ERR_CORRUPT,
					      "generic_fields_tbl_ unreadable");
		else if (tbl)
			err = rv_st_each_max(s, tbl, MAX_GENERIC_FIELDS,
					     generic_entry, w);
		if (err) {
			note(w, err, obj);
			return 0;
		}
		w->generic_ok = true;
	}
	int found = 0;
	void *fields = w->generic_ok ? u64map_get(&w->generic, obj, &found)
				     : NULL;
	return found ? (uint64_t)(uintptr_t)fields : 0;
}

/* The fields object a T_DATA or T_STRUCT keeps itself (4.0+), 0 for
 * another type or where the Ruby keeps none: a T_DATA's fields_obj; a
 * Struct's own member, else the word after its embedded members or
 * as.heap.fields_obj. */
static struct cs_error *own_fields_obj(struct dump_walk *w, uint64_t obj,
				       uint64_t type, uint64_t flags,
				       uint64_t *ret)
{
	struct rv_session *s = w->s;
	*ret = 0;
	if (type == w->t_data && RV_HAS(s, typeddata_fields_obj))
		return rv_read_member(s, obj, RVL_typeddata_fields_obj, ret);
	if (type != w->t_struct)
		return NULL;
	if (RV_HAS(s, rstruct_fields_obj))
		return rv_read_member(s, obj, RVL_rstruct_fields_obj, ret);
	if (!RV_HAS(s, rstruct_heap_fields_obj))
		return NULL;
	uint64_t ptr = 0, len = 0;
	struct cs_error *err = rv_struct_fields(s, obj, flags, &ptr, &len);
	if (err)
		return err;
	if (ptr != obj + (uint64_t)RV_VAL(s, rstruct_ary)) /* not embedded */
		return rv_read_member(s, obj, RVL_rstruct_heap_fields_obj, ret);
	return rv_read_u64(s, ptr + len * 8, ret);
}

/* The object id an object whose shape has one keeps, which
 * rb_gc_object_metadata gives among its flags: read from a T_OBJECT's
 * fields, or from the fields object the generic fields table gives an
 * object of another type (else a T_DATA's or T_STRUCT's own), read as a
 * T_OBJECT's are; false (its flags left out) when it has none or it
 * cannot be read (a skip). */
static bool object_id_details(struct dump_walk *w, struct rv_dump_object *o,
			      uint64_t type, uint64_t flags)
{
	struct rv_session *s = w->s;
	uint64_t id = 0, fixnum = (uint64_t)RV_VAL(s, fixnum_flag);
	uint64_t holder = o->address, holder_flags = flags;
	if (!fixnum)
		return false;
	if (type != w->t_object) {
		struct cs_error *err = NULL;
		holder = generic_fields_of(w, o->address);
		if (!holder)
			err = own_fields_obj(w, o->address, type, flags,
					     &holder);
		if (!err && holder)
			err = rv_fields_object(s, o->address, holder,
					       &holder_flags);
		if (err)
			note(w, err, o->address);
		if (err || !holder)
			return false;
	}
	struct cs_error *err = rv_object_id_field(s, holder, holder_flags, &id);
	if (err) {
		note(w, err, o->address);
		return false;
	}
	if (!(id & fixnum)) {
		skip(w, o->address, "its object id is no Integer read");
		return false;
	}
	o->object_id = rv_sar((int64_t)id, ffsll((long long)fixnum));
	return true;
}

/* The GC flags of the object at addr (the index-th slot of its page), from
 * its flags and its page's bitmaps, as rb_obj_gc_flags or
 * rb_gc_object_metadata give them; with the object id the metadata gives
 * (object_id_details). */
static void gc_flags_details(struct dump_walk *w, struct rv_dump_object *o,
			     uint64_t type, uint64_t flags, uint64_t index)
{
	const struct gc_bits *g = w->gc;
	if (!g || !g->page_read)
		return;
	uint64_t n = g->slot_index
			     ? index
			     : (o->address & g->align_mask) / g->base_slot,
		 word = n / 64, bit = (uint64_t)1 << (n % 64);
	int age = g->metadata ? gc_age(g, n) : -1;
	if (word >= g->words || (g->metadata && age < 0)) {
		skip(w, o->address, "its bit is past its page's GC bitmaps");
		return;
	}
	if (g->metadata && type != w->t_imemo) {
		uint64_t sid = 0;
		unsigned bits;
		struct cs_error *err =
			rv_shape_id(w->s, o->address, flags, &sid, &bits);
		if (err) {
			note(w, err, o->address);
			return;
		}
		if ((sid & g->has_id) && !object_id_details(w, o, type, flags))
			return;
	}
	unsigned f = 0;
	if (!(g->page[BM_WB_UNPROTECTED][word] & bit))
		f |= RV_GCF_WB_PROTECTED;
	if ((flags & g->promoted) == g->promoted)
		f |= RV_GCF_OLD;
	if (g->page[BM_UNCOLLECTIBLE][word] & bit)
		f |= RV_GCF_UNCOLLECTIBLE;
	if (g->page[BM_MARKING][word] & bit)
		f |= RV_GCF_MARKING;
	if (g->page[BM_MARK][word] & bit)
		f |= RV_GCF_MARKED;
	if (g->page[BM_PINNED][word] & bit)
		f |= RV_GCF_PINNED;
	if (g->metadata && (g->page[BM_REMEMBERED][word] & bit))
		f |= RV_GCF_REMEMBERED;
	if (g->metadata && (flags & g->shareable))
		f |= RV_GCF_SHAREABLE;
	o->gc_flags = f;
	o->gc_flags_known = true;
	o->gc_age = age;
}

/* The current page's GC bitmaps. */
static void gc_page_bits(struct dump_walk *w, const struct rv_heap_page *p)
{
	struct gc_bits *g = w->gc;
	if (!g)
		return;
	g->page_read = !g->metadata || rv_try_read(w->s, p->page + g->off_age,
						   g->age, g->age_words * 8);
	for (uint64_t i = 0; i < g->maps && g->page_read; i++)
		g->page_read = rv_try_read(w->s, p->page + g->off[i],
					   g->page[i], g->words * 8);
	if (!g->page_read)
		skip(w, p->page, "the GC bitmaps of this heap page unreadable");
}

/* A class's, module's or iclass's superclass (RCLASS_SUPER). */
static void superclass_details(struct dump_walk *w, struct rv_dump_object *o)
{
	struct rv_session *s = w->s;
	uint64_t super = 0;
	struct cs_error *err;
	if (!w->superclass)
		return;
	if ((err = rv_superclass(s, o->address, &super)))
		note(w, err, o->address);
	else if (super && (rv_special_const(s, super) ||
			   super % (uint64_t)RV_VAL(s, value_size)))
		skip(w, o->address, "its superclass is no object");
	else
		o->superclass = super;
}

/* A class's variation_count (where its classext has one: 3.2+), and
 * singleton where dump_all writes it (3.1+, as superclass) of a class
 * that is not hidden (RUBY_FL_SINGLETON in its flags). */
static void class_details(struct dump_walk *w, struct rv_dump_object *o,
			  uint64_t flags)
{
	struct rv_session *s = w->s;
	uint64_t ext = 0, count = 0;
	struct cs_error *err;
	o->singleton = w->superclass && o->klass && RV_HAS(s, fl_singleton) &&
		       (flags & (uint64_t)RV_VAL(s, fl_singleton));
	if (!RV_HAS(s, classext_variation_count))
		return;
	if ((err = rv_classext(s, o->address, &ext)) ||
	    (err = rv_read_member(s, ext, RVL_classext_variation_count,
				  &count)))
		note(w, err, o->address);
	else
		o->variation_count = (int64_t)count;
}

/* A Hash's default, where it is a Proc (RHASH_PROC_DEFAULT in its flags):
 * its ifnone, as dump_all writes it. */
static void hash_default_details(struct dump_walk *w, struct rv_dump_object *o,
				 uint64_t flags)
{
	struct rv_session *s = w->s;
	uint64_t ifnone = 0;
	struct cs_error *err;
	if (!RV_HAS(s, rhash_proc_default) || !RV_HAS(s, rhash_ifnone) ||
	    !(flags & (uint64_t)RV_VAL(s, rhash_proc_default)))
		return;
	if ((err = rv_read_member(s, o->address, RVL_rhash_ifnone, &ifnone)))
		note(w, err, o->address);
	else if (!ifnone || rv_special_const(s, ifnone) ||
		 ifnone % (uint64_t)RV_VAL(s, value_size))
		skip(w, o->address, "its default Proc is no object");
	else
		o->hash_default = ifnone;
}

static void file_details(struct dump_walk *w, struct rv_dump_object *o)
{
	uint64_t fptr = 0, fd = 0;
	if (RV_HAS(w->s, rfile_fptr) && RV_HAS(w->s, io_fd) &&
	    rv_try_member(w->s, o->address, RVL_rfile_fptr, &fptr) && fptr &&
	    rv_try_member(w->s, fptr, RVL_io_fd, &fd))
		o->fd = (int32_t)fd;
}

/* Where trace_object_allocations recorded o's allocation, as dump_all
 * writes it: the path when there is one, the line when not 0 (always
 * where line_always), the method when there is one, the generation. */
static void alloc_details(struct dump_walk *w, struct rv_dump_object *o)
{
	const struct rv_alloc_site *site =
		rv_alloc_site_of(&w->sites, o->address);
	if (!site)
		return;
	if (site->unreadable) {
		skip(w, o->address, "its allocation record cannot be read");
		return;
	}
	o->alloc_known = true;
	o->alloc_path = site->path;
	o->alloc_line = site->line || w->line_always ? (int64_t)site->line : -1;
	o->alloc_method = site->method;
	o->alloc_generation = site->generation;
}

static void dump_one(struct dump_walk *w, uint64_t addr, uint64_t flags,
		     const uint8_t *slot, uint64_t stride, uint64_t index)
{
	struct rv_session *s = w->s;
	uint64_t type = flags & w->t_mask, klass = 0, n = 0, size = 0, ptr = 0;
	size_t got = 0;
	if (!w->names[type]) {
		w->st->bad_types++;
		return;
	}
	memcpy(&klass, slot + w->klass_off, 8);
	struct rv_dump_object o = {
		.address = addr,
		.type = w->names[type] + 2, /* "T_" */
		.slot_size = stride,
		.klass = type == w->t_imemo || type == w->t_node ? 0 : klass,
		.memsize = rv_object_bytes(&w->sizer, addr, type, flags, slot,
					   stride),
		.frozen = w->freeze && (flags & w->freeze),
		.embedded = -1,
		.length = -1,
		.fd = -1,
		.shape_id = -1,
		.gc_age = -1,
		.object_id = -1,
		.variation_count = -1,
	};
	char *bytes = NULL, *path = NULL, data_name[128], float_text[64];
	if (w->shapes)
		shape_details(w, &o, type, flags);
	gc_flags_details(w, &o, type, flags, index);
	struct cs_error *err = NULL;
	if (type == w->t_string) {
		string_details(w, &o, flags, &bytes);
		string_encoding(w, &o, flags);
	} else if (type == w->t_float) {
		float_details(w, &o, slot, float_text, sizeof(float_text));
	} else if (type == w->t_array) {
		o.embedded = (flags & (uint64_t)RV_VAL(s, rarray_embed_flag)) !=
			     0;
		if ((err = rv_array_span(s, addr, &ptr, &n)))
			note(w, err, addr);
		else
			o.length = (int64_t)n;
		o.shared = !o.embedded && o.length > 0 &&
			   RV_HAS(s, elts_shared) &&
			   (flags & (uint64_t)RV_VAL(s, elts_shared));
	} else if (type == w->t_hash && rv_hash_layout_known(s)) {
		if ((err = rv_hash_entries(s, addr, flags, NULL, NULL, 0, &got,
					   &size)))
			note(w, err, addr);
		else
			o.length = (int64_t)size;
		hash_default_details(w, &o, flags);
	} else if (type == w->t_object) {
		object_details(w, &o, flags);
	} else if (type == w->t_class || type == w->t_module) {
		if (!rv_failed(rv_class_path(s, addr, &path)) && path &&
		    strncmp(path, "#<", 2) != 0)
			o.name = path;
		superclass_details(w, &o);
		if (type == w->t_class)
			class_details(w, &o, flags);
	} else if (type == w->t_iclass) {
		superclass_details(w, &o);
	} else if (type == w->t_data) {
		data_details(w, &o, flags, slot, data_name, sizeof(data_name));
	} else if (type == w->t_file) {
		file_details(w, &o);
	} else if (type == w->t_imemo) {
		imemo_details(w, &o, flags);
	}
	alloc_details(w, &o);
	w->refs.n = 0;
	bool decoded = false;
	if ((err = rv_object_refs(s, addr, flags, &w->refs, &decoded)))
		note(w, err, addr);
	else if (!decoded)
		w->st->refs_not_decoded++;
	o.refs_decoded = decoded && !err;
	if (w->refs.n > w->values_cap) {
		uint64_t *m = realloc(w->values, w->refs.n * sizeof(*m));
		if (m) {
			w->values = m;
			w->values_cap = w->refs.n;
		} else {
			w->nomem = true;
		}
	}
	for (size_t i = 0; !w->nomem && i < w->refs.n; i++)
		w->values[i] = w->refs.items[i].value;
	o.nrefs = w->nomem ? 0 : w->refs.n;
	o.refs = w->values;
	w->st->objects++;
	if (!w->nomem && !w->cb->object(w->cb->ctx, &o))
		w->st->stopped = true;
	free(bytes);
	free(path);
}

static bool dump_page(void *ctx, const struct rv_heap_page *p)
{
	struct dump_walk *w = ctx;
	gc_page_bits(w, p);
	for (uint64_t i = 0; i < p->total && !w->st->stopped && !w->nomem;
	     i++) {
		const uint8_t *slot = p->slots + i * p->stride;
		uint64_t flags;
		memcpy(&flags, slot + w->flags_off, 8);
		if (flags)
			dump_one(w, p->start + i * p->stride, flags, slot,
				 p->stride, i);
	}
	return !w->nomem && !w->st->stopped;
}

/* What this Ruby's dump_all writes (the file's head comment), and the
 * layout of what it reads for it. A field whose layout is missing is
 * left out. */
static void dump_versions(struct dump_walk *w)
{
	struct rv_session *s = w->s;
	/* pages with a slot size: 3.1+ */
	bool sized = RV_HAS(s, page_slot_size);
	w->shapes = RV_HAS(s, shape_parent_id) ||
		    RV_HAS(s, shape_parent_offset);
	w->object_embedded = w->shapes && !RV_HAS(s, shape_capacity_change);
	uint64_t above = RV_HAS(s, shape_id_heap_index_mask)
				 ? (uint64_t)RV_VAL(s, shape_id_heap_index_mask)
			 : RV_HAS(s, shape_id_capacity_mask)
				 ? (uint64_t)RV_VAL(s, shape_id_capacity_mask)
				 : 0;
	w->shape_offset = above != 0;
	w->shape_offset_mask = (above & (~above + 1)) - 1;
	w->cr_known = RV_HAS(s, coderange_mask) &&
		      RV_HAS(s, coderange_unknown) &&
		      RV_HAS(s, coderange_7bit) && RV_HAS(s, coderange_valid) &&
		      RV_HAS(s, coderange_broken);
	w->coderange = w->shapes && w->cr_known;
	if (w->cr_known) {
		w->cr_mask = (uint64_t)RV_VAL(s, coderange_mask);
		w->cr[0] = (uint64_t)RV_VAL(s, coderange_unknown);
		w->cr[1] = (uint64_t)RV_VAL(s, coderange_7bit);
		w->cr[2] = (uint64_t)RV_VAL(s, coderange_valid);
		w->cr[3] = (uint64_t)RV_VAL(s, coderange_broken);
	}
	w->superclass = sized;
	w->line_always = !sized;
	w->float_format = sized ? "%#g" : "%g";
	if (RV_HAS(s, rfloat_value) && RV_VAL(s, rfloat_value) > 0)
		w->float_off = (uint64_t)RV_VAL(s, rfloat_value);
	struct enc_names *e = &w->enc;
	e->global = RV_HAS(s, global_enc_table) &&
		    RV_HAS(s, global_enc_table_list) &&
		    RV_HAS(s, global_enc_table_count);
	e->known =
		(e->global ||
		 (RV_HAS(s, enc_table) && RV_HAS(s, enc_table_list) &&
		  RV_HAS(s, enc_table_count))) &&
		RV_HAS(s, enc_entry_size) && RV_HAS(s, enc_entry_enc) &&
		RV_HAS(s, encoding_name) && RV_HAS(s, encoding_mask) &&
		RV_HAS(s, encoding_shift) && RV_HAS(s, encoding_inline_max) &&
		(RV_HAS(s, encindex_ascii_8bit) || RV_HAS(s, encindex_ascii));
	if (e->known) {
		e->mask = (uint64_t)RV_VAL(s, encoding_mask);
		e->shift = (uint64_t)RV_VAL(s, encoding_shift);
		e->inline_max = (uint64_t)RV_VAL(s, encoding_inline_max);
		/* 2.7 names index 0 RUBY_ENCINDEX_ASCII */
		e->binary = (uint64_t)(RV_HAS(s, encindex_ascii_8bit)
					       ? RV_VAL(s, encindex_ascii_8bit)
					       : RV_VAL(s, encindex_ascii));
		e->known = e->shift < 64 && RV_VAL(s, enc_entry_size) > 0;
	}
}

/* Where an object's GC flags are, where dump_all writes them as
 * rb_obj_gc_flags gives them (no rb_gc_object_metadata); NULL when not. */
static struct gc_bits *gc_bits_layout(struct rv_session *s, uint64_t vm)
{
	const enum rv_item_id maps[BM_COUNT] = {
		[BM_WB_UNPROTECTED] = RVL_page_wb_unprotected_bits,
		[BM_UNCOLLECTIBLE] = RVL_page_uncollectible_bits,
		[BM_MARKING] = RVL_page_marking_bits,
		[BM_MARK] = RVL_page_mark_bits,
		[BM_PINNED] = RVL_page_pinned_bits,
		[BM_REMEMBERED] = RVL_page_remembered_bits,
	};
	bool metadata = RV_HAS(s, fn_gc_object_metadata);
	const struct rv_item *age = &s->layout.items[RVL_page_age_bits];
	if (!RV_HAS(s, fl_promoted) || !RV_HAS(s, bits_size) ||
	    RV_VAL(s, bits_size) != 8 || !RV_HAS(s, heap_page_align_mask) ||
	    !rv_gc_layout_known(s) ||
	    (metadata && (!RV_HAS(s, fl_shareable) ||
			  !RV_HAS(s, shape_id_fl_has_object_id) ||
			  age->source == RV_MISSING)))
		return NULL;
	uint64_t words = 0, base = 0,
		 nmaps = metadata ? BM_COUNT : BM_REMEMBERED;
	/* where pages keep a slot_size_reciprocal, an object's bit is its
	 * slot's index in its page */
	bool slot_index = RV_HAS(s, page_slot_size_reciprocal);
	for (uint64_t i = 0; i < nmaps; i++) {
		const struct rv_item *it = &s->layout.items[maps[i]];
		if (it->source == RV_MISSING || !it->size ||
		    (words && it->size / 8 != words))
			return NULL;
		words = it->size / 8;
	}
	if (words > MAX_BITMAP_WORDS || (metadata && age->size != 16 * words))
		return NULL;
	if (slot_index) {
		base = 16; /* not used */
	} else if (RV_HAS(s, rvalue_size)) {
		base = (uint64_t)RV_VAL(s, rvalue_size);
	} else {
		/* the first heap's slot size */
		const char *why = NULL;
		uint64_t objspace = rv_objspace(s, vm, &why);
		const struct rv_item *sz = &s->layout.items[RVL_heap_slot_size];
		if (!objspace || !RV_HAS(s, objspace_heaps) ||
		    sz->source == RV_MISSING || !sz->size ||
		    sz->size > sizeof(base) ||
		    !rv_try_read(s,
				 objspace +
					 (uint64_t)RV_VAL(s, objspace_heaps) +
					 (uint64_t)sz->value,
				 &base, sz->size))
			return NULL;
	}
	if (base < 16 || base > 4096 || base % 8)
		return NULL;
	struct gc_bits *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->promoted = (uint64_t)RV_VAL(s, fl_promoted);
	g->base_slot = base;
	g->align_mask = (uint64_t)RV_VAL(s, heap_page_align_mask);
	g->words = words;
	g->maps = nmaps;
	for (uint64_t i = 0; i < nmaps; i++)
		g->off[i] = (uint64_t)s->layout.items[maps[i]].value;
	g->metadata = metadata;
	g->slot_index = slot_index;
	if (metadata) {
		g->shareable = (uint64_t)RV_VAL(s, fl_shareable);
		g->has_id = (uint64_t)RV_VAL(s, shape_id_fl_has_object_id);
		g->off_age = (uint64_t)age->value;
		g->age_words = 2 * words;
	}
	return g;
}

/* The layout the dump reads; false with st->error when it lacks what it
 * cannot do without. */
static bool dump_layout(struct dump_walk *w)
{
	struct rv_session *s = w->s;
	const enum rv_item_id needed[] = {RVL_basic_flags, RVL_basic_klass,
					  RVL_t_mask,      RVL_t_string,
					  RVL_t_array,     RVL_t_hash,
					  RVL_t_object,    RVL_vm_ptr};
	for (size_t i = 0; i < sizeof(needed) / sizeof(*needed); i++)
		if (s->layout.items[needed[i]].source == RV_MISSING) {
			char buf[160];
			snprintf(buf, sizeof(buf),
				 "GC heap not dumped: the debug info lacks "
				 "'%s'",
				 rv_layout_item_name(needed[i]));
			w->st->error = strdup(buf);
			return false;
		}
	w->flags_off = (uint64_t)RV_VAL(s, basic_flags);
	w->klass_off = (uint64_t)RV_VAL(s, basic_klass);
	w->t_mask = (uint64_t)RV_VAL(s, t_mask);
	if (w->t_mask >= RV_CENSUS_MAX_TYPES || w->flags_off > 256 ||
	    w->klass_off > 256) {
		w->st->error = strdup("GC heap not dumped: implausible RBasic "
				      "layout");
		return false;
	}
	rv_heap_type_names(s, w->names);
	imemo_names_init(w);
	w->complex_key = RV_HAS(s, shape_id_fl_complex) ? "complex_shape"
							: "too_complex_shape";
	rv_object_sizer_init(s, &w->sizer);
	w->freeze = RV_HAS(s, fl_freeze) ? (uint64_t)RV_VAL(s, fl_freeze) : 0;
	/* a type this Ruby lacks: a value past T_MASK, never matched */
	uint64_t none = w->t_mask + 1;
#define TYPE_OR_NONE(id) (RV_HAS(s, id) ? (uint64_t)RV_VAL(s, id) : none)
	w->t_string = TYPE_OR_NONE(t_string);
	w->t_array = TYPE_OR_NONE(t_array);
	w->t_hash = TYPE_OR_NONE(t_hash);
	w->t_object = TYPE_OR_NONE(t_object);
	w->t_class = TYPE_OR_NONE(t_class);
	w->t_module = TYPE_OR_NONE(t_module);
	w->t_data = TYPE_OR_NONE(t_data);
	w->t_file = TYPE_OR_NONE(t_file);
	w->t_imemo = TYPE_OR_NONE(t_imemo);
	w->t_node = TYPE_OR_NONE(t_node);
	w->t_float = TYPE_OR_NONE(t_float);
	w->t_iclass = TYPE_OR_NONE(t_iclass);
	w->t_struct = TYPE_OR_NONE(t_struct);
#undef TYPE_OR_NONE
	dump_versions(w);
	return true;
}

struct cs_error *rv_heap_dump(struct rv_session *s,
			      const struct rv_root_stacks *stacks,
			      const struct rv_dump_callbacks *cb,
			      struct rv_dump_stats *st)
{
	memset(st, 0, sizeof(*st));
	struct dump_walk w = {.s = s, .cb = cb, .st = st};
	uint64_t vm = 0;
	if (!dump_layout(&w)) {
		st->not_walked = true;
		return st->error ? NULL : &cs_error_nomem;
	}
	if (rv_failed(rv_read_u64(s, s->load_bias + (uint64_t)RV_VAL(s, vm_ptr),
				  &vm)) ||
	    !vm) {
		st->not_walked = true;
		st->error = strdup("GC heap not dumped: ruby_current_vm_ptr "
				   "unreadable");
		return st->error ? NULL : &cs_error_nomem;
	}
	w.gc = gc_bits_layout(s, vm);
	struct cs_error *err = rv_alloc_sites_read(s, &w.sites);
	if (!err && w.sites.error) {
		/* one skip: the keys of every object traced left out */
		st->unreadable++;
		st->error = w.sites.error;
		w.sites.error = NULL;
	} else if (!err && w.sites.undescribed) {
		char buf[512];
		snprintf(buf, sizeof(buf),
			 "objspace.so is loaded but not described (%s): "
			 "where ObjectSpace.trace_object_allocations "
			 "recorded allocations, they are not written",
			 w.sites.undescribed);
		st->note = strdup(buf);
		w.nomem = !st->note;
	}
	if (!err)
		err = dump_roots(&w, stacks);
	uint64_t need =
		(w.flags_off > w.klass_off ? w.flags_off : w.klass_off) + 8;
	const struct rv_heap_walk walk = {
		.need = need, .min_slot = need, .visit = dump_page, .ctx = &w};
	struct rv_heap_scan scan = {0};
	if (!err && !st->stopped)
		err = rv_heap_walk(s, vm, &walk, &scan);
	if (w.nomem)
		err = &cs_error_nomem;
	rv_refs_free(&w.refs);
	rv_alloc_sites_free(&w.sites);
	free(w.values);
	for (size_t i = 0; i < MAX_ENCODINGS; i++)
		free(w.enc.names[i]);
	free(w.gc);
	u64map_free(&w.generic, NULL);
	st->pages = scan.pages;
	st->skipped_pages = scan.skipped_pages;
	st->skipped_slots = scan.skipped_slots;
	if (scan.not_begun || (!scan.pages && scan.error)) {
		st->not_walked = true;
		free(st->error);
		st->error = scan.error;
	} else if (scan.error && !st->error) {
		st->error = scan.error;
	} else {
		free(scan.error);
	}
	return err;
}

bool rv_dump_partial(const struct rv_dump_stats *st)
{
	return st->error || st->unreadable || st->skipped_pages ||
	       st->skipped_slots || st->bad_types || st->not_walked;
}

void rv_dump_stats_free(struct rv_dump_stats *st)
{
	free(st->error);
	free(st->note);
	memset(st, 0, sizeof(*st));
}
