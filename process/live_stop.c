/* The live reader: stopping threads (PTRACE_SEIZE, PTRACE_INTERRUPT,
 * waiting for each stop with a deadline), taking their registers, and
 * letting them go again. */
#include "live_internal.h"

/* ---- signal handling (live_signal.c), by thread ---- */

static void cs_live_sig_unregister(struct cs_live_thread *t)
{
	cs_live_sig_slot_free(t->slot, t->pub.tid);
	t->slot = -1;
}

void cs_live_sig_arm(const struct cs_live_thread *t)
{
	cs_live_sig_slot_arm(t->slot, t->pub.tid, t->resig);
}

void cs_live_sig_disarm(const struct cs_live_thread *t)
{
	cs_live_sig_slot_disarm(t->slot, t->pub.tid);
}

static int cs_live_sig_released(const struct cs_live_thread *t)
{
	return cs_live_sig_slot_released(t->slot);
}

/* ---- stopping and resuming threads ---- */

static void cs_live_mark_gone(struct cs_live_thread *t)
{
	t->gone = 1;
	t->seized = t->stopped = t->listening = t->interrupted = 0;
	t->resig = t->group_stop = 0;
	cs_live_sig_unregister(t);
}

/* If the signal handler detached t (and a handler of the program kept us
 * alive), t runs untraced now: forget it as if it had exited, so that the
 * next pause seizes it again. 1 if so. */
int cs_live_check_released(struct cs_live_thread *t)
{
	if (!t->seized || !cs_live_sig_released(t))
		return 0;
	t->slot = -1; /* the handler freed it */
	cs_live_mark_gone(t);
	return 1;
}

static int cs_live_is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

/* Look once, without blocking, for news of seized thread t: 1 when it is
 * now in a ptrace-stop (report taken), -1 when it has exited or is no
 * longer ours, 0 when nothing yet. A dead thread is reaped (else it would
 * linger as our zombie and keep its process from being reaped), except
 * the main thread of our own child: that exit status belongs to the code
 * that forked it. WNOWAIT looks before taking. */
int cs_live_poll(struct cs_live *live, struct cs_live_thread *t)
{
	int tid = t->pub.tid, status;
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)tid, &si,
		   WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) != 0) {
		if (errno == EINTR)
			return 0;
		cs_live_mark_gone(t); /* ECHILD: no longer our tracee */
		return -1;
	}
	if (si.si_pid == 0)
		return 0;
	if (si.si_code == CLD_TRAPPED || si.si_code == CLD_STOPPED) {
		if (waitpid(tid, &status, WNOHANG | __WALL) != tid)
			return 0;
		if (WIFSTOPPED(status)) {
			int event = status >> 16, sig = WSTOPSIG(status);
			t->stopped = 1;
			t->listening = 0;
			/* A signal-delivery-stop took a signal from the
			 * thread: give it back on resume or detach. Our
			 * interrupt (and a group-stop) is PTRACE_EVENT_STOP
			 * and takes none; it carries SIGTRAP, or the stop
			 * signal while the process is in a group-stop. */
			t->resig = event == 0 ? sig : 0;
			t->group_stop =
				event == PTRACE_EVENT_STOP &&
						cs_live_is_stop_signal(sig)
					? sig
					: 0;
			cs_live_sig_arm(t);
			return 1;
		}
	} else if (!(tid == live->pid && live->we_are_parent)) {
		waitpid(tid, &status, WNOHANG | __WALL);
	}
	cs_live_mark_gone(t);
	return -1;
}

/* PTRACE_INTERRUPT t unless one may still be pending: an interrupt sent
 * while t is already in a stop would stop it again right after the next
 * PTRACE_CONT. ESRCH (it died) is for polling to find. */
int cs_live_interrupt(struct cs_live_thread *t)
{
	if (t->interrupted)
		return 0;
	if (ptrace(PTRACE_INTERRUPT, t->pub.tid, NULL, NULL) != 0 &&
	    errno != ESRCH)
		return errno;
	t->interrupted = 1;
	return 0;
}

/* Resume (PTRACE_DETACH) every seized thread, stopping first those that
 * run (only a stopped tracee can be detached). Bounded by
 * CS_LIVE_DETACH_MS. */
