/* process/live_*.c: pause and resume cycles. Consistent stops, threads
 * that come and go, a target that exits or cannot be stopped, the cost of
 * a cycle, and misuse. */
#include "tests/unit/live/live_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The threads of live are exactly the live tasks of the process, and all
 * of them are in a tracing stop with registers. */
static int paused_exactly(struct cs_live *live, pid_t pid, char *why,
			  size_t whylen)
{
	int tids[256];
	char states[256];
	int n = task_states(pid, tids, states, 256);
	size_t live_tasks = 0;
	for (int i = 0; i < n; i++) {
		if (dead_state(states[i]))
			continue;
		live_tasks++;
		int found = 0;
		for (size_t j = 0; j < cs_live_tables(live)->nthreads; j++)
			if (cs_tables_thread_at(cs_live_tables(live), j)->tid ==
			    tids[i])
				found = 1;
		if (states[i] != 't' || !found) {
			snprintf(why, whylen, "task %d state %c, listed %d",
				 tids[i], states[i], found);
			return 0;
		}
	}
	if (live_tasks != cs_live_tables(live)->nthreads) {
		snprintf(why, whylen, "%zu live tasks, %zu threads", live_tasks,
			 cs_live_tables(live)->nthreads);
		return 0;
	}
	for (size_t j = 0; j < cs_live_tables(live)->nthreads; j++) {
		if (!cs_tables_thread_at(cs_live_tables(live), j)->rip) {
			snprintf(why, whylen, "thread %d has no rip",
				 cs_tables_thread_at(cs_live_tables(live), j)
					 ->tid);
			return 0;
		}
	}
	return 1;
}

/* 200 cycles on busy threads: stopped and consistent when paused,
 * running when resumed; then close after a pause or after a resume. */
void test_cycles(void)
{
	for (int close_running = 0; close_running < 2; close_running++) {
		struct child c;
		int started = start_cyc_child(&c, 3, 1, 0);
		struct cs_live *live = attach_started(&c, started, 1, "attach");
		struct cs_error *err = NULL;
		if (!live)
			return;
		int bad = 0, failed = 0;
		char why[128] = "";
		for (int round = 0; round < 200 && !bad && !failed; round++) {
			if (!paused_exactly(live, c.pid, why, sizeof(why))) {
				printf("cycle %d paused: %s\n", round, why);
				bad++;
			}
			if (!cs_live_paused(live))
				bad++;
			uint64_t a = read_u64(live, &cyc.counter, &failed);
			struct timespec ts = {0, 300000};
			nanosleep(&ts, NULL);
			uint64_t b = read_u64(live, &cyc.counter, &failed);
			if (a != b) {
				printf("cycle %d: counter moved while paused "
				       "(%llu, %llu)\n",
				       round, (unsigned long long)a,
				       (unsigned long long)b);
				bad++;
			}
			err = cs_live_resume(live);
			if (err) {
				printf("cycle %d resume: %s\n", round,
				       err->message);
				bad++;
			}
			cs_error_destroy(err);
			if (cs_live_paused(live) || !none_stopped_now(c.pid)) {
				printf("cycle %d: stopped after resume\n",
				       round);
				bad++;
			}
			if (!advances(live, &cyc.counter, b, &failed)) {
				printf("cycle %d: counter stuck after resume\n",
				       round);
				bad++;
			}
			if (close_running && round == 199)
				break;
			err = cs_live_pause(live);
			if (err) {
				printf("cycle %d pause: %s\n", round,
				       err->message);
				bad++;
			}
			cs_error_destroy(err);
		}
		CHECK(!bad && !failed,
		      "cycles (close %s): %d bad, read failed "
		      "%d",
		      close_running ? "running" : "paused", bad, failed);
		/* no-ops in the state asked for */
		if (close_running) {
			err = cs_live_resume(live);
		} else {
			err = cs_live_pause(live);
		}
		CHECK(!err, "repeated call: %s", msg(err));
		cs_error_destroy(err);
		cs_live_close(live);
		CHECK(none_stopped(c.pid), "stopped after close (%s)",
		      close_running ? "running" : "paused");
		CHECK(untraced_except(c.pid, 0), "traced after close");
		CHECK(ping(&c), "child does not answer after close");
		stop_child(&c);
	}
}

