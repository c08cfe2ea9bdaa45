#include "types.h"

#include <dwarf.h>
#include <stdbool.h>
#include <string.h>

static int ref_type(Dwarf_Die *die, Dwarf_Die *ret)
{
	Dwarf_Attribute attr;
	return dwarf_attr_integrate(die, DW_AT_type, &attr) &&
	       dwarf_formref_die(&attr, ret) != NULL;
}

int dw_type_strip(Dwarf_Die *type, Dwarf_Die *ret)
{
	Dwarf_Die cur = *type;
	for (int depth = 0; depth < 64; depth++) {
		switch (dwarf_tag(&cur)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			if (!ref_type(&cur, &cur))
				return 0;
			break;
		default:
			*ret = cur;
			return 1;
		}
	}
	return 0;
}

struct cs_error *dw_type_size(Dwarf_Die *type, uint64_t *ret)
{
	Dwarf_Word size;
	if (dwarf_aggregate_size(type, &size) == 0) {
		*ret = size;
		return NULL;
	}
	Dwarf_Die stripped;
	if (dw_type_strip(type, &stripped)) {
		int tag = dwarf_tag(&stripped);
		if (tag == DW_TAG_pointer_type) {
			*ret = 8;
			return NULL;
		}
	}
	const char *name = dwarf_diename(type);
	return cs_error_create(CS_ERR_LOOKUP, "type %s has no size",
			       name ? name : "(anonymous)");
}

/* Bit position of a bitfield member from the start of its struct. */
static int bitfield(Dwarf_Die *member, uint64_t byte_off, uint64_t type_size,
		    uint32_t *bit_pos, uint32_t *bit_size)
{
	Dwarf_Attribute attr;
	Dwarf_Word size, off;
	if (!dwarf_attr(member, DW_AT_bit_size, &attr) ||
	    dwarf_formudata(&attr, &size) != 0)
		return 0;
	*bit_size = (uint32_t)size;
	if (dwarf_attr(member, DW_AT_data_bit_offset, &attr) &&
	    dwarf_formudata(&attr, &off) == 0) {
		*bit_pos = (uint32_t)off;
	} else if (dwarf_attr(member, DW_AT_bit_offset, &attr) &&
		   dwarf_formudata(&attr, &off) == 0) {
		/* DWARF 2/3: counted from the most significant bit of the
		 * storage unit; little-endian targets only. */
		Dwarf_Word storage = type_size;
		if (dwarf_attr(member, DW_AT_byte_size, &attr))
			dwarf_formudata(&attr, &storage);
		*bit_pos = (uint32_t)(byte_off * 8 + storage * 8 - off - size);
	} else {
		*bit_pos = (uint32_t)(byte_off * 8);
	}
	return 1;
}

static int member_offset(Dwarf_Die *member, uint64_t *off)
{
	Dwarf_Attribute attr;
	Dwarf_Word w;
	if (!dwarf_attr(member, DW_AT_data_member_location, &attr)) {
		*off = 0; /* union members and bitfields with data_bit_offset */
		return 1;
	}
	if (dwarf_formudata(&attr, &w) == 0) {
		*off = w;
		return 1;
	}
	/* Old-style location expression: DW_OP_plus_uconst N. */
	Dwarf_Op *ops;
	size_t nops;
	if (dwarf_getlocation(&attr, &ops, &nops) == 0 && nops == 1 &&
	    ops[0].atom == DW_OP_plus_uconst) {
		*off = ops[0].number;
		return 1;
	}
	return 0;
}

