/* The live reader: attaching, closing, and pausing and resuming an
 * attached process between samples. */
#include "live_internal.h"

static struct cs_error *cs_live_stop_error(const struct cs_live *live,
					   struct cs_error *err);

/* ---- public ---- */

struct cs_error *cs_live_attach(int pid, int pause, struct cs_live **ret)
{
	*ret = NULL;
	if (pid <= 0)
		return cs_error_create(CS_ERR_USAGE, "invalid pid %d", pid);
	if (pause && pid == getpid()) {
		return cs_error_create(CS_ERR_USAGE,
				       "pid %d is corestack itself, which "
				       "cannot stop itself",
				       pid);
	}
	struct cs_live_status st;
	struct cs_error *err = cs_live_check_process(pid, 0, &st);
	if (err)
		return err;
	/* Before stopping anything: a tracer makes the attach fail anyway. */
	if (pause && st.tracer)
		return cs_live_traced_error(pid, 0, st.tracer);
	struct cs_live *live = calloc(1, sizeof(*live));
	if (!live)
		return &cs_error_nomem;
	live->pid = pid;
	snprintf(live->name, sizeof(live->name), "process %d", pid);
	live->pause = pause;
	live->tables.has_registers = pause;
	live->tables.pid = pid;
	live->tables.crash_tid = -1;
	live->tables.knows_regions = true;
	live->memfd = -1;
	live->we_are_parent = st.ppid == getpid();
	if (pause) {
		/* Handlers first: a ^C while attaching must resume too. */
		cs_live_sig_install();
		live->sig_installed = 1;
		live->attached = 1;
		err = cs_live_stop_all(live,
				       cs_live_now_ms() + CS_LIVE_ATTACH_MS,
				       CS_LIVE_ATTACH_MS);
		if (!err)
			err = cs_live_take_threads(live);
		err = cs_live_stop_error(live, err);
	} else {
		err = cs_live_list_threads(live);
	}
	if (!err && live->tables.nthreads == 0)
		err = cs_live_vanished(pid, 1); /* both lists ensure not */
	if (!err) {
		cs_live_order_threads(live);
		live->mem_tid = live->tables.threads[0].tid;
		snprintf(live->procdir, sizeof(live->procdir),
			 "/proc/%d/task/%d", pid, live->mem_tid);
		err = cs_live_read_proc(live);
	}
	if (!err && !pause) {
		/* Without ptrace, permission shows only when reading. */
		uint64_t probe = cs_tables_auxv(&live->tables, AT_PHDR);
		if (!probe && live->tables.nmaps)
			probe = live->tables.maps[0].start;
		uint8_t byte;
		struct cs_error *e = probe ? cs_live_read(live, probe, &byte, 1)
					   : NULL;
		if (e && e->code != CS_ERR_FAULT)
			err = e;
		else
			cs_error_destroy(e);
	}
	if (err) {
		cs_live_close(live);
		return err;
	}
	*ret = live;
	return NULL;
}

void cs_live_close(struct cs_live *live)
{
	if (!live)
		return;
	cs_live_detach(live);
	for (size_t i = 0; i < live->tables.nmaps; i++)
		free((char *)live->tables.maps[i].path);
	free(live->tables.maps);
	free(live->tables.regions);
	free(live->work);
	free(live->tables.threads);
	free(live->auxv);
	free(live->exe);
	free(live->cmd);
	free(live->cwd);
	if (live->memfd >= 0)
		close(live->memfd);
	free(live);
}

/* ---- pausing and resuming an attached process ----
 *
 * No ptrace options are set: a thread created while the process runs is
 * not traced (PTRACE_O_TRACECLONE would stop every thread that creates
 * one until we answer, and between samples we do not), so each pause
 * finds new threads by rescanning /proc/PID/task, as attach does. A
 * traced thread that gets a signal while running stops in a
 * signal-delivery-stop until the next pause takes its report; the next
 * resume hands the signal on. One that enters a group-stop (SIGSTOP) is
 * let go with PTRACE_LISTEN, which keeps it stopped until SIGCONT. */

/* Drop the threads that exited (or were never seized) from live->work,
 * keeping it sorted: their tids may come back as new threads. */
static void cs_live_compact(struct cs_live *live)
{
	size_t n = 0;
	for (size_t i = 0; i < live->nwork; i++) {
		if (live->work[i].seized)
			live->work[n++] = live->work[i];
	}
	live->nwork = n;
}

/* Let stopped thread t go: PTRACE_LISTEN from a group-stop, else
 * PTRACE_CONT with the signal it stopped with. 0 or an errno value; a
 * thread killed meanwhile (ESRCH) is left for polling to find. */
