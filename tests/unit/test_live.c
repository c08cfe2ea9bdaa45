/* Unit test for corestack/live.c.
 *
 * The test forks children of itself that start a few sleeping threads and
 * hold a known pattern in memory, and attaches to them paused and
 * unpaused; other forks play a second tracer and a corestack killed by
 * SIGTERM. Build and run:
 *   cc -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -g \
 *      -fsanitize=address,undefined -fno-sanitize-recover=all -I. \
 *      tests/unit/test_live.c corestack/live.c corestack/core.c \
 *      util/error.c -lelf -o /tmp/test_live && /tmp/test_live
 * Needs permission to ptrace its own children (Yama ptrace_scope <= 1). */
#include "corestack/live.h"
#include "tests/unit/check.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PATTERN_SIZE 4096
#define NTHREADS 3

static uint8_t pattern_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the child ---- */

struct child {
	pid_t pid;
	int req_w, resp_r;
	uint64_t pattern;         /* PATTERN_SIZE bytes of pattern_byte */
	uint64_t edge;            /* last 8 bytes before an unmapped page */
};

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
			_exit(0);  /* _exit: no leak check in the fork */
		if (c == 'p' && write(resp_w, "P", 1) != 1)
			_exit(2);
	}
}

static int start_child(struct child *c, int churn, long exit_after_us)
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
static int ping(struct child *c)
{
	if (write(c->req_w, "p", 1) != 1)
		return 0;
	struct pollfd pfd = {c->resp_r, POLLIN, 0};
	if (poll(&pfd, 1, 2000) != 1)
		return 0;
	char r;
	return read(c->resp_r, &r, 1) == 1 && r == 'P';
}

static int stop_child(struct child *c)
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

/* ---- /proc helpers ---- */

/* State letter of each task of pid into states (tids into tids); the
 * count, -1 if the process is gone. */
static int task_states(pid_t pid, int *tids, char *states, int max)
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
		snprintf(spath, sizeof(spath), "/proc/%d/task/%d/stat", pid, tid);
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

static int dead_state(char s)
{
	return s == 'Z' || s == 'X' || s == 'x';
}

/* Every live thread is in a tracing stop; *count of them. */
static int all_traced(pid_t pid, int *count)
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

/* No thread stopped ('t' or 'T'); waits up to 1 s for it to become so. */
static int none_stopped(pid_t pid)
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

static int tracer_of(pid_t pid, pid_t tid)
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
static int untraced_except(pid_t pid, int allowed)
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