static void cs_live_release(struct cs_live *live)
{
	int64_t deadline = cs_live_now_ms() + CS_LIVE_DETACH_MS;
	long nap = 50;
	for (size_t i = 0; i < live->nwork; i++) {
		struct cs_live_thread *t = &live->work[i];
		if (t->seized && !t->stopped && !cs_live_check_released(t))
			cs_live_interrupt(t);
	}
	live->running = 0;
	for (;;) {
		size_t left = 0, progress = 0;
		for (size_t i = 0; i < live->nwork; i++) {
			struct cs_live_thread *t = &live->work[i];
			if (!t->seized)
				continue;
			if (cs_live_sig_released(t)) {
				t->seized = t->stopped = 0;
				t->slot = -1;
				continue;
			}
			if (t->stopped) {
				if (ptrace(PTRACE_DETACH, t->pub.tid, NULL,
					   (void *)(intptr_t)t->resig) == 0) {
					t->seized = t->stopped = 0;
					cs_live_sig_unregister(t);
					progress++;
					continue;
				}
				/* ESRCH: it left the stop (SIGKILL); find
				 * out how below. */
				t->stopped = 0;
			}
			int r = cs_live_poll(live, t);
			if (r < 0) {
				progress++;
			} else {
				progress += (size_t)r;
				left++;
			}
		}
		if (!left || cs_live_now_ms() >= deadline)
			break;
		if (!progress)
			cs_live_nap(&nap);
	}
	/* What is left is not stopped now; the kernel releases it when we
	 * exit, and the handler could do nothing more for it. */
	for (size_t i = 0; i < live->nwork; i++)
		cs_live_sig_unregister(&live->work[i]);
}

void cs_live_detach(struct cs_live *live)
{
	if (!live)
		return;
	if (live->attached) {
		cs_live_release(live);
		live->attached = 0;
		live->regions_fresh = 0;
	}
	if (live->sig_installed) {
		cs_live_sig_uninstall();
		live->sig_installed = 0;
	}
}

static int cs_live_cmp_work(const void *a, const void *b)
{
	const struct cs_live_thread *x = a, *y = b;
	return (x->pub.tid > y->pub.tid) - (x->pub.tid < y->pub.tid);
}

/* Among the first n threads of live->work, which are sorted. */
struct cs_live_thread *cs_live_find_work(struct cs_live *live, size_t n,
					 int tid)
{
	if (!n)
		return NULL; /* bsearch wants a non-null base */
	struct cs_live_thread key = {.pub.tid = tid};
	return bsearch(&key, live->work, n, sizeof(*live->work),
		       cs_live_cmp_work);
}

/* PTRACE_SEIZE and PTRACE_INTERRUPT thread t. A thread that exits first
 * is marked gone, not an error. */
static struct cs_error *cs_live_seize(struct cs_live *live,
				      struct cs_live_thread *t)
{
	int tid = t->pub.tid;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
		int e = errno;
		/* An exiting thread refuses tracing with EPERM too. */
		if (e == ESRCH ||
		    (e == EPERM && cs_live_is_dead_state(cs_live_thread_state(
					   live->pid, tid)))) {
			t->gone = 1;
			return NULL;
		}
		if (e == EPERM)
			return cs_live_denied(live->pid, tid);
		return cs_error_create(CS_ERR_OS,
				       "pid %d: PTRACE_SEIZE of thread %d: %s",
				       live->pid, tid, strerror(e));
	}
	t->seized = 1;
	t->slot = cs_live_sig_slot_take(tid);
	int e = cs_live_interrupt(t);
	if (e) {
		return cs_error_create(CS_ERR_OS,
				       "pid %d: PTRACE_INTERRUPT of thread %d: "
				       "%s",
				       live->pid, tid, strerror(e));
	}
	return NULL;
}

/* Wait until every seized thread is stopped or gone; timeout_ms is the
 * time the deadline allowed, for the message. While threads keep stopping
 * the deadline is at least timeout_ms away: tens of thousands of threads,
 * each to be woken and scheduled, take seconds to stop on a busy machine,
 * and what the deadline is for is a thread that does not stop at all. */
