/* What the kernel saves on a thread's stack when it delivers a signal
 * (x86-64 Linux, struct rt_sigframe): the interrupted registers and the
 * siginfo. A crash that went through a handler (Ruby's own SIGSEGV
 * handler) keeps the original fault only there. */
#ifndef CS_TARGET_SIGNAL_FRAME_H
#define CS_TARGET_SIGNAL_FRAME_H

#include <stdint.h>

#include "memory.h"
#include "target.h"

struct cs_signal_frame {
	struct cs_siginfo si; /* signo, code, errno, si_addr or si_pid */
	uint64_t regs[27];    /* interrupted registers, enum cs_reg order;
				* the segment registers other than fs/gs
				* base are not saved and stay 0 */
	uint64_t trapno, err; /* the CPU's trap number and error code */
};

/* The frame the signal trampoline's stack pointer sp points at (the
 * handler returned there: the kernel's ucontext, then the siginfo).
 * CS_ERR_FAULT when unreadable, CS_ERR_CORRUPT when the bytes are no
 * signal frame (a signal number out of range). */
struct cs_error *cs_signal_frame_read(const struct cs_memory *mem, uint64_t sp,
				      struct cs_signal_frame *ret);

#endif
