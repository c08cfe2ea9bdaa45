/* process/live_*.c: attaching and detaching, paused and not; to processes
 * that are gone, zombies, traced by another, changing their threads,
 * exiting, or already stopped. */
#include "tests/unit/live/live_test.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

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
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) ==
				    0 &&
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

/* A pid that was just used and is free now. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

void test_paused(void)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	CHECK(none_stopped(c.pid), "child stopped before attach");
	struct cs_live *live = attach_child(&c, 1, "paused attach");
	struct cs_error *err = NULL;
	if (!live)
		return;
	int count = 0;
	CHECK(all_traced(c.pid, &count),
	      "not every thread in 't' while attached");
	CHECK(count == 1 + NTHREADS, "%d threads in /proc", count);
	CHECK(cs_live_pid(live) == c.pid, "pid");
	CHECK(cs_live_paused(live), "paused");
	size_t n = cs_live_tables(live)->nthreads;
	CHECK(n == 1 + NTHREADS, "thread count %zu", n);
	CHECK(n && cs_tables_thread_at(cs_live_tables(live), 0)->tid == c.pid,
	      "thread 0 is not the main thread");
	CHECK(cs_tables_thread_at(cs_live_tables(live), n) == NULL,
	      "thread past the end");
	int fs_ok = 1, regs_ok = 1, tracer_ok = 1;
	for (size_t i = 0; i < n; i++) {
		const struct cs_thread *t =
			cs_tables_thread_at(cs_live_tables(live), i);
		if (!t->fs_base)
			fs_ok = 0;
		for (size_t j = 0; j < i; j++)
			if (cs_tables_thread_at(cs_live_tables(live), j)
				    ->fs_base == t->fs_base)
				fs_ok = 0;
		if (!t->rip || !t->rsp || t->regs[CS_REG_RIP] != t->rip ||
		    t->regs[CS_REG_RSP] != t->rsp ||
		    t->regs[CS_REG_FS_BASE] != t->fs_base || t->cursig)
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
	struct cs_memory tg = cs_live_memory(live);
	uint8_t small[5] = {0};
	err = cs_memory_read(&tg, c.pattern + 100, small, sizeof(small));
	CHECK(!err && small[0] == pattern_byte(100) &&
		      small[4] == pattern_byte(104),
	      "cs_memory read: %s", msg(err));
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

	/* regions, from /proc/PID/maps: code, data, the unmapped page past
	 * the edge (the child is a fork of this program: same addresses) */
	struct cs_region r;
	int known =
		(cs_live_update_regions(live) &&
		 cs_tables_region_of(cs_live_tables(live),
				     (uint64_t)(uintptr_t)&test_paused, &r));
	CHECK(known && r.exec && r.start <= (uint64_t)(uintptr_t)&test_paused &&
		      (uint64_t)(uintptr_t)&test_paused < r.end,
	      "region of code: %d exec %d", known, known && r.exec);
	known = (cs_live_update_regions(live) &&
		 cs_tables_region_of(cs_live_tables(live), c.pattern, &r));
	CHECK(known && !r.exec && r.start <= c.pattern && c.pattern < r.end,
	      "region of data: %d exec %d", known, known && r.exec);
	CHECK(!(cs_live_update_regions(live) &&
		cs_tables_region_of(cs_live_tables(live), c.edge + 8, &r)) &&
		      (cs_live_update_regions(live) &&
		       cs_tables_region_of(cs_live_tables(live), c.edge, &r)) &&
		      r.end == c.edge + 8,
	      "regions at the edge of a mapping");

	/* mappings, auxv, executable, command */
	char exe[PATH_MAX + 1];
	ssize_t el = readlink("/proc/self/exe", exe, PATH_MAX);
	exe[el > 0 ? el : 0] = 0;
	const char *lexe = cs_live_tables(live)->executable;
	CHECK(lexe && strcmp(lexe, exe) == 0, "executable %s, want %s",
	      lexe ? lexe : "(null)", exe);
	const struct cs_mapping *m = cs_tables_mapping_of(
		cs_live_tables(live), (uint64_t)(uintptr_t)&test_paused);
	CHECK(m && strcmp(m->path, exe) == 0, "mapping of our code: %s",
	      m ? m->path : "(none)");
	CHECK(!cs_tables_mapping_of(cs_live_tables(live), c.pattern),
	      "heap counted as a file mapping");
	int sorted = cs_live_tables(live)->nmaps > 2;
	for (size_t i = 1; i < cs_live_tables(live)->nmaps; i++) {
		const struct cs_mapping *a = cs_tables_mapping_at(
						cs_live_tables(live), i - 1),
					*b = cs_tables_mapping_at(
						cs_live_tables(live), i);
		if (a->end > b->start || a->path[0] != '/')
			sorted = 0;
	}
	CHECK(sorted, "mappings not sorted or not file-backed");
	CHECK(!cs_tables_mapping_at(cs_live_tables(live),
				    cs_live_tables(live)->nmaps),
	      "mapping past the end");
	CHECK(cs_tables_auxv(cs_live_tables(live), AT_PAGESZ) ==
		      (uint64_t)sysconf(_SC_PAGESIZE),
	      "AT_PAGESZ");
	CHECK(cs_tables_auxv(cs_live_tables(live), AT_ENTRY) ==
		      getauxval(AT_ENTRY),
	      "AT_ENTRY");
	CHECK(cs_tables_auxv(cs_live_tables(live), 0xdead) == 0,
	      "absent auxv entry");
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
	CHECK(cs_live_tables(live)->command &&
		      strcmp(cs_live_tables(live)->command, cmd) == 0,
	      "command '%s', want '%s'",
	      cs_live_tables(live)->command ? cs_live_tables(live)->command
					    : "(null)",
	      cmd);

	/* build-ids from memory against the files */
	const struct cs_mapping *base = NULL;
	for (size_t i = 0; i < cs_live_tables(live)->nmaps && !base; i++) {
		const struct cs_mapping *x =
			cs_tables_mapping_at(cs_live_tables(live), i);
		if (strcmp(x->path, exe) == 0 && x->file_offset == 0)
			base = x;
	}
	const struct cs_mapping *libc =
		cs_tables_find_mapping(cs_live_tables(live), "libc.so");
	CHECK(base && libc, "no mapping of the executable or libc");
	const struct cs_mapping *mods[2] = {base, libc};
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
		err = cs_live_module_build_id(live, mods[i]->start, id, 2,
					      &len);
		CHECK(err && err->code == CS_ERR_LIMIT,
		      "small build-id buffer");
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
		err = cs_live_attach(
			cs_tables_thread_at(cs_live_tables(live), 1)->tid, 0,
			&other);
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
	cs_live_detach(live); /* twice */
	/* what was captured stays, and reads still work */
	CHECK(cs_live_tables(live)->nthreads == n,
	      "threads forgotten on detach");
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

