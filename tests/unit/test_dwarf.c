/* dwarf/ against the compiler's own answers: a shared object built from
 * dwarf_sample.c with -g3 -gz is opened, and every offset, size, bit
 * position, enumerator, variable and macro resolved from its DWARF is
 * compared with offsetof/sizeof and the values in dwarf_sample.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../../dwarf/index.h"
#include "../../dwarf/macros.h"
#include "../../dwarf/module.h"
#include "../../dwarf/types.h"
#include "check.h"
#include "dwarf_sample.h"

static struct dw_index *idx;

static void member(const char *type, const char *path, size_t want_off,
		   size_t want_size)
{
	Dwarf_Die die;
	struct dw_member m;
	int found =
		dw_index_find(idx, DW_NAME_STRUCT, type, NULL, 1, &die, NULL) ||
		dw_index_find(idx, DW_NAME_TYPEDEF, type, NULL, 1, &die, NULL);
	CHECK(found, "type %s not found", type);
	if (!found)
		return;
	struct cs_error *err = dw_type_member(&die, path, &m);
	CHECK(!err, "%s.%s: %s", type, path, err ? err->message : "");
	if (err) {
		cs_error_destroy(err);
		return;
	}
	CHECK(m.offset == want_off && m.size == want_size,
	      "%s.%s at %llu size %llu, compiler says %zu size %zu", type, path,
	      (unsigned long long)m.offset, (unsigned long long)m.size,
	      want_off, want_size);
}

/* The bit position of a bitfield: set it to all ones in a zeroed struct
 * and find the lowest set bit. */
#define BIT_POS(field, width)                                       \
	({                                                          \
		struct sample_outer o;                              \
		memset(&o, 0, sizeof(o));                           \
		o.field = (1u << (width)) - 1;                      \
		const unsigned char *b = (const unsigned char *)&o; \
		size_t pos = 0;                                     \
		while (!(b[pos / 8] & (1u << (pos % 8))))           \
			pos++;                                      \
		pos;                                                \
	})

static void bitfield(const char *path, size_t want_pos, unsigned want_size)
{
	Dwarf_Die die;
	struct dw_member m;
	dw_index_find(idx, DW_NAME_STRUCT, "sample_outer", NULL, 1, &die, NULL);
	struct cs_error *err = dw_type_member(&die, path, &m);
	CHECK(!err && m.bit_pos == want_pos && m.bit_size == want_size,
	      "bitfield %s at bit %u width %u, compiler says %zu width %u",
	      path, err ? 0 : m.bit_pos, err ? 0 : m.bit_size, want_pos,
	      want_size);
	cs_error_destroy(err);
}

static void enumerator(const char *name, int64_t want)
{
	int64_t v = 0;
	int found =
		dw_index_find(idx, DW_NAME_ENUMERATOR, name, NULL, 1, NULL, &v);
	CHECK(found && v == want, "enumerator %s = %lld (found %d), want %lld",
	      name, (long long)v, found, (long long)want);
}

/* Every enumerator of enum imemo_type, in order, and how a list too short
 * for them is told. */
static void enumerators(void)
{
	static const struct dw_enumerator want[] = {
		{"imemo_env", imemo_env},
		{"imemo_svar", imemo_svar},
		{"imemo_cdhash", imemo_cdhash},
		{"imemo_added_later", imemo_added_later},
	};
	const size_t nwant = sizeof(want) / sizeof(*want);
	Dwarf_Die die;
	struct dw_enumerator got[8];
	CHECK(dw_index_find(idx, DW_NAME_ENUM, "imemo_type", NULL, 1, &die,
			    NULL),
	      "enum imemo_type not found");
	long n = dw_type_enumerators(&die, got, 8);
	CHECK(n == (long)nwant, "enum imemo_type: %ld enumerators, want %zu", n,
	      nwant);
	for (size_t k = 0; n == (long)nwant && k < nwant; k++)
		CHECK(strcmp(got[k].name, want[k].name) == 0 &&
			      got[k].value == want[k].value,
		      "enumerator %zu: %s = %lld, want %s = %lld", k,
		      got[k].name, (long long)got[k].value, want[k].name,
		      (long long)want[k].value);
	/* the first two kept, the count still says four */
	memset(got, 0, sizeof(got));
	n = dw_type_enumerators(&die, got, 2);
	CHECK(n == (long)nwant && got[1].name &&
		      strcmp(got[1].name, "imemo_svar") == 0 && !got[2].name,
	      "enum imemo_type into 2: %ld", n);
	/* negative values of a signed enum, and a struct is no enum */
	CHECK(dw_index_find(idx, DW_NAME_ENUM, "sample_signed", NULL, 1, &die,
			    NULL) &&
		      dw_type_enumerators(&die, got, 8) == 4 &&
		      got[0].value == SAMPLE_NEG,
	      "enum sample_signed not read");
	CHECK(dw_index_find(idx, DW_NAME_STRUCT, "sample_outer", NULL, 1, &die,
			    NULL) &&
		      dw_type_enumerators(&die, got, 8) == -1,
	      "a struct read as an enum");
	CHECK(!dw_index_find(idx, DW_NAME_ENUM, "sample_outer", NULL, 1, &die,
			     NULL),
	      "a struct found as an enum");
}

