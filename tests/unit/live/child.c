/* The children the live tests attach to (forks of the test program), and
 * what the tests read about them in /proc. */
#include "tests/unit/live/live_test.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint8_t pattern_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *child_sleeper(void *arg)
{
	(void)arg;
	for (;;)
		sleep_ms(10);
	return NULL;
}

static void *child_short(void *arg)
{
	(void)arg;
	sleep_ms(1);
	return NULL;
}

/* Threads come and go all the time: attach must catch new ones. */
static void *child_churner(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, child_short, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	return NULL;
}

/* exit_after_us: the whole process exits that long after starting its
 * threads; -1: only the main thread exits (pthread_exit), the rest run. */
static void child_main(int info_w, int req_r, int resp_w, int churn,
		       long exit_after_us)
{
	uint8_t *buf = malloc(PATTERN_SIZE);
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!buf || two == MAP_FAILED)
		_exit(2);
	for (size_t i = 0; i < PATTERN_SIZE; i++)
		buf[i] = pattern_byte(i);
	munmap(two + page, page);
	memset(two, 0xab, page);
	for (int i = 0; i < NTHREADS; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, child_sleeper, NULL) != 0)
			_exit(2);
	}
	if (churn) {
		pthread_t t;
		if (pthread_create(&t, NULL, child_churner, NULL) != 0)
			_exit(2);
	}
	uint64_t info[2] = {(uint64_t)(uintptr_t)buf,
			    (uint64_t)(uintptr_t)(two + page - 8)};
	if (write(info_w, info, sizeof(info)) != sizeof(info))
		_exit(2);
	if (exit_after_us < 0)
		pthread_exit(NULL);
	if (exit_after_us) {
		struct timespec ts = {0, exit_after_us * 1000};
		nanosleep(&ts, NULL);
		_exit(0);
	}
	for (;;) {
		char c;
		if (read(req_r, &c, 1) <= 0)
			_exit(0); /* _exit: no leak check in the fork */
		if (c == 'p' && write(resp_w, "P", 1) != 1)
			_exit(2);
	}
}

int start_child(struct child *c, int churn, long exit_after_us)
{
	int info[2], req[2], resp[2];
	memset(c, 0, sizeof(*c));
	if (pipe(info) || pipe(req) || pipe(resp))
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(info[0]);
		close(req[1]);
		close(resp[0]);
		child_main(info[1], req[0], resp[1], churn, exit_after_us);
	}
	close(info[1]);
	close(req[0]);
	close(resp[1]);
	uint64_t addrs[2];
	ssize_t n = read(info[0], addrs, sizeof(addrs));
	close(info[0]);
	c->pid = pid;
	c->req_w = req[1];
	c->resp_r = resp[0];
	if (n != sizeof(addrs))
		return -1;
	c->pattern = addrs[0];
	c->edge = addrs[1];
	return 0;
}

/* Does the child answer within 2 s? */
int ping(struct child *c)
{
	if (write(c->req_w, "p", 1) != 1)
		return 0;
	struct pollfd pfd = {c->resp_r, POLLIN, 0};
	if (poll(&pfd, 1, 2000) != 1)
		return 0;
	char r;
	return read(c->resp_r, &r, 1) == 1 && r == 'P';
}

int stop_child(struct child *c)
{
	close(c->req_w);
	close(c->resp_r);
	int status = 0;
	for (int i = 0; i < 200; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid)
			return status;
		sleep_ms(10);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
	return status;
}

/* State letter of each task of pid into states (tids into tids); the
 * count, -1 if the process is gone. */
int task_states(pid_t pid, int *tids, char *states, int max)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL && n < max) {
		int tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		char spath[96], line[512];
		snprintf(spath, sizeof(spath), "/proc/%d/task/%d/stat", pid,
			 tid);
		FILE *f = fopen(spath, "r");
		if (!f)
			continue;
		char *got = fgets(line, sizeof(line), f);
		fclose(f);
		char *p = got ? strrchr(line, ')') : NULL;
		if (!p || !p[1])
			continue;
		tids[n] = tid;
		states[n] = p[2];
		n++;
	}
	closedir(d);
	return n;
}

int dead_state(char s)
{
	return s == 'Z' || s == 'X' || s == 'x';
}

/* Every live thread is in a tracing stop; *count of them. */
int all_traced(pid_t pid, int *count)
{
	int tids[256];
	char states[256];
	int n = task_states(pid, tids, states, 256);
	int live = 0, ok = n > 0;
	for (int i = 0; i < n; i++) {
		if (dead_state(states[i]))
			continue;
		live++;
		if (states[i] != 't')
			ok = 0;
	}
	if (count)
		*count = live;
	return ok;
}

/* Every task of pid in a group stop ('T'), polled tries times ms apart. */
int group_stopped(pid_t pid, int tries, long ms)
{
	int stopped = 0;
	for (int i = 0; i < tries && !stopped; i++) {
		int tids[64];
		char states[64];
		int n = task_states(pid, tids, states, 64);
		stopped = n > 0;
		for (int j = 0; j < n; j++)
			if (states[j] != 'T')
				stopped = 0;
		if (!stopped)
			sleep_ms(ms);
	}
	return stopped;
}

