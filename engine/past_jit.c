/* Past JIT code on a native stack. See past_jit.h. */
#include "past_jit.h"

#include <stdio.h>
#include <string.h>

/* How far above the JIT frame's stack pointer the return address into its
 * caller may lie: what JIT code pushes between calls (saved registers,
 * alignment) is a few dozen words. */
#define SCAN_BYTES 1024

static bool read_u64(const struct cs_past_jit_env *env, uint64_t addr,
		     uint64_t *ret)
{
	if (addr < env->stack_lo || addr > env->stack_hi - 8)
		return false;
	struct cs_error *err = cs_memory_read(env->mem, addr, ret, 8);
	cs_error_destroy(err);
	return !err;
}

/* p[0..len) is one indirect call, ff /2: an optional segment (notrack)
 * prefix and REX, the opcode, ModRM with reg 2, a SIB byte and a
 * displacement as ModRM says. */
static bool indirect_call(const uint8_t *p, size_t len)
{
	size_t i = 0;
	if (i < len && (p[i] == 0x2e || p[i] == 0x3e))
		i++;
	if (i < len && (p[i] & 0xf0) == 0x40)
		i++;
	if (i + 2 > len || p[i] != 0xff || ((p[i + 1] >> 3) & 7) != 2)
		return false;
	unsigned mod = p[i + 1] >> 6, rm = p[i + 1] & 7;
	size_t n = i + 2;
	if (mod != 3 && rm == 4) {
		if (n >= len)
			return false;
		if (mod == 0 && (p[n] & 7) == 5)
			n += 4; /* no base: disp32 */
		n++;
	} else if (mod == 0 && rm == 5) {
		n += 4; /* %rip-relative */
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return n == len;
}

bool cs_past_jit_after_call(const struct cs_memory *mem, uint64_t addr,
			    bool any)
{
	uint8_t b[8];
	size_t have = 0;
	/* as many of the 8 bytes before addr as can be read */
	for (size_t len = 8; len >= 2 && !have; len--) {
		if (addr < len)
			continue;
		struct cs_error *err =
			cs_memory_read(mem, addr - len, b + 8 - len, len);
		cs_error_destroy(err);
		if (!err)
			have = len;
	}
	if (any && have >= 5 && b[3] == 0xe8)
		return true;
	for (size_t len = 2; len <= have; len++)
		if (indirect_call(b + 8 - len, len))
			return true;
	return false;
}

/* The frame-pointer chain from fp; see past_jit.h. */
static bool by_frame_pointers(const struct cs_past_jit_env *env, uint64_t sp,
			      uint64_t fp, struct cs_past_jit *ret)
{
	uint64_t floor = sp;
	ret->nframes = 0;
	for (size_t n = 0; n <= CS_PAST_JIT_MAX_FRAMES; n++) {
		uint64_t link, back;
		if (fp < floor || fp % 8 || !read_u64(env, fp, &link) ||
		    !read_u64(env, fp + 8, &back) || back == 0)
			return false;
		int jit = env->jit_code(env->ctx, back - 1);
		if (jit >= 0 && n < CS_PAST_JIT_MAX_FRAMES &&
		    cs_past_jit_after_call(env->mem, back, true)) {
			ret->frames[ret->nframes].pc = back;
			ret->frames[ret->nframes].sp = fp + 16;
			ret->frames[ret->nframes++].jit = jit;
			floor = fp + 16;
			fp = link;
			continue;
		}
		/* a first link out of JIT code: no frame record of its own */
		if (n == 0 || !env->module_code(env->ctx, back - 1) ||
		    !cs_past_jit_after_call(env->mem, back, false))
			return false;
		ret->how = CS_PAST_JIT_FRAME_POINTER;
		ret->pc = back;
		ret->sp = fp + 16;
		ret->fp = link;
		return true;
	}
	return false;
}

/* The first return address into a module above sp; see past_jit.h. */
static bool by_scan(const struct cs_past_jit_env *env, uint64_t sp, uint64_t fp,
		    bool fp_known, struct cs_past_jit *ret)
{
	ret->nframes = 0;
	for (uint64_t a = sp; a - sp < SCAN_BYTES; a += 8) {
		uint64_t w;
		if (!read_u64(env, a, &w))
			return false;
		if (w < 2 || !env->module_code(env->ctx, w - 1) ||
		    !cs_past_jit_after_call(env->mem, w, false))
			continue;
		ret->how = CS_PAST_JIT_SCAN;
		ret->pc = w;
		ret->sp = a + 8;
		/* JIT code that saved the caller's %rbp below the return
		 * address and pointed %rbp there (--yjit-perf) */
		uint64_t saved;
		if (fp_known && fp == a - 8 && read_u64(env, a - 8, &saved))
			fp = saved;
		ret->fp = fp;
		return true;
	}
	return false;
}

bool cs_past_jit_find(const struct cs_past_jit_env *env, uint64_t sp,
		      uint64_t fp, bool fp_known, struct cs_past_jit *ret,
		      char *why, size_t whylen)
{
	memset(ret, 0, sizeof(*ret));
	if ((fp_known && by_frame_pointers(env, sp, fp, ret)) ||
	    by_scan(env, sp, fp, fp_known, ret))
		return true;
	snprintf(why, whylen,
		 "no frame-pointer chain out of it, and no return address "
		 "into a module within %d bytes above its stack pointer "
		 "0x%llx",
		 SCAN_BYTES, (unsigned long long)sp);
	return false;
}