/* Threads created and joined all the time: each pause has them all. */
void test_cycles_churn(void)
{
	struct child c;
	int started = start_cyc_child(&c, 2, 0, 1);
	struct cs_live *live = attach_started(&c, started, 1, "attach");
	struct cs_error *err = NULL;
	if (!live)
		return;
	int bad = 0, errors = 0;
	size_t most = 0;
	char why[128];
	for (int round = 0; round < 200; round++) {
		err = cs_live_resume(live);
		if (err) {
			printf("churn cycle %d resume: %s\n", round,
			       err->message);
			errors++;
		}
		cs_error_destroy(err);
		sleep_ms(round % 3);
		err = cs_live_pause(live);
		if (err) {
			printf("churn cycle %d pause: %s\n", round,
			       err->message);
			errors++;
			cs_error_destroy(err);
			continue;
		}
		if (cs_live_tables(live)->nthreads > most)
			most = cs_live_tables(live)->nthreads;
		if (!paused_exactly(live, c.pid, why, sizeof(why))) {
			printf("churn cycle %d: %s\n", round, why);
			bad++;
		}
	}
	CHECK(!errors && !bad, "churn cycles: %d errors, %d bad", errors, bad);
	CHECK(most > 3, "churn cycles: never saw a short thread (%zu)", most);
	cs_live_close(live);
	CHECK(none_stopped(c.pid), "churn cycles: stopped after close");
	CHECK(untraced_except(c.pid, 0), "churn cycles: traced after close");
	CHECK(ping(&c), "churn cycles: child does not answer");
	stop_child(&c);
}

/* The child exits between cycles: pause says so, close still works and
 * the child's status is still ours to take. */
void test_cycles_exit(void)
{
	for (int how = 0; how < 3; how++) {
		struct child c;
		int started = start_cyc_child(&c, 3, how == 1, 0);
		struct cs_live *live = attach_started(&c, started, 1, "attach");
		struct cs_error *err = NULL;
		if (!live)
			return;
		for (int round = 0; round < 5; round++) {
			cs_error_destroy(cs_live_resume(live));
			cs_error_destroy(cs_live_pause(live));
		}
		if (how == 2) {
			/* killed while stopped: resume then pause */
			kill(c.pid, SIGKILL);
			sleep_ms(20);
			cs_error_destroy(cs_live_resume(live));
		} else {
			cs_error_destroy(cs_live_resume(live));
			if (how == 0) {
				CHECK(write(c.req_w, "x", 1) == 1, "write");
			} else {
				kill(c.pid, SIGKILL);
			}
			sleep_ms(50);
		}
		long t0 = now_ms();
		err = cs_live_pause(live);
		char want[64];
		snprintf(want, sizeof(want), "process %d exited", c.pid);
		CHECK(err && err->code == CS_ERR_OS && contains(err, want),
		      "pause after exit (%d): %s", how, msg(err));
		cs_error_destroy(err);
		CHECK(cs_live_tables(live)->nthreads == 0,
		      "threads after exit");
		err = cs_live_pause(live); /* again: still exited */
		CHECK(err && contains(err, "exited"), "second pause: %s",
		      msg(err));
		cs_error_destroy(err);
		cs_live_close(live);
		CHECK(now_ms() - t0 < 8000, "exit handling took %ld ms",
		      now_ms() - t0);
		int status = 0;
		pid_t r = waitpid(c.pid, &status, WNOHANG);
		for (int i = 0; i < 200 && r == 0; i++) {
			sleep_ms(10);
			r = waitpid(c.pid, &status, WNOHANG);
		}
		CHECK(r == c.pid &&
			      (how == 0 ? WIFEXITED(status) &&
						  WEXITSTATUS(status) == 0
					: WIFSIGNALED(status) &&
						  WTERMSIG(status) == SIGKILL),
		      "exit status (%d): %d 0x%x", how, (int)r, status);
		close(c.req_w);
		close(c.resp_r);
	}
}

static int main_in_d_state(pid_t pid)
{
	int tids[64];
	char states[64];
	int n = task_states(pid, tids, states, 64);
	for (int i = 0; i < n; i++)
		if (tids[i] == pid)
			return states[i] == 'D';
	return 0;
}

/* A thread in uninterruptible sleep (main, in vfork) cannot be stopped:
 * pause fails after its bound and leaves the others running; a later
 * pause, once it woke, works. */