void test_unpaused(void)
{
	struct child c;
	int started = start_child(&c, 0, 0);
	struct cs_live *live =
		attach_started(&c, started, 0, "unpaused attach");
	struct cs_error *err = NULL;
	if (!live)
		return;
	CHECK(!cs_live_paused(live), "paused");
	CHECK(none_stopped(c.pid), "a thread is stopped without pause");
	CHECK(untraced_except(c.pid, 0), "a thread is traced without pause");
	size_t n = cs_live_tables(live)->nthreads;
	CHECK(n == 1 + NTHREADS, "thread count %zu", n);
	int zero = 1;
	for (size_t i = 0; i < n; i++) {
		const struct cs_thread *t =
			cs_tables_thread_at(cs_live_tables(live), i);
		if (t->rip || t->rsp || t->fs_base || t->regs[CS_REG_RIP] ||
		    !t->tid)
			zero = 0;
	}
	CHECK(zero, "registers without pause");
	CHECK(n && cs_tables_thread_at(cs_live_tables(live), 0)->tid == c.pid,
	      "thread 0");
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
	/* Its writable memory holds the pattern (malloc'd), not its code
	 * (the child is a fork: pattern_byte is where it is here). */
	uint64_t start = 0, end = 0, code = (uint64_t)(uintptr_t)&pattern_byte;
	CHECK((cs_live_update_regions(live) &&
	       cs_tables_writable_next(cs_live_tables(live), c.pattern, &start,
				       &end)) &&
		      start <= c.pattern && c.pattern < end,
	      "pattern at 0x%llx not in a writable region (0x%llx-0x%llx)",
	      (unsigned long long)c.pattern, (unsigned long long)start,
	      (unsigned long long)end);
	CHECK(!(cs_live_update_regions(live) &&
		cs_tables_writable_next(cs_live_tables(live), code, &start,
					&end)) ||
		      start > code,
	      "code at 0x%llx in a writable region 0x%llx-0x%llx",
	      (unsigned long long)code, (unsigned long long)start,
	      (unsigned long long)end);
	CHECK(ping(&c), "child does not answer while read unpaused");
	cs_live_close(live);
	CHECK(ping(&c), "child does not answer after unpaused close");
	stop_child(&c);
}