struct cs_error *cs_live_wait_stops(struct cs_live *live, int64_t deadline,
				    int timeout_ms)
{
	/* A thread stops within microseconds unless it is off a CPU: a
	 * sampler's pause waits for it, so start short. */
	long nap = 10;
	int64_t start = cs_live_now_us();
	for (;;) {
		struct cs_live_thread *late = NULL;
		int progress = 0;
		for (size_t i = 0; i < live->nwork; i++) {
			struct cs_live_thread *t = &live->work[i];
			if (!t->seized || t->stopped || !t->interrupted)
				continue;
			int r = cs_live_poll(live, t);
			/* a dead thread (a zombie whose exit we cannot take
			 * yet) never stops: not worth the wait. One live
			 * late thread is enough to wait: the others' state
			 * is not read (a file each, in a large process). */
			if (r == 0 && !late &&
			    !cs_live_is_dead_state(cs_live_thread_state(
				    live->pid, t->pub.tid)))
				late = t;
			else if (r > 0)
				t->slow_to_stop = cs_live_now_us() - start >
						  CS_LIVE_SLOW_STOP_US;
			progress |= r > 0;
		}
		if (!late)
			return NULL;
		int64_t now = cs_live_now_ms();
		if (progress && deadline < now + timeout_ms)
			deadline = now + timeout_ms;
		if (now >= deadline) {
			char state =
				cs_live_thread_state(live->pid, late->pub.tid);
			return cs_error_create(
				CS_ERR_LIMIT,
				"pid %d: thread %d did not stop "
				"within %d ms (state %c%s)",
				live->pid, late->pub.tid, timeout_ms,
				state ? state : '?',
				state == 'D' ? ": uninterruptible sleep" : "");
		}
		cs_live_nap(&nap);
	}
}

/* Seize every thread not seized yet, rescanning /proc/PID/task until a
 * scan, made with every known thread stopped or dead, shows no new one:
 * stopped threads cannot create more, so that is all of them. Threads
 * already seized must be stopped or dead already: one on its way to our
 * stop may still finish a clone (only a fatal signal aborts one). */
struct cs_error *cs_live_stop_all(struct cs_live *live, int64_t deadline,
				  int timeout_ms)
{
	int recounts = 0;
	for (int scan = 0;; scan++) {
		if (scan == CS_LIVE_MAX_SCANS) {
			return cs_error_create(CS_ERR_LIMIT,
					       "pid %d: new threads kept "
					       "appearing through %d scans "
					       "while stopping it",
					       live->pid, CS_LIVE_MAX_SCANS);
		}
		int *tids;
		size_t n;
		int e = cs_live_list_tasks(live->pid, &tids, &n);
		if (e == ENOENT || e == ESRCH)
			break; /* it died; said below */
		if (e)
			return cs_live_errno(live->pid, e, "listing threads");
		/* Threads added in this scan go after the sorted ones; the
		 * scan lists each tid once, so they need no lookup. */
		size_t known = live->nwork, fresh = 0;
		struct cs_error *err = NULL;
		for (size_t i = 0; i < n && !err; i++) {
			struct cs_live_thread *old =
				cs_live_find_work(live, known, tids[i]);
			if (old && !old->gone)
				continue;
			if (old) {
				/* One we saw exit: a zombie still listed, or
				 * a new thread that got its tid. Counted only
				 * once seized, so that a thread slow to leave
				 * the list cannot make us rescan forever. */
				if (cs_live_is_dead_state(cs_live_thread_state(
					    live->pid, tids[i])))
					continue;
				memset(old, 0, sizeof(*old));
				old->pub.tid = tids[i];
				old->slot = -1;
				err = cs_live_seize(live, old);
				fresh += (size_t)old->seized;
				continue;
			}
			/* A new one counts even if gone by now: it may have
			 * made a thread before exiting. */
			fresh++;
			if (live->nwork == CS_LIVE_MAX_THREADS) {
				err = cs_live_errno(live->pid, E2BIG, "");
				break;
			}
			if (live->nwork == live->work_cap) {
				size_t cap = live->work_cap ? live->work_cap * 2
							    : 16;
				struct cs_live_thread *w =
					realloc(live->work, cap * sizeof(*w));
				if (!w) {
					err = &cs_error_nomem;
					break;
				}
				live->work = w;
				live->work_cap = cap;
			}
			struct cs_live_thread *t = &live->work[live->nwork++];
			memset(t, 0, sizeof(*t));
			t->pub.tid = tids[i];
			t->slot = -1;
			err = cs_live_seize(live, t);
		}
		free(tids);
		/* sorted again for cs_live_find_work */
		if (live->nwork)
			qsort(live->work, live->nwork, sizeof(*live->work),
			      cs_live_cmp_work);
		if (err)
			return err;
		/* Reading /proc/PID/task while threads exit can skip live
		 * ones (the kernel resumes a listing by position). When a
		 * scan finds nothing new, every thread it lists is stopped
		 * or a zombie only we can reap, so the count, read before
		 * we reap anything, is at least the number listed, and more
		 * only if some thread was missed. A few recounts at most,
		 * in case the count cannot be trusted here. */
		int missed = 0;
		if (!fresh && recounts < 8) {
			struct cs_live_status st;
			missed = cs_live_read_status(live->pid, 0, &st) == 0 &&
				 st.threads > 0 && (size_t)st.threads > n;
			recounts += missed;
		}
		if (!fresh && !missed)
			break;
		err = cs_live_wait_stops(live, deadline, timeout_ms);
		if (err)
			return err;
	}
	return NULL;
}

