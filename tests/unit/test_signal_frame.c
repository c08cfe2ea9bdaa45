/* The kernel's signal frame (process/signal_frame.c) read from bytes laid
 * out by hand at the offsets of arch/x86/include/uapi/asm/sigcontext.h and
 * ucontext.h: struct ucontext's uc_mcontext at 40 (r8 first, rip the 17th
 * word), the siginfo at 304 (si_signo, si_errno, si_code, then si_addr at
 * 16). */
#include <signal.h>
#include <string.h>

#include "../../process/signal_frame.h"
#include "check.h"

#define BASE 0x7f0000001000ull

static unsigned char stack[512];

static struct cs_error *read_stack(void *priv, uint64_t addr, void *buf,
				   size_t len)
{
	(void)priv;
	if (addr < BASE || addr + len > BASE + sizeof(stack))
		return cs_error_create(CS_ERR_FAULT, "0x%llx unreadable",
				       (unsigned long long)addr);
	memcpy(buf, stack + (addr - BASE), len);
	return NULL;
}

static void put64(size_t off, uint64_t v)
{
	memcpy(stack + off, &v, sizeof(v));
}

static void put32(size_t off, int32_t v)
{
	memcpy(stack + off, &v, sizeof(v));
}

int main(void)
{
	struct cs_memory mem = {.read = read_stack};
	struct cs_signal_frame f;
	for (int i = 0; i < 16; i++) /* r8 .. rsp */
		put64(40 + 8 * (size_t)i, 0x1000 + (uint64_t)i);
	put64(40 + 16 * 8, 0x7f00deadbeef); /* rip */
	put32(304, SIGSEGV);
	put32(312, SEGV_MAPERR);
	put64(320, 0x1008);
	struct cs_error *err = cs_signal_frame_read(&mem, BASE, &f);
	CHECK(!err, "read: %s", err ? err->message : "");
	CHECK(f.si.present && f.si.signo == SIGSEGV &&
		      f.si.code == SEGV_MAPERR && f.si.addr == 0x1008,
	      "siginfo %d %d 0x%llx", f.si.signo, f.si.code,
	      (unsigned long long)f.si.addr);
	CHECK(f.regs[CS_REG_RIP] == 0x7f00deadbeef, "rip 0x%llx",
	      (unsigned long long)f.regs[CS_REG_RIP]);
	CHECK(f.regs[CS_REG_R8] == 0x1000 && f.regs[CS_REG_RSP] == 0x100f &&
		      f.regs[CS_REG_RAX] == 0x100d,
	      "r8 0x%llx rsp 0x%llx rax 0x%llx",
	      (unsigned long long)f.regs[CS_REG_R8],
	      (unsigned long long)f.regs[CS_REG_RSP],
	      (unsigned long long)f.regs[CS_REG_RAX]);
	CHECK(f.si.pid == 0, "a fault has no sender: %d", f.si.pid);
	cs_error_destroy(err);

	/* a signal tgkill sent: the union holds pid and uid, no address */
	put32(312, SI_TKILL);
	put64(320, (uint64_t)1000 << 32 | 4242);
	err = cs_signal_frame_read(&mem, BASE, &f);
	CHECK(!err && f.si.pid == 4242 && f.si.addr == 0,
	      "sent: pid %d, address 0x%llx", f.si.pid,
	      (unsigned long long)f.si.addr);
	cs_error_destroy(err);
	/* a timer's signal keeps its timer there, not a pid */
	put32(312, SI_TIMER);
	err = cs_signal_frame_read(&mem, BASE, &f);
	CHECK(!err && f.si.pid == 0 && f.si.addr == 0,
	      "timer: pid %d, address 0x%llx", f.si.pid,
	      (unsigned long long)f.si.addr);
	cs_error_destroy(err);

	put32(304, 0); /* no signal: not a signal frame */
	err = cs_signal_frame_read(&mem, BASE, &f);
	CHECK(err && err->code == CS_ERR_CORRUPT, "signal 0 taken");
	cs_error_destroy(err);

	err = cs_signal_frame_read(&mem, BASE + 300, &f); /* runs off */
	CHECK(err && err->code == CS_ERR_FAULT, "a frame past memory taken");
	cs_error_destroy(err);
	return check_summary("signal_frame");
}
