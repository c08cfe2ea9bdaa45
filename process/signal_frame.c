#include "signal_frame.h"

#include "crash_signal.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/ucontext.h>

/* From the trampoline's stack pointer: the kernel's struct ucontext
 * (arch/x86/include/uapi/asm/ucontext.h: a one-word signal mask, not
 * glibc's ucontext_t), then the siginfo (struct rt_sigframe). mcontext_t
 * is laid out as the kernel's struct sigcontext. */
struct kernel_sigframe {
	uint64_t uc_flags, uc_link;
	stack_t uc_stack;
	mcontext_t uc_mcontext;
	uint64_t uc_sigmask;
	siginfo_t info;
};

_Static_assert(offsetof(struct kernel_sigframe, uc_mcontext) == 40,
	       "struct ucontext: uc_mcontext");
_Static_assert(offsetof(struct kernel_sigframe, info) == 304,
	       "struct rt_sigframe: info");
_Static_assert(offsetof(siginfo_t, si_addr) == 16, "siginfo_t: its union");

/* Whether the frame at sp could be read into f. */
static bool read_frame(const struct cs_memory *mem, uint64_t sp,
		       struct kernel_sigframe *f)
{
	struct cs_error *err = cs_memory_read(mem, sp, f, sizeof(*f));
	bool ok = !err;
	cs_error_destroy(err);
	return ok;
}

struct cs_error *cs_signal_frame_read(const struct cs_memory *mem, uint64_t sp,
				      struct cs_signal_frame *ret)
{
	struct kernel_sigframe f;
	memset(ret, 0, sizeof(*ret));
	if (!read_frame(mem, sp, &f))
		return cs_error_fault(sp,
				      "signal frame at 0x%llx "
				      "unreadable",
				      (unsigned long long)sp);
	if (f.info.si_signo <= 0 || f.info.si_signo >= 65)
		return cs_error_create(CS_ERR_CORRUPT,
				       "no signal frame at 0x%llx: signal "
				       "number %d",
				       (unsigned long long)sp, f.info.si_signo);
	uint64_t union_word;
	memcpy(&union_word, (const char *)&f.info + 16, sizeof(union_word));
	cs_siginfo_set(&ret->si, f.info.si_signo, f.info.si_errno,
		       f.info.si_code, union_word);
	static const struct {
		enum cs_reg to;
		int from;
	} map[] = {
		{CS_REG_R8, REG_R8},   {CS_REG_R9, REG_R9},
		{CS_REG_R10, REG_R10}, {CS_REG_R11, REG_R11},
		{CS_REG_R12, REG_R12}, {CS_REG_R13, REG_R13},
		{CS_REG_R14, REG_R14}, {CS_REG_R15, REG_R15},
		{CS_REG_RDI, REG_RDI}, {CS_REG_RSI, REG_RSI},
		{CS_REG_RBP, REG_RBP}, {CS_REG_RBX, REG_RBX},
		{CS_REG_RDX, REG_RDX}, {CS_REG_RAX, REG_RAX},
		{CS_REG_RCX, REG_RCX}, {CS_REG_RSP, REG_RSP},
		{CS_REG_RIP, REG_RIP}, {CS_REG_EFLAGS, REG_EFL},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(*map); i++)
		ret->regs[map[i].to] =
			(uint64_t)f.uc_mcontext.gregs[map[i].from];
	ret->trapno = (uint64_t)f.uc_mcontext.gregs[REG_TRAPNO];
	ret->err = (uint64_t)f.uc_mcontext.gregs[REG_ERR];
	return NULL;
}