/* No thread stopped ('t' or 'T'); waits up to 1 s for it to become so. */
int none_stopped(pid_t pid)
{
	for (int tries = 0; tries < 100; tries++) {
		int tids[256];
		char states[256];
		int n = task_states(pid, tids, states, 256);
		int ok = n > 0;
		for (int i = 0; i < n; i++)
			if (states[i] == 't' || states[i] == 'T')
				ok = 0;
		if (ok)
			return 1;
		sleep_ms(10);
	}
	return 0;
}

int tracer_of(pid_t pid, pid_t tid)
{
	char path[96], line[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	FILE *f = fopen(path, "r");
	int tracer = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

/* No thread of pid is traced by anyone but allowed (0: no one). */
int untraced_except(pid_t pid, int allowed)
{
	int tids[256];
	char states[256];
	int n = task_states(pid, tids, states, 256);
	for (int i = 0; i < n; i++) {
		int t = tracer_of(pid, tids[i]);
		/* -1: the thread exited since the listing */
		if (t > 0 && t != allowed)
			return 0;
	}
	return n > 0;
}

int contains(const struct cs_error *err, const char *s)
{
	return err && err->message && strstr(err->message, s);
}

const char *msg(const struct cs_error *err)
{
	return err ? err->message : "(no error)";
}

/* Attach to child c, paused or not; NULL, with the failure reported as
 * what and the child stopped, when that fails. */
struct cs_live *attach_child(struct child *c, int pause, const char *what)
{
	struct cs_live *live = NULL;
	struct cs_error *err = cs_live_attach(c->pid, pause, &live);
	CHECK(!err && live, "%s: %s", what, msg(err));
	cs_error_destroy(err);
	if (!live)
		stop_child(c);
	return live;
}

/* Attach to child c that start_child or start_cyc_child started (rc 0),
 * paused or not; NULL, with the failure reported, when either failed. */
struct cs_live *attach_started(struct child *c, int rc, int pause,
			       const char *what)
{
	if (rc != 0) {
		CHECK(0, "cannot start child");
		return NULL;
	}
	return attach_child(c, pause, what);
}

struct cyc_state cyc = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};

static void *cyc_busy(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&cyc.lock);
		cyc.counter++;
		pthread_mutex_unlock(&cyc.lock);
	}
	return NULL;
}

static void cyc_on_signal(int sig)
{
	/* atomic: threads may handle signals at the same time */
	if (sig == SIGUSR1)
		__atomic_fetch_add(&cyc.usr1, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_add(&cyc.rt, 1, __ATOMIC_SEQ_CST);
}

/* nthreads threads besides main, busy or sleeping, and the churner if
 * churn. Main answers 'p' with 'P', exits on 'x', and on 'v' vforks a
 * child that sleeps 1.5 s (main is in D state meanwhile). */
int start_cyc_child(struct child *c, int nthreads, int busy, int churn)
{
	int req[2], resp[2];
	memset(c, 0, sizeof(*c));
	if (pipe(req) || pipe(resp))
		return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(req[1]);
		close(resp[0]);
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = cyc_on_signal;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGUSR1, &sa, NULL);
		sigaction(SIGRTMIN + 1, &sa, NULL);
		for (int i = 0; i < nthreads; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL,
					   busy ? cyc_busy : child_sleeper,
					   NULL) != 0)
				_exit(2);
		}
		if (churn) {
			pthread_t t;
			if (pthread_create(&t, NULL, child_churner, NULL) != 0)
				_exit(2);
		}
		if (write(resp[1], "R", 1) != 1)
			_exit(2);
		for (;;) {
			char ch;
			ssize_t r = read(req[0], &ch, 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0 || ch == 'x')
				_exit(0);
			if (ch == 'p' && write(resp[1], "P", 1) != 1)
				_exit(2);
			if (ch == 'v') {
				pid_t v = vfork();
				if (v == 0) {
					struct timespec ts = {1, 500000000};
					syscall(SYS_nanosleep, &ts, NULL);
					_exit(0);
				}
				if (v > 0)
					waitpid(v, NULL, 0);
			}
		}
	}
	close(req[0]);
	close(resp[1]);
	c->pid = pid;
	c->req_w = req[1];
	c->resp_r = resp[0];
	char r = 0;
	struct pollfd pfd = {c->resp_r, POLLIN, 0};
	if (poll(&pfd, 1, 5000) != 1 || read(c->resp_r, &r, 1) != 1 || r != 'R')
		return -1;
	return 0;
}

uint64_t read_u64(struct cs_live *live, volatile uint64_t *addr, int *failed)
{
	uint64_t v = 0;
	struct cs_error *err =
		cs_live_read(live, (uint64_t)(uintptr_t)addr, &v, sizeof(v));
	if (err) {
		printf("read: %s\n", err->message);
		*failed = 1;
	}
	cs_error_destroy(err);
	return v;
}

/* No task of pid is in a stop, right now (no waiting). */
int none_stopped_now(pid_t pid)
{
	int tids[256];
	char states[256];
	int n = task_states(pid, tids, states, 256);
	for (int i = 0; i < n; i++)
		if (states[i] == 't' || states[i] == 'T')
			return 0;
	return n > 0;
}

/* Reads counter until it differs from v (up to 2 s). */
int advances(struct cs_live *live, volatile uint64_t *counter, uint64_t v,
	     int *failed)
{
	for (int i = 0; i < 2000; i++) {
		if (read_u64(live, counter, failed) != v)
			return 1;
		sleep_ms(1);
	}
	return 0;
}
