/* Types whose DWARF test_dwarf.c reads back and checks against what the
 * compiler itself says (offsetof, sizeof, bit positions found by setting
 * the field). Shapes taken from CRuby: nested and anonymous members,
 * bitfields, anonymous enums, typedefs of anonymous structs. */
#ifndef DWARF_SAMPLE_H
#define DWARF_SAMPLE_H

#include <stdint.h>

#define SAMPLE_INDEX (-2)
#define SAMPLE_TABLE_SIZE 54 /* a comment */
#define SAMPLE_REF(p) ((void *)(((uintptr_t)(p)) & ~0x03))
#define SAMPLE_MASK 0x0f
#define SAMPLE_DERIVED (SAMPLE_TABLE_SIZE * 2 + SAMPLE_INDEX)

enum { SAMPLE_ANON_A = 0x55550001, SAMPLE_ANON_B = 0x7fff0001 };
enum sample_signed { SAMPLE_NEG = -3, SAMPLE_POS = 7, SAMPLE_POS_BYTE = 128, SAMPLE_POS_SHORT = 32768 };
/* CRuby's enum imemo_type in a later Ruby: one enumerator no layout.def
 * line names, every one read all the same */
enum imemo_type { imemo_env = 0, imemo_svar = 2, imemo_cdhash = 15, imemo_added_later = 16 };

struct sample_node { struct sample_node *next, *prev; };

struct sample_inner {
	long len;
	union {
		long capa;
		const void *shared;
	} aux;
	const char *ptr;
};

struct sample_outer {
	unsigned long flags;
	struct sample_node node;
	struct {
		struct sample_inner heap;
		char ary[24];
	} as;
	union {
		int anon_int;
		double anon_double;
	};
	unsigned int status : 2;
	unsigned int to_kill : 1;
	unsigned int pad : 5;
	unsigned int wide : 12;
	uint64_t words[6];
	struct sample_block { unsigned rank; uint64_t bits[8]; } blocks[];
};

typedef struct {
	int last_id;
	void *ids;
	const unsigned short *positions; /* "positions[0]": its elements' size */
} sample_typedef_t;

#endif
