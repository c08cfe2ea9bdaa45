/* A crash summary: which thread took the fatal signal, the original fault
 * (from the signal frame on its stack when a handler ran, else the core's
 * own signal), the native function and module that faulted, the Ruby
 * method that called it, and what the core was written on and why. */
#ifndef CS_CORESTACK_CRASH_H
#define CS_CORESTACK_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../rubyvm/model.h"
#include "../process/signal_frame.h"
#include "native.h"

struct cs_crash {
	int64_t tid;
	/* the Ruby thread that took it (index), or -1: it runs no Ruby */
	long thread;
	/* The original fault: a signal frame's siginfo and registers when
	 * a handler ran, else the core's signal and the thread's registers. */
	struct cs_signal_frame fault;
	bool from_signal_frame;
	bool regs_known;
	/* The signal was sent by a process (abort, raise, kill), not by
	 * the CPU: there is no fault address. */
	bool sent;
	/* The frame of the faulting pc (or, for a sent signal, of the
	 * call that sent it) with the inlined calls at it: first is the
	 * innermost, function the one that holds them. NULL: unknown. */
	const struct cs_native_frame *at, *at_function;
	/* The core's own signal when a handler took the fault and then
	 * signalled again (Ruby's handler re-raises or aborts): who sent
	 * it, as above; NULL otherwise. */
	const struct cs_siginfo *core_signal;
	const struct cs_native_frame *resent_by;
	/* The innermost Ruby frame of the thread, or NULL. */
	const struct rv_frame *ruby;
	char *error; /* NULL, or why the fault is not known */
};

/* The summary of a crash on si (a fatal signal) taken by the kernel
 * thread crash_tid (kt: its registers, or NULL), from nt, that thread's
 * native stack (NULL: unknown), memory and p's thread tids[] (-1 unknown;
 * tid_errors[i], when set, means Ruby thread i is not believed to be
 * it). Pointers borrow from their arguments. */
struct cs_error *cs_crash_find(const struct cs_siginfo *si, int64_t crash_tid,
			       const struct cs_thread *kt,
			       const struct cs_native_thread *nt,
			       const struct cs_memory *mem,
			       const struct rv_process *p, const int64_t *tids,
			       char *const *tid_errors, struct cs_crash **ret);
void cs_crash_free(struct cs_crash *c);

#endif
