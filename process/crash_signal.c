#include "crash_signal.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

void cs_siginfo_set(struct cs_siginfo *si, int signo, int err, int code,
		    uint64_t union_word)
{
	*si = (struct cs_siginfo){
		.present = 1, .signo = signo, .err = err, .code = code};
	bool fault = signo == SIGSEGV || signo == SIGBUS || signo == SIGILL ||
		     signo == SIGFPE;
	if (fault && code > 0)
		si->addr = union_word;
	/* si_pid, then si_uid; SI_TIMER, SI_ASYNCIO and SI_SIGIO keep other
	 * things there */
	if (code == SI_USER || code == SI_QUEUE || code == SI_TKILL ||
	    code == SI_MESGQ)
		si->pid = (int)(uint32_t)union_word;
}

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

int64_t cs_tables_crash_tid(const struct cs_target_tables *tt)
{
	const struct cs_siginfo *si = cs_crash_signal(tt->siginfo);
	if (!si)
		return -1;
	for (size_t i = 0; i < tt->nthreads; i++)
		if (tt->threads[i].cursig == si->signo)
			return tt->threads[i].tid;
	return tt->nthreads ? tt->threads[0].tid : -1;
}

bool cs_stop_signal_is_crash(int signo)
{
	struct cs_siginfo si = {.present = 1, .signo = signo};
	return signo != SIGTRAP && cs_crash_signal(&si);
}

bool cs_crash_handler_signal(int signo)
{
	return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL ||
	       signo == SIGFPE || signo == SIGABRT || signo == SIGSYS;
}

bool cs_mask_blocks_crash_signal(uint64_t mask)
{
	for (int signo = 1; signo <= 64; signo++)
		if ((mask >> (signo - 1) & 1) && cs_crash_handler_signal(signo))
			return true;
	return false;
}

/* t[code] of a table of n names, NULL outside it or for no name. */
static const char *pick(const char *const *t, size_t n, int code)
{
	return code > 0 && (size_t)code < n ? t[code] : NULL;
}

const char *cs_signal_code_name(int signo, int code)
{
	switch (code) {
	case SI_USER:
		return "SI_USER";
	case SI_KERNEL:
		return "SI_KERNEL";
	case SI_QUEUE:
		return "SI_QUEUE";
	case SI_TKILL:
		return "SI_TKILL";
	default:
		break;
	}
	static const char *const segv[] = {NULL, "SEGV_MAPERR", "SEGV_ACCERR",
					   "SEGV_BNDERR", "SEGV_PKUERR"};
	static const char *const bus[] = {NULL, "BUS_ADRALN", "BUS_ADRERR",
					  "BUS_OBJERR"};
	static const char *const ill[] = {NULL,         "ILL_ILLOPC",
					  "ILL_ILLOPN", "ILL_ILLADR",
					  "ILL_ILLTRP", "ILL_PRVOPC",
					  "ILL_PRVREG", "ILL_COPROC",
					  "ILL_BADSTK"};
	static const char *const fpe[] = {NULL,         "FPE_INTDIV",
					  "FPE_INTOVF", "FPE_FLTDIV",
					  "FPE_FLTOVF", "FPE_FLTUND",
					  "FPE_FLTRES", "FPE_FLTINV",
					  "FPE_FLTSUB"};
#define PICK(t) pick((t), sizeof(t) / sizeof(*(t)), code)
	switch (signo) {
	case SIGSEGV:
		return PICK(segv);
	case SIGBUS:
		return PICK(bus);
	case SIGILL:
		return PICK(ill);
	case SIGFPE:
		return PICK(fpe);
	default:
		return NULL;
	}
#undef PICK
}
