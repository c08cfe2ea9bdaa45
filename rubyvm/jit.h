/* The JIT a Ruby process runs, and addresses in the code it generated that
 * the VM itself holds (rubyvm/jit.c). Native frames in that code have no
 * CFI and no symbol: corestack tells them apart by the memory these
 * addresses lie in (engine/jit_regions.c). */
#ifndef CS_RUBYVM_JIT_H
#define CS_RUBYVM_JIT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define RV_JIT_MAX_CODE 16

struct rv_jit {
	/* "yjit" or "zjit", "jit" when the Ruby does not say which one
	 * made the code; NULL when no JIT runs (or nothing tells). */
	const char *name;
	uint64_t code[RV_JIT_MAX_CODE]; /* distinct, in no particular order */
	size_t ncode;
};

/* Reads what it can while the target stands still, after the snapshot of
 * p (whose reading of rb_zjit_entry it takes); never fails. ZJIT
 * runs when rb_zjit_entry is set (its entry trampoline, in its code), YJIT
 * when rb_yjit_enabled_p is; the code addresses are also the jit_entry of
 * the iseqs p's frames run and, under YJIT, their control frames'
 * jit_return. Not every address need be code (a corrupt frame): the
 * caller keeps only those in memory that holds code. */
void rv_snapshot_jit(struct rv_session *s, const struct rv_process *p,
		     struct rv_jit *ret);

#endif
