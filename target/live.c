/* Live-process target. See live.h.
 *
 * Everything about the target comes from /proc/PID and from ptrace, and
 * every step may race with the target: threads appear and exit while we
 * attach, the whole process may die at any point. Each such race ends in
 * either a skipped thread or a one-line error, and every loop that waits
 * on the target has a deadline. */
#include "live.h"
#include "build_id.h"
#include "live_signal.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long threads get to reach their stop when we attach, and to be
 * found stopped or dead when we detach. A thread needing longer is in an
 * uninterruptible sleep (D state: NFS, a core dump in progress). */
#define CS_LIVE_ATTACH_MS 5000
#define CS_LIVE_DETACH_MS 2000
/* How long cs_live_pause waits for threads to stop, and cs_live_resume
 * for the one extra stop it may have to let pass. */
#define CS_LIVE_PAUSE_MS 1000
/* A thread that takes longer than this to stop was not on a CPU. */
#define CS_LIVE_SLOW_STOP_US 100
/* Rescans of /proc/PID/task while new threads keep appearing. */
#define CS_LIVE_MAX_SCANS 64
/* /proc/PID/maps of a process with a million mappings is ~100 MiB. */
#define CS_LIVE_MAX_MAPS_BYTES ((size_t)256 << 20)
#define CS_LIVE_MAX_AUXV_BYTES ((size_t)64 << 10)
#define CS_LIVE_MAX_CMDLINE_BYTES ((size_t)64 << 10)
/* Bounds on what we read from memory for a module's build-id, as in
 * core.c: real modules have a few dozen headers and notes of a few KiB. */

#define CS_LIVE_CAP_SYS_PTRACE 19
#define CS_LIVE_PF_KTHREAD 0x00200000  /* task flag of kernel threads */

/* A seized thread is in one of three states: stopped (in a ptrace-stop
 * whose report we took), running (we let it go with PTRACE_CONT, or never
 * saw it stop), or listening (PTRACE_LISTEN: in a group-stop from SIGSTOP
 * and the like, which we must not end). A running or listening thread may
 * have stopped since, with a report we have not taken yet. */
struct cs_live_thread {
	struct cs_thread pub;
	int seized;               /* we are its tracer */
	int stopped;              /* in a ptrace-stop whose report we took */
	int listening;            /* let go with PTRACE_LISTEN */
	int interrupted;          /* a PTRACE_INTERRUPT of ours may still be
				   * pending: do not send another */
	int gone;                 /* exited */
	int resig;                /* signal to give back on resume or detach
				   * (the stop was a signal-delivery-stop) */
	int group_stop;           /* the stop was a group-stop, by this
				   * signal: resume with PTRACE_LISTEN */
	int slot;                 /* in live_signal.c, -1 if none */
	int slow_to_stop;         /* its last stop took long: it was asleep
				   * (see cs_live_pause) */
	int left_running;         /* not stopped by later pauses
				   * (cs_live_leave_running) */
};

struct cs_live {
	int pid;
	char name[32];            /* "process PID" */
	int pause;                /* attached with pause */
	int attached;             /* threads seized, not yet detached */
	int running;              /* attached, let run by cs_live_resume */
	int sig_installed;        /* cs_live_sig_install called */
	int we_are_parent;        /* the target is our child: its exit
				   * status is not ours to take here */
	struct cs_live_thread *work;  /* every thread seized, sorted by tid */
	size_t nwork, work_cap;
	struct cs_thread *threads;  /* public list, see live.h */
	size_t nthreads;
	struct cs_mapping *maps;
	size_t nmaps;
	uint64_t *auxv;           /* pairs */
	size_t auxv_count;
	char *exe, *cmd;
	/* Where to read memory and /proc files from: the main thread, or
	 * when it has exited (a zombie has no mm, its maps read empty) the
	 * first live thread; all share one address space. */
	int mem_tid;
	char procdir[48];         /* "/proc/PID/task/MEM_TID" */
	int memfd;                /* its mem, -1 until needed */
	int no_vm_readv;          /* process_vm_readv unavailable here */
	int no_registers;         /* pauses leave registers out */
};

/* ---- signal handling (live_signal.c), by thread ---- */

static void cs_live_sig_unregister(struct cs_live_thread *t)
{
	cs_live_sig_slot_free(t->slot, t->pub.tid);
	t->slot = -1;
}

static void cs_live_sig_arm(const struct cs_live_thread *t)
{
	cs_live_sig_slot_arm(t->slot, t->pub.tid, t->resig);
}

static void cs_live_sig_disarm(const struct cs_live_thread *t)
{
	cs_live_sig_slot_disarm(t->slot, t->pub.tid);
}

static int cs_live_sig_released(const struct cs_live_thread *t)
{
	return cs_live_sig_slot_released(t->slot);
}

/* ---- small helpers ---- */

static int64_t cs_live_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t cs_live_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sleep a little, a little longer each time (10 µs up to 5 ms). */
static void cs_live_nap(long *us)
{
	struct timespec ts = {0, *us * 1000};
	nanosleep(&ts, NULL);
	if (*us < 5000)
		*us *= 2;
}

/* The whole of a /proc file, NUL-terminated (the NUL not counted). Returns
 * 0 or an errno value; EFBIG beyond max unless truncate. */
static int cs_live_slurp(const char *path, size_t max, int truncate,
			 char **ret, size_t *retlen)
{
	*ret = NULL;
	*retlen = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno ? errno : EIO;
	size_t cap = 4096 < max ? 4096 : max, n = 0;
	char *buf = malloc(cap + 1);
	int err = buf ? 0 : ENOMEM;
	unsigned eintr = 0;
	while (!err) {
		if (n == cap) {
			if (cap >= max) {
				if (!truncate)
					err = EFBIG;
				break;
			}
			size_t ncap = cap * 2 < max ? cap * 2 : max;
			char *nbuf = realloc(buf, ncap + 1);
			if (!nbuf) {
				err = ENOMEM;
				break;
			}
			buf = nbuf;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR && ++eintr < 100)
				continue;
			err = errno ? errno : EIO;
		} else if (r == 0) {
			break;
		} else {
			n += (size_t)r;
		}
	}
	close(fd);
	if (err || !buf) {
		free(buf);
		return err ? err : ENOMEM;
	}
	buf[n] = 0;
	*ret = buf;
	*retlen = n;
	return 0;
}

