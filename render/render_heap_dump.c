/* The heap dump as ObjectSpace.dump_all writes it: JSON lines, the roots
 * first ({"type":"ROOT", "root":"vm", "references":[...]}), then one line
 * an object with dump_all's keys in its order. Formatting only. */
#include <stdio.h>
#include <string.h>

#include "render_heap.h"

static void refs_json(struct json *j, const char *key, const uint64_t *refs,
		      size_t n)
{
	json_begin_array(j, key);
	for (size_t i = 0; i < n; i++)
		json_hex_string(j, NULL, refs[i]);
	json_end_array(j);
}

/* What dump_all calls the length of an object of this type. */
static const char *length_key(const char *type)
{
	if (!strcmp(type, "STRING"))
		return "bytesize";
	if (!strcmp(type, "ARRAY"))
		return "length";
	if (!strcmp(type, "HASH"))
		return "size";
	return "ivars"; /* a T_OBJECT's */
}

/* dump_all's "flags": each set one true. */
static void gc_flags_json(struct json *j, unsigned flags, int age,
			  int64_t object_id)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{RV_GCF_WB_PROTECTED, "wb_protected"},
		{RV_GCF_OLD, "old"},
		{RV_GCF_UNCOLLECTIBLE, "uncollectible"},
		{RV_GCF_MARKING, "marking"},
		{RV_GCF_MARKED, "marked"},
		{RV_GCF_PINNED, "pinned"},
		{RV_GCF_REMEMBERED, "remembered"},
		{RV_GCF_SHAREABLE, "shareable"},
	};
	json_begin_object(j, "flags");
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		if (flags & names[i].bit)
			json_bool(j, names[i].name, true);
		if (names[i].bit == RV_GCF_WB_PROTECTED && age >= 0)
			json_int(j, "age", age);
		if (names[i].bit == RV_GCF_REMEMBERED && object_id >= 0)
			json_int(j, "object_id", object_id);
	}
	json_end_object(j);
}

bool cs_render_dump_roots(struct json *j, const char *category,
			  const uint64_t *refs, size_t n)
{
	json_begin_object(j, NULL);
	json_string(j, "type", "ROOT");
	json_string(j, "root", category);
	refs_json(j, "references", refs, n);
	json_end_object(j);
	return !ferror(j->out);
}

bool cs_render_dump_object(struct json *j, const struct rv_dump_object *o)
{
	json_begin_object(j, NULL);
	json_hex_string(j, "address", o->address);
	json_string(j, "type", o->type);
	if (o->shape_id >= 0)
		json_int(j, "shape_id", o->shape_id);
	json_int(j, "slot_size", (int64_t)o->slot_size);
	if (o->klass)
		json_hex_string(j, "class", o->klass);
	if (o->frozen)
		json_bool(j, "frozen", true);
	bool array = !strcmp(o->type, "ARRAY");
	if (o->embedded == 1 && !array) /* an Array's comes after its length */
		json_bool(j, "embedded", true);
	if (o->fstring)
		json_bool(j, "fstring", true);
	if (o->chilled)
		json_bool(j, "chilled", true);
	if (o->shared && !array)
		json_bool(j, "shared", true);
	if (o->length >= 0)
		json_int(j, length_key(o->type), o->length);
	if (o->complex_key)
		json_bool(j, o->complex_key, true);
	if (o->hash_default)
		json_hex_string(j, "default", o->hash_default);
	if (o->value)
		json_string(j, "value", o->value);
	if (o->encoding)
		json_string(j, "encoding", o->encoding);
	if (o->coderange)
		json_string(j, "coderange", o->coderange);
	if (o->broken)
		json_bool(j, "broken", true);
	if (array && o->shared)
		json_bool(j, "shared", true);
	if (array && o->embedded == 1)
		json_bool(j, "embedded", true);
	if (o->variation_count >= 0)
		json_int(j, "variation_count", o->variation_count);
	if (o->superclass)
		json_hex_string(j, "superclass", o->superclass);
	if (o->name)
		json_string(j, strcmp(o->type, "DATA") ? "name" : "struct",
			    o->name);
	if (o->singleton)
		json_bool(j, "singleton", true);
	if (o->fd >= 0)
		json_int(j, "fd", o->fd);
	if (o->imemo_type)
		json_string(j, "imemo_type", o->imemo_type);
	if (o->nrefs)
		refs_json(j, "references", o->refs, o->nrefs);
	if (o->alloc_known) {
		if (o->alloc_path)
			json_string(j, "file", o->alloc_path);
		if (o->alloc_line >= 0)
			json_int(j, "line", o->alloc_line);
		if (o->alloc_method)
			json_string(j, "method", o->alloc_method);
		json_int(j, "generation", (int64_t)o->alloc_generation);
	}
	json_int(j, "memsize", (int64_t)o->memsize);
	if (o->gc_flags_known && (o->gc_flags || o->gc_age >= 0))
		gc_flags_json(j, o->gc_flags, o->gc_age, o->object_id);
	json_end_object(j);
	return !ferror(j->out);
}