/* Find one component; recurse into anonymous members. */
static int find_component(Dwarf_Die *outer, const char *name, size_t len,
			  uint64_t base, struct dw_member *ret, int depth)
{
	Dwarf_Die agg, child;
	if (depth > 8 || !dw_type_strip(outer, &agg))
		return 0;
	int tag = dwarf_tag(&agg);
	if ((tag != DW_TAG_structure_type && tag != DW_TAG_union_type) ||
	    dwarf_child(&agg, &child) != 0)
		return 0;
	do {
		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		const char *mname = dwarf_diename(&child);
		uint64_t off;
		if (!member_offset(&child, &off))
			continue;
		Dwarf_Die mtype;
		if (!ref_type(&child, &mtype))
			continue;
		if (!mname) {
			if (find_component(&mtype, name, len, base + off, ret,
					   depth + 1))
				return 1;
			continue;
		}
		if (strlen(mname) != len || memcmp(mname, name, len) != 0)
			continue;
		ret->offset = base + off;
		ret->type = mtype;
		ret->size = 0;
		Dwarf_Word sz;
		if (dwarf_aggregate_size(&mtype, &sz) == 0)
			ret->size = sz;
		else {
			Dwarf_Die s;
			if (dw_type_strip(&mtype, &s) &&
			    dwarf_tag(&s) == DW_TAG_pointer_type)
				ret->size = 8;
		}
		ret->bit_size = ret->bit_pos = 0;
		uint32_t bpos, bsize;
		if (bitfield(&child, off, ret->size, &bpos, &bsize)) {
			ret->bit_size = bsize;
			ret->bit_pos = (uint32_t)(base * 8) + bpos;
			ret->offset = ret->bit_pos / 8;
		}
		return 1;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* The type a pointer type points to. */
static int pointee(Dwarf_Die *type, Dwarf_Die *ret)
{
	Dwarf_Die ptr;
	return dw_type_strip(type, &ptr) &&
	       dwarf_tag(&ptr) == DW_TAG_pointer_type && ref_type(&ptr, ret);
}

struct cs_error *dw_type_member(Dwarf_Die *outer, const char *path,
				struct dw_member *ret)
{
	Dwarf_Die cur = *outer;
	uint64_t base = 0;
	const char *p = path;
	for (;;) {
		size_t len = strcspn(p, ".-[");
		const char *sep = p[len] ? p + len : NULL;
		bool deref = sep && sep[0] == '-' && sep[1] == '>';
		bool first = sep && strcmp(sep, "[0]") == 0;
		struct dw_member m;
		if ((sep && !deref && !first && sep[0] != '.') ||
		    !find_component(&cur, p, len, base, &m, 0)) {
			const char *oname = dwarf_diename(outer);
			return cs_error_create(CS_ERR_LOOKUP,
					       "no member '%s' in %s", path,
					       oname ? oname : "(anonymous)");
		}
		if (!sep) {
			*ret = m;
			return NULL;
		}
		if (first) {
			/* "[0]": the first element of what the member points
			 * to, at offset 0 of it, with the element's size */
			Dwarf_Die elem;
			uint64_t size;
			struct cs_error *e = NULL;
			if (!pointee(&m.type, &elem) ||
			    (e = dw_type_size(&elem, &size))) {
				cs_error_destroy(e);
				return cs_error_create(
					CS_ERR_LOOKUP,
					"'%.*s' in '%s' does not point to "
					"elements of a known size",
					(int)len, p, path);
			}
			*ret = (struct dw_member){.size = size, .type = elem};
			return NULL;
		}
		if (deref) {
			/* offsets start again in the struct pointed to */
			if (!pointee(&m.type, &cur))
				return cs_error_create(
					CS_ERR_LOOKUP,
					"'%.*s' in '%s' is not a pointer",
					(int)len, p, path);
			base = 0;
			p = sep + 2;
		} else {
			base = m.offset;
			cur = m.type;
			p = sep + 1;
		}
	}
}

/* Enumerator values. A signed enum's negative values come as sdata (GCC
 * and clang alike); a fixed-size data form holds the value's unsigned
 * bytes (GCC writes 32768 as data2 0x8000 and 128 as data1 0x80, in a
 * signed enum too), so it is never sign-extended, as gdb reads it. Where
 * an unsigned enum's value comes as sdata, its bits are kept. */
int64_t dw_enumerator_value(Dwarf_Attribute *attr)
{
	unsigned form = dwarf_whatform(attr);
	if (form == DW_FORM_sdata || form == DW_FORM_implicit_const) {
		Dwarf_Sword v = 0;
		dwarf_formsdata(attr, &v);
		return v;
	}
	Dwarf_Word u = 0;
	dwarf_formudata(attr, &u);
	return (int64_t)u;
}

long dw_type_enumerators(Dwarf_Die *type, struct dw_enumerator *ret, size_t max)
{
	Dwarf_Die t, e;
	if (!dw_type_strip(type, &t) ||
	    dwarf_tag(&t) != DW_TAG_enumeration_type)
		return -1;
	long n = 0;
	if (dwarf_child(&t, &e) != 0)
		return 0;
	do {
		Dwarf_Attribute attr;
		const char *name;
		if (dwarf_tag(&e) != DW_TAG_enumerator ||
		    !(name = dwarf_diename(&e)) ||
		    !dwarf_attr(&e, DW_AT_const_value, &attr))
			continue;
		if ((size_t)n < max)
			ret[n] = (struct dw_enumerator){
				name, dw_enumerator_value(&attr)};
		n++;
	} while (dwarf_siblingof(&e, &e) == 0);
	return n;
}