/* What /proc/PID[/task/TID]/status says. */
struct cs_live_status {
	char state;               /* 'R', 'S', 'Z'… */
	int tgid, ppid, tracer, threads;
	unsigned uid;             /* real */
	char name[64];
};

static int cs_live_read_status(int pid, int tid, struct cs_live_status *st)
{
	char path[64];
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid,
			 tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	char *text;
	size_t len;
	int e = cs_live_slurp(path, 64 << 10, 1, &text, &len);
	if (e)
		return e;
	memset(st, 0, sizeof(*st));
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strncmp(line, "Name:", 5) == 0) {
			const char *v = line + 5 + strspn(line + 5, " \t");
			snprintf(st->name, sizeof(st->name), "%s", v);
		} else if (strncmp(line, "State:", 6) == 0) {
			st->state = line[6 + strspn(line + 6, " \t")];
		} else {
			sscanf(line, "Tgid: %d", &st->tgid);
			sscanf(line, "PPid: %d", &st->ppid);
			sscanf(line, "TracerPid: %d", &st->tracer);
			sscanf(line, "Uid: %u", &st->uid);
			sscanf(line, "Threads: %d", &st->threads);
		}
		line = next;
	}
	free(text);
	return 0;
}

/* State letter of one thread from its stat, 0 if it is gone; *flags
 * (if flags) its task flags. */
static char cs_live_stat(int pid, int tid, unsigned long *flags)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	char *text;
	size_t len;
	if (cs_live_slurp(path, 4096, 1, &text, &len) != 0)
		return 0;
	/* comm may hold ')' and spaces: the state follows the last ')' */
	char *paren = strrchr(text, ')');
	char state = paren && paren[1] == ' ' ? paren[2] : 0;
	/* ") S ppid pgrp session tty_nr tpgid flags" */
	if (flags && (!state ||
		      sscanf(paren + 3, "%*d %*d %*d %*d %*d %lu", flags) != 1))
		*flags = 0;
	free(text);
	return state;
}

static char cs_live_thread_state(int pid, int tid)
{
	return cs_live_stat(pid, tid, NULL);
}

/* How many threads the kernel counts in process pid (num_threads in its
 * stat, read without allocating: a sampler asks at every pause); -1 if
 * unreadable. */
static int cs_live_kernel_thread_count(int pid)
{
	char path[32], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = 0;
	/* ") S ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice num_threads" */
	const char *paren = strrchr(text, ')');
	int count;
	if (!paren || sscanf(paren + 1, " %*c %*d %*d %*d %*d %*d %*u %*u "
				       "%*u %*u %*u %*u %*u %*d %*d %*d %*d %d",
			     &count) != 1)
		return -1;
	return count;
}

static int cs_live_has_cap_ptrace(void)
{
	char *text = NULL;
	size_t len;
	if (cs_live_slurp("/proc/self/status", 64 << 10, 1, &text, &len) != 0 ||
	    !text)
		return 0;
	const char *p = strstr(text, "\nCapEff:");
	unsigned long long caps = 0;
	if (p)
		caps = strtoull(p + 8, NULL, 16);
	free(text);
	return (caps >> CS_LIVE_CAP_SYS_PTRACE) & 1;
}

