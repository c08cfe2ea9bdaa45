/* The heap census in text and JSON. Formatting only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../util/json.h"
#include "render_heap.h"

/* The types in the census, by bytes (most first), then by value. */
static size_t types_by_bytes(const struct rv_census *c, unsigned *order)
{
	size_t n = 0;
	for (unsigned t = 0; t < c->ntypes; t++)
		if (c->types[t].name && c->types[t].count)
			order[n++] = t;
	for (size_t i = 1; i < n; i++) /* insertion sort: at most 64 */
		for (size_t k = i; k > 0; k--) {
			const struct rv_census_type *a =
				&c->types[order[k - 1]];
			const struct rv_census_type *b = &c->types[order[k]];
			if (a->bytes >= b->bytes)
				break;
			unsigned tmp = order[k];
			order[k] = order[k - 1];
			order[k - 1] = tmp;
		}
	return n;
}

/* The lengths bucket k holds: [min, max]. */
static void bucket_range(unsigned k, uint64_t *min, uint64_t *max)
{
	*min = k ? (uint64_t)1 << (k - 1) : 0;
	*max = k ? (k == 64 ? UINT64_MAX : ((uint64_t)1 << k) - 1) : 0;
}

static void buckets_text(FILE *out, const char *what,
			 const struct rv_census_bucket *b, bool known)
{
	if (!known)
		return;
	fprintf(out, "\n%-40s %12s %14s\n", what, "count", "bytes");
	for (unsigned k = 0; k < RV_CENSUS_BUCKETS; k++) {
		if (!b[k].count)
			continue;
		uint64_t min, max;
		char range[48];
		bucket_range(k, &min, &max);
		if (min == max)
			snprintf(range, sizeof(range), "%llu",
				 (unsigned long long)min);
		else
			snprintf(range, sizeof(range), "%llu-%llu",
				 (unsigned long long)min,
				 (unsigned long long)max);
		fprintf(out, "  %-38s %12llu %14llu\n", range,
			(unsigned long long)b[k].count,
			(unsigned long long)b[k].bytes);
	}
}

static void buckets_json(struct json *j, const char *key,
			 const struct rv_census_bucket *b, bool known)
{
	if (!known) {
		json_null(j, key);
		return;
	}
	json_begin_array(j, key);
	for (unsigned k = 0; k < RV_CENSUS_BUCKETS; k++) {
		if (!b[k].count)
			continue;
		uint64_t min, max;
		bucket_range(k, &min, &max);
		json_begin_object(j, NULL);
		json_int(j, "bits", k);
		json_int(j, "min", (int64_t)min);
		json_int(j, "max",
			 (int64_t)(max > INT64_MAX ? INT64_MAX : max));
		json_int(j, "count", (int64_t)b[k].count);
		json_int(j, "bytes", (int64_t)b[k].bytes);
		json_end_object(j);
	}
	json_end_array(j);
}

static void skips_text(FILE *out, const struct rv_census *c)
{
	if (!rv_census_partial(c))
		return;
	fprintf(out,
		"\nPartial: skipped %llu pages (%llu slots), %llu slots of no "
		"known type, %llu objects whose class is not a class\n",
		(unsigned long long)c->skipped_pages,
		(unsigned long long)c->skipped_slots,
		(unsigned long long)c->bad_types,
		(unsigned long long)c->bad_classes);
	if (c->error)
		fprintf(out, "  first: %s\n", c->error);
}

void cs_render_heap_text(FILE *out, const struct rv_census *c,
			 const struct cs_heap_source *src)
{
	if (src->core)
		fprintf(out, "Heap of %s", src->core);
	else
		fprintf(out, "Heap of process %d", src->pid);
	fprintf(out,
		": %llu live objects, %llu bytes; %llu slots (%llu free) in "
		"%llu pages of %llu to %llu bytes a slot\n",
		(unsigned long long)c->live, (unsigned long long)c->live_bytes,
		(unsigned long long)c->total_slots,
		(unsigned long long)c->free_slots, (unsigned long long)c->pages,
		(unsigned long long)c->slot_size_min,
		(unsigned long long)c->slot_size_max);
	unsigned order[RV_CENSUS_MAX_TYPES];
	size_t n = types_by_bytes(c, order);
	bool external = false;
	fprintf(out, "\n%-40s %12s %14s\n", "type", "count", "bytes");
	for (size_t i = 0; i < n; i++) {
		const struct rv_census_type *t = &c->types[order[i]];
		external |= t->external;
		fprintf(out, "  %-38s %12llu %14llu%s\n", t->name,
			(unsigned long long)t->count,
			(unsigned long long)t->bytes, t->external ? " *" : "");
	}
	size_t shown = c->nclasses < src->top ? c->nclasses : src->top;
	fprintf(out, "\n%-40s %12s %14s\n", "class", "count", "bytes");
	for (size_t i = 0; i < shown; i++) {
		const struct rv_census_class *k = &c->classes[i];
		fprintf(out, "  %-38s %12llu %14llu\n", k->name,
			(unsigned long long)k->count,
			(unsigned long long)k->bytes);
	}
	if (shown < c->nclasses)
		fprintf(out, "  (%zu more classes; --top N shows more)\n",
			c->nclasses - shown);
	buckets_text(out, "Strings by length (bytes)", c->strings,
		     c->strings_known);
	buckets_text(out, "Arrays by length (elements)", c->arrays,
		     c->arrays_known);
	fputs("\nbytes: the objects' slots", out);
	if (external)
		fputs("; * with the buffers they own outside the heap,\n"
		      "as ObjectSpace.memsize_of counts them",
		      out);
	fputs(" (docs/heap.md)\n", out);
	skips_text(out, c);
}

