/* Signs that a thread is crashing, read from the top of its stack without
 * unwinding it. A live process (or a core gcore took of it) has no fatal
 * signal of its own while a thread writes Ruby's bug report (rb_bug, a
 * failed assertion) or runs the handler of a fault that does not block
 * the fault's signal (SA_NODEFER): the blocked signal mask, the cheap
 * sign of a fault's handler, misses both. Unwinding every thread to look
 * would cost the DWARF of every module on every run; the words just
 * above each stack pointer cost a read. A sign only picks the threads to
 * unwind: what the unwound stack shows decides. */
#ifndef CS_ENGINE_CRASH_SCAN_H
#define CS_ENGINE_CRASH_SCAN_H

#include <stdbool.h>

#include "../process/memory.h"
#include "../process/target.h"
#include "vm_module.h"

/* How far above its stack pointer a thread's stack is read: past the
 * frames of a report being written (stdio's unbuffered printing alone
 * keeps an 8 KiB buffer on the stack). */
#define CS_CRASH_SCAN_BYTES (32u << 10)

struct cs_crash_scan;

/* A scan of t's threads; the VM module vm says where Ruby's bug
 * reporters are (bug_reporters.h). NULL: out of memory. */
struct cs_crash_scan *cs_crash_scan_new(const struct cs_target *t,
					const struct cs_vm_module *vm);
void cs_crash_scan_free(struct cs_crash_scan *s);

/* Whether the CS_CRASH_SCAN_BYTES above kt's stack pointer (those that
 * can be read) hold a return address into one of Ruby's bug reporters,
 * or the return address the kernel leaves for a signal handler (the
 * signal trampoline, x86-64 Linux: the code of rt_sigreturn) followed by
 * a signal frame of a signal whose handler means a crash
 * (cs_crash_handler_signal). */
bool cs_crash_scan_thread(struct cs_crash_scan *s, const struct cs_memory *mem,
			  const struct cs_thread *kt);

#endif