/* "gdb", or "this process" for ourselves. */
static void cs_live_comm(int pid, char *buf, size_t size)
{
	if (pid == getpid()) {
		snprintf(buf, size, "this process");
		return;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	char *text;
	size_t len;
	if (cs_live_slurp(path, 256, 1, &text, &len) != 0) {
		snprintf(buf, size, "exited");
		return;
	}
	text[strcspn(text, "\n")] = 0;
	snprintf(buf, size, "%s", text);
	free(text);
}

static struct cs_error *cs_live_traced_error(int pid, int tid, int tracer)
{
	char name[64];
	cs_live_comm(tracer, name, sizeof(name));
	if (tid && tid != pid) {
		return cs_error_create(CS_ERR_OS,
				       "pid %d: thread %d is already traced by "
				       "another tracer, pid %d (%s): a thread "
				       "can have only one tracer; detach it "
				       "first, or read it without pausing "
				       "(--nonblocking)",
				       pid, tid, tracer, name);
	}
	return cs_error_create(CS_ERR_OS,
			       "pid %d is already traced by another tracer, "
			       "pid %d (%s): a process can have only one "
			       "tracer; detach it first, or read it "
			       "without pausing (--nonblocking)",
			       pid, tracer, name);
}

struct cs_error *cs_live_denial_message(const struct cs_live_denial *d)
{
	const char *what = d->attaching ? "attach to" : "read the memory of";
	int pid = d->pid;
	if (d->yama_scope >= 3) {
		return cs_error_create(CS_ERR_OS,
				       "cannot %s pid %d: kernel.yama."
				       "ptrace_scope is %d, which forbids "
				       "ptrace for everyone until reboot",
				       what, pid, d->yama_scope);
	}
	if (!d->cap_sys_ptrace && d->our_uid == 0) {
		return cs_error_create(CS_ERR_OS,
				       "cannot %s pid %d: corestack runs as "
				       "root but without CAP_SYS_PTRACE (a "
				       "container started without it?); grant "
				       "it (docker run --cap-add=SYS_PTRACE), "
				       "or run corestack as the process's user",
				       what, pid);
	}
	if (!d->cap_sys_ptrace && d->target_uid_known &&
	    d->target_uid != d->our_uid) {
		return cs_error_create(CS_ERR_OS,
				       "cannot %s pid %d: it runs as uid %u and "
				       "corestack as uid %u; run corestack as "
				       "that user, or as root (CAP_SYS_PTRACE)",
				       what, pid, d->target_uid, d->our_uid);
	}
	if (!d->cap_sys_ptrace && d->yama_scope == 2) {
		return cs_error_create(CS_ERR_OS,
				       "cannot %s pid %d: kernel.yama."
				       "ptrace_scope is 2 (only CAP_SYS_PTRACE "
				       "may trace); run corestack as root",
				       what, pid);
	}
	if (!d->cap_sys_ptrace && d->yama_scope == 1) {
		return cs_error_create(CS_ERR_OS,
				       "cannot %s pid %d: kernel.yama."
				       "ptrace_scope is 1 (only a parent may "
				       "trace); run corestack as root, or set "
				       "it to 0 (sysctl kernel.yama."
				       "ptrace_scope=0)",
				       what, pid);
	}
	if (!d->cap_sys_ptrace) {
		return cs_error_create(CS_ERR_OS,
				       "cannot %s pid %d: permission denied (a "
				       "setuid or undumpable process?); run "
				       "corestack as root (CAP_SYS_PTRACE)",
				       what, pid);
	}
	return cs_error_create(CS_ERR_OS,
			       "cannot %s pid %d: permission denied even with "
			       "CAP_SYS_PTRACE: ptrace is blocked here (a "
			       "seccomp filter or security module, as in "
			       "containers: docker needs --cap-add=SYS_PTRACE)",
			       what, pid);
}

/* Why we may not ptrace (tid != 0) or read the memory of (tid == 0) pid,
 * as one line saying what to do, from what this machine says. */
static struct cs_error *cs_live_denied(int pid, int tid)
{
	struct cs_live_status st;
	int have_st = cs_live_read_status(pid, tid, &st) == 0;
	if (tid && have_st && st.tracer)
		return cs_live_traced_error(pid, tid, st.tracer);
	struct cs_live_denial d = {
		.pid = pid,
		.attaching = tid != 0,
		.cap_sys_ptrace = cs_live_has_cap_ptrace(),
		.yama_scope = -1,
		.our_uid = (unsigned)geteuid(),
		.target_uid_known = have_st,
		.target_uid = have_st ? st.uid : 0,
	};
	char *text = NULL;
	size_t len;
	if (cs_live_slurp("/proc/sys/kernel/yama/ptrace_scope", 64, 1, &text,
			  &len) == 0 && text) {
		d.yama_scope = atoi(text);
		free(text);
	}
	return cs_live_denial_message(&d);
}

/* The process is gone, or never was. */
static struct cs_error *cs_live_vanished(int pid, int attaching)
{
	if (attaching) {
		return cs_error_create(CS_ERR_OS,
				       "pid %d exited while corestack was "
				       "attaching to it", pid);
	}
	return cs_error_create(CS_ERR_OS, "pid %d: no such process", pid);
}

static int cs_live_is_dead_state(char state)
{
	return state == 0 || state == 'Z' || state == 'X' || state == 'x';
}

/* Can we go on with pid: it exists, is a process (not a thread of one)
 * and is not a zombie. */
static struct cs_error *cs_live_check_process(int pid, int attaching,
					      struct cs_live_status *st)
{
	int e = cs_live_read_status(pid, 0, st);
	if (e == ENOENT || e == ESRCH)
		return cs_live_vanished(pid, attaching);
	if (e) {
		return cs_error_create(CS_ERR_OS, "pid %d: reading "
				       "/proc/%d/status: %s",
				       pid, pid, strerror(e));
	}
	if (st->tgid && st->tgid != pid) {
		return cs_error_create(CS_ERR_USAGE,
				       "pid %d is a thread of process %d: give "
				       "the process id %d instead",
				       pid, st->tgid, st->tgid);
	}
	unsigned long flags = 0;
	cs_live_stat(pid, pid, &flags);
	if (flags & CS_LIVE_PF_KTHREAD) {
		return cs_error_create(CS_ERR_NOT_RUBY,
				       "pid %d (%s) is a kernel thread: it has "
				       "no user memory to read",
				       pid, st->name);
	}
	/* A main thread that exited while others run is a zombie too, but
	 * the process is not: only Threads: 1 (or 0) means it is over. */
	if (cs_live_is_dead_state(st->state) && st->threads <= 1) {
		if (attaching)
			return cs_live_vanished(pid, 1);
		return cs_error_create(CS_ERR_OS,
				       "pid %d (%s) is a zombie: it has exited "
				       "and its parent (pid %d) has not reaped "
				       "it yet; there is no memory left to read",
				       pid, st->name, st->ppid);
	}
	return NULL;
}

static int cs_live_cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Tids in /proc/PID/task, sorted. Returns 0 or errno (E2BIG: too many). */
static int cs_live_list_tasks(int pid, int **ret, size_t *count)
{
	*ret = NULL;
	*count = 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *dir = opendir(path);
	if (!dir)
		return errno;
	size_t n = 0, cap = 16;
	int *tids = malloc(cap * sizeof(*tids));
	int err = tids ? 0 : ENOMEM;
	struct dirent *de;
	while (!err && (de = readdir(dir)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		if (*end || tid <= 0 || tid > INT_MAX)
			continue;  /* "." and ".." */
		if (n == CS_LIVE_MAX_THREADS) {
			err = E2BIG;
			break;
		}
		if (n == cap) {
			cap *= 2;
			int *nt = realloc(tids, cap * sizeof(*tids));
			if (!nt) {
				err = ENOMEM;
				break;
			}
			tids = nt;
		}
		tids[n++] = (int)tid;
	}
	closedir(dir);
	if (err) {
		free(tids);
		return err;
	}
	qsort(tids, n, sizeof(*tids), cs_live_cmp_int);
	/* a listing made while threads exit may repeat one */
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || tids[u - 1] != tids[i])
			tids[u++] = tids[i];
	n = u;
	*ret = tids;
	*count = n;
	return 0;
}

static struct cs_error *cs_live_errno(int pid, int e, const char *what)
{
	if (e == ENOMEM)
		return &cs_error_nomem;
	if (e == E2BIG) {
		return cs_error_create(CS_ERR_LIMIT,
				       "pid %d has more than %d threads",
				       pid, CS_LIVE_MAX_THREADS);
	}
	if (e == EACCES || e == EPERM)
		return cs_live_denied(pid, 0);
	return cs_error_create(CS_ERR_OS, "pid %d: %s: %s", pid, what,
			       strerror(e));
}

/* ---- stopping and resuming threads ---- */

static void cs_live_mark_gone(struct cs_live_thread *t)
{
	t->gone = 1;
	t->seized = t->stopped = t->listening = t->interrupted = 0;
	t->resig = t->group_stop = 0;
	cs_live_sig_unregister(t);
}

/* If the signal handler detached t (and a handler of the program kept us
 * alive), t runs untraced now: forget it as if it had exited, so that the
 * next pause seizes it again. 1 if so. */
static int cs_live_check_released(struct cs_live_thread *t)
{
	if (!t->seized || !cs_live_sig_released(t))
		return 0;
	t->slot = -1;  /* the handler freed it */
	cs_live_mark_gone(t);
	return 1;
}

static int cs_live_is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

/* Look once, without blocking, for news of seized thread t: 1 when it is
 * now in a ptrace-stop (report taken), -1 when it has exited or is no
 * longer ours, 0 when nothing yet. A dead thread is reaped (else it would
 * linger as our zombie and keep its process from being reaped), except
 * the main thread of our own child: that exit status belongs to the code
 * that forked it. WNOWAIT looks before taking. */
static int cs_live_poll(struct cs_live *live, struct cs_live_thread *t)
{
	int tid = t->pub.tid, status;
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)tid, &si,
		   WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) != 0) {
		if (errno == EINTR)
			return 0;
		cs_live_mark_gone(t);  /* ECHILD: no longer our tracee */
		return -1;
	}
	if (si.si_pid == 0)
		return 0;
	if (si.si_code == CLD_TRAPPED || si.si_code == CLD_STOPPED) {
		if (waitpid(tid, &status, WNOHANG | __WALL) != tid)
			return 0;
		if (WIFSTOPPED(status)) {
			int event = status >> 16, sig = WSTOPSIG(status);
			t->stopped = 1;
			t->listening = 0;
			/* A signal-delivery-stop took a signal from the
			 * thread: give it back on resume or detach. Our
			 * interrupt (and a group-stop) is PTRACE_EVENT_STOP
			 * and takes none; it carries SIGTRAP, or the stop
			 * signal while the process is in a group-stop. */
			t->resig = event == 0 ? sig : 0;
			t->group_stop = event == PTRACE_EVENT_STOP &&
						cs_live_is_stop_signal(sig)
					? sig
					: 0;
			cs_live_sig_arm(t);
			return 1;
		}
	} else if (!(tid == live->pid && live->we_are_parent)) {
		waitpid(tid, &status, WNOHANG | __WALL);
	}
	cs_live_mark_gone(t);
	return -1;
}