static int cs_live_let_go(struct cs_live_thread *t)
{
	int tid = t->pub.tid;
	cs_live_sig_disarm(t);
	long r = t->group_stop ? ptrace(PTRACE_LISTEN, tid, NULL, NULL)
			       : ptrace(PTRACE_CONT, tid, NULL,
					(void *)(intptr_t)t->resig);
	if (r != 0 && errno != ESRCH) {
		int e = errno;
		cs_live_sig_arm(t); /* still stopped: still ours to resume */
		return e;
	}
	t->listening = r == 0 && t->group_stop;
	t->stopped = t->interrupted = 0;
	t->resig = t->group_stop = 0;
	return 0;
}

/* t stopped for a signal after we sent it PTRACE_INTERRUPT: whether the
 * interrupt was used up by that stop (sent before it) or is still pending
 * (sent just after) cannot be told, and a pending one would stop t again
 * right after it handles the signal, until the next pause. So make it
 * pending for sure, let the signal go, take that one stop and let t go
 * again. Rare: only when a signal arrives just as we pause. */
static int cs_live_let_signal_go(struct cs_live *live, struct cs_live_thread *t)
{
	ptrace(PTRACE_INTERRUPT, t->pub.tid, NULL, NULL);
	int e = cs_live_let_go(t);
	if (e)
		return e;
	t->interrupted = 1;
	int64_t deadline = cs_live_now_ms() + CS_LIVE_PAUSE_MS;
	long nap = 20;
	for (;;) {
		int r = cs_live_poll(live, t);
		if (r < 0)
			return 0; /* the signal killed it */
		if (r > 0)
			return cs_live_let_go(t);
		/* Not in time: it is still counted as interrupted, and the
		 * next pause takes the stop. */
		if (cs_live_now_ms() >= deadline)
			return 0;
		cs_live_nap(&nap);
	}
}

/* The whole process is gone (or only its unreaped leader is left). */
int cs_live_exited(int pid)
{
	int *tids;
	size_t n;
	int e = cs_live_list_tasks(pid, &tids, &n);
	if (e)
		return e == ENOENT || e == ESRCH;
	int exited = 1;
	for (size_t i = 0; i < n && exited; i++)
		exited = cs_live_is_dead_state(
			cs_live_thread_state(pid, tids[i]));
	free(tids);
	return exited;
}

static int cs_live_process_gone(const struct cs_live *live)
{
	struct cs_live_status st;
	int e = cs_live_read_status(live->pid, 0, &st);
	if (e)
		return e == ENOENT || e == ESRCH;
	/* every thread dead, some still waiting for us to take their exit */
	return cs_live_is_dead_state(st.state) &&
	       (st.threads <= 1 || cs_live_exited(live->pid));
}

/* No thread could be stopped though /proc still lists the process: it
 * may be exiting, exit_group taking its threads down one by one. Give it
 * a moment to show as gone before calling the failure anything else. */
static int cs_live_gone_within(const struct cs_live *live, int64_t ms)
{
	int64_t deadline = cs_live_now_ms() + ms;
	long nap = 100;
	for (;;) {
		if (cs_live_process_gone(live))
			return 1;
		if (cs_live_now_ms() >= deadline)
			return 0;
		cs_live_nap(&nap);
	}
}

/* A failure to stop a process that was exiting meanwhile is its exit. */
static struct cs_error *cs_live_stop_error(const struct cs_live *live,
					   struct cs_error *err)
{
	if (!err ||
	    !(cs_live_process_gone(live) ||
	      (live->tables.nthreads == 0 && cs_live_gone_within(live, 1000))))
		return err;
	cs_error_destroy(err);
	return cs_error_create(CS_ERR_OS, "process %d exited", live->pid);
}

struct cs_error *cs_live_resume(struct cs_live *live)
{
	if (!live->pause || !live->attached) {
		return cs_error_create(CS_ERR_USAGE,
				       "pid %d: cannot resume: not attached "
				       "with pause",
				       live->pid);
	}
	if (live->running)
		return NULL;
	live->running = 1;
	live->regions_fresh = 0;
	struct cs_error *err = NULL;
	/* The threads that were running first: they are the ones losing
	 * time (see cs_live_pause). */
	for (int slow = 0; slow <= 1; slow++) {
		for (size_t i = 0; i < live->nwork; i++) {
			struct cs_live_thread *t = &live->work[i];
			if (t->slow_to_stop != slow || !t->seized ||
			    !t->stopped || cs_live_check_released(t))
				continue;
			int e = t->resig && t->interrupted
					? cs_live_let_signal_go(live, t)
					: cs_live_let_go(t);
			if (e && !err) {
				err = cs_error_create(
					CS_ERR_OS,
					"pid %d: resuming thread %d: %s",
					live->pid, t->pub.tid, strerror(e));
			}
		}
	}
	return err;
}

/* With every known thread stopped (stopped threads create none), the
 * kernel counting no more threads than we hold stopped means there is no
 * thread we do not know: the directory scan of cs_live_stop_all can be
 * skipped. A count that differs (a new thread, one exiting) makes it
 * scan. */
