/* Unit test for process/live_*.c.
 *
 * The test forks children of itself that start a few sleeping threads and
 * hold a known pattern in memory, and attaches to them paused and
 * unpaused; other forks play a second tracer and a corestack killed by
 * SIGTERM. The tests are in tests/unit/live/, one file per concept; this
 * file runs them. Build and run: make build/test_live && build/test_live
 * (TEST_LIVE_ONLY="NAME ..." runs only those, e.g. exit_during_attach;
 * arguments are ignored: the runner passes every unit test the same ones).
 * Needs permission to ptrace its own children (Yama ptrace_scope <= 1). */
#include "tests/unit/live/live_test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int check_passed, check_failed;

static void test_mem_fallback_enosys(void)
{
	test_mem_fallback(ENOSYS);
}

static void test_mem_fallback_eperm(void)
{
	test_mem_fallback(EPERM);
}

static void test_other_tracer_first(void)
{
	test_other_tracer(0);
}

static void test_other_tracer_second(void)
{
	test_other_tracer(1);
}

/* In the order a full run takes them. */
static const struct {
	const char *name;
	void (*run)(void);
} tests[] = {
	{"denial_messages", test_denial_messages},
	{"paused", test_paused},
	{"unpaused", test_unpaused},
	{"no_process", test_no_process},
	{"zombie", test_zombie},
	{"other_tracer_first", test_other_tracer_first},
	{"other_tracer_second", test_other_tracer_second},
	{"churn", test_churn},
	{"main_thread_gone", test_main_thread_gone},
	{"mem_fallback_enosys", test_mem_fallback_enosys},
	{"mem_fallback_eperm", test_mem_fallback_eperm},
	{"already_stopped", test_already_stopped},
	{"exit_while_attached", test_exit_while_attached},
	{"exit_during_attach", test_exit_during_attach},
	{"signal", test_signal},
	{"cycles", test_cycles},
	{"cycles_churn", test_cycles_churn},
	{"cycles_signals", test_cycles_signals},
	{"cycles_sigstop", test_cycles_sigstop},
	{"cycles_exit", test_cycles_exit},
	{"cycles_stuck", test_cycles_stuck},
	{"cycles_sigterm", test_cycles_sigterm},
	{"cycles_usage", test_cycles_usage},
	{"cycle_cost", test_cycle_cost},
};

/* Is name in the space-separated list only (NULL: every test)? */
static int named(const char *only, const char *name)
{
	if (!only)
		return 1;
	size_t len = strlen(name);
	for (const char *p = only; (p = strstr(p, name)) != NULL; p += len)
		if ((p == only || p[-1] == ' ') && (p[len] == ' ' || !p[len]))
			return 1;
	return 0;
}

int main(void)
{
	const char *only = getenv("TEST_LIVE_ONLY");
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction start;
	sigaction(SIGINT, NULL, &start);
	initial_sigint = start.sa_handler;
	int ran = 0;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (named(only, tests[i].name)) {
			tests[i].run();
			ran++;
		}
	if (!ran) {
		fprintf(stderr, "test_live: no test named so\n");
		return 2;
	}
	return check_summary("live");
}
