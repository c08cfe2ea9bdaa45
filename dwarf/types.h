/* Struct layouts from DWARF: sizes, member offsets (through nested and
 * anonymous members), bitfield positions. */
#ifndef CS_DWARF_TYPES_H
#define CS_DWARF_TYPES_H

#include <stdint.h>

#include <elfutils/libdw.h>

#include "../util/error.h"

struct dw_member {
	uint64_t offset;   /* bytes from the start of the outer struct */
	uint64_t size;     /* byte size of the member's type */
	uint32_t bit_size; /* 0 unless a bitfield */
	uint32_t bit_pos; /* bitfields: bits from the start of the outer struct */
	Dwarf_Die type;   /* the member's type, typedefs and qualifiers kept */
};

/* Strip typedefs and cv-qualifiers. Returns 0 on a broken chain. */
int dw_type_strip(Dwarf_Die *type, Dwarf_Die *ret);

/* Byte size of a type (arrays included). */
struct cs_error *dw_type_size(Dwarf_Die *type, uint64_t *ret);

/* Resolve "a.b.c" inside a struct or union type. A component may also be
 * found inside an anonymous struct/union member. "a->b" goes through the
 * pointer a: b's offset is then counted from the start of what a points to
 * (how a member of an anonymous pointee, such as an rb_darray, is named).
 * CS_ERR_LOOKUP if absent. */
struct cs_error *dw_type_member(Dwarf_Die *outer, const char *path,
				struct dw_member *ret);

/* The value of an enumerator's DW_AT_const_value. */
int64_t dw_enumerator_value(Dwarf_Attribute *attr);

struct dw_enumerator {
	const char *name; /* in libdw's string sections: valid while the
			   * module's DWARF is open */
	int64_t value;
};

/* Every enumerator of an enumeration type (typedefs and qualifiers
 * stripped), in the DWARF's order: the first max into ret. Returns how
 * many the type has, more than max when some were left off; -1 when type
 * is no enumeration. An enumerator without a name or a value is not
 * counted. */
long dw_type_enumerators(Dwarf_Die *type, struct dw_enumerator *ret,
			 size_t max);

#endif
