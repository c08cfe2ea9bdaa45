/* The fallback table: the only hand-written CRuby facts in corestack.
 *
 * Each is a constant that exists only as a C preprocessor macro (or a
 * static const the compiler may not emit), so the DWARF of a build made
 * without -g3 has no trace of it. These values are used only when the Ruby's
 * debug info has no .debug_macro; with it, the value is read from there.
 * The frame-type enumerators are the exception: a compiler may drop an enum
 * no emitted code names, and no macro section would have them either.
 * They have not changed from Ruby 2.7 through 4.0 (see docs/ARCHITECTURE.md
 * for the sources). No offsets, sizes or version numbers belong here. */
#include <string.h>

#include "layout.h"

static const struct {
	const char *name;
	int64_t value;
	int is_enumerator; /* 1: used whenever DWARF lacks the enumerator */
} fallback[] = {
	{"VM_ENV_DATA_INDEX_ME_CREF", -2, 0}, /* vm_core.h: ep[-2] */
	{"VM_ENV_DATA_INDEX_SPECVAL", -1, 0}, /* vm_core.h: ep[-1] */
	{"VM_ENV_DATA_INDEX_FLAGS", 0, 0},    /* vm_core.h: ep[0] */
	{"VM_ENV_INDEX_LAST_LVAR", -3, 0},    /* vm_core.h: -VM_ENV_DATA_SIZE */
	{"VM_ENV_DATA_INDEX_ENV", 1, 0},      /* vm_core.h: ep[1], escaped */
	{"IMEMO_MASK", 0x0f, 0},              /* internal/imemo.h */
	{"IMMEDIATE_TABLE_SIZE", 54, 0},      /* iseq.c succinct index table */
	{"PATHOBJ_PATH", 0, 0}, /* vm_core.h: pathobj [path, realpath] */
	{"PATHOBJ_REALPATH", 1, 0},
	{"GC_GUARDED_PTR_REF(-1)", ~(int64_t)3, 0}, /* vm_core.h: tag bits */
	{"ID_ENTRY_UNIT", 512, 0}, /* symbol.c: static const int */
	{"MAX_POWER2_FOR_TABLES_WITHOUT_BINS", 4, 0}, /* st.c */
	/* include/ruby/internal/core/rtypeddata.h: the type word's low bit */
	{"TYPED_DATA_EMBEDDED", 1, 0},
	/* include/ruby/internal/gc.h: SIZE_MAX, the end of a declarative
	 * mark list (read only where RUBY_TYPED_DECL_MARKING is known) */
	{"RUBY_REF_END", -1, 0},
	/* internal/bignum.h: FL_USER1, FL_USER2, FL_USER3..5, FL_USHIFT+3 */
	{"BIGNUM_SIGN_BIT", 0x2000, 0},
	{"BIGNUM_EMBED_FLAG", 0x4000, 0},
	{"BIGNUM_EMBED_LEN_MASK", 0x38000, 0},
	{"BIGNUM_EMBED_LEN_SHIFT", 15, 0},
	/* string.c: FL_USER18, a String whose buffer is not its own */
	{"STR_NOFREE", 0x40000000, 0},
	/* internal/range.h: FL_USER19, read only for a Range of 2 fields */
	{"RANGE_FL_EXCL", 0x80000000, 0},
	/* Frame-type enumerators: an unnamed enum before 3.2 that a compiler
	 * may drop when no emitted code names them. */
	{"VM_FRAME_MAGIC_MASK", 0x7fff0001, 1},
	{"VM_FRAME_MAGIC_CFUNC", 0x55550001, 1},
	{"VM_FRAME_MAGIC_DUMMY", 0x79990001, 1},
	{"VM_FRAME_MAGIC_METHOD", 0x11110001, 1},
	{"VM_FRAME_MAGIC_BLOCK", 0x22220001, 1},
	{"VM_FRAME_MAGIC_CLASS", 0x33330001, 1},
	{"VM_FRAME_MAGIC_TOP", 0x44440001, 1},
	{"VM_FRAME_MAGIC_IFUNC", 0x66660001, 1},
	{"VM_FRAME_MAGIC_EVAL", 0x77770001, 1},
	{"VM_FRAME_MAGIC_RESCUE", 0x78880001, 1},
	{"VM_ENV_FLAG_ESCAPED", 0x4, 1},
	/* special_consts.h (enum ruby_special_consts) */
	{"RUBY_IMMEDIATE_MASK", 0x07, 1},
	{"RUBY_FIXNUM_FLAG", 0x01, 1},
	/* symbol.c: enum id_entry_type, entries per ID in a symbol array */
	{"ID_ENTRY_SIZE", 2, 1},
	{"VM_ENV_FLAG_LOCAL", 0x2, 1},
	/* vm_core.h: a frame vm_exec() was entered for; same enum */
	{"VM_FRAME_FLAG_FINISH", 0x20, 1},
	/* vm_core.h: a block parameter made a Proc; same enum */
	{"VM_FRAME_FLAG_MODIFIED_BLOCK_PARAM", 0x200, 1},
	{"VM_BLOCK_HANDLER_NONE", 0, 0}, /* vm_core.h: no block given */
	/* internal/class.h: RUBY_FL_USER3, an enumerator a compiler may drop */
	{"RMODULE_IS_REFINEMENT", 0x8000, 1},
	/* zjit.h (master, 4.1.0-dev): the cfp->jit_return of a C method frame
	 * ZJIT pushed; used only where the DWARF has struct zjit_jit_frame
	 * (rubyvm/jit_frames.c) */
	{"ZJIT_JIT_RETURN_C_FRAME", 0x1, 0},
};

int rv_fallback_constant(const char *name, int has_macros, int64_t *value)
{
	for (size_t i = 0; i < sizeof(fallback) / sizeof(fallback[0]); i++)
		if (strcmp(fallback[i].name, name) == 0 &&
		    (!has_macros || fallback[i].is_enumerator)) {
			*value = fallback[i].value;
			return 1;
		}
	return 0;
}
