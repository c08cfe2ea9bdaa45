#include "crash_signal.h"

#include <signal.h>
#include <stddef.h>

const struct cs_siginfo *cs_crash_signal(const struct cs_siginfo *si)
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

int64_t cs_core_crash_tid(const struct cs_core *core)
{
	const struct cs_siginfo *si = cs_crash_signal(cs_core_siginfo(core));
	if (!si)
		return -1;
	for (size_t i = 0; i < cs_core_thread_count(core); i++)
		if (cs_core_thread_at(core, i)->cursig == si->signo)
			return cs_core_thread_at(core, i)->tid;
	return cs_core_thread_count(core) ? cs_core_thread_at(core, 0)->tid
					  : -1;
}
