/* The crash scan (engine/crash_scan.c) on a target laid out by hand: a
 * thread's stack, the C library's code holding the signal trampoline
 * (mov $15, %rax; syscall) and its data. Only a return address of the
 * trampoline followed by a crash signal's frame, within 32 KiB of the
 * stack pointer and inside the stack's region, picks the thread; Ruby's
 * bug reporters need a Ruby (the crash tests run them). */
#include <signal.h>
#include <string.h>

#include "../../engine/crash_scan.h"
#include "check.h"

#define STACK 0x7f0000100000ull /* [STACK, STACK + STACK_SIZE) */
#define STACK_SIZE (64u << 10)
#define LIBC 0x7f0000400000ull /* code [LIBC, +4096), data the next page */
#define TRAMPOLINE (LIBC + 0x100)
#define NOT_TRAMPOLINE (LIBC + 0x200)
#define LIBC_DATA (LIBC + 4096 + 0x100)

static unsigned char stack[STACK_SIZE];
static unsigned char libc[8192];

static struct cs_error *read_memory(void *priv, uint64_t addr, void *buf,
				    size_t len)
{
	(void)priv;
	if (addr >= STACK && addr + len <= STACK + sizeof(stack)) {
		memcpy(buf, stack + (addr - STACK), len);
		return NULL;
	}
	if (addr >= LIBC && addr + len <= LIBC + sizeof(libc)) {
		memcpy(buf, libc + (addr - LIBC), len);
		return NULL;
	}
	return cs_error_create(CS_ERR_FAULT, "0x%llx unreadable",
			       (unsigned long long)addr);
}

static struct cs_mapping maps[] = {
	{LIBC, LIBC + 4096, 0, "/lib/x86_64-linux-gnu/libc.so.6"},
	{LIBC + 4096, LIBC + 8192, 4096, "/lib/x86_64-linux-gnu/libc.so.6"},
};
static struct cs_region regions[] = {
	{STACK, STACK + STACK_SIZE, true, false},
	{LIBC, LIBC + 4096, false, true},
	{LIBC + 4096, LIBC + 8192, true, false},
};
static const struct cs_target_ops ops = {.read = read_memory};
static struct cs_target_tables tables = {
	.maps = maps,
	.nmaps = 2,
	.regions = regions,
	.nregions = 3,
	.knows_regions = true,
	.has_registers = true,
};
static struct cs_target target = {.ops = &ops, .tables = &tables};

static const unsigned char code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
				     0x00, 0x00, 0x0f, 0x05};

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(stack + (addr - STACK), &v, sizeof(v));
}

/* At addr, the trampoline's return address word (or another), then the
 * kernel's frame: struct ucontext, the siginfo 304 bytes on. */
static void signal_frame_at(uint64_t addr, uint64_t word, int signo)
{
	put64(addr, word);
	int32_t s = signo;
	memcpy(stack + (addr + 8 - STACK) + 304, &s, sizeof(s));
}

static bool picked(uint64_t sp)
{
	struct cs_thread kt = {.tid = 7};
	kt.regs[CS_REG_RSP] = sp;
	struct cs_memory mem = {.read = read_memory};
	struct cs_crash_scan *s = cs_crash_scan_new(&target, NULL);
	CHECK(s != NULL, "no scan");
	bool yes = s && cs_crash_scan_thread(s, &mem, &kt);
	cs_crash_scan_free(s);
	return yes;
}

int main(void)
{
	memcpy(libc + (TRAMPOLINE - LIBC), code, sizeof(code));
	memcpy(libc + (LIBC_DATA - LIBC), code, sizeof(code));
	uint64_t sp = STACK + 0x1000;

	CHECK(!picked(sp), "an empty stack picked");

	signal_frame_at(sp + 0x200, TRAMPOLINE, SIGSEGV);
	CHECK(picked(sp), "the trampoline before a SIGSEGV frame not seen");
	CHECK(!picked(sp + 0x208), "a frame below the stack pointer seen");

	signal_frame_at(sp + 0x200, TRAMPOLINE, SIGCHLD);
	CHECK(!picked(sp), "a SIGCHLD handler's frame taken for a crash");
	signal_frame_at(sp + 0x200, TRAMPOLINE, SIGABRT);
	CHECK(picked(sp), "the trampoline before a SIGABRT frame not seen");

	signal_frame_at(sp + 0x200, NOT_TRAMPOLINE, SIGSEGV);
	CHECK(!picked(sp), "libc code that is no trampoline taken for it");
	signal_frame_at(sp + 0x200, LIBC_DATA, SIGSEGV);
	CHECK(!picked(sp), "the trampoline's bytes in libc's data taken");
	memset(stack, 0, sizeof(stack));

	/* 32 KiB up and no further */
	signal_frame_at(sp + CS_CRASH_SCAN_BYTES - 8, TRAMPOLINE, SIGSEGV);
	CHECK(picked(sp), "a frame at the end of the window not seen");
	memset(stack, 0, sizeof(stack));
	signal_frame_at(sp + CS_CRASH_SCAN_BYTES, TRAMPOLINE, SIGSEGV);
	CHECK(!picked(sp), "a frame past the window seen");

	/* the window ends with the stack's region; outside it, none */
	memset(stack, 0, sizeof(stack));
	signal_frame_at(STACK + STACK_SIZE - 0x200, TRAMPOLINE, SIGSEGV);
	CHECK(picked(STACK + STACK_SIZE - 0x1000), "near the stack's top");
	CHECK(!picked(STACK + STACK_SIZE + 0x1000), "a stack pointer in no "
						    "region scanned");
	CHECK(!picked(0) && !picked(sp + 3), "a null or unaligned stack "
					     "pointer scanned");
	return check_summary("crash_scan");
}