/* PTRACE_INTERRUPT t unless one may still be pending: an interrupt sent
 * while t is already in a stop would stop it again right after the next
 * PTRACE_CONT. ESRCH (it died) is for polling to find. */
static int cs_live_interrupt(struct cs_live_thread *t)
{
	if (t->interrupted)
		return 0;
	if (ptrace(PTRACE_INTERRUPT, t->pub.tid, NULL, NULL) != 0 &&
	    errno != ESRCH)
		return errno;
	t->interrupted = 1;
	return 0;
}

/* Resume (PTRACE_DETACH) every seized thread, stopping first those that
 * run (only a stopped tracee can be detached). Bounded by
 * CS_LIVE_DETACH_MS. */
static void cs_live_release(struct cs_live *live)
{
	int64_t deadline = cs_live_now_ms() + CS_LIVE_DETACH_MS;
	long nap = 50;
	for (size_t i = 0; i < live->nwork; i++) {
		struct cs_live_thread *t = &live->work[i];
		if (t->seized && !t->stopped && !cs_live_check_released(t))
			cs_live_interrupt(t);
	}
	live->running = 0;
	for (;;) {
		size_t left = 0, progress = 0;
		for (size_t i = 0; i < live->nwork; i++) {
			struct cs_live_thread *t = &live->work[i];
			if (!t->seized)
				continue;
			if (cs_live_sig_released(t)) {
				t->seized = t->stopped = 0;
				t->slot = -1;
				continue;
			}
			if (t->stopped) {
				if (ptrace(PTRACE_DETACH, t->pub.tid, NULL,
					   (void *)(intptr_t)t->resig) == 0) {
					t->seized = t->stopped = 0;
					cs_live_sig_unregister(t);
					progress++;
					continue;
				}
				/* ESRCH: it left the stop (SIGKILL); find
				 * out how below. */
				t->stopped = 0;
			}
			int r = cs_live_poll(live, t);
			if (r < 0) {
				progress++;
			} else {
				progress += (size_t)r;
				left++;
			}
		}
		if (!left || cs_live_now_ms() >= deadline)
			break;
		if (!progress)
			cs_live_nap(&nap);
	}
	/* What is left is not stopped now; the kernel releases it when we
	 * exit, and the handler could do nothing more for it. */
	for (size_t i = 0; i < live->nwork; i++)
		cs_live_sig_unregister(&live->work[i]);
}

void cs_live_detach(struct cs_live *live)
{
	if (!live)
		return;
	if (live->attached) {
		cs_live_release(live);
		live->attached = 0;
	}
	if (live->sig_installed) {
		cs_live_sig_uninstall();
		live->sig_installed = 0;
	}
}

static int cs_live_cmp_work(const void *a, const void *b)
{
	const struct cs_live_thread *x = a, *y = b;
	return (x->pub.tid > y->pub.tid) - (x->pub.tid < y->pub.tid);
}

/* Among the first n threads of live->work, which are sorted. */
static struct cs_live_thread *cs_live_find_work(struct cs_live *live,
						size_t n, int tid)
{
	if (!n)
		return NULL;  /* bsearch wants a non-null base */
	struct cs_live_thread key = {.pub.tid = tid};
	return bsearch(&key, live->work, n, sizeof(*live->work),
		       cs_live_cmp_work);
}

/* PTRACE_SEIZE and PTRACE_INTERRUPT thread t. A thread that exits first
 * is marked gone, not an error. */
