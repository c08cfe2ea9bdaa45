/* Whether a core's signal is why the process died. */
#ifndef CS_CORESTACK_CRASH_SIGNAL_H
#define CS_CORESTACK_CRASH_SIGNAL_H

#include "core.h"

/* si when its signal is one whose default action dumps core, else NULL: a
 * core taken from a live process (gcore) records the signal of the
 * attach, SIGSTOP, which is not why the process stopped. Safe on NULL. */
const struct cs_core_siginfo *cs_crash_signal(const struct cs_core_siginfo *si);

#endif