/* Registers of each stopped thread, and the public thread list. */
struct cs_error *cs_live_take_threads(struct cs_live *live)
{
	_Static_assert(sizeof(struct user_regs_struct) ==
			       sizeof(((struct cs_thread *)0)->regs),
		       "user_regs_struct is the 27 registers of a core");
	free(live->tables.threads);
	live->tables.nthreads = 0;
	live->tables.threads = calloc(live->nwork ? live->nwork : 1,
				      sizeof(*live->tables.threads));
	if (!live->tables.threads)
		return &cs_error_nomem;
	size_t n = 0;
	for (size_t i = 0; i < live->nwork; i++) {
		struct cs_live_thread *t = &live->work[i];
		if (!t->stopped)
			continue;
		struct user_regs_struct regs;
		if (live->no_registers) {
			memset(t->pub.regs, 0, sizeof(t->pub.regs));
			t->pub.rip = t->pub.rsp = t->pub.rbp = 0;
			t->pub.fs_base = 0;
			t->pub.cursig = t->resig;
			live->tables.threads[n++] = t->pub;
			continue;
		}
		if (ptrace(PTRACE_GETREGS, t->pub.tid, NULL, &regs) != 0) {
			if (errno == ESRCH) {
				t->stopped = 0; /* killed: release reaps it */
				continue;
			}
			return cs_error_create(CS_ERR_OS,
					       "pid %d: PTRACE_GETREGS of "
					       "thread %d: %s",
					       live->pid, t->pub.tid,
					       strerror(errno));
		}
		memcpy(t->pub.regs, &regs, sizeof(regs));
		t->pub.rip = regs.rip;
		t->pub.rsp = regs.rsp;
		t->pub.rbp = regs.rbp;
		t->pub.fs_base = regs.fs_base;
		t->pub.cursig = t->resig;
		live->tables.threads[n++] = t->pub;
	}
	live->tables.nthreads = n;
	if (n == 0) {
		struct cs_live_status st;
		struct cs_error *err = cs_live_check_process(live->pid, 1, &st);
		if (err)
			return err;
		return cs_error_create(CS_ERR_OS,
				       "pid %d: no thread could be stopped",
				       live->pid);
	}
	return NULL;
}

/* Unpaused: tids only, exited threads left out. */
struct cs_error *cs_live_list_threads(struct cs_live *live)
{
	int *tids;
	size_t n;
	int e = cs_live_list_tasks(live->pid, &tids, &n);
	if (e == ENOENT || e == ESRCH)
		return cs_live_vanished(live->pid, 1);
	if (e)
		return cs_live_errno(live->pid, e, "listing threads");
	live->tables.threads = calloc(n ? n : 1, sizeof(*live->tables.threads));
	if (!live->tables.threads) {
		free(tids);
		return &cs_error_nomem;
	}
	for (size_t i = 0; i < n; i++) {
		if (!cs_live_is_dead_state(
			    cs_live_thread_state(live->pid, tids[i])))
			live->tables.threads[live->tables.nthreads++].tid =
				tids[i];
	}
	free(tids);
	if (live->tables.nthreads == 0)
		return cs_live_vanished(live->pid, 1);
	return NULL;
}

/* Main thread first (as a core lists the thread that crashed first),
 * then ascending tid: the list is already sorted by tid. */
void cs_live_order_threads(struct cs_live *live)
{
	for (size_t i = 1; i < live->tables.nthreads; i++) {
		if (live->tables.threads[i].tid != live->pid)
			continue;
		struct cs_thread main_thread = live->tables.threads[i];
		memmove(&live->tables.threads[1], &live->tables.threads[0],
			i * sizeof(*live->tables.threads));
		live->tables.threads[0] = main_thread;
		break;
	}
}

bool cs_live_thread_blocked(struct cs_live *live, int tid, uint64_t *mask)
{
	for (size_t i = 0; live->pause && live->attached && i < live->nwork;
	     i++)
		if (live->work[i].pub.tid == tid && live->work[i].stopped)
			return ptrace(PTRACE_GETSIGMASK, tid,
				      (void *)sizeof(*mask), mask) == 0;
	return false;
}