/* GNU build-id of an ELF file on disk, via libelf. */
static size_t file_build_id(const char *path, uint8_t *buf, size_t size)
{
	size_t len = 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	while (elf && !len && (scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while (data && (off = gelf_getnote(data, off, &nh, &name_off,
						   &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) == 0 &&
			    nh.n_descsz <= size) {
				memcpy(buf, (char *)data->d_buf + desc_off,
				       nh.n_descsz);
				len = nh.n_descsz;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return len;
}

static int contains(const struct cs_error *err, const char *s)
{
	return err && err->message && strstr(err->message, s);
}

static const char *msg(const struct cs_error *err)
{
	return err ? err->message : "(no error)";
}

/* A pid that was just used and is free now. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

/* ---- tests ---- */

static void test_paused(void)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	CHECK(none_stopped(c.pid), "child stopped before attach");
	struct cs_live *live = NULL;
	struct cs_error *err = cs_live_attach(c.pid, 1, &live);
	CHECK(!err && live, "paused attach: %s", msg(err));
	cs_error_destroy(err);
	if (!live) {
		stop_child(&c);
		return;
	}
	int count = 0;
	CHECK(all_traced(c.pid, &count), "not every thread in 't' while attached");
	CHECK(count == 1 + NTHREADS, "%d threads in /proc", count);
	CHECK(cs_live_pid(live) == c.pid, "pid");
	CHECK(cs_live_paused(live), "paused");
	size_t n = cs_live_thread_count(live);
	CHECK(n == 1 + NTHREADS, "thread count %zu", n);
	CHECK(n && cs_live_thread_at(live, 0)->tid == c.pid,
	      "thread 0 is not the main thread");
	CHECK(cs_live_thread_at(live, n) == NULL, "thread past the end");
	int fs_ok = 1, regs_ok = 1, tracer_ok = 1;
	for (size_t i = 0; i < n; i++) {
		const struct cs_core_thread *t = cs_live_thread_at(live, i);
		if (!t->fs_base)
			fs_ok = 0;
		for (size_t j = 0; j < i; j++)
			if (cs_live_thread_at(live, j)->fs_base == t->fs_base)
				fs_ok = 0;
		if (!t->rip || !t->rsp || t->regs[CS_CORE_RIP] != t->rip ||
		    t->regs[CS_CORE_RSP] != t->rsp ||
		    t->regs[CS_CORE_FS_BASE] != t->fs_base || t->cursig)
			regs_ok = 0;
		if (tracer_of(c.pid, t->tid) != getpid())
			tracer_ok = 0;
	}
	CHECK(fs_ok, "fs_base zero or shared between threads");
	CHECK(regs_ok, "registers");
	CHECK(tracer_ok, "we are not the tracer of every thread");

	/* memory */
	uint8_t buf[PATTERN_SIZE];
	err = cs_live_read(live, c.pattern, buf, sizeof(buf));
	int same = !err;
	for (size_t i = 0; same && i < sizeof(buf); i++)
		same = buf[i] == pattern_byte(i);
	CHECK(same, "pattern read back: %s", msg(err));
	cs_error_destroy(err);
	struct rv_target tg = cs_live_target(live);
	uint8_t small[5] = {0};
	err = rv_target_read(&tg, c.pattern + 100, small, sizeof(small));
	CHECK(!err && small[0] == pattern_byte(100) &&
		      small[4] == pattern_byte(104),
	      "rv_target read: %s", msg(err));
	cs_error_destroy(err);
	err = cs_live_read(live, 0x10, buf, 8);
	CHECK(err && err->code == CS_ERR_FAULT && contains(err, "0x10"),
	      "unmapped read: %s", msg(err));
	cs_error_destroy(err);
	/* A read running off the end of a mapping names where it stopped. */
	char want[64];
	snprintf(want, sizeof(want), "0x%llx", (unsigned long long)c.edge + 8);
	err = cs_live_read(live, c.edge, buf, 16);
	CHECK(err && err->code == CS_ERR_FAULT && contains(err, want),
	      "read across the end of a mapping: %s", msg(err));
	cs_error_destroy(err);
	err = cs_live_read(live, c.edge, buf, 8);
	CHECK(!err && buf[0] == 0xab && buf[7] == 0xab,
	      "read up to the end of a mapping: %s", msg(err));
	cs_error_destroy(err);
	err = cs_live_read(live, UINT64_MAX - 3, buf, 8);
	CHECK(err && err->code == CS_ERR_FAULT, "wrapping read: %s", msg(err));
	cs_error_destroy(err);
	CHECK(cs_live_read(live, 0, buf, 0) == NULL, "empty read");

	/* mappings, auxv, executable, command */
	char exe[PATH_MAX + 1];
	ssize_t el = readlink("/proc/self/exe", exe, PATH_MAX);
	exe[el > 0 ? el : 0] = 0;
	const char *lexe = cs_live_executable(live);
	CHECK(lexe && strcmp(lexe, exe) == 0, "executable %s, want %s",
	      lexe ? lexe : "(null)", exe);
	const struct cs_core_mapping *m =
		cs_live_mapping_of(live, (uint64_t)(uintptr_t)&test_paused);
	CHECK(m && strcmp(m->path, exe) == 0, "mapping of our code: %s",
	      m ? m->path : "(none)");
	CHECK(!cs_live_mapping_of(live, c.pattern),
	      "heap counted as a file mapping");
	int sorted = cs_live_mapping_count(live) > 2;
	for (size_t i = 1; i < cs_live_mapping_count(live); i++) {
		const struct cs_core_mapping *a = cs_live_mapping_at(live, i - 1),
					     *b = cs_live_mapping_at(live, i);
		if (a->end > b->start || a->path[0] != '/')
			sorted = 0;
	}
	CHECK(sorted, "mappings not sorted or not file-backed");
	CHECK(!cs_live_mapping_at(live, cs_live_mapping_count(live)),
	      "mapping past the end");
	CHECK(cs_live_auxv(live, AT_PAGESZ) == (uint64_t)sysconf(_SC_PAGESIZE),
	      "AT_PAGESZ");
	CHECK(cs_live_auxv(live, AT_ENTRY) == getauxval(AT_ENTRY), "AT_ENTRY");
	CHECK(cs_live_auxv(live, 0xdead) == 0, "absent auxv entry");
	char cmd[4096] = "";
	FILE *f = fopen("/proc/self/cmdline", "r");
	size_t cl = f ? fread(cmd, 1, sizeof(cmd) - 1, f) : 0;
	if (f)
		fclose(f);
	while (cl && !cmd[cl - 1])
		cl--;
	for (size_t i = 0; i < cl; i++)
		if (!cmd[i])
			cmd[i] = ' ';
	cmd[cl] = 0;
	CHECK(cs_live_command(live) && strcmp(cs_live_command(live), cmd) == 0,
	      "command '%s', want '%s'",
	      cs_live_command(live) ? cs_live_command(live) : "(null)", cmd);

	/* build-ids from memory against the files */
	const struct cs_core_mapping *base = NULL;
	for (size_t i = 0; i < cs_live_mapping_count(live) && !base; i++) {
		const struct cs_core_mapping *x = cs_live_mapping_at(live, i);
		if (strcmp(x->path, exe) == 0 && x->file_offset == 0)
			base = x;
	}
	const struct cs_core_mapping *libc = cs_live_find_mapping(live, "libc.so");
	CHECK(base && libc, "no mapping of the executable or libc");
	const struct cs_core_mapping *mods[2] = {base, libc};
	for (int i = 0; i < 2; i++) {
		if (!mods[i])
			continue;
		uint8_t id[64], fid[64];
		size_t len = 0;
		size_t flen = file_build_id(mods[i]->path, fid, sizeof(fid));
		err = cs_live_module_build_id(live, mods[i]->start, id,
					      sizeof(id), &len);
		CHECK(!err && flen && len == flen && memcmp(id, fid, len) == 0,
		      "build-id of %s (%zu vs %zu bytes): %s", mods[i]->path,
		      len, flen, msg(err));
		cs_error_destroy(err);
		err = cs_live_module_build_id(live, mods[i]->start, id, 2, &len);
		CHECK(err && err->code == CS_ERR_LIMIT, "small build-id buffer");
		cs_error_destroy(err);
	}
	uint8_t id[64];
	size_t len;
	err = cs_live_module_build_id(live, c.pattern, id, sizeof(id), &len);
	CHECK(err && err->code == CS_ERR_CORRUPT, "build-id of non-ELF: %s",
	      msg(err));
	cs_error_destroy(err);

	/* a tid is not a pid */
	if (n > 1) {
		struct cs_live *other = NULL;
		err = cs_live_attach(cs_live_thread_at(live, 1)->tid, 0, &other);
		CHECK(err && err->code == CS_ERR_USAGE && !other,
		      "attach to a tid: %s", msg(err));
		cs_error_destroy(err);
	}

	/* the same child twice from this process: we are the other tracer */
	struct cs_live *twice = NULL;
	err = cs_live_attach(c.pid, 1, &twice);
	char me[32];
	snprintf(me, sizeof(me), "pid %d", (int)getpid());
	CHECK(err && !twice && contains(err, "another tracer") &&
		      contains(err, me),
	      "second attach: %s", msg(err));
	cs_error_destroy(err);
	CHECK(all_traced(c.pid, NULL), "second attach resumed the first's");

	cs_live_detach(live);
	CHECK(!cs_live_paused(live), "still paused after detach");
	CHECK(none_stopped(c.pid), "threads still stopped after detach");
	CHECK(untraced_except(c.pid, 0), "still traced after detach");
	CHECK(ping(&c), "child does not answer after detach");
	cs_live_detach(live);  /* twice */
	/* what was captured stays, and reads still work */
	CHECK(cs_live_thread_count(live) == n, "threads forgotten on detach");
	err = cs_live_read(live, c.pattern, buf, 16);
	CHECK(!err && buf[15] == pattern_byte(15), "read after detach: %s",
	      msg(err));
	cs_error_destroy(err);
	cs_live_close(live);
	cs_live_detach(NULL);
	cs_live_close(NULL);
	CHECK(ping(&c), "child does not answer after close");
	int status = stop_child(&c);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "child status 0x%x", status);
}

static void test_unpaused(void)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	struct cs_live *live = NULL;
	struct cs_error *err = cs_live_attach(c.pid, 0, &live);
	CHECK(!err && live, "unpaused attach: %s", msg(err));
	cs_error_destroy(err);
	if (!live) {
		stop_child(&c);
		return;
	}
	CHECK(!cs_live_paused(live), "paused");
	CHECK(none_stopped(c.pid), "a thread is stopped without pause");
	CHECK(untraced_except(c.pid, 0), "a thread is traced without pause");
	size_t n = cs_live_thread_count(live);
	CHECK(n == 1 + NTHREADS, "thread count %zu", n);
	int zero = 1;
	for (size_t i = 0; i < n; i++) {
		const struct cs_core_thread *t = cs_live_thread_at(live, i);
		if (t->rip || t->rsp || t->fs_base || t->regs[CS_CORE_RIP] ||
		    !t->tid)
			zero = 0;
	}
	CHECK(zero, "registers without pause");
	CHECK(n && cs_live_thread_at(live, 0)->tid == c.pid, "thread 0");
	uint8_t buf[PATTERN_SIZE];
	err = cs_live_read(live, c.pattern, buf, sizeof(buf));
	int same = !err;
	for (size_t i = 0; same && i < sizeof(buf); i++)
		same = buf[i] == pattern_byte(i);
	CHECK(same, "pattern read back unpaused: %s", msg(err));
	cs_error_destroy(err);
	err = cs_live_read(live, 0x10, buf, 8);
	CHECK(err && err->code == CS_ERR_FAULT, "unmapped read unpaused");
	cs_error_destroy(err);
	CHECK(ping(&c), "child does not answer while read unpaused");
	cs_live_close(live);
	CHECK(ping(&c), "child does not answer after unpaused close");
	stop_child(&c);
}

static void test_no_process(void)
{
	pid_t pid = dead_pid();
	char want[32];
	snprintf(want, sizeof(want), "pid %d", (int)pid);
	for (int pause = 0; pause < 2; pause++) {
		struct cs_live *live = (struct cs_live *)1;
		struct cs_error *err = cs_live_attach(pid, pause, &live);
		CHECK(err && !live && contains(err, want) &&
			      contains(err, "no such process"),
		      "nonexistent pid (pause %d): %s", pause, msg(err));
		cs_error_destroy(err);
	}
	struct cs_live *live;
	struct cs_error *err = cs_live_attach(0, 1, &live);
	CHECK(err && err->code == CS_ERR_USAGE, "pid 0");
	cs_error_destroy(err);
	err = cs_live_attach(getpid(), 1, &live);
	CHECK(err && err->code == CS_ERR_USAGE, "pausing ourselves: %s",
	      msg(err));
	cs_error_destroy(err);
}

static void test_zombie(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int zombie = 0;
	for (int i = 0; i < 200 && !zombie; i++) {
		FILE *f = fopen(path, "r");
		if (f) {
			char *p = fgets(line, sizeof(line), f) ? strrchr(line, ')')
							       : NULL;
			zombie = p && p[1] && p[2] == 'Z';
			fclose(f);
		}
		if (!zombie)
			sleep_ms(5);
	}
	CHECK(zombie, "child did not become a zombie");
	char want[32];
	snprintf(want, sizeof(want), "pid %d", (int)pid);
	for (int pause = 0; pause < 2; pause++) {
		struct cs_live *live = NULL;
		struct cs_error *err = cs_live_attach(pid, pause, &live);
		CHECK(err && !live && contains(err, "zombie") &&
			      contains(err, want),
		      "zombie (pause %d): %s", pause, msg(err));
		cs_error_destroy(err);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status),
	      "zombie not reapable after attach");
}