static int cs_live_none_new(const struct cs_live *live)
{
	int stopped = 0, running = 0;
	for (size_t i = 0; i < live->nwork; i++) {
		const struct cs_live_thread *t = &live->work[i];
		stopped += t->seized && t->stopped;
		running += t->seized && !t->stopped && t->left_running;
	}
	return stopped > 0 &&
	       cs_live_kernel_thread_count(live->pid) == stopped + running;
}

void cs_live_leave_running(struct cs_live *live, int tid, int leave)
{
	struct cs_live_thread *t = cs_live_find_work(live, live->nwork, tid);
	if (t)
		t->left_running = leave;
}

void cs_live_stop_every_thread(struct cs_live *live)
{
	for (size_t i = 0; i < live->nwork; i++)
		live->work[i].left_running = 0;
}

int cs_live_traces(const struct cs_live *live, int64_t tid)
{
	if (tid <= 0 || tid > INT_MAX)
		return 0;
	/* in tid order between pauses (a sampler asks per thread and
	 * sample); the search only reads */
	const struct cs_live_thread *t = cs_live_find_work(
		(struct cs_live *)live, live->nwork, (int)tid);
	return t && t->seized;
}

void cs_live_without_registers(struct cs_live *live)
{
	live->no_registers = 1;
	live->tables.has_registers = false;
}

struct cs_error *cs_live_pause(struct cs_live *live)
{
	if (!live->pause || !live->attached) {
		return cs_error_create(CS_ERR_USAGE,
				       "pid %d: cannot pause: not attached "
				       "with pause",
				       live->pid);
	}
	if (!live->running)
		return NULL;
	cs_live_compact(live);
	int64_t deadline = cs_live_now_ms() + CS_LIVE_PAUSE_MS;
	struct cs_error *err = NULL;
	live->running = 0;
	/* Two waves: first the threads that were slow to stop last time
	 * (asleep: each must be woken and scheduled before it stops, which
	 * takes milliseconds on a busy machine), then the others (running:
	 * they stop at once). A thread that runs is then stopped only for
	 * its own stop and the read, not for the sleepers' wake-ups: that is
	 * what a paused profile costs the program. */
	for (int wave = 0; wave < 2 && !err; wave++) {
		/* Take the stops that came while it ran (signals,
		 * group-stops, exits): a thread already stopped must not be
		 * interrupted. */
		for (size_t i = 0; i < live->nwork && !err; i++) {
			struct cs_live_thread *t = &live->work[i];
			if (t->slow_to_stop != (wave == 0) || !t->seized ||
			    t->stopped || cs_live_check_released(t) ||
			    cs_live_poll(live, t) != 0 || t->left_running)
				continue;
			int e = cs_live_interrupt(t);
			if (e) {
				err = cs_error_create(
					CS_ERR_OS,
					"pid %d: PTRACE_INTERRUPT "
					"of thread %d: %s",
					live->pid, t->pub.tid, strerror(e));
			}
		}
		if (!err)
			err = cs_live_wait_stops(live, deadline,
						 CS_LIVE_PAUSE_MS);
	}
	/* All stopped before the first scan: see cs_live_stop_all. */
	if (!err && !cs_live_none_new(live))
		err = cs_live_stop_all(live, deadline, CS_LIVE_PAUSE_MS);
	if (!err)
		err = cs_live_take_threads(live);
	err = cs_live_stop_error(live, err);
	if (err) {
		/* Never leave it stopped: let go what did stop. */
		cs_error_destroy(cs_live_resume(live));
		live->tables.nthreads = 0;
		return err;
	}
	cs_live_order_threads(live);
	if (live->tables.threads[0].tid != live->mem_tid) {
		/* the thread we read memory through has exited */
		live->mem_tid = live->tables.threads[0].tid;
		snprintf(live->procdir, sizeof(live->procdir),
			 "/proc/%d/task/%d", live->pid, live->mem_tid);
		if (live->memfd >= 0)
			close(live->memfd);
		live->memfd = -1;
	}
	return NULL;
}

void cs_live_set_registers(struct cs_live *live, const struct cs_thread *kts,
			   size_t n)
{
	for (size_t i = 0; i < live->tables.nthreads; i++) {
		struct cs_thread *t = &live->tables.threads[i];
		for (size_t k = 0; k < n; k++)
			if (kts[k].tid == t->tid) {
				*t = kts[k];
				t->cursig = 0;
				break;
			}
	}
}

void cs_live_set_stopped(struct cs_live *live, const struct cs_thread *kt,
			 const struct cs_siginfo *si)
{
	for (size_t i = 0; i < live->tables.nthreads; i++) {
		struct cs_thread *t = &live->tables.threads[i];
		if (t->tid != kt->tid)
			continue;
		*t = *kt;
		live->stop_signal = *si;
		live->tables.siginfo = &live->stop_signal;
		live->tables.crash_tid = kt->tid;
	}
}
