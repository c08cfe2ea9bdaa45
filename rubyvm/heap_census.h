/* The census of the GC heap: every slot of every heap page counted by its
 * type and by its object's class, with the bytes they hold (rubyvm/
 * heap_census.c; docs/heap.md). */
#ifndef CS_RUBYVM_HEAP_CENSUS_H
#define CS_RUBYVM_HEAP_CENSUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"

struct rv_session;

/* More than any T_MASK (0x1f in every Ruby) allows. */
#define RV_CENSUS_MAX_TYPES 64

/* The objects of one type (flags & T_MASK), as ObjectSpace.count_objects
 * counts them: every used slot (flags not 0) of that type. */
struct rv_census_type {
	const char *name; /* "T_STRING": the enumerator; NULL: none has it */
	uint64_t count, bytes;
	/* bytes include what the objects own outside their slots (as
	 * ObjectSpace.memsize_of counts it); else their slots only */
	bool external;
};

/* The objects of one class (past singleton and include classes), or of
 * the internal objects of one type ("(T_IMEMO)") or the hidden ones
 * ("(hidden T_STRING)"): they have no class Ruby shows. */
struct rv_census_class {
	char *name; /* stable name (docs/names.md) */
	uint64_t count, bytes;
};

/* Strings (bytes) or Arrays (elements) of one length class: bucket k
 * holds the lengths of k bits, [2^(k-1), 2^k - 1]; bucket 0 length 0. */
#define RV_CENSUS_BUCKETS 65
struct rv_census_bucket {
	uint64_t count, bytes;
};

struct rv_census {
	struct rv_census_type types[RV_CENSUS_MAX_TYPES]; /* by value */
	unsigned ntypes;                                  /* T_MASK + 1 */
	uint64_t total_slots; /* :TOTAL, in the pages read */
	uint64_t free_slots;  /* :FREE: flags 0 */
	uint64_t live, live_bytes;
	struct rv_census_class *classes; /* by bytes, most first */
	size_t nclasses;
	/* The Strings and Arrays with a class (those ObjectSpace.each_object
	 * yields: not hidden) by their length; *_known: the layout has it. */
	struct rv_census_bucket strings[RV_CENSUS_BUCKETS];
	struct rv_census_bucket arrays[RV_CENSUS_BUCKETS];
	bool strings_known, arrays_known;
	uint64_t pages, empty_pages, heap_bytes; /* read */
	uint64_t slot_size_min, slot_size_max;
	/* Skipped, each counted: pages unreadable or implausible (and the
	 * slots of those whose count was known), slots whose type no
	 * enumerator of ruby_value_type has, objects whose class pointer is
	 * not a class in the heap or whose class's name cannot be read. */
	uint64_t skipped_pages, skipped_slots, bad_types, bad_classes;
	char *error; /* the first problem, NULL if none */
	/* Nothing was counted: why is in error. unwalkable: the layout of
	 * the GC's heap is not known (MMTk, a GC library without debug
	 * info). */
	bool not_walked, unwalkable;
};

/* The enumerator of enum ruby_value_type naming each type value
 * ("T_STRING"), NULL for a value none has. */
void rv_heap_type_names(struct rv_session *s,
			const char *names[RV_CENSUS_MAX_TYPES]);

/* An object's bytes as the census counts them (object_bytes.c): its slot,
 * and what it owns outside the heap as memsize_of counts it, where the
 * layout tells: a String's or an Array's buffer, a Hash's table, a
 * Struct's members or a Bignum's digits off the slot. */
struct rv_object_sizer {
	struct rv_session *s;
	uint64_t t_string, t_array, t_hash, t_struct, t_bignum;
	uint64_t str_capa_off, ary_capa_off, str_noembed, str_own_mask;
	uint64_t ary_own_mask, value_size;
	/* a Struct's members and a Bignum's digits off the slot */
	uint64_t struct_embed_mask, struct_len_off, struct_ptr_off;
	uint64_t bignum_embed_flag, bignum_len_off, bignum_digits_off,
		bignum_digit_size;
	bool strings, arrays, hashes, structs, bignums;
	/* st_features.bins_words by entry_power, read when first needed
	 * (0: not yet, UINT64_MAX: unreadable) */
	uint64_t bins_words[64];
};
void rv_object_sizer_init(struct rv_session *s, struct rv_object_sizer *z);
/* The bytes of the object at addr of this type and flags, whose slot
 * (stride bytes) was read into slot. */
uint64_t rv_object_bytes(struct rv_object_sizer *z, uint64_t addr,
			 uint64_t type, uint64_t flags, const uint8_t *slot,
			 uint64_t stride);

/* Take the census of the heap of the process s reads. Fails only when out
 * of memory; a heap that cannot be walked (completely) says why in
 * c->error. c is always safe to free with rv_census_free. */
struct cs_error *rv_heap_census(struct rv_session *s, struct rv_census *c);
/* Whether anything was skipped (the census is partial). */
bool rv_census_partial(const struct rv_census *c);
void rv_census_free(struct rv_census *c);

#endif
