/* The way past JIT code on a native stack (x86-64). JIT code has no CFI,
 * so the unwinder cannot step out of it as out of a function with DWARF
 * (native.c). Two things still lead out of it, both read from the stack:
 *
 *   - JIT code that keeps frame pointers (ZJIT: every function and the
 *     entry trampoline push %rbp and set it) links its frames: from the
 *     JIT frame's %rbp, [rbp + 8] is a return address into the caller
 *     and [rbp] the caller's %rbp. The chain is followed while its return
 *     addresses are JIT code; its first link that returns into a module
 *     is the C function that entered JIT code.
 *   - JIT code without frame pointers (YJIT pushes %rbp only with
 *     --yjit-perf) was still entered by a call from C: the first word
 *     above the JIT frame's stack pointer that is a return address into
 *     a module, right after an indirect call (JIT code is always reached
 *     through a pointer), is that call's.
 *
 * The chain is taken only when its first link already returns into JIT
 * code: a %rbp that JIT code never set (YJIT's) is the C caller's own or
 * any value, and its chain would skip the caller. Every word read lies in
 * the stack the JIT frame runs on, and every return address must follow a
 * call instruction. */
#ifndef CS_CORESTACK_PAST_JIT_H
#define CS_CORESTACK_PAST_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../process/memory.h"

/* What the walk needs to know of the process. */
struct cs_past_jit_env {
	const struct cs_memory *mem;
	/* addr is in a module's code (has CFI) */
	bool (*module_code)(void *ctx, uint64_t addr);
	/* addr is in JIT code: the region's index, else -1 */
	int (*jit_code)(void *ctx, uint64_t addr);
	void *ctx;
	/* the stack the JIT frame runs on: [lo, hi) */
	uint64_t stack_lo, stack_hi;
};

enum cs_past_jit_how {
	CS_PAST_JIT_FRAME_POINTER = 1,
	CS_PAST_JIT_SCAN,
};

/* Frames of JIT code the frame-pointer chain passes, at most. */
#define CS_PAST_JIT_MAX_FRAMES 256

struct cs_past_jit {
	enum cs_past_jit_how how;
	/* the C function that entered JIT code: the return address into it,
	 * its stack pointer (just above that address) and its %rbp */
	uint64_t pc, sp, fp;
	/* The JIT frames the chain went through, innermost first: each a
	 * return address (pc), the stack pointer above it, its region. */
	struct {
		uint64_t pc, sp;
		int jit;
	} frames[CS_PAST_JIT_MAX_FRAMES];
	size_t nframes;
};

/* From a frame in JIT code with stack pointer sp and, when fp_known, %rbp
 * fp: where the code that entered it resumes. false, with why (a
 * sentence), when neither way leads out. */
bool cs_past_jit_find(const struct cs_past_jit_env *env, uint64_t sp,
		      uint64_t fp, bool fp_known, struct cs_past_jit *ret,
		      char *why, size_t whylen);

/* Do the bytes before addr end with a call instruction? any: a direct
 * call (e8 rel32) too, else only an indirect one (ff /2). Exposed for the
 * unit test. */
bool cs_past_jit_after_call(const struct cs_memory *mem, uint64_t addr,
			    bool any);

#endif
