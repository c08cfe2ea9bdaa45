/* process/live_*.c and signals: SIGTERM to the attacher, and signals to
 * the target while it is paused and resumed (each delivered, SIGSTOP kept). */
#include "tests/unit/live/live_test.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int sigterm_pipe = -1;

static void helper_on_term(int sig)
{
	(void)sig;
	if (write(sigterm_pipe, "h", 1) != 1)
		_exit(3);
}

void (*initial_sigint)(int);

/* A corestack-like attacher in a fork, on the pipes ready and handled:
 * with handler, its SIGTERM handler writes 'h' to handled; it attaches to
 * pid paused, pauses and resumes cycles times, resumes if resume, says 'A'
 * on ready ('E' on an error) and waits for signals. */
static pid_t start_attacher(pid_t pid, int ready[2], int handled[2],
			    int handler, int cycles, int resume)
{
	fflush(stdout);
	pid_t helper = fork();
	if (helper == 0) {
		close(ready[0]);
		close(handled[0]);
		sigterm_pipe = handled[1];
		if (handler)
			signal(SIGTERM, helper_on_term);
		alarm(30); /* never outlive the test */
		struct cs_live *live = NULL;
		struct cs_error *err = cs_live_attach(pid, 1, &live);
		for (int i = 0; i < cycles && !err; i++) {
			err = cs_live_resume(live);
			if (!err)
				err = cs_live_pause(live);
		}
		if (!err && resume)
			err = cs_live_resume(live);
		char r = err ? 'E' : 'A';
		if (write(ready[1], &r, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(ready[1]);
	close(handled[1]);
	return helper;
}

/* Did the attacher say it is attached? */
static int attacher_ready(int ready[2])
{
	char r = 0;
	return read(ready[0], &r, 1) == 1 && r == 'A';
}

/* A corestack-like attacher gets SIGTERM while the target is stopped: its
 * handler must resume the target, then hand the signal on. */
void test_signal(void)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	int ready[2], handled[2];
	if (pipe(ready) || pipe(handled)) {
		CHECK(0, "pipe");
		return;
	}
	pid_t helper = start_attacher(c.pid, ready, handled, 1, 0, 0);
	CHECK(attacher_ready(ready), "helper attach failed");
	int count = 0;
	CHECK(all_traced(c.pid, &count) && count == 1 + NTHREADS &&
		      tracer_of(c.pid, c.pid) == helper,
	      "helper did not stop the child");
	kill(helper, SIGTERM);
	struct pollfd pfd = {handled[0], POLLIN, 0};
	char h = 0;
	CHECK(poll(&pfd, 1, 3000) == 1 && read(handled[0], &h, 1) == 1 &&
		      h == 'h',
	      "previous SIGTERM handler not called");
	/* the helper is still alive: only its handler can have resumed */
	CHECK(kill(helper, 0) == 0, "helper died");
	CHECK(none_stopped(c.pid), "child still stopped after SIGTERM");
	CHECK(untraced_except(c.pid, 0), "child still traced after SIGTERM");
	CHECK(ping(&c), "child does not answer after SIGTERM");
	kill(helper, SIGKILL);
	waitpid(helper, NULL, 0);
	close(ready[0]);
	close(handled[0]);
	stop_child(&c);

	/* Handlers are ours only while attached: SIGINT is as this program
	 * found it (ignored when started in the background by a shell). */
	struct sigaction sa;
	sigaction(SIGINT, NULL, &sa);
	CHECK(!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == initial_sigint,
	      "SIGINT handler left installed");
}

/* Signals sent while resumed (and while paused) are delivered, each one:
 * SIGRTMIN+1 is queued, so none may be lost. */
void test_cycles_signals(void)
{
	struct child c;
	int started = start_cyc_child(&c, 3, 1, 0);
	struct cs_live *live = attach_started(&c, started, 1, "attach");
	struct cs_error *err = NULL;
	if (!live)
		return;
	int failed = 0;
	/* One SIGUSR1 while running: the thread that takes it stops with
	 * it, shows it as cursig, and gets it at the next resume. */
	err = cs_live_resume(live);
	cs_error_destroy(err);
	kill(c.pid, SIGUSR1);
	sleep_ms(20);
	err = cs_live_pause(live);
	CHECK(!err, "pause: %s", msg(err));
	cs_error_destroy(err);
	int with_sig = 0;
	for (size_t i = 0; i < cs_live_tables(live)->nthreads; i++)
		if (cs_tables_thread_at(cs_live_tables(live), i)->cursig ==
		    SIGUSR1)
			with_sig++;
	CHECK(with_sig == 1, "%d threads stopped with SIGUSR1", with_sig);
	CHECK(read_u64(live, &cyc.usr1, &failed) == 0,
	      "SIGUSR1 handled while stopped");
	err = cs_live_resume(live);
	CHECK(!err, "resume: %s", msg(err));
	cs_error_destroy(err);
	CHECK(advances(live, &cyc.usr1, 0, &failed),
	      "SIGUSR1 not delivered after the resume");

	/* Many, at every point of the cycle: the race of a signal with our
	 * interrupt included. */
	unsigned sent = 0;
	int errors = 0;
	for (int round = 0; round < 300; round++) {
		int phase = round % 4;
		if (phase == 0)
			kill(c.pid, SIGRTMIN + 1), sent++; /* while paused */
		err = cs_live_resume(live);
		if (err)
			errors++;
		cs_error_destroy(err);
		if (phase == 1)
			kill(c.pid, SIGRTMIN + 1), sent++;
		if (phase == 2) {
			struct timespec ts = {0, (round * 7919) % 200000};
			nanosleep(&ts, NULL);
			kill(c.pid, SIGRTMIN + 1), sent++;
		} else {
			sleep_ms(1);
		}
		if (phase == 3)
			kill(c.pid, SIGRTMIN + 1), sent++; /* racing pause */
		err = cs_live_pause(live);
		if (err) {
			printf("signal cycle %d pause: %s\n", round,
			       err->message);
			errors++;
		}
		cs_error_destroy(err);
	}
	/* A few more cycles hand on what stopped in the last ones. */
	for (int round = 0; round < 5; round++) {
		cs_error_destroy(cs_live_resume(live));
		sleep_ms(2);
		cs_error_destroy(cs_live_pause(live));
	}
	cs_live_detach(live);
	uint64_t got = 0;
	for (int i = 0; i < 200 && got != sent; i++) {
		got = read_u64(live, &cyc.rt, &failed);
		if (got != sent)
			sleep_ms(10);
	}
	CHECK(!errors && got == sent && !failed,
	      "signals: %u sent, %llu handled, %d errors", sent,
	      (unsigned long long)got, errors);
	cs_live_close(live);
	CHECK(none_stopped(c.pid), "signals: stopped after close");
	CHECK(untraced_except(c.pid, 0), "signals: traced after close");
	CHECK(ping(&c), "signals: child does not answer");
	stop_child(&c);
}

/* All tasks of pid are stopped ('t' or 'T'). */
static int all_stopped(pid_t pid)
{
	int tids[256];
	char states[256];
	int n = task_states(pid, tids, states, 256);
	for (int i = 0; i < n; i++)
		if (states[i] != 't' && states[i] != 'T' &&
		    !dead_state(states[i]))
			return 0;
	return n > 0;
}

/* rounds pause and resume cycles, 5 ms apart: how many calls failed. */
static int cycle(struct cs_live *live, int rounds)
{
	int errors = 0;
	for (int round = 0; round < rounds; round++) {
		sleep_ms(5);
		struct cs_error *err = cs_live_pause(live);
		if (err)
			errors++;
		cs_error_destroy(err);
		if ((err = cs_live_resume(live)))
			errors++;
		cs_error_destroy(err);
	}
	return errors;
}

/* SIGSTOP while resumed: the process stops and stays stopped through
 * our cycles, SIGCONT resumes it, and a close leaves a stopped process
 * stopped. */
void test_cycles_sigstop(void)
{
	struct child c;
	int started = start_cyc_child(&c, 3, 1, 0);
	struct cs_live *live = attach_started(&c, started, 1, "attach");
	if (!live)
		return;
	int failed = 0, errors = 0;
	cs_error_destroy(cs_live_resume(live));
	kill(c.pid, SIGSTOP);
	errors += cycle(live, 3);
	uint64_t a = read_u64(live, &cyc.counter, &failed);
	int stopped_now = all_stopped(c.pid);
	errors += cycle(live, 5);
	sleep_ms(20);
	uint64_t b = read_u64(live, &cyc.counter, &failed);
	CHECK(stopped_now && a == b && all_stopped(c.pid) && !errors,
	      "SIGSTOP: not kept stopped through cycles (%llu, %llu, %d "
	      "errors)",
	      (unsigned long long)a, (unsigned long long)b, errors);
	kill(c.pid, SIGCONT);
	errors += cycle(live, 3);
	CHECK(advances(live, &cyc.counter, b, &failed) && !errors,
	      "SIGCONT: counter stuck (%d errors)", errors);
	/* stopped again, then closed while resumed: stays stopped */
	kill(c.pid, SIGSTOP);
	for (int round = 0; round < 3; round++) {
		sleep_ms(5);
		cs_error_destroy(cs_live_pause(live));
		cs_error_destroy(cs_live_resume(live));
	}
	cs_live_close(live);
	int still = group_stopped(c.pid, 100, 10);
	CHECK(still, "SIGSTOP: not group-stopped after close");
	CHECK(untraced_except(c.pid, 0), "SIGSTOP: traced after close");
	kill(c.pid, SIGCONT);
	CHECK(none_stopped(c.pid), "SIGSTOP: SIGCONT did not resume");
	CHECK(ping(&c), "SIGSTOP: child does not answer");
	stop_child(&c);
}

/* SIGTERM to an attacher whose target is resumed: the handler leaves the
 * running threads alone (they run, still traced), then does the paused
 * case right; an attacher that dies of it leaves its target running. */
void test_cycles_sigterm(void)
{
	for (int mode = 0; mode < 3; mode++) {
		/* 0: resumed, handler kept; 1: paused after cycles, handler
		 * kept; 2: resumed, SIGTERM kills the attacher */
		struct child c;
		if (start_cyc_child(&c, 3, 0, 0) != 0) {
			CHECK(0, "cannot start child");
			return;
		}
		int ready[2], handled[2];
		if (pipe(ready) || pipe(handled)) {
			CHECK(0, "pipe");
			return;
		}
		pid_t helper = start_attacher(c.pid, ready, handled, mode != 2,
					      3, mode != 1);
		CHECK(attacher_ready(ready), "helper attach failed");
		if (mode == 1) {
			CHECK(all_traced(c.pid, NULL), "helper not paused");
		} else {
			CHECK(none_stopped_now(c.pid) &&
				      tracer_of(c.pid, c.pid) == helper,
			      "helper not resumed and attached");
		}
		kill(helper, SIGTERM);
		if (mode == 2) {
			int status = 0;
			waitpid(helper, &status, 0);
			CHECK(WIFSIGNALED(status) &&
				      WTERMSIG(status) == SIGTERM,
			      "helper did not die of SIGTERM: 0x%x", status);
		} else {
			struct pollfd pfd = {handled[0], POLLIN, 0};
			char h = 0;
			CHECK(poll(&pfd, 1, 3000) == 1 &&
				      read(handled[0], &h, 1) == 1 && h == 'h',
			      "previous SIGTERM handler not called (%d)", mode);
			CHECK(kill(helper, 0) == 0, "helper died");
		}
		CHECK(none_stopped(c.pid), "child stopped after SIGTERM (%d)",
		      mode);
		if (mode == 0)
			CHECK(tracer_of(c.pid, c.pid) == helper,
			      "handler detached running threads");
		else
			CHECK(untraced_except(c.pid, 0),
			      "child still traced after SIGTERM (%d)", mode);
		CHECK(ping(&c), "child does not answer after SIGTERM (%d)",
		      mode);
		if (mode != 2) {
			kill(helper, SIGKILL);
			waitpid(helper, NULL, 0);
		}
		CHECK(none_stopped(c.pid) && untraced_except(c.pid, 0),
		      "child after the helper died (%d)", mode);
		close(ready[0]);
		close(handled[0]);
		stop_child(&c);
	}
}
