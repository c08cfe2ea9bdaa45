#include "crash_signal.h"

#include <signal.h>
#include <stddef.h>

const struct cs_core_siginfo *cs_crash_signal(const struct cs_core_siginfo *si)
{
	static const int dumping[] = {SIGQUIT, SIGILL, SIGTRAP, SIGABRT,
				      SIGBUS,  SIGFPE, SIGSEGV, SIGXCPU,
				      SIGXFSZ, SIGSYS};
	for (size_t i = 0;
	     si && si->present && i < sizeof(dumping) / sizeof(*dumping); i++)
		if (si->signo == dumping[i])
			return si;
	return NULL;
}
