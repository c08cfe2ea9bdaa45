/* Every object of the GC heap, one at a time, with what
 * ObjectSpace.dump_all says of it that the model can read, and the roots
 * (rubyvm/heap_dump.c; render/render_heap_dump.c writes them as
 * dump_all's JSON lines; docs/heap.md "The heap dump"). */
#ifndef CS_RUBYVM_HEAP_DUMP_H
#define CS_RUBYVM_HEAP_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"

struct rv_session;
struct rv_process;

/* One object. Strings are lent for the call. */
struct rv_dump_object {
	uint64_t address;
	const char *type; /* "STRING": the enumerator without "T_" */
	uint64_t slot_size;
	uint64_t klass;   /* 0: none shown (imemo, node, hidden) */
	uint64_t memsize; /* as the census counts bytes */
	bool frozen;
	int embedded; /* 1, 0, -1: not told */
	bool shared;  /* a String's or an Array's buffer is another's */
	bool fstring; /* a String interned (RSTRING_FSTR) */
	bool chilled; /* a chilled String literal (STR_CHILLED, 3.4+) */
	/* a String's bytes, an Array's elements, a Hash's entries, a
	 * T_OBJECT's ivars; -1 when not told */
	int64_t length;
	/* a String's bytes when it is read whole and all ASCII, a Float's
	 * value as dump_all prints it; else NULL */
	const char *value;
	size_t value_len;
	/* a class's or module's path (NULL when anonymous), a typed T_DATA's
	 * data type's name */
	const char *name;
	int64_t fd; /* a T_FILE's descriptor, -1 when none or not read */
	/* an imemo's type as dump_all names it ("env"); NULL when not read */
	const char *imemo_type;
	/* a T_OBJECT of too complex a shape: the key dump_all says it with
	 * ("too_complex_shape", "complex_shape"), else NULL */
	const char *complex_key;
	/* its shape's id as dump_all prints it; -1 where it prints none */
	int64_t shape_id;
	/* a String's encoding's name (NULL: ASCII-8BIT, or not read) and
	 * coderange ("7bit", ...; NULL where dump_all prints none), broken
	 * where dump_all says so of a broken one */
	const char *encoding;
	const char *coderange;
	bool broken;
	/* a class's, module's or iclass's superclass, 0: none told */
	uint64_t superclass;
	/* a class's variation_count (-1: none told), and whether it is a
	 * singleton class */
	int64_t variation_count;
	bool singleton;
	/* a Hash's default Proc (RHASH_PROC_DEFAULT), 0: none told */
	uint64_t hash_default;
	/* its GC flags (RV_GCF_*), when gc_flags_known; its age where
	 * dump_all writes it (-1: not) */
	unsigned gc_flags;
	bool gc_flags_known;
	int gc_age;
	/* the object id rb_gc_object_metadata writes among the flags (4.0+;
	 * -1: none) */
	int64_t object_id;
	/* where ObjectSpace.trace_object_allocations recorded its
	 * allocation (alloc_sites.c), when alloc_known: the path (NULL:
	 * none written), line (-1: none written), method (NULL: none) */
	bool alloc_known;
	const char *alloc_path;
	int64_t alloc_line;
	const char *alloc_method;
	uint64_t alloc_generation;
	/* what it references (heap_refs.c), when refs_decoded */
	const uint64_t *refs;
	size_t nrefs;
	bool refs_decoded;
};

/* An object's GC flags, in the order dump_all writes them. */
enum {
	RV_GCF_WB_PROTECTED = 1 << 0,
	RV_GCF_OLD = 1 << 1,
	RV_GCF_UNCOLLECTIBLE = 1 << 2,
	RV_GCF_MARKING = 1 << 3,
	RV_GCF_MARKED = 1 << 4,
	RV_GCF_PINNED = 1 << 5,
	RV_GCF_REMEMBERED = 1 << 6,
	RV_GCF_SHAREABLE = 1 << 7,
};

struct rv_dump_callbacks {
	/* the roots of one category ("vm", "machine_context",
	 * "global_tbl"), as dump_all's
	 * ROOT lines; false stops the dump (the writer failed) */
	bool (*roots)(void *ctx, const char *category, const uint64_t *refs,
		      size_t n);
	bool (*object)(void *ctx, const struct rv_dump_object *o);
	void *ctx;
};

struct rv_dump_stats {
	uint64_t objects;
	uint64_t refs_not_decoded; /* objects of a type heap_refs.c skips */
	uint64_t unreadable;       /* objects whose details were not read */
	uint64_t pages, skipped_pages, skipped_slots, bad_types;
	char *error; /* the first problem, NULL if none */
	/* what may be missing though nothing read was wrong (the
	 * allocation table of an objspace.so without debug info), NULL if
	 * nothing; not a partial dump */
	char *note;
	bool not_walked; /* nothing dumped: error says why */
	bool stopped;    /* a callback said stop */
};

struct rv_root_stacks;

/* Dump the roots (rv_heap_roots, from stacks) and then every object.
 * Fails only when out of memory. */
struct cs_error *rv_heap_dump(struct rv_session *s,
			      const struct rv_root_stacks *stacks,
			      const struct rv_dump_callbacks *cb,
			      struct rv_dump_stats *st);
/* Whether something was not read (counted in st). */
bool rv_dump_partial(const struct rv_dump_stats *st);
void rv_dump_stats_free(struct rv_dump_stats *st);

#endif