static struct cs_error *cs_live_seize(struct cs_live *live,
				      struct cs_live_thread *t)
{
	int tid = t->pub.tid;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
		int e = errno;
		/* An exiting thread refuses tracing with EPERM too. */
		if (e == ESRCH ||
		    (e == EPERM &&
		     cs_live_is_dead_state(cs_live_thread_state(live->pid,
								 tid)))) {
			t->gone = 1;
			return NULL;
		}
		if (e == EPERM)
			return cs_live_denied(live->pid, tid);
		return cs_error_create(CS_ERR_OS,
				       "pid %d: PTRACE_SEIZE of thread %d: %s",
				       live->pid, tid, strerror(e));
	}
	t->seized = 1;
	t->slot = cs_live_sig_slot_take(tid);
	int e = cs_live_interrupt(t);
	if (e) {
		return cs_error_create(CS_ERR_OS,
				       "pid %d: PTRACE_INTERRUPT of thread %d: "
				       "%s",
				       live->pid, tid, strerror(e));
	}
	return NULL;
}

/* Wait until every seized thread is stopped or gone; timeout_ms is the
 * time the deadline allowed, for the message. While threads keep stopping
 * the deadline is at least timeout_ms away: tens of thousands of threads,
 * each to be woken and scheduled, take seconds to stop on a busy machine,
 * and what the deadline is for is a thread that does not stop at all. */
static struct cs_error *cs_live_wait_stops(struct cs_live *live,
					   int64_t deadline, int timeout_ms)
{
	/* A thread stops within microseconds unless it is off a CPU: a
	 * sampler's pause waits for it, so start short. */
	long nap = 10;
	int64_t start = cs_live_now_us();
	for (;;) {
		struct cs_live_thread *late = NULL;
		int progress = 0;
		for (size_t i = 0; i < live->nwork; i++) {
			struct cs_live_thread *t = &live->work[i];
			if (!t->seized || t->stopped || !t->interrupted)
				continue;
			int r = cs_live_poll(live, t);
			/* a dead thread (a zombie whose exit we cannot take
			 * yet) never stops: not worth the wait. One live
			 * late thread is enough to wait: the others' state
			 * is not read (a file each, in a large process). */
			if (r == 0 && !late &&
			    !cs_live_is_dead_state(cs_live_thread_state(
				    live->pid, t->pub.tid)))
				late = t;
			else if (r > 0)
				t->slow_to_stop = cs_live_now_us() - start >
						  CS_LIVE_SLOW_STOP_US;
			progress |= r > 0;
		}
		if (!late)
			return NULL;
		int64_t now = cs_live_now_ms();
		if (progress && deadline < now + timeout_ms)
			deadline = now + timeout_ms;
		if (now >= deadline) {
			char state = cs_live_thread_state(live->pid,
							  late->pub.tid);
			return cs_error_create(CS_ERR_LIMIT,
					       "pid %d: thread %d did not stop "
					       "within %d ms (state %c%s)",
					       live->pid, late->pub.tid,
					       timeout_ms,
					       state ? state : '?',
					       state == 'D'
						       ? ": uninterruptible sleep"
						       : "");
		}
		cs_live_nap(&nap);
	}
}

/* Seize every thread not seized yet, rescanning /proc/PID/task until a
 * scan, made with every known thread stopped or dead, shows no new one:
 * stopped threads cannot create more, so that is all of them. Threads
 * already seized must be stopped or dead already: one on its way to our
 * stop may still finish a clone (only a fatal signal aborts one). */
static struct cs_error *cs_live_stop_all(struct cs_live *live,
					 int64_t deadline, int timeout_ms)
{
	int recounts = 0;
	for (int scan = 0;; scan++) {
		if (scan == CS_LIVE_MAX_SCANS) {
			return cs_error_create(CS_ERR_LIMIT,
					       "pid %d: new threads kept "
					       "appearing through %d scans "
					       "while stopping it",
					       live->pid, CS_LIVE_MAX_SCANS);
		}
		int *tids;
		size_t n;
		int e = cs_live_list_tasks(live->pid, &tids, &n);
		if (e == ENOENT || e == ESRCH)
			break;  /* it died; said below */
		if (e)
			return cs_live_errno(live->pid, e, "listing threads");
		/* Threads added in this scan go after the sorted ones; the
		 * scan lists each tid once, so they need no lookup. */
		size_t known = live->nwork, fresh = 0;
		struct cs_error *err = NULL;
		for (size_t i = 0; i < n && !err; i++) {
			struct cs_live_thread *old =
				cs_live_find_work(live, known, tids[i]);
			if (old && !old->gone)
				continue;
			if (old) {
				/* One we saw exit: a zombie still listed, or
				 * a new thread that got its tid. Counted only
				 * once seized, so that a thread slow to leave
				 * the list cannot make us rescan forever. */
				if (cs_live_is_dead_state(cs_live_thread_state(
					    live->pid, tids[i])))
					continue;
				memset(old, 0, sizeof(*old));
				old->pub.tid = tids[i];
				old->slot = -1;
				err = cs_live_seize(live, old);
				fresh += (size_t)old->seized;
				continue;
			}
			/* A new one counts even if gone by now: it may have
			 * made a thread before exiting. */
			fresh++;
			if (live->nwork == CS_LIVE_MAX_THREADS) {
				err = cs_live_errno(live->pid, E2BIG, "");
				break;
			}
			if (live->nwork == live->work_cap) {
				size_t cap = live->work_cap ? live->work_cap * 2
							    : 16;
				struct cs_live_thread *w =
					realloc(live->work, cap * sizeof(*w));
				if (!w) {
					err = &cs_error_nomem;
					break;
				}
				live->work = w;
				live->work_cap = cap;
			}
			struct cs_live_thread *t = &live->work[live->nwork++];
			memset(t, 0, sizeof(*t));
			t->pub.tid = tids[i];
			t->slot = -1;
			err = cs_live_seize(live, t);
		}
		free(tids);
		/* sorted again for cs_live_find_work */
		if (live->nwork)
			qsort(live->work, live->nwork,
			      sizeof(*live->work), cs_live_cmp_work);
		if (err)
			return err;
		/* Reading /proc/PID/task while threads exit can skip live
		 * ones (the kernel resumes a listing by position). When a
		 * scan finds nothing new, every thread it lists is stopped
		 * or a zombie only we can reap, so the count, read before
		 * we reap anything, is at least the number listed, and more
		 * only if some thread was missed. A few recounts at most,
		 * in case the count cannot be trusted here. */
		int missed = 0;
		if (!fresh && recounts < 8) {
			struct cs_live_status st;
			missed = cs_live_read_status(live->pid, 0, &st) == 0 &&
				 st.threads > 0 && (size_t)st.threads > n;
			recounts += missed;
		}
		if (!fresh && !missed)
			break;
		err = cs_live_wait_stops(live, deadline, timeout_ms);
		if (err)
			return err;
	}
	return NULL;
}

