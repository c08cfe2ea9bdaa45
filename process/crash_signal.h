/* Whether a core's signal is why the process died. */
#ifndef CS_CORESTACK_CRASH_SIGNAL_H
#define CS_CORESTACK_CRASH_SIGNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "target.h"

/* A siginfo from its fields as the kernel writes them: signo, errno,
 * code, and the first word of the union that follows (8 bytes in host
 * order). The union holds a fault address only for a fault the kernel
 * raised (a fault's signal with si_code > 0), and the sender's pid only
 * for a signal a process sent (kill, tgkill, sigqueue, a message
 * queue); anything else there is left out. */
void cs_siginfo_set(struct cs_siginfo *si, int signo, int err, int code,
		    uint64_t union_word);

/* si when its signal is one whose default action dumps core, else NULL: a
 * core taken from a live process (gcore) records the signal of the
 * attach, SIGSTOP, which is not why the process stopped. Safe on NULL. */
const struct cs_siginfo *cs_crash_signal(const struct cs_siginfo *si);

/* The thread that took the fatal signal of tt->siginfo: the one whose
 * cursig (a core's NT_PRSTATUS) carries it, else the first (the kernel
 * lists the dumping thread first). -1 without a fatal signal. */
int64_t cs_tables_crash_tid(const struct cs_target_tables *tt);
/* Whether a debugger's stop on signo is a stop on a fatal signal: one
 * whose default action dumps core (cs_crash_signal), but SIGTRAP, how
 * debuggers stop at breakpoints and steps. */
bool cs_stop_signal_is_crash(int signo);

/* Whether a handler of signo running means the process is crashing: a
 * fault the CPU raised (SIGSEGV, SIGBUS, SIGILL, SIGFPE), an abort or a
 * bad system call. Ruby's SIGSEGV handler writes its crash report there,
 * and a process can hang in it. */
bool cs_crash_handler_signal(int signo);

/* Whether a thread that blocks mask (bit signo - 1) may be running such a
 * handler: a handler runs with its own signal blocked. Only a hint: a
 * thread may block every signal. */
bool cs_mask_blocks_crash_signal(uint64_t mask);

/* The name of a signal code (si_code), as <signal.h> spells it; NULL for
 * one it does not name. */
const char *cs_signal_code_name(int signo, int code);

#endif
