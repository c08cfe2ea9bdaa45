/* The way past JIT code (engine/past_jit.c) on memory laid out by hand:
 * a module's code, JIT code and a thread's stack, the call instructions
 * their return addresses follow written as x86-64 encodes them. */
#include <string.h>

#include "../../engine/past_jit.h"
#include "check.h"

#define MODULE 0x400000ull
#define JIT 0x500000ull
#define STACK 0x7f0000000000ull
#define AREA 0x1000

static unsigned char module[AREA], jit[AREA], stack[AREA];

static struct cs_error *read_mem(void *priv, uint64_t addr, void *buf,
				 size_t len)
{
	(void)priv;
	static unsigned char *const areas[] = {module, jit, stack};
	static const uint64_t bases[] = {MODULE, JIT, STACK};
	for (int i = 0; i < 3; i++)
		if (addr >= bases[i] && addr + len <= bases[i] + AREA) {
			memcpy(buf, areas[i] + (addr - bases[i]), len);
			return NULL;
		}
	return cs_error_create(CS_ERR_FAULT, "0x%llx unreadable",
			       (unsigned long long)addr);
}

static bool module_code(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= MODULE && addr < MODULE + AREA;
}

static int jit_code(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= JIT && addr < JIT + AREA ? 0 : -1;
}

static const struct cs_memory mem = {.read = read_mem};

/* bytes at area + off, the address just past them */
static uint64_t code_at(unsigned char *area, uint64_t base, size_t off,
			const char *bytes, size_t n)
{
	memcpy(area + off, bytes, n);
	return base + off + n;
}

static void put(uint64_t addr, uint64_t v)
{
	memcpy(stack + (addr - STACK), &v, sizeof(v));
}

static void decoding(void)
{
	static const struct {
		const char *bytes;
		size_t n;
		bool indirect, any;
	} cases[] = {
		{"\xff\xd0", 2, true, true},             /* call *%rax */
		{"\x41\xff\xd5", 3, true, true},         /* call *%r13 */
		{"\xff\x55\x08", 3, true, true},         /* call *8(%rbp) */
		{"\xff\x14\x24", 3, true, true},         /* call *(%rsp) */
		{"\x41\xff\x54\x24\x10", 5, true, true}, /* call *16(%r12) */
		{"\xff\x15\x10\x20\x30\x00", 6, true, true}, /* *x(%rip) */
		{"\xff\x94\x24\x00\x01\x00\x00", 7, true, true},
		{"\x3e\xff\xd0", 3, true, true},          /* notrack call */
		{"\xe8\x10\x20\x30\x00", 5, false, true}, /* call rel32 */
		{"\x48\x89\xc7", 3, false, false},        /* mov %rax,%rdi */
		{"\xff\xe0", 2, false, false},            /* jmp *%rax */
		{"\xff\x55", 2, false, false},            /* cut short */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		memset(module, 0x90, sizeof(module));
		uint64_t ret = code_at(module, MODULE, 0x100, cases[i].bytes,
				       cases[i].n);
		bool ind = cs_past_jit_after_call(&mem, ret, false);
		bool any = cs_past_jit_after_call(&mem, ret, true);
		CHECK(ind == cases[i].indirect && any == cases[i].any,
		      "case %zu: indirect %d, any %d", i, ind, any);
	}
}

