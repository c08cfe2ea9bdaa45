/* process/core_*.c on real cores of `sleep`: from gcore and from the
 * kernel, when they can be taken here. */
#include "tests/unit/core/core_test.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- a real core from gcore ---- */

static int disk_build_id(const char *path, uint8_t *id, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	int found = -1;
	Elf_Scn *scn = NULL;
	while (e && found < 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)d->d_buf + noff, "GNU", 4) == 0) {
				memcpy(id, (char *)d->d_buf + doff,
				       nh.n_descsz);
				*len = nh.n_descsz;
				found = 0;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

/* fork + exec `sleep 30` in dir; returns once it sleeps, with its
 * executable's path in exe. */
static pid_t start_sleep(const char *dir, int want_core, char *exe,
			 size_t exesize)
{
	char self[PATH_MAX] = "", link[64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0)
		self[n] = '\0';
	pid_t pid = fork();
	if (pid != 0)
		goto parent;
	/* let gdb (our child too, not sleep's parent) attach under Yama
	 * ptrace_scope=1 */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	if (want_core) {
		struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
		if (setrlimit(RLIMIT_CORE, &rl) != 0) {
			getrlimit(RLIMIT_CORE, &rl);
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_CORE, &rl);
		}
		if (chdir(dir) != 0)
			_exit(126);
	}
	execlp("sleep", "sleep", "30", (char *)NULL);
	_exit(127);
parent:
	if (pid < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 200; i++) {
		n = readlink(link, exe, exesize - 1);
		if (n > 0) {
			exe[n] = '\0';
			char statp[64], st[512] = "";
			snprintf(statp, sizeof(statp), "/proc/%d/stat",
				 (int)pid);
			FILE *f = fopen(statp, "r");
			if (f) {
				if (!fgets(st, sizeof(st), f))
					st[0] = '\0';
				fclose(f);
			}
			char *rp = strrchr(st, ')');
			if (strcmp(exe, self) != 0 && rp && rp[2] == 'S')
				break;
		}
		struct timespec ts = {0, 25 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return pid;
}

/* What must hold for any real core of `sleep`, gcore's or the kernel's. */
static void check_sleep_core(const char *corefile, pid_t pid, const char *exe,
			     int kernel, char *why, size_t whysize)
{
	struct cs_core *core = NULL;
	struct cs_error *err = cs_core_open(corefile, &core);
	if (err) {
		fail(why, whysize, "open: %s", err->message);
		cs_error_destroy(err);
		return;
	}
	struct cs_error *t = cs_core_truncation(core);
	if (t)
		fail(why, whysize, "%s", t->message);
	cs_error_destroy(t);
	const struct cs_thread *th =
		cs_tables_thread_at(cs_core_tables(core), 0);
	if (cs_core_tables(core)->nthreads != 1 || th->tid != pid)
		fail(why, whysize,
		     "%zu threads, first tid %d, expected 1 and %d",
		     cs_core_tables(core)->nthreads, th ? th->tid : -1,
		     (int)pid);
	else if (!cs_tables_mapping_of(cs_core_tables(core), th->rip) ||
		 !th->fs_base || !th->rsp)
		fail(why, whysize,
		     "registers implausible: rip 0x%llx fs_base "
		     "0x%llx",
		     (unsigned long long)th->rip,
		     (unsigned long long)th->fs_base);
	else if (kernel && th->cursig != SIGSEGV)
		fail(why, whysize, "cursig %d", th->cursig);
	const struct cs_core_process *pr = cs_core_process(core);
	if (!pr->present || pr->pid != pid || strcmp(pr->fname, "sleep") != 0)
		fail(why, whysize, "NT_PRPSINFO: present %d pid %d fname '%s'",
		     pr->present, pr->pid, pr->fname);
	const struct cs_siginfo *si = cs_core_tables(core)->siginfo;
	/* kill(2) sends SI_USER: the union holds pid/uid, not an address */
	if (kernel && (!si->present || si->signo != SIGSEGV ||
		       si->code != SI_USER || si->addr != 0))
		fail(why, whysize, "siginfo %d %d %d 0x%llx", si->present,
		     si->signo, si->code, (unsigned long long)si->addr);
	if (cs_core_tables(core)->nmaps == 0)
		fail(why, whysize, "no NT_FILE mappings");
	const char *x = cs_core_tables(core)->executable;
	if (!x || strcmp(x, exe) != 0)
		fail(why, whysize, "executable '%s', expected %s",
		     x ? x : "(null)", exe);
	const char *slash = strrchr(exe, '/');
	const struct cs_mapping *m = cs_tables_find_mapping(
		cs_core_tables(core), slash ? slash + 1 : exe);
	uint8_t hdr[4] = {0};
	if (!m) {
		fail(why, whysize, "no mapping of %s", exe);
	} else if ((err = cs_core_read(core, m->start, hdr, 4))) {
		fail(why, whysize, "read exe ELF header: %s", err->message);
		cs_error_destroy(err);
	} else if (memcmp(hdr,
			  "\x7f"
			  "ELF",
			  4) != 0) {
		fail(why, whysize, "no \\x7fELF at the executable's mapping");
	}
	/* the core's build-id of sleep is the one on disk */
	uint8_t id[64], want[64];
	size_t len = 0, wlen = 0;
	if (m && disk_build_id(exe, want, &wlen) == 0) {
		err = cs_core_module_build_id(core, m->start, id, sizeof(id),
					      &len);
		if (err)
			fail(why, whysize, "build-id: %s", err->message);
		else if (len != wlen || memcmp(id, want, len) != 0)
			fail(why, whysize, "build-id differs from %s", exe);
		cs_error_destroy(err);
	}
	/* libc text is not in the core (kernel: p_filesz 0; gcore: no
	 * PT_LOAD at all); those bytes must come from the library file */
	const struct cs_mapping *text = NULL;
	for (size_t i = 0; i < cs_core_tables(core)->nmaps && !text; i++) {
		const struct cs_mapping *c =
			cs_tables_mapping_at(cs_core_tables(core), i);
		uint8_t b;
		err = cs_core_read_dumped(core, c->start, &b, 1);
		if (err && c->file_offset && strstr(c->path, "libc.so"))
			text = c;
		cs_error_destroy(err);
	}
	if (!text) {
		printf("     (every libc mapping is in the core)\n");
	} else {
		uint8_t got[256], disk[256];
		err = cs_core_read(core, text->start, got, sizeof(got));
		int fd = open(text->path, O_RDONLY);
		if (err)
			fail(why, whysize, "read undumped libc: %s",
			     err->message);
		else if (fd < 0 ||
			 pread(fd, disk, sizeof(disk),
			       (off_t)text->file_offset) !=
				 (ssize_t)sizeof(disk) ||
			 memcmp(got, disk, sizeof(got)) != 0)
			fail(why, whysize, "undumped libc bytes differ from %s",
			     text->path);
		cs_error_destroy(err);
		if (fd >= 0)
			close(fd);
	}
	printf("     (%zu mappings, executable %s)\n",
	       cs_core_tables(core)->nmaps, x ? x : "?");
	cs_core_close(core);

	/* cut copies: open or fail cleanly (gcore writes its notes last, so
	 * cuts lose them first; the kernel writes them first) */
	struct stat st;
	int fd = open(corefile, O_RDONLY);
	size_t size = fd >= 0 && fstat(fd, &st) == 0 ? (size_t)st.st_size : 0;
	uint8_t *all = size ? malloc(size) : NULL;
	if (!all || read(fd, all, size) != (ssize_t)size) {
		fail(why, whysize, "cannot read back %s", corefile);
	} else {
		char *p = tmp_path("real.cut");
		size_t cuts[] = {0,        1,           63,         64,
				 100,      1000,        4096,       size / 3,
				 size / 2, size - 4096, size - 100, size - 1};
		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			write_file(p, all, cuts[i]);
			if (exercise(p, NULL) < 0)
				fail(why, whysize, "cut at %zu: bad error",
				     cuts[i]);
		}
		free(p);
	}
	if (fd >= 0)
		close(fd);
	free(all);
}

void test_gcore(void)
{
	if (system("command -v gcore >/dev/null 2>&1") != 0) {
		printf("skip gcore: not installed\n");
		return;
	}
	char why[2048] = "", exe[PATH_MAX] = "";
	pid_t pid = start_sleep(tmpdir, 0, exe, sizeof(exe));
	if (pid < 0) {
		report("gcore core of sleep", "fork failed");
		return;
	}
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 gcore -o '%s/gcore' %d >'%s/gcore.log' 2>&1",
		 tmpdir, (int)pid, tmpdir);
	int rc = system(cmd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	char corefile[128];
	snprintf(corefile, sizeof(corefile), "%s/gcore.%d", tmpdir, (int)pid);
	struct stat st;
	if (rc != 0 || stat(corefile, &st) != 0) {
		printf("skip gcore: gcore failed (ptrace not permitted?); "
		       "see %s/gcore.log\n",
		       tmpdir);
		return;
	}
	check_sleep_core(corefile, pid, exe, 0, why, sizeof(why));
	report("gcore core of sleep: thread, executable, ELF header, "
	       "build-id, undumped text, cuts",
	       why);
}

/* Only when the kernel writes plain files into the crashing process's
 * directory (core_pattern "core"); pipes to systemd-coredump or apport
 * are not ours to read. */
void test_kernel_core(void)
{
	char pattern[256] = "", uses_pid[8] = "0";
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "r");
	if (f) {
		if (!fgets(pattern, sizeof(pattern), f))
			pattern[0] = '\0';
		fclose(f);
	}
	pattern[strcspn(pattern, "\n")] = '\0';
	if (!pattern[0] || strpbrk(pattern, "|%/")) {
		printf("skip kernel core: core_pattern is '%s'\n", pattern);
		return;
	}
	if ((f = fopen("/proc/sys/kernel/core_uses_pid", "r"))) {
		if (!fgets(uses_pid, sizeof(uses_pid), f))
			uses_pid[0] = '0';
		fclose(f);
	}
	char *dir = tmp_path("kernel");
	mkdir(dir, 0755);
	char why[2048] = "", exe[PATH_MAX] = "", corefile[512];
	pid_t pid = start_sleep(dir, 1, exe, sizeof(exe));
	int status = 0;
	if (pid > 0) {
		kill(pid, SIGSEGV);
		waitpid(pid, &status, 0);
	}
	if (uses_pid[0] == '1')
		snprintf(corefile, sizeof(corefile), "%s/%s.%d", dir, pattern,
			 (int)pid);
	else
		snprintf(corefile, sizeof(corefile), "%s/%s", dir, pattern);
	struct stat st;
	if (pid < 0 || !WIFSIGNALED(status) || !WCOREDUMP(status) ||
	    stat(corefile, &st) != 0) {
		printf("skip kernel core: no core dumped (RLIMIT_CORE?)\n");
		free(dir);
		return;
	}
	check_sleep_core(corefile, pid, exe, 1, why, sizeof(why));
	free(dir);
	report("kernel core of sleep: thread, siginfo, executable, ELF "
	       "header, build-id, undumped text, cuts",
	       why);
}