void test_no_process(void)
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

void test_zombie(void)
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
			char *p = fgets(line, sizeof(line), f)
					  ? strrchr(line, ')')
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
void test_other_tracer(int which)
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
		char r = ptrace(PTRACE_SEIZE, target, NULL, NULL) == 0 ? 'K'
								       : 'E';
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
void test_churn(void)
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
		    (size_t)count != cs_live_tables(live)->nthreads) {
			printf("churn round %d: %d threads in /proc, %zu "
			       "attached\n",
			       round, count, cs_live_tables(live)->nthreads);
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
void test_exit_while_attached(void)
{
	struct child c;
	int started = start_child(&c, 0, 0);
	struct cs_live *live = attach_started(&c, started, 1, "attach");
	struct cs_error *err = NULL;
	if (!live)
		return;
	kill(c.pid, SIGKILL);
	long t0 = now_ms();
	cs_live_detach(live);
	long took = now_ms() - t0;
	/* bounded, not fast: the ceiling leaves room for a loaded machine */
	CHECK(took < 8000, "detach after death took %ld ms", took);
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
void test_exit_during_attach(void)
{
	int odd = 0, ok = 0, exited = 0;
	char why[512] = "";
	size_t used = 0;
#define ODD(...)                                                     \
	do {                                                         \
		odd++;                                               \
		if (used < sizeof(why))                              \
			used += (size_t)snprintf(why + used,         \
						 sizeof(why) - used, \
						 "; " __VA_ARGS__);  \
	} while (0)
	for (int round = 0; round < 20; round++) {
		struct child c;
		if (start_child(&c, 1, 20 + round * 40) != 0) {
			ODD("round %d: child did not start", round);
			continue;
		}
		struct cs_live *live = NULL;
		struct cs_error *err = cs_live_attach(c.pid, 1, &live);
		if (!err)
			ok++;
		else if (contains(err, "exited") || contains(err, "zombie"))
			exited++;
		else
			ODD("round %d: %s", round, err->message);
		cs_error_destroy(err);
		long t0 = now_ms();
		cs_live_close(live);
		long took = now_ms() - t0;
		if (took > 8000)
			ODD("round %d: close took %ld ms", round, took);
		int status = stop_child(&c);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			ODD("round %d: child status 0x%x", round, status);
	}
#undef ODD
	CHECK(!odd, "exit during attach: %d odd (%d ok, %d exited)%s", odd, ok,
	      exited, why);
	if (getenv("TEST_LIVE_VERBOSE"))
		printf("exit during attach: %d ok, %d exited\n", ok, exited);
}

/* The main thread has exited (a zombie) while the others run. */
void test_main_thread_gone(void)
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
		CHECK(!err && live,
		      "attach with the main thread gone (pause "
		      "%d): %s",
		      pause, msg(err));
		cs_error_destroy(err);
		if (!live)
			continue;
		size_t n = cs_live_tables(live)->nthreads;
		int leader = 0;
		for (size_t i = 0; i < n; i++)
			if (cs_tables_thread_at(cs_live_tables(live), i)->tid ==
			    c.pid)
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
void test_already_stopped(void)
{
	struct child c;
	if (start_child(&c, 0, 0) != 0) {
		CHECK(0, "cannot start child");
		return;
	}
	kill(c.pid, SIGSTOP);
	int stopped = group_stopped(c.pid, 200, 5);
	CHECK(stopped, "SIGSTOP did not stop the child");
	struct cs_live *live = NULL;
	struct cs_error *err = cs_live_attach(c.pid, 1, &live);
	CHECK(!err && live && cs_live_tables(live)->nthreads == 1 + NTHREADS,
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