static void macro(const struct dw_macros *m, const char *name,
		  const int64_t *args, size_t nargs, int64_t want)
{
	int64_t v = 0;
	struct cs_error *err = dw_macros_eval(m, name, args, nargs, &v);
	CHECK(!err && v == want, "macro %s = %lld (%s), want %lld", name,
	      (long long)v, err ? err->message : "ok", (long long)want);
	cs_error_destroy(err);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_dwarf SAMPLE.so\n");
		return 64;
	}
	struct dw_module *mod;
	struct cs_error *err = dw_module_open(argv[1], NULL, &mod);
	if (!err)
		err = dw_index_create(mod, &idx);
	if (err) {
		printf("FAIL opening %s: %s\n", argv[1], err->message);
		return 1;
	}
	CHECK(mod->build_id_len > 0, "no build-id read");

	member("sample_outer", "flags", offsetof(struct sample_outer, flags),
	       8);
	member("sample_outer", "node.next",
	       offsetof(struct sample_outer, node.next), 8);
	member("sample_outer", "node.prev",
	       offsetof(struct sample_outer, node.prev), 8);
	member("sample_outer", "as.heap.len",
	       offsetof(struct sample_outer, as.heap.len), 8);
	member("sample_outer", "as.heap.aux.shared",
	       offsetof(struct sample_outer, as.heap.aux.shared), 8);
	member("sample_outer", "as.heap.ptr",
	       offsetof(struct sample_outer, as.heap.ptr), 8);
	member("sample_outer", "as.ary", offsetof(struct sample_outer, as.ary),
	       24);
	member("sample_outer", "anon_double",
	       offsetof(struct sample_outer, anon_double), 8);
	member("sample_outer", "words", offsetof(struct sample_outer, words),
	       sizeof(((struct sample_outer *)0)->words));
	member("sample_outer", "blocks", offsetof(struct sample_outer, blocks),
	       0);
	member("sample_block", "bits", offsetof(struct sample_block, bits),
	       sizeof(((struct sample_block *)0)->bits));
	member("sample_typedef_t", "ids", offsetof(sample_typedef_t, ids), 8);
	/* "[0]": the first element pointed to, at 0, the element's size */
	member("sample_typedef_t", "positions[0]", 0, sizeof(unsigned short));
	member("sample_outer", "node.next[0]", 0, sizeof(struct sample_node));

	bitfield("status", BIT_POS(status, 2), 2);
	bitfield("to_kill", BIT_POS(to_kill, 1), 1);
	bitfield("wide", BIT_POS(wide, 12), 12);

	Dwarf_Die die;
	uint64_t size = 0;
	dw_index_find(idx, DW_NAME_STRUCT, "sample_outer", NULL, 1, &die, NULL);
	err = dw_type_size(&die, &size);
	CHECK(!err && size == sizeof(struct sample_outer),
	      "sizeof sample_outer %llu, compiler says %zu",
	      (unsigned long long)size, sizeof(struct sample_outer));
	cs_error_destroy(err);

	struct dw_member missing;
	err = dw_type_member(&die, "no_such_member", &missing);
	CHECK(err && err->code == CS_ERR_LOOKUP, "absent member not refused");
	cs_error_destroy(err);
	/* elements of no known size (void *), and "[0]" of a non-pointer */
	dw_index_find(idx, DW_NAME_TYPEDEF, "sample_typedef_t", NULL, 1, &die,
		      NULL);
	err = dw_type_member(&die, "ids[0]", &missing);
	CHECK(err && err->code == CS_ERR_LOOKUP, "void *[0] not refused");
	cs_error_destroy(err);
	err = dw_type_member(&die, "last_id[0]", &missing);
	CHECK(err && err->code == CS_ERR_LOOKUP, "int[0] not refused");
	cs_error_destroy(err);
	CHECK(!dw_index_find(idx, DW_NAME_STRUCT, "no_such_struct", NULL, 1,
			     &die, NULL),
	      "absent struct found");

	enumerator("SAMPLE_ANON_A", SAMPLE_ANON_A);
	enumerator("SAMPLE_ANON_B", SAMPLE_ANON_B);
	enumerator("SAMPLE_NEG", SAMPLE_NEG);
	enumerator("SAMPLE_POS", SAMPLE_POS);
	/* positive values whose top bit of a data1/data2 form is set */
	enumerator("SAMPLE_POS_BYTE", SAMPLE_POS_BYTE);
	enumerator("SAMPLE_POS_SHORT", SAMPLE_POS_SHORT);
	enumerators();

	const char *hints[] = {"dwarf_sample.c", NULL};
	CHECK(dw_index_find(idx, DW_NAME_VARIABLE, "sample_global", hints, 1,
			    &die, NULL),
	      "global variable not found");
	CHECK(dw_index_find(idx, DW_NAME_VARIABLE, "sample_static", hints, 1,
			    &die, NULL),
	      "static variable not found");
	uint64_t addr = 0, sym_size = 0;
	err = dw_module_symbol(mod, "sample_global", &addr, &sym_size);
	CHECK(!err && addr && sym_size == sizeof(struct sample_outer),
	      "ELF symbol sample_global: %s", err ? err->message : "bad size");
	cs_error_destroy(err);

	/* a function's range by its name, once per symbol table that has
	 * it; a name it lacks, or a variable's, gives none */
	const char *fn_names[] = {"sample_use", "sample_absent",
				  "sample_global"};
	struct dw_range *ranges = NULL;
	size_t nranges = 0;
	err = dw_module_function_ranges(mod, fn_names, 3, false, &ranges,
					&nranges);
	uint64_t use = 0, use_size = 0;
	struct cs_error *use_err =
		dw_module_symbol(mod, "sample_use", &use, &use_size);
	CHECK(!err && !use_err && nranges >= 1, "sample_use's range: %s",
	      err ? err->message : "not found");
	for (size_t i = 0; i < nranges; i++)
		CHECK(ranges[i].start == use &&
			      ranges[i].end == use + use_size && use_size,
		      "range %zu: 0x%llx-0x%llx, sample_use 0x%llx+%llu", i,
		      (unsigned long long)ranges[i].start,
		      (unsigned long long)ranges[i].end,
		      (unsigned long long)use, (unsigned long long)use_size);
	free(ranges);
	cs_error_destroy(err);
	/* sample_use is exported: found among the exported symbols too */
	err = dw_module_function_ranges(mod, fn_names, 3, true, &ranges,
					&nranges);
	CHECK(!err && !use_err && nranges == 1 && ranges[0].start == use,
	      "sample_use among the exported functions: %zu ranges", nranges);
	free(ranges);
	cs_error_destroy(err);
	cs_error_destroy(use_err);

	struct dw_macros *m = NULL;
	struct dw_macro_cache *cache = dw_macro_cache_create();
	CHECK(cache != NULL, "no macro cache");
	err = cache ? dw_macros_load(idx, cache, "dwarf_sample.c", &m) : NULL;
	CHECK(!err && m, "no macros in dwarf_sample.c");
	if (m) {
		int64_t all = -1;
		macro(m, "SAMPLE_INDEX", NULL, 0, SAMPLE_INDEX);
		macro(m, "SAMPLE_TABLE_SIZE", NULL, 0, SAMPLE_TABLE_SIZE);
		macro(m, "SAMPLE_MASK", NULL, 0, SAMPLE_MASK);
		macro(m, "SAMPLE_DERIVED", NULL, 0, SAMPLE_DERIVED);
		macro(m, "SAMPLE_REF", &all, 1, ~(int64_t)3);
		/* A macro from a system header, through DW_MACRO_import. */
		macro(m, "INT32_MAX", NULL, 0, INT32_MAX);
		int64_t v;
		err = dw_macros_eval(m, "SAMPLE_NOT_DEFINED", NULL, 0, &v);
		CHECK(err && err->code == CS_ERR_LOOKUP,
		      "undefined macro found");
		cs_error_destroy(err);
		dw_macros_destroy(m);
	}
	dw_macro_cache_destroy(cache);

	/* Two loads through one cache of imported units: the second replays
	 * the header units the first read, and sees the same macros. */
	cache = dw_macro_cache_create();
	CHECK(cache != NULL, "no macro cache");
	for (int load = 0; cache && load < 2; load++) {
		m = NULL;
		err = dw_macros_load(idx, cache, "dwarf_sample.c", &m);
		CHECK(!err && m, "no macros in dwarf_sample.c (load %d)",
		      load + 1);
		if (m) {
			macro(m, "SAMPLE_DERIVED", NULL, 0, SAMPLE_DERIVED);
			macro(m, "INT32_MAX", NULL, 0, INT32_MAX);
		}
		cs_error_destroy(err);
		dw_macros_destroy(m);
	}
	dw_macro_cache_destroy(cache);

	dw_index_destroy(idx);
	dw_module_close(mod);
	return check_summary("dwarf");
}
