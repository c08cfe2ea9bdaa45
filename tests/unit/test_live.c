/* Unit test for target/live_*.c.
 *
 * The test forks children of itself that start a few sleeping threads and
 * hold a known pattern in memory, and attaches to them paused and
 * unpaused; other forks play a second tracer and a corestack killed by
 * SIGTERM. The tests are in tests/unit/live/, one file per concept; this
 * file runs them. Build and run: make build/test_live && build/test_live
 * Needs permission to ptrace its own children (Yama ptrace_scope <= 1). */
#include "tests/unit/live/live_test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>

int check_passed, check_failed;

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction start;
	sigaction(SIGINT, NULL, &start);
	initial_sigint = start.sa_handler;
	test_denial_messages();
	test_paused();
	test_unpaused();
	test_no_process();
	test_zombie();
	test_other_tracer(0);
	test_other_tracer(1);
	test_churn();
	test_main_thread_gone();
	test_mem_fallback(ENOSYS);
	test_mem_fallback(EPERM);
	test_already_stopped();
	test_exit_while_attached();
	test_exit_during_attach();
	test_signal();
	test_cycles();
	test_cycles_churn();
	test_cycles_signals();
	test_cycles_sigstop();
	test_cycles_exit();
	test_cycles_stuck();
	test_cycles_sigterm();
	test_cycles_usage();
	test_cycle_cost();
	return check_summary("live");
}