/* Another process traces thread `which` (0: the main thread, else the
 * last): attach must fail naming it and leave every thread running. */
static void test_other_tracer(int which)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	int tids[64];
	char states[64];
	int n = task_states(c.pid, tids, states, 64);
	int target = c.pid;
	for (int i = 0; i < n; i++)
		if (which && tids[i] > target)
			target = tids[i];
	int ready[2], hold[2];
	if (pipe(ready) || pipe(hold)) {
		CHECK(0, "pipe");
		return;
	}
	fflush(stdout);
	pid_t tracer = fork();
	if (tracer == 0) {
		close(ready[0]);
		close(hold[1]);
		/* seize without interrupting: the thread keeps running */
		char r = ptrace(PTRACE_SEIZE, target, NULL, NULL) == 0 ? 'K' : 'E';
		if (write(ready[1], &r, 1) != 1)
			_exit(2);
		char c2;
		while (read(hold[0], &c2, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	char r = 0;
	CHECK(read(ready[0], &r, 1) == 1 && r == 'K', "helper could not trace");
	close(ready[0]);

	struct cs_live *live = NULL;
	struct cs_error *err = cs_live_attach(c.pid, 1, &live);
	char want[32];
	snprintf(want, sizeof(want), "pid %d", (int)tracer);
	CHECK(err && !live && contains(err, "another tracer") &&
		      contains(err, want),
	      "attach with another tracer on thread %d: %s", target, msg(err));
	cs_error_destroy(err);
	CHECK(none_stopped(c.pid), "a thread stays stopped after the failure");
	CHECK(untraced_except(c.pid, tracer), "we still trace a thread");
	CHECK(ping(&c), "child does not answer after the failed attach");

	/* without pause the other tracer is no obstacle */
	err = cs_live_attach(c.pid, 0, &live);
	uint8_t b = 0;
	struct cs_error *rerr = live ? cs_live_read(live, c.pattern + 1, &b, 1)
				     : NULL;
	CHECK(!err && live && !rerr && b == pattern_byte(1),
	      "unpaused attach beside another tracer: %s %s", msg(err),
	      msg(rerr));
	cs_error_destroy(err);
	cs_error_destroy(rerr);
	cs_live_close(live);

	close(hold[1]);
	waitpid(tracer, NULL, 0);
	CHECK(ping(&c), "child does not answer after the tracer left");
	stop_child(&c);
}

/* Threads come and go while we attach: every one present must be caught. */
static void test_churn(void)
{
	struct child c;
	if (start_child(&c, 1, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	int bad = 0, errors = 0;
	for (int round = 0; round < 30; round++) {
		struct cs_live *live = NULL;
		struct cs_error *err = cs_live_attach(c.pid, 1, &live);
		if (err) {
			printf("churn round %d: %s\n", round, err->message);
			cs_error_destroy(err);
			errors++;
			continue;
		}
		int count = 0;
		if (!all_traced(c.pid, &count) ||
		    (size_t)count != cs_live_thread_count(live)) {
			printf("churn round %d: %d threads in /proc, %zu "
			       "attached\n",
			       round, count, cs_live_thread_count(live));
			bad++;
		}
		cs_live_close(live);
		if (!none_stopped(c.pid))
			bad++;
	}
	CHECK(!errors && !bad, "churn: %d errors, %d bad rounds", errors, bad);
	CHECK(untraced_except(c.pid, 0), "churn: still traced");
	CHECK(ping(&c), "churn: child does not answer");
	stop_child(&c);
}

/* The target dies while attached: detach returns promptly and the child
 * can still be reaped by its parent. */
static void test_exit_while_attached(void)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	struct cs_live *live = NULL;
	struct cs_error *err = cs_live_attach(c.pid, 1, &live);
	CHECK(!err && live, "attach: %s", msg(err));
	cs_error_destroy(err);
	if (!live) {
		stop_child(&c);
		return;
	}
	kill(c.pid, SIGKILL);
	long t0 = now_ms();
	cs_live_detach(live);
	long took = now_ms() - t0;
	CHECK(took < 2500, "detach after death took %ld ms", took);
	if (getenv("TEST_LIVE_VERBOSE"))
		printf("detach after death: %ld ms\n", took);
	uint8_t b;
	err = cs_live_read(live, c.pattern, &b, 1);
	CHECK(err && err->code == CS_ERR_FAULT, "read from a dead process: %s",
	      msg(err));
	cs_error_destroy(err);
	cs_live_close(live);
	int status = 0;
	pid_t r = -1;
	for (int i = 0; i < 300 && r != c.pid; i++) {
		r = waitpid(c.pid, &status, WNOHANG);
		if (r != c.pid)
			sleep_ms(10);
	}
	CHECK(r == c.pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "dead child not reapable (%d, 0x%x)", (int)r, status);
	close(c.req_w);
	close(c.resp_r);
}

/* Children that exit at various moments of the attach: each attach
 * either succeeds or says the process exited; never hangs, never a
 * stray error. */
static void test_exit_during_attach(void)
{
	int odd = 0, ok = 0, exited = 0;
	for (int round = 0; round < 20; round++) {
		struct child c;
		if (start_child(&c, 1, 20 + round * 40) != 0) {
			odd++;
			continue;
		}
		struct cs_live *live = NULL;
		struct cs_error *err = cs_live_attach(c.pid, 1, &live);
		if (!err) {
			ok++;
		} else if (contains(err, "exited") || contains(err, "zombie")) {
			exited++;
		} else {
			printf("exit during attach: %s\n", err->message);
			odd++;
		}
		cs_error_destroy(err);
		long t0 = now_ms();
		cs_live_close(live);
		if (now_ms() - t0 > 2500)
			odd++;
		int status = stop_child(&c);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			odd++;
	}
	CHECK(!odd, "exit during attach: %d odd (%d ok, %d exited)", odd, ok,
	      exited);
	if (getenv("TEST_LIVE_VERBOSE"))
		printf("exit during attach: %d ok, %d exited\n", ok, exited);
}

/* The main thread has exited (a zombie) while the others run. */
static void test_main_thread_gone(void)
{
	struct child c;
	if (start_child(&c, 0, -1) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	int zombie = 0;
	for (int i = 0; i < 200 && !zombie; i++) {
		int tids[64];
		char states[64];
		int n = task_states(c.pid, tids, states, 64);
		for (int j = 0; j < n; j++)
			if (tids[j] == c.pid && states[j] == 'Z')
				zombie = 1;
		if (!zombie)
			sleep_ms(5);
	}
	CHECK(zombie, "main thread did not become a zombie");
	for (int pause = 0; pause < 2; pause++) {
		struct cs_live *live = NULL;
		struct cs_error *err = cs_live_attach(c.pid, pause, &live);
		CHECK(!err && live, "attach with the main thread gone (pause "
		      "%d): %s", pause, msg(err));
		cs_error_destroy(err);
		if (!live)
			continue;
		size_t n = cs_live_thread_count(live);
		int leader = 0;
		for (size_t i = 0; i < n; i++)
			if (cs_live_thread_at(live, i)->tid == c.pid)
				leader = 1;
		CHECK(n == NTHREADS && !leader, "%zu threads, leader %d", n,
		      leader);
		uint8_t b = 0;
		err = cs_live_read(live, c.pattern + 9, &b, 1);
		CHECK(!err && b == pattern_byte(9), "read: %s", msg(err));
		cs_error_destroy(err);
		if (pause)
			CHECK(all_traced(c.pid, NULL), "not all stopped");
		cs_live_close(live);
		CHECK(none_stopped(c.pid), "stopped after close");
	}
	kill(c.pid, SIGKILL);
	stop_child(&c);
}

/* A process stopped by SIGSTOP before we came stays stopped after we go
 * (that stop is not ours to end), and SIGCONT still resumes it. */
static void test_already_stopped(void)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	kill(c.pid, SIGSTOP);
	int stopped = 0;
	for (int i = 0; i < 200 && !stopped; i++) {
		int tids[64];
		char states[64];
		int n = task_states(c.pid, tids, states, 64);
		stopped = n > 0;
		for (int j = 0; j < n; j++)
			if (states[j] != 'T')
				stopped = 0;
		if (!stopped)
			sleep_ms(5);
	}
	CHECK(stopped, "SIGSTOP did not stop the child");
	struct cs_live *live = NULL;
	struct cs_error *err = cs_live_attach(c.pid, 1, &live);
	CHECK(!err && live && cs_live_thread_count(live) == 1 + NTHREADS,
	      "attach to a stopped process: %s", msg(err));
	cs_error_destroy(err);
	int count = 0;
	CHECK(all_traced(c.pid, &count) && count == 1 + NTHREADS,
	      "not all in tracing stop");
	cs_live_close(live);
	/* detached threads wake and re-enter the group stop: give them time */
	int still = 0;
	char states[64] = "";
	int n = 0;
	for (int i = 0; i < 100 && !still; i++) {
		int tids[64];
		n = task_states(c.pid, tids, states, 63);
		still = n > 0;
		for (int j = 0; j < n; j++)
			if (states[j] != 'T')
				still = 0;
		if (!still)
			sleep_ms(10);
	}
	states[n > 0 ? n : 0] = 0;
	CHECK(still, "a stopped process no longer stopped after detach: %s",
	      states);
	CHECK(untraced_except(c.pid, 0), "still traced");
	kill(c.pid, SIGCONT);
	CHECK(none_stopped(c.pid), "SIGCONT did not resume");
	CHECK(ping(&c), "child does not answer after SIGCONT");
	stop_child(&c);
}

/* Make process_vm_readv fail with err in this process, as a kernel
 * without it (ENOSYS) or a seccomp policy (EPERM) would. */
static int block_process_vm_readv(int err)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(code) / sizeof(code[0]), code};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* Reads through /proc/PID/mem when process_vm_readv is unavailable: run
 * in a fork that blocks it; the exit code says which step failed. */
static void test_mem_fallback(int blocked_with)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	fflush(stdout);
	pid_t helper = fork();
	if (helper == 0) {
		int failed = 0;
		uint8_t buf[PATTERN_SIZE];
		if (block_process_vm_readv(blocked_with) != 0)
			_exit(100);
		struct iovec l = {buf, 1}, r = {buf, 1};
		if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != -1 ||
		    errno != blocked_with)
			_exit(101);
		for (int pause = 0; pause < 2; pause++) {
			struct cs_live *live = NULL;
			struct cs_error *err = cs_live_attach(c.pid, pause, &live);
			if (err) {
				printf("fallback attach: %s\n", err->message);
				fflush(stdout);
				_exit(102);
			}
			err = cs_live_read(live, c.pattern, buf, sizeof(buf));
			for (size_t i = 0; !err && i < sizeof(buf); i++)
				if (buf[i] != pattern_byte(i))
					failed |= 1;
			if (err)
				failed |= 2;
			cs_error_destroy(err);
			char want[64];
			snprintf(want, sizeof(want), "0x%llx",
				 (unsigned long long)c.edge + 8);
			err = cs_live_read(live, c.edge, buf, 16);
			if (!err || err->code != CS_ERR_FAULT || !contains(err, want))
				failed |= 4;
			cs_error_destroy(err);
			err = cs_live_read(live, 0x10, buf, 8);
			if (!err || err->code != CS_ERR_FAULT)
				failed |= 8;
			cs_error_destroy(err);
			uint8_t id[64];
			size_t len = 0;
			const struct cs_core_mapping *libc =
				cs_live_find_mapping(live, "libc.so");
			err = libc ? cs_live_module_build_id(live, libc->start, id,
							     sizeof(id), &len)
				   : NULL;
			if (!libc || err || len == 0)
				failed |= 16;
			cs_error_destroy(err);
			cs_live_close(live);
		}
		_exit(failed);
	}
	int status = 0;
	waitpid(helper, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "/proc/PID/mem fallback (process_vm_readv %s): status 0x%x",
	      strerror(blocked_with), status);
	CHECK(none_stopped(c.pid), "stopped after the fallback test");
	CHECK(ping(&c), "child does not answer after the fallback test");
	stop_child(&c);
}

static int sigterm_pipe = -1;

static void helper_on_term(int sig)
{
	(void)sig;
	if (write(sigterm_pipe, "h", 1) != 1)
		_exit(3);
}

/* A corestack-like attacher gets SIGTERM while the target is stopped: its
 * handler must resume the target, then hand the signal on. */
static void test_signal(void)
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
	fflush(stdout);
	pid_t helper = fork();
	if (helper == 0) {
		close(ready[0]);
		close(handled[0]);
		sigterm_pipe = handled[1];
		signal(SIGTERM, helper_on_term);
		alarm(30);  /* never outlive the test */
		struct cs_live *live = NULL;
		struct cs_error *err = cs_live_attach(c.pid, 1, &live);
		char r = err ? 'E' : 'A';
		if (write(ready[1], &r, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(ready[1]);
	close(handled[1]);
	char r = 0;
	CHECK(read(ready[0], &r, 1) == 1 && r == 'A', "helper attach failed");
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

	/* Handlers are ours only while attached. */
	struct sigaction sa;
	sigaction(SIGINT, NULL, &sa);
	CHECK(sa.sa_handler == SIG_DFL, "SIGINT handler left installed");
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
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
	return check_summary("live");
}