int main(void)
{
	decoding();
	struct cs_past_jit_env env = {
		.mem = &mem,
		.module_code = module_code,
		.jit_code = jit_code,
		.stack_lo = STACK,
		.stack_hi = STACK + AREA,
	};
	struct cs_past_jit p;
	char why[160];

	/* No frame pointer (YJIT): above sp, a VALUE, a JIT address, a module
	 * address after no call, then the return after call *%rax. */
	memset(module, 0x90, sizeof(module));
	memset(stack, 0, sizeof(stack));
	uint64_t not_call = MODULE + 0x40;
	uint64_t back = code_at(module, MODULE, 0x200, "\xff\xd0", 2);
	uint64_t sp = STACK + 0x100;
	put(sp, 0x7f00aa000014);
	put(sp + 8, JIT + 0x80);
	put(sp + 16, not_call);
	put(sp + 24, back);
	bool ok = cs_past_jit_find(&env, sp, STACK + 0x800, true, &p, why,
				   sizeof(why));
	CHECK(ok && p.how == CS_PAST_JIT_SCAN && p.pc == back &&
		      p.sp == sp + 32 && p.fp == STACK + 0x800 && !p.nframes,
	      "scan: ok %d how %d pc 0x%llx sp 0x%llx fp 0x%llx", ok, p.how,
	      (unsigned long long)p.pc, (unsigned long long)p.sp,
	      (unsigned long long)p.fp);

	/* --yjit-perf: %rbp points just below the return address, at the
	 * caller's %rbp the JIT code saved. */
	put(sp + 16, STACK + 0x900);
	ok = cs_past_jit_find(&env, sp, sp + 16, true, &p, why, sizeof(why));
	CHECK(ok && p.how == CS_PAST_JIT_SCAN && p.fp == STACK + 0x900,
	      "saved rbp: ok %d fp 0x%llx", ok, (unsigned long long)p.fp);

	/* A %rbp the JIT never set: its chain would lead into a module at
	 * once (the caller's caller), so the scan decides. */
	uint64_t far = code_at(module, MODULE, 0x300, "\xff\xd2", 2);
	put(STACK + 0x400, 0);
	put(STACK + 0x408, far);
	ok = cs_past_jit_find(&env, sp, STACK + 0x400, true, &p, why,
			      sizeof(why));
	CHECK(ok && p.how == CS_PAST_JIT_SCAN && p.pc == back,
	      "foreign rbp: ok %d how %d pc 0x%llx", ok, p.how,
	      (unsigned long long)p.pc);

	/* Frame pointers (ZJIT): two JIT frames, then the C caller. */
	memset(stack, 0, sizeof(stack));
	uint64_t jit_ret = code_at(jit, JIT, 0x100, "\xe8\x00\x01\x00\x00", 5);
	uint64_t tramp_ret = code_at(jit, JIT, 0x300, "\x41\xff\xd2", 3);
	uint64_t fp1 = STACK + 0x200, fp2 = STACK + 0x280, fp3 = STACK + 0x300;
	put(sp, back); /* a stale return into the module below fp1 */
	put(fp1, fp2);
	put(fp1 + 8, jit_ret);
	put(fp2, fp3);
	put(fp2 + 8, tramp_ret);
	put(fp3, STACK + 0xa00);
	put(fp3 + 8, far);
	ok = cs_past_jit_find(&env, sp, fp1, true, &p, why, sizeof(why));
	CHECK(ok && p.how == CS_PAST_JIT_FRAME_POINTER && p.nframes == 2 &&
		      p.frames[0].pc == jit_ret && p.frames[0].sp == fp1 + 16 &&
		      p.frames[1].pc == tramp_ret && p.pc == far &&
		      p.sp == fp3 + 16 && p.fp == STACK + 0xa00,
	      "chain: ok %d how %d frames %zu pc 0x%llx sp 0x%llx fp 0x%llx",
	      ok, p.how, p.nframes, (unsigned long long)p.pc,
	      (unsigned long long)p.sp, (unsigned long long)p.fp);

	/* A chain that goes down the stack is no chain: the scan finds the
	 * stale return address instead. */
	put(fp2, fp1);
	ok = cs_past_jit_find(&env, sp, fp1, true, &p, why, sizeof(why));
	CHECK(ok && p.how == CS_PAST_JIT_SCAN && p.pc == back,
	      "loop: ok %d how %d", ok, p.how);

	/* Nothing leads out: false, and why. */
	memset(stack, 0, sizeof(stack));
	why[0] = 0;
	ok = cs_past_jit_find(&env, sp, 0, false, &p, why, sizeof(why));
	CHECK(!ok && strstr(why, "no return address"), "none: ok %d why '%s'",
	      ok, why);
	/* nor out of the stack */
	ok = cs_past_jit_find(&env, STACK + AREA - 8, STACK + AREA, true, &p,
			      why, sizeof(why));
	CHECK(!ok, "edge: ok %d", ok);
	return check_summary("test_past_jit");
}