/* Registers of each stopped thread, and the public thread list. */
static struct cs_error *cs_live_take_threads(struct cs_live *live)
{
	_Static_assert(sizeof(struct user_regs_struct) ==
			       sizeof(((struct cs_thread *)0)->regs),
		       "user_regs_struct is the 27 registers of a core");
	free(live->threads);
	live->nthreads = 0;
	live->threads = calloc(live->nwork ? live->nwork : 1,
			       sizeof(*live->threads));
	if (!live->threads)
		return &cs_error_nomem;
	size_t n = 0;
	for (size_t i = 0; i < live->nwork; i++) {
		struct cs_live_thread *t = &live->work[i];
		if (!t->stopped)
			continue;
		struct user_regs_struct regs;
		if (live->no_registers) {
			memset(t->pub.regs, 0, sizeof(t->pub.regs));
			t->pub.rip = t->pub.rsp = t->pub.rbp = 0;
			t->pub.fs_base = 0;
			t->pub.cursig = t->resig;
			live->threads[n++] = t->pub;
			continue;
		}
		if (ptrace(PTRACE_GETREGS, t->pub.tid, NULL, &regs) != 0) {
			if (errno == ESRCH) {
				t->stopped = 0;  /* killed: release reaps it */
				continue;
			}
			return cs_error_create(CS_ERR_OS,
					       "pid %d: PTRACE_GETREGS of "
					       "thread %d: %s",
					       live->pid, t->pub.tid,
					       strerror(errno));
		}
		memcpy(t->pub.regs, &regs, sizeof(regs));
		t->pub.rip = regs.rip;
		t->pub.rsp = regs.rsp;
		t->pub.rbp = regs.rbp;
		t->pub.fs_base = regs.fs_base;
		t->pub.cursig = t->resig;
		live->threads[n++] = t->pub;
	}
	live->nthreads = n;
	if (n == 0) {
		struct cs_live_status st;
		struct cs_error *err = cs_live_check_process(live->pid, 1, &st);
		if (err)
			return err;
		return cs_error_create(CS_ERR_OS,
				       "pid %d: no thread could be stopped",
				       live->pid);
	}
	return NULL;
}

/* Unpaused: tids only, exited threads left out. */
static struct cs_error *cs_live_list_threads(struct cs_live *live)
{
	int *tids;
	size_t n;
	int e = cs_live_list_tasks(live->pid, &tids, &n);
	if (e == ENOENT || e == ESRCH)
		return cs_live_vanished(live->pid, 1);
	if (e)
		return cs_live_errno(live->pid, e, "listing threads");
	live->threads = calloc(n ? n : 1, sizeof(*live->threads));
	if (!live->threads) {
		free(tids);
		return &cs_error_nomem;
	}
	for (size_t i = 0; i < n; i++) {
		if (!cs_live_is_dead_state(cs_live_thread_state(live->pid,
								 tids[i])))
			live->threads[live->nthreads++].tid = tids[i];
	}
	free(tids);
	if (live->nthreads == 0)
		return cs_live_vanished(live->pid, 1);
	return NULL;
}

/* Main thread first (as a core lists the thread that crashed first),
 * then ascending tid: the list is already sorted by tid. */
static void cs_live_order_threads(struct cs_live *live)
{
	for (size_t i = 1; i < live->nthreads; i++) {
		if (live->threads[i].tid != live->pid)
			continue;
		struct cs_thread main_thread = live->threads[i];
		memmove(&live->threads[1], &live->threads[0],
			i * sizeof(*live->threads));
		live->threads[0] = main_thread;
		break;
	}
}

/* ---- /proc files ---- */

static int cs_live_cmp_map(const void *a, const void *b)
{
	const struct cs_mapping *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

static struct cs_error *cs_live_read_maps(struct cs_live *live)
{
	char path[64];
	snprintf(path, sizeof(path), "%s/maps", live->procdir);
	char *text;
	size_t len;
	int e = cs_live_slurp(path, CS_LIVE_MAX_MAPS_BYTES, 0, &text, &len);
	if (e == ENOENT || e == ESRCH)
		return cs_live_vanished(live->pid, 1);
	if (e == EFBIG) {
		return cs_error_create(CS_ERR_LIMIT,
				       "pid %d: /proc/%d/maps is over %zu MiB",
				       live->pid, live->pid,
				       CS_LIVE_MAX_MAPS_BYTES >> 20);
	}
	if (e)
		return cs_live_errno(live->pid, e, "reading /proc/PID/maps");
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	live->maps = calloc(lines + 1, sizeof(*live->maps));
	if (!live->maps) {
		free(text);
		return &cs_error_nomem;
	}
	struct cs_error *err = NULL;
	for (char *line = text; *line && !err;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		else
			next = line + strlen(line);
		/* start-end perms offset dev inode   path */
		uint64_t start, end, offset, inode;
		int pathpos = 0;
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %" SCNu64
			   " %n",
			   &start, &end, &offset, &inode, &pathpos) >= 4 &&
		    inode != 0 && pathpos > 0 && line[pathpos] && start < end) {
			struct cs_mapping *m = &live->maps[live->nmaps];
			char *p = strdup(line + pathpos);
			if (!p) {
				err = &cs_error_nomem;
				break;
			}
			m->start = start;
			m->end = end;
			m->file_offset = offset;
			m->path = p;
			live->nmaps++;
		}
		line = next;
	}
	free(text);
	if (err)
		return err;
	qsort(live->maps, live->nmaps, sizeof(*live->maps), cs_live_cmp_map);
	return NULL;
}