static bool writer_roots(void *ctx, const char *category, const uint64_t *refs,
			 size_t n)
{
	struct cs_dump_writer *w = ctx;
	return cs_render_dump_roots(&w->j, category, refs, n);
}

static bool writer_object(void *ctx, const struct rv_dump_object *o)
{
	struct cs_dump_writer *w = ctx;
	return cs_render_dump_object(&w->j, o);
}

struct rv_dump_callbacks cs_dump_writer_start(struct cs_dump_writer *w,
					      FILE *out)
{
	memset(&w->j, 0, sizeof(w->j));
	w->j.out = out;
	w->j.lines = true;
	return (struct rv_dump_callbacks){writer_roots, writer_object, w};
}

bool cs_dump_writer_finish(struct cs_dump_writer *w)
{
	json_finish(&w->j);
	return fflush(w->j.out) == 0 && !ferror(w->j.out);
}

void cs_render_dump_summary_text(FILE *out, const struct rv_dump_stats *st,
				 const char *path)
{
	fprintf(out,
		"%llu objects dumped to %s (%llu pages); references of %llu "
		"not decoded (docs/heap.md)\n",
		(unsigned long long)st->objects, path,
		(unsigned long long)st->pages,
		(unsigned long long)st->refs_not_decoded);
	if (st->note)
		fprintf(out, "Note: %s\n", st->note);
	if (rv_dump_partial(st))
		fprintf(out,
			"Partial: %s (%llu objects unreadable, %llu pages "
			"skipped, %llu slots of no known type)\n",
			st->error ? st->error : "objects not read",
			(unsigned long long)st->unreadable,
			(unsigned long long)st->skipped_pages,
			(unsigned long long)st->bad_types);
}

void cs_render_dump_summary_json(FILE *out, const struct rv_dump_stats *st,
				 const struct cs_heap_source *src,
				 const char *path)
{
	struct json j = {.out = out};
	cs_render_heap_head(&j, "heap_dump", !rv_dump_partial(st), src);
	json_string(&j, "file", path);
	json_int(&j, "objects", (int64_t)st->objects);
	json_int(&j, "pages", (int64_t)st->pages);
	json_int(&j, "references_not_decoded", (int64_t)st->refs_not_decoded);
	json_begin_object(&j, "skipped");
	json_int(&j, "unreadable", (int64_t)st->unreadable);
	json_int(&j, "pages", (int64_t)st->skipped_pages);
	json_int(&j, "slots", (int64_t)st->skipped_slots);
	json_int(&j, "bad_types", (int64_t)st->bad_types);
	json_end_object(&j);
	json_string(&j, "error", st->error);
	if (st->note)
		json_string(&j, "note", st->note);
	json_end_object(&j);
}