void cs_render_heap_head(struct json *j, const char *kind, bool complete,
			 const struct cs_heap_source *src)
{
	json_begin_object(j, NULL);
	json_int(j, "corestack_heap_schema", CS_HEAP_SCHEMA);
	json_int(j, "corestack_heap_schema_minor", CS_HEAP_SCHEMA_MINOR);
	json_string(j, "kind", kind);
	json_bool(j, "complete", complete);
	json_string(j, "source", src->core ? "core" : "live");
	json_string(j, "core", src->core);
	if (src->pid > 0)
		json_int(j, "pid", src->pid);
	else
		json_null(j, "pid");
}

void cs_render_heap_json(FILE *out, const struct rv_census *c,
			 const struct cs_heap_source *src)
{
	struct json j = {.out = out};
	cs_render_heap_head(&j, "heap_census",
			    !rv_census_partial(c) && !c->not_walked, src);
	json_bool(&j, "walked", !c->not_walked);
	json_int(&j, "live", (int64_t)c->live);
	json_int(&j, "live_bytes", (int64_t)c->live_bytes);
	json_begin_object(&j, "pages");
	json_int(&j, "read", (int64_t)c->pages);
	json_int(&j, "empty", (int64_t)c->empty_pages);
	json_int(&j, "bytes", (int64_t)c->heap_bytes);
	json_int(&j, "slot_size_min", (int64_t)c->slot_size_min);
	json_int(&j, "slot_size_max", (int64_t)c->slot_size_max);
	json_end_object(&j);
	/* as ObjectSpace.count_objects: only the types with objects */
	json_begin_object(&j, "count_objects");
	json_int(&j, "TOTAL", (int64_t)c->total_slots);
	json_int(&j, "FREE", (int64_t)c->free_slots);
	for (unsigned t = 0; t < c->ntypes; t++)
		if (c->types[t].name && c->types[t].count)
			json_int(&j, c->types[t].name,
				 (int64_t)c->types[t].count);
	json_end_object(&j);
	unsigned order[RV_CENSUS_MAX_TYPES];
	size_t n = types_by_bytes(c, order);
	json_begin_array(&j, "types");
	for (size_t i = 0; i < n; i++) {
		const struct rv_census_type *t = &c->types[order[i]];
		json_begin_object(&j, NULL);
		json_string(&j, "type", t->name);
		json_int(&j, "value", order[i]);
		json_int(&j, "count", (int64_t)t->count);
		json_int(&j, "bytes", (int64_t)t->bytes);
		json_bool(&j, "external", t->external);
		json_end_object(&j);
	}
	json_end_array(&j);
	size_t shown = c->nclasses < src->top ? c->nclasses : src->top;
	json_int(&j, "class_rows", (int64_t)c->nclasses);
	json_begin_array(&j, "classes");
	for (size_t i = 0; i < shown; i++) {
		json_begin_object(&j, NULL);
		json_string(&j, "name", c->classes[i].name);
		json_int(&j, "count", (int64_t)c->classes[i].count);
		json_int(&j, "bytes", (int64_t)c->classes[i].bytes);
		json_end_object(&j);
	}
	json_end_array(&j);
	buckets_json(&j, "strings_by_length", c->strings, c->strings_known);
	buckets_json(&j, "arrays_by_length", c->arrays, c->arrays_known);
	json_begin_object(&j, "skipped");
	json_int(&j, "pages", (int64_t)c->skipped_pages);
	json_int(&j, "slots", (int64_t)c->skipped_slots);
	json_int(&j, "bad_types", (int64_t)c->bad_types);
	json_int(&j, "bad_classes", (int64_t)c->bad_classes);
	json_end_object(&j);
	json_string(&j, "error", c->error);
	json_end_object(&j);
}