void test_cycles_stuck(void)
{
	struct child c;
	int started = start_cyc_child(&c, 3, 1, 0);
	struct cs_live *live = attach_started(&c, started, 1, "attach");
	struct cs_error *err = NULL;
	if (!live)
		return;
	int failed = 0;
	cs_error_destroy(cs_live_resume(live));
	CHECK(write(c.req_w, "v", 1) == 1, "write");
	/* until main is in vfork (a loaded machine may take a while) */
	for (int i = 0; i < 100 && !main_in_d_state(c.pid); i++)
		sleep_ms(10);
	long t0 = now_ms();
	err = cs_live_pause(live);
	long took = now_ms() - t0;
	CHECK(err && err->code == CS_ERR_LIMIT && contains(err, "did not stop"),
	      "pause of a stuck thread: %s", msg(err));
	if (getenv("TEST_LIVE_VERBOSE"))
		printf("stuck: %s (%ld ms)\n", msg(err), took);
	cs_error_destroy(err);
	/* the 1 s stop limit ends it; the rest is room for a loaded machine */
	CHECK(took < 6000, "stuck pause took %ld ms", took);
	CHECK(!cs_live_paused(live) && cs_live_tables(live)->nthreads == 0,
	      "state after a failed pause");
	/* the others run */
	int tids[64];
	char states[64];
	int n = task_states(c.pid, tids, states, 64), others_run = n > 1;
	for (int i = 0; i < n; i++)
		if (tids[i] != c.pid && (states[i] == 't' || states[i] == 'T'))
			others_run = 0;
	CHECK(others_run, "other threads stopped after a failed pause");
	uint64_t v = read_u64(live, &cyc.counter, &failed);
	CHECK(advances(live, &cyc.counter, v, &failed), "counter stuck");
	sleep_ms(1600); /* the vfork child is gone: main can stop now */
	err = cs_live_pause(live);
	char why[128] = "";
	CHECK(!err && paused_exactly(live, c.pid, why, sizeof(why)),
	      "pause after the stuck thread woke: %s %s", msg(err), why);
	cs_error_destroy(err);
	err = cs_live_resume(live);
	CHECK(!err, "resume: %s", msg(err));
	cs_error_destroy(err);
	/* polled: a thread left stopped stays so (nothing of ours is
	 * pending), while a loaded machine may show one late */
	CHECK(none_stopped(c.pid), "stopped after resume");
	CHECK(ping(&c), "stuck: child does not answer while resumed");
	cs_live_close(live);
	CHECK(none_stopped(c.pid) && untraced_except(c.pid, 0),
	      "stuck: after close");
	stop_child(&c);
}

/* Mean cost of one pause + resume cycle of a 4-thread child. */
void test_cycle_cost(void)
{
	for (int busy = 0; busy < 2; busy++) {
		struct child c;
		int started = start_cyc_child(&c, 3, busy, 0);
		struct cs_live *live = attach_started(&c, started, 1, "attach");
		struct cs_error *err = NULL;
		if (!live)
			return;
		int errors = 0;
		double total_us = 0, pause_us = 0, worst_us = 0;
		const int cycles = 1000;
		for (int i = 0; i < cycles; i++) {
			struct timespec t0, t1, t2;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			if ((err = cs_live_resume(live)))
				errors++;
			cs_error_destroy(err);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if ((err = cs_live_pause(live)))
				errors++;
			cs_error_destroy(err);
			clock_gettime(CLOCK_MONOTONIC, &t2);
			double us = (t2.tv_sec - t0.tv_sec) * 1e6 +
				    (t2.tv_nsec - t0.tv_nsec) / 1e3;
			total_us += us;
			pause_us += (t2.tv_sec - t1.tv_sec) * 1e6 +
				    (t2.tv_nsec - t1.tv_nsec) / 1e3;
			if (us > worst_us)
				worst_us = us;
			if (cs_live_tables(live)->nthreads != 4)
				errors++;
		}
		CHECK(!errors, "cycle cost: %d errors", errors);
		if (getenv("TEST_LIVE_VERBOSE"))
			printf("pause+resume, 4 %s threads: mean %.0f us "
			       "(pause %.0f us), worst %.0f us over %d\n",
			       busy ? "busy" : "sleeping", total_us / cycles,
			       pause_us / cycles, worst_us, cycles);
		/* a hang check: speed is measured by the benchmarks */
		CHECK(total_us / cycles < 500000, "cycle cost %.0f us",
		      total_us / cycles);
		cs_live_close(live);
		CHECK(none_stopped(c.pid) && untraced_except(c.pid, 0),
		      "cost: after close");
		stop_child(&c);
	}
}

/* Misuse: unpaused, and after detach. */
void test_cycles_usage(void)
{
	struct child c;
	if (start_cyc_child(&c, 1, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	for (int pause = 0; pause < 2; pause++) {
		struct cs_live *live = NULL;
		struct cs_error *err = cs_live_attach(c.pid, pause, &live);
		CHECK(!err, "attach: %s", msg(err));
		cs_error_destroy(err);
		if (!live)
			continue;
		if (pause)
			cs_live_detach(live);
		err = cs_live_resume(live);
		CHECK(err && err->code == CS_ERR_USAGE, "resume: %s", msg(err));
		cs_error_destroy(err);
		err = cs_live_pause(live);
		CHECK(err && err->code == CS_ERR_USAGE, "pause: %s", msg(err));
		cs_error_destroy(err);
		cs_live_close(live);
	}
	CHECK(none_stopped(c.pid) && ping(&c), "usage: child state");
	stop_child(&c);
}
