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

/* What the crash was, as far as the core tells. */
enum cs_crash_kind {
	/* A signal the process sent itself, with no signal frame found
	 * and the stack not unwound whole (or a signal frame there that
	 * is not believed): a handler may have sent it after a fault
	 * whose record was not found. */
	CS_CRASH_UNKNOWN,
	/* A read or write at an address it cannot touch (SIGSEGV,
	 * SIGBUS). */
	CS_CRASH_MEMORY_ACCESS,
	/* The CPU fetched an instruction at a pc that is not code (a
	 * call through a NULL or data pointer). */
	CS_CRASH_EXECUTE,
	/* An access just below the stack the thread ran on: its guard. */
	CS_CRASH_STACK_OVERFLOW,
	/* Another fault the CPU raised (SIGILL, SIGFPE, SIGTRAP). */
	CS_CRASH_FAULT,
	/* The signal was sent by a process (abort, raise, kill). */
	CS_CRASH_SENT,
	/* No signal yet: Ruby is writing its bug report (rb_bug, a failed
	 * assertion), after which it aborts. */
	CS_CRASH_BUG,
};
/* "unknown", "memory_access", "execute", "stack_overflow", "fault",
 * "sent", "bug" */
const char *cs_crash_kind_name(enum cs_crash_kind kind);

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
	enum cs_crash_kind kind;
	/* CS_CRASH_EXECUTE: the frame whose call left the return address
	 * (the innermost inlined call at it, and the function holding
	 * them); CS_CRASH_BUG: the caller of the outermost bug reporter;
	 * NULL: unknown. */
	const struct cs_native_frame *called_from, *called_from_function;
	/* On a thread that runs no Ruby, a fault inside one module (libruby,
	 * for a C API call Ruby cannot serve on a thread it does not know):
	 * the first frame outward in another module but the C library's,
	 * the caller into it; NULL otherwise. */
	const struct cs_native_frame *entered_from, *entered_from_function;
	/* CS_CRASH_STACK_OVERFLOW: the stack the thread ran on, the
	 * writable region just above the fault address. */
	uint64_t stack_start, stack_end;
	/* The message the C library kept before it aborted (a failed
	 * assert, heap corruption: glibc's __abort_msg), without its final
	 * newline; NULL: none or unknown. */
	char *abort_message;
	/* When the process kept a message that cannot be read: why, and
	 * what to install (one line); NULL otherwise. */
	char *abort_message_error;
	/* The frame of the faulting pc (or, for a sent signal, of the
	 * call that sent it; for a bug report, of the outermost bug
	 * reporter) with the inlined calls at it: first is the innermost,
	 * function the one that holds them. NULL: unknown. */
	const struct cs_native_frame *at, *at_function;
	/* The core's own signal when a handler took the fault and then
	 * signalled again (Ruby's handler re-raises or aborts): who sent
	 * it, as above; NULL otherwise. */
	const struct cs_siginfo *core_signal;
	/* A process still running the handler of the fault (live, or a
	 * core gcore took of it: no fatal signal of its own): it had not
	 * ended yet. */
	bool handler_running;
	/* CS_CRASH_BUG: the report is still being written, as above. */
	bool reporting_bug;
	const struct cs_native_frame *resent_by;
	/* The innermost Ruby frame of the thread, or NULL. */
	const struct rv_frame *ruby;
	/* The fiber it ran when that is not the thread's root fiber (its
	 * frames are the thread's), or NULL. */
	const struct rv_fiber *fiber;
	char *error; /* NULL, or why the fault is not known */
};

/* The summary of a crash on si (a fatal signal) taken by the kernel
 * thread crash_tid (kt: its registers, or NULL), from nt, that thread's
 * native stack (NULL: unknown), the target img (its regions; NULL:
 * unknown), memory and p's thread tids[] (-1 unknown; tid_errors[i],
 * when set, means Ruby thread i is not believed to be it). Pointers
 * borrow from their arguments. si NULL: a process whose thread crash_tid
 * runs the handler of a fault (cs_crash_in_handler) or writes a bug
 * report (cs_crash_in_bug_report); *ret is NULL when neither is believed
 * after all. */
struct cs_error *cs_crash_find(const struct cs_siginfo *si, int64_t crash_tid,
			       const struct cs_thread *kt,
			       const struct cs_native_thread *nt,
			       const struct cs_target *img,
			       const struct cs_memory *mem,
			       const struct rv_process *p, const int64_t *tids,
			       char *const *tid_errors, struct cs_crash **ret);
void cs_crash_free(struct cs_crash *c);

/* Whether nt (a live thread's native stack) runs the handler of a signal
 * that crashes the process (cs_crash_handler_signal): its outermost
 * signal frame is believed and holds such a signal. */
bool cs_crash_in_handler(const struct cs_native_thread *nt,
			 const struct cs_memory *mem);
/* Whether nt (the native stack of a thread of a process with no fatal
 * signal) writes Ruby's bug report: it runs a bug reporter
 * (bug_reporters.h). */
bool cs_crash_in_bug_report(const struct cs_native_thread *nt);

#endif