static struct cs_error *cs_live_read_proc(struct cs_live *live)
{
	struct cs_error *err = cs_live_read_maps(live);
	if (err)
		return err;
	char path[64];
	char *text;
	size_t len;
	snprintf(path, sizeof(path), "%s/auxv", live->procdir);
	int e = cs_live_slurp(path, CS_LIVE_MAX_AUXV_BYTES, 1, &text, &len);
	if (e == ENOENT || e == ESRCH)
		return cs_live_vanished(live->pid, 1);
	if (e)
		return cs_live_errno(live->pid, e, "reading /proc/PID/auxv");
	live->auxv = (uint64_t *)(void *)text;  /* malloc'd: aligned */
	live->auxv_count = len / 16;

	snprintf(path, sizeof(path), "%s/cmdline", live->procdir);
	e = cs_live_slurp(path, CS_LIVE_MAX_CMDLINE_BYTES, 1, &text, &len);
	if (e == 0) {
		while (len > 0 && text[len - 1] == 0)
			len--;
		for (size_t i = 0; i < len; i++)
			if (text[i] == 0)
				text[i] = ' ';
		text[len] = 0;
		if (len)
			live->cmd = text;
		else
			free(text);
	}

	snprintf(path, sizeof(path), "%s/exe", live->procdir);
	char buf[PATH_MAX + 1];
	ssize_t n = readlink(path, buf, PATH_MAX);
	if (n > 0) {
		buf[n] = 0;
		live->exe = strdup(buf);
		if (!live->exe)
			return &cs_error_nomem;
	} else {
		static const uint64_t types[] = {AT_PHDR, AT_ENTRY};
		for (size_t i = 0; i < 2 && !live->exe; i++) {
			uint64_t v = cs_live_auxv(live, types[i]);
			const struct cs_mapping *m =
				v ? cs_live_mapping_of(live, v) : NULL;
			if (m && !(live->exe = strdup(m->path)))
				return &cs_error_nomem;
		}
	}
	return NULL;
}

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
	} else {
		err = cs_live_list_threads(live);
	}
	if (!err && live->nthreads == 0)
		err = cs_live_vanished(pid, 1);  /* both lists ensure not */
	if (!err) {
		cs_live_order_threads(live);
		live->mem_tid = live->threads[0].tid;
		snprintf(live->procdir, sizeof(live->procdir),
			 "/proc/%d/task/%d", pid, live->mem_tid);
		err = cs_live_read_proc(live);
	}
	if (!err && !pause) {
		/* Without ptrace, permission shows only when reading. */
		uint64_t probe = cs_live_auxv(live, AT_PHDR);
		if (!probe && live->nmaps)
			probe = live->maps[0].start;
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
	for (size_t i = 0; i < live->nmaps; i++)
		free((char *)live->maps[i].path);
	free(live->maps);
	free(live->work);
	free(live->threads);
	free(live->auxv);
	free(live->exe);
	free(live->cmd);
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
	long r = t->group_stop
			 ? ptrace(PTRACE_LISTEN, tid, NULL, NULL)
			 : ptrace(PTRACE_CONT, tid, NULL,
				  (void *)(intptr_t)t->resig);
	if (r != 0 && errno != ESRCH) {
		int e = errno;
		cs_live_sig_arm(t);  /* still stopped: still ours to resume */
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
static int cs_live_let_signal_go(struct cs_live *live,
				 struct cs_live_thread *t)
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
			return 0;  /* the signal killed it */
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
		exited = cs_live_is_dead_state(cs_live_thread_state(pid, tids[i]));
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
	struct cs_error *err = NULL;
	/* The threads that were running first: they are the ones losing
	 * time (see cs_live_pause). */
	for (size_t k = 0; k < 2 * live->nwork; k++) {
		struct cs_live_thread *t = &live->work[k % live->nwork];
		if (t->slow_to_stop != (k >= live->nwork) || !t->seized ||
		    !t->stopped || cs_live_check_released(t))
			continue;
		int e = t->resig && t->interrupted
				? cs_live_let_signal_go(live, t)
				: cs_live_let_go(t);
		if (e && !err) {
			err = cs_error_create(CS_ERR_OS,
					      "pid %d: resuming thread %d: %s",
					      live->pid, t->pub.tid,
					      strerror(e));
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

void cs_live_without_registers(struct cs_live *live)
{
	live->no_registers = 1;
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
				err = cs_error_create(CS_ERR_OS,
						      "pid %d: PTRACE_INTERRUPT "
						      "of thread %d: %s",
						      live->pid, t->pub.tid,
						      strerror(e));
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
	if (err && cs_live_process_gone(live)) {
		cs_error_destroy(err);
		err = cs_error_create(CS_ERR_OS, "process %d exited",
				      live->pid);
	}
	if (err) {
		/* Never leave it stopped: let go what did stop. */
		cs_error_destroy(cs_live_resume(live));
		live->nthreads = 0;
		return err;
	}
	cs_live_order_threads(live);
	if (live->threads[0].tid != live->mem_tid) {
		/* the thread we read memory through has exited */
		live->mem_tid = live->threads[0].tid;
		snprintf(live->procdir, sizeof(live->procdir),
			 "/proc/%d/task/%d", live->pid, live->mem_tid);
		if (live->memfd >= 0)
			close(live->memfd);
		live->memfd = -1;
	}
	return NULL;
}

int cs_live_pid(const struct cs_live *live)
{
	return live->pid;
}

int cs_live_has_registers(const struct cs_live *live)
{
	return live->pause && !live->no_registers;
}

const char *cs_live_name(const struct cs_live *live)
{
	return live->name;
}

int cs_live_paused(const struct cs_live *live)
{
	return live->pause && live->attached && !live->running;
}

static struct cs_error *cs_live_fault(const struct cs_live *live,
				      uint64_t addr, size_t len, uint64_t at,
				      const char *why)
{
	if (at == addr) {
		return cs_error_create(CS_ERR_FAULT,
				       "pid %d: cannot read %zu bytes at 0x%"
				       PRIx64 ": %s",
				       live->pid, len, addr, why);
	}
	return cs_error_create(CS_ERR_FAULT,
			       "pid %d: cannot read %zu bytes at 0x%" PRIx64
			       ": 0x%" PRIx64 ": %s",
			       live->pid, len, addr, at, why);
}

static struct cs_error *cs_live_open_mem(struct cs_live *live, uint64_t addr,
					 size_t len)
{
	if (live->memfd >= 0)
		return NULL;
	char path[64];
	snprintf(path, sizeof(path), "%s/mem", live->procdir);
	live->memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (live->memfd >= 0)
		return NULL;
	int e = errno;
	if (e == EACCES || e == EPERM)
		return cs_live_denied(live->pid, 0);
	return cs_live_fault(live, addr, len, addr,
			     e == ENOENT || e == ESRCH
				     ? "the process has exited"
				     : strerror(e));
}

size_t cs_live_read_ranges(struct cs_live *live, const uint64_t *addrs,
			   void *const *bufs, const size_t *lens, size_t n)
{
	enum { BATCH = 64 }; /* well under IOV_MAX */
	struct iovec local[BATCH], remote[BATCH];
	if (live->no_vm_readv || n == 0)
		return 0;
	if (n > BATCH)
		n = BATCH;
	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){bufs[i], lens[i]};
		remote[i] = (struct iovec){(void *)(uintptr_t)addrs[i], lens[i]};
	}
	ssize_t r = process_vm_readv(live->mem_tid, local, (unsigned long)n,
				     remote, (unsigned long)n, 0);
	/* A short read stops at the first range it could not finish. */
	size_t whole = 0, bytes = r > 0 ? (size_t)r : 0;
	while (whole < n && lens[whole] <= bytes)
		bytes -= lens[whole++];
	return whole;
}

struct cs_error *cs_live_read(struct cs_live *live, uint64_t addr, void *buf,
			      size_t len)
{
	uint8_t *out = buf;
	size_t done = 0;
	unsigned eintr = 0;
	uint64_t last;
	if (len && __builtin_add_overflow(addr, len - 1, &last))
		return cs_live_fault(live, addr, len, addr, "past the end of "
				     "the address space");
	/* Each pass reads something or returns, except that the fallback to
	 * /proc/PID/mem switches once and EINTR repeats a bounded number. */
	while (done < len) {
		uint64_t at = addr + done;
		size_t want = len - done;
		ssize_t r;
		int e = 0;
		if (!live->no_vm_readv) {
			struct iovec local = {out + done, want};
			struct iovec remote = {(void *)(uintptr_t)at, want};
			r = process_vm_readv(live->mem_tid, &local, 1, &remote,
					     1, 0);
			if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
				/* Not built in, or filtered (seccomp):
				 * /proc/PID/mem may still do. */
				live->no_vm_readv = 1;
				continue;
			}
		} else {
			struct cs_error *err =
				cs_live_open_mem(live, addr, len);
			if (err)
				return err;
			if (at > (uint64_t)INT64_MAX)
				return cs_live_fault(live, addr, len, at,
						     "not a user address");
			r = pread(live->memfd, out + done, want, (off_t)at);
		}
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		e = r < 0 ? errno : 0;
		if (e == EINTR && ++eintr < 100)
			continue;
		if (e == ESRCH || (r == 0 && live->no_vm_readv &&
				   kill(live->pid, 0) != 0 && errno == ESRCH))
			return cs_live_fault(live, addr, len, at,
					     "the process has exited");
		if (e == EACCES || e == EPERM)
			return cs_live_denied(live->pid, 0);
		return cs_live_fault(live, addr, len, at,
				     r == 0 || e == EFAULT || e == EIO
					     ? "not mapped or not readable"
					     : strerror(e));
	}
	return NULL;
}

static struct cs_error *cs_live_target_read(void *priv, uint64_t addr,
					    void *buf, size_t len)
{
	return cs_live_read(priv, addr, buf, len);
}

struct cs_memory cs_live_memory(struct cs_live *live)
{
	struct cs_memory t = {cs_live_target_read, live};
	return t;
}

size_t cs_live_thread_count(const struct cs_live *live)
{
	return live->nthreads;
}

const struct cs_thread *cs_live_thread_at(const struct cs_live *live,
					       size_t i)
{
	return i < live->nthreads ? &live->threads[i] : NULL;
}

size_t cs_live_mapping_count(const struct cs_live *live)
{
	return live->nmaps;
}

const struct cs_mapping *cs_live_mapping_at(const struct cs_live *live,
						 size_t i)
{
	return i < live->nmaps ? &live->maps[i] : NULL;
}

const struct cs_mapping *cs_live_mapping_of(const struct cs_live *live,
						 uint64_t addr)
{
	size_t lo = 0, hi = live->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (live->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= live->maps[lo - 1].end)
		return NULL;
	return &live->maps[lo - 1];
}

const struct cs_mapping *cs_live_find_mapping(const struct cs_live *live,
						   const char *basename_prefix)
{
	size_t plen = strlen(basename_prefix);
	for (size_t i = 0; i < live->nmaps; i++) {
		const char *path = live->maps[i].path;
		const char *slash = strrchr(path, '/');
		const char *base = slash ? slash + 1 : path;
		if (strncmp(base, basename_prefix, plen) == 0)
			return &live->maps[i];
	}
	return NULL;
}

uint64_t cs_live_auxv(const struct cs_live *live, uint64_t type)
{
	for (size_t i = 0; i < live->auxv_count; i++) {
		if (live->auxv[2 * i] == AT_NULL)
			break;
		if (live->auxv[2 * i] == type)
			return live->auxv[2 * i + 1];
	}
	return 0;
}

const char *cs_live_executable(const struct cs_live *live)
{
	return live->exe;
}

const char *cs_live_command(const struct cs_live *live)
{
	return live->cmd;
}

/* ---- build-id ---- */

struct cs_error *cs_live_module_build_id(struct cs_live *live, uint64_t start,
					 uint8_t *buf, size_t bufsize,
					 size_t *len)
{
	struct cs_memory mem = cs_live_memory(live);
	return cs_build_id_read(&mem, live->name, start, buf, bufsize, len);
}
