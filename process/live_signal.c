/* Resuming stopped threads from a signal handler. See live_signal.h.
 *
 * The only global mutable state of the live target. A slot holds 0 when
 * free, -tid while the thread is seized but not in a stop we took, tid
 * while it is stopped by us; each is one sig_atomic_t store, so the
 * handler never sees half a slot. */
#include "live_signal.h"
#include "live.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

/* As many slots as a process may have threads for us: static, so that the
 * handler needs no allocation and attaching has none to fail. 800 KB of
 * zero-filled .bss: the kernel gives a page memory only once a slot in it
 * is written, so a process of a few threads pays a page, one of 100,000
 * threads 8 bytes a thread (less than its entry in the thread list). */
static volatile struct {
	sig_atomic_t tid;
	sig_atomic_t resig;
} cs_live_sig_slots[CS_LIVE_MAX_THREADS];
/* Slots ever taken: the handler looks at these only, so its cost follows
 * the largest process attached, not the bound. */
static volatile sig_atomic_t cs_live_sig_used;
static size_t cs_live_sig_free_hint; /* no free slot below this */
static const int cs_live_sig_nums[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction cs_live_sig_old[3]; /* what we replaced */
static int cs_live_sig_ours[3];             /* we replaced it */
static int cs_live_sig_users;               /* attachments using them */

static void cs_live_on_signal(int sig)
{
	int saved = errno;
	size_t used = (size_t)cs_live_sig_used;
	for (size_t i = 0; i < used; i++) {
		int tid = cs_live_sig_slots[i].tid;
		if (tid <= 0)
			continue;
		/* raw syscall: the libc wrapper is not on any safe list. A
		 * thread not stopped yet refuses; its slot stays for
		 * cs_live_detach (and the kernel frees it if we die). */
		if (syscall(SYS_ptrace, PTRACE_DETACH, tid, 0,
			    (long)cs_live_sig_slots[i].resig) == 0)
			cs_live_sig_slots[i].tid = 0;
	}
	/* Let the previous disposition have the signal: the default one
	 * kills us, as it would have without us. */
	for (size_t k = 0; k < 3; k++) {
		if (cs_live_sig_nums[k] == sig && cs_live_sig_ours[k])
			sigaction(sig, &cs_live_sig_old[k], NULL);
	}
	raise(sig); /* blocked until we return */
	errno = saved;
}

void cs_live_sig_install(void)
{
	if (cs_live_sig_users++ > 0)
		return;
	for (size_t k = 0; k < 3; k++) {
		struct sigaction cur;
		cs_live_sig_ours[k] = 0;
		if (sigaction(cs_live_sig_nums[k], NULL, &cur) != 0)
			continue;
		/* An ignored signal does not kill us: nothing to undo. */
		if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
			continue;
		cs_live_sig_old[k] = cur;
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = cs_live_on_signal;
		sigemptyset(&sa.sa_mask);
		for (size_t j = 0; j < 3; j++)
			sigaddset(&sa.sa_mask, cs_live_sig_nums[j]);
		sa.sa_flags = SA_RESTART;
		if (sigaction(cs_live_sig_nums[k], &sa, NULL) == 0)
			cs_live_sig_ours[k] = 1;
	}
}

void cs_live_sig_uninstall(void)
{
	if (cs_live_sig_users == 0 || --cs_live_sig_users > 0)
		return;
	for (size_t k = 0; k < 3; k++) {
		struct sigaction cur;
		if (!cs_live_sig_ours[k])
			continue;
		cs_live_sig_ours[k] = 0;
		/* Leave alone a handler installed after ours, or the old one
		 * our handler already put back. */
		if (sigaction(cs_live_sig_nums[k], NULL, &cur) == 0 &&
		    !(cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_handler == cs_live_on_signal)
			sigaction(cs_live_sig_nums[k], &cs_live_sig_old[k],
				  NULL);
	}
}

int cs_live_sig_slot_take(int tid)
{
	for (size_t i = cs_live_sig_free_hint; i < CS_LIVE_MAX_THREADS; i++) {
		if (cs_live_sig_slots[i].tid == 0) {
			cs_live_sig_slots[i].resig = 0;
			if ((size_t)cs_live_sig_used <= i)
				cs_live_sig_used = (sig_atomic_t)(i + 1);
			cs_live_sig_slots[i].tid = -tid;
			cs_live_sig_free_hint = i + 1;
			return (int)i;
		}
	}
	return -1;
}

void cs_live_sig_slot_free(int slot, int tid)
{
	if (slot < 0)
		return;
	if (cs_live_sig_slots[slot].tid == tid ||
	    cs_live_sig_slots[slot].tid == -tid)
		cs_live_sig_slots[slot].tid = 0;
	if ((size_t)slot < cs_live_sig_free_hint)
		cs_live_sig_free_hint = (size_t)slot;
}

/* resig first: the handler reads the tid, then the signal */
void cs_live_sig_slot_arm(int slot, int tid, int resig)
{
	if (slot < 0)
		return;
	cs_live_sig_slots[slot].resig = resig;
	cs_live_sig_slots[slot].tid = tid;
}

void cs_live_sig_slot_disarm(int slot, int tid)
{
	if (slot >= 0 && cs_live_sig_slots[slot].tid == tid)
		cs_live_sig_slots[slot].tid = -tid;
}

int cs_live_sig_slot_released(int slot)
{
	return slot >= 0 && cs_live_sig_slots[slot].tid == 0;
}
