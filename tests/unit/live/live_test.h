/* What the files of the live unit test share (test_live.c has main,
 * tests/unit/live/ the rest): the children the tests attach to, the /proc
 * helpers, and the tests main runs. */
#ifndef CS_TESTS_LIVE_TEST_H
#define CS_TESTS_LIVE_TEST_H

#define CHECK_SHARED
#include "process/live.h"
#include "tests/unit/check.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PATTERN_SIZE 4096
#define NTHREADS 3

struct child {
	pid_t pid;
	int req_w, resp_r;
	uint64_t pattern; /* PATTERN_SIZE bytes of pattern_byte */
	uint64_t edge;    /* last 8 bytes before an unmapped page */
};

/* The cycling child: a fork of this program, so &cyc is the same address
 * there. Busy threads bump counter under lock; handlers count signals. */
struct cyc_state {
	pthread_mutex_t lock;
	volatile uint64_t counter;
	volatile uint64_t usr1, rt;
};
extern struct cyc_state cyc;

/* SIGINT's disposition when this program started (main sets it). */
extern void (*initial_sigint)(int);

uint8_t pattern_byte(size_t i);
void sleep_ms(long ms);
long now_ms(void);
int start_child(struct child *c, int churn, long exit_after_us);
int ping(struct child *c);
int stop_child(struct child *c);
int task_states(pid_t pid, int *tids, char *states, int max);
int dead_state(char s);
int all_traced(pid_t pid, int *count);
int none_stopped(pid_t pid);
int group_stopped(pid_t pid, int tries, long ms);
int tracer_of(pid_t pid, pid_t tid);
int untraced_except(pid_t pid, int allowed);
int contains(const struct cs_error *err, const char *s);
const char *msg(const struct cs_error *err);
struct cs_live *attach_child(struct child *c, int pause, const char *what);
struct cs_live *attach_started(struct child *c, int rc, int pause,
			       const char *what);
int start_cyc_child(struct child *c, int nthreads, int busy, int churn);
uint64_t read_u64(struct cs_live *live, volatile uint64_t *addr, int *failed);
int none_stopped_now(pid_t pid);
int advances(struct cs_live *live, volatile uint64_t *counter, uint64_t v,
	     int *failed);

/* The tests, in the order main runs them. */
void test_denial_messages(void);
void test_paused(void);
void test_unpaused(void);
void test_no_process(void);
void test_zombie(void);
void test_other_tracer(int which);
void test_churn(void);
void test_main_thread_gone(void);
void test_mem_fallback(int blocked_with);
void test_already_stopped(void);
void test_exit_while_attached(void);
void test_exit_during_attach(void);
void test_signal(void);
void test_cycles(void);
void test_cycles_churn(void);
void test_cycles_signals(void);
void test_cycles_sigstop(void);
void test_cycles_exit(void);
void test_cycles_stuck(void);
void test_cycles_sigterm(void);
void test_cycles_usage(void);
void test_cycle_cost(void);

#endif
