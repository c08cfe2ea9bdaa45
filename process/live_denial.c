/* The live reader: why a process cannot be attached or read (gone, a
 * zombie, another tracer, ptrace_scope, another user, no CAP_SYS_PTRACE),
 * in one line that says what to do. */
#include "live_internal.h"

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

struct cs_error *cs_live_traced_error(int pid, int tid, int tracer)
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

/* Denied by Yama at scope: what it allows and what to do (rest). */
static struct cs_error *yama_denial(const char *what, int pid, int scope,
				    const char *rest)
{
	return cs_error_create(CS_ERR_OS,
			       "cannot %s pid %d: kernel.yama.ptrace_scope "
			       "is %d%s",
			       what, pid, scope, rest);
}

struct cs_error *cs_live_denial_message(const struct cs_live_denial *d)
{
	const char *what = d->attaching ? "attach to" : "read the memory of";
	int pid = d->pid;
	if (d->yama_scope >= 3) {
		return yama_denial(what, pid, d->yama_scope,
				   ", which forbids ptrace for everyone until "
				   "reboot");
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
		return cs_error_create(
			CS_ERR_OS,
			"cannot %s pid %d: it runs as uid %u and "
			"corestack as uid %u; run corestack as "
			"that user, or as root (CAP_SYS_PTRACE)",
			what, pid, d->target_uid, d->our_uid);
	}
	if (!d->cap_sys_ptrace && d->yama_scope == 2) {
		return yama_denial(what, pid, 2,
				   " (only CAP_SYS_PTRACE may trace); run "
				   "corestack as root");
	}
	if (!d->cap_sys_ptrace && d->yama_scope == 1) {
		return yama_denial(what, pid, 1,
				   " (only a parent may trace); run corestack "
				   "as root, or set it to 0 (sysctl "
				   "kernel.yama.ptrace_scope=0)");
	}
	if (!d->cap_sys_ptrace) {
		return cs_error_create(CS_ERR_OS,
				       "cannot %s pid %d: permission denied (a "
				       "setuid or undumpable process?); run "
				       "corestack as root (CAP_SYS_PTRACE)",
				       what, pid);
	}
	if (d->seccomp > 0) {
		return cs_error_create(
			CS_ERR_OS,
			"cannot %s pid %d: permission denied even with "
			"CAP_SYS_PTRACE: corestack runs under a seccomp "
			"filter (mode %d), as containers do; docker needs "
			"--cap-add=SYS_PTRACE or --security-opt "
			"seccomp=unconfined",
			what, pid, d->seccomp);
	}
	/* Root with the capability, no filter, no Yama: only a security
	 * module is left, and the init of a sandbox is what they guard. */
	const char *name = d->name && *d->name ? d->name : NULL;
	return cs_error_create(
		CS_ERR_OS,
		"cannot %s pid %d%s%s%s: permission denied although corestack "
		"has CAP_SYS_PTRACE%s and Yama %s: a security module refuses "
		"it (%s%s)%s",
		what, pid, name ? " (" : "", name ? name : "", name ? ")" : "",
		d->seccomp == 0 ? " and no seccomp filter" : "",
		d->yama_scope < 0 ? "is absent" : "allows it",
		d->lsm ? "active here: " : "AppArmor, SELinux, a BPF LSM",
		d->lsm ? d->lsm : "",
		pid == 1
			? "; pid 1 is the init of this system or container, which these commonly protect"
			: "");
}

/* "Seccomp:" of our own status: 0 none, 1 strict, 2 filter; -1 unknown. */
static int cs_live_our_seccomp(void)
{
	char *text = NULL;
	size_t len;
	if (cs_live_slurp("/proc/self/status", 64 << 10, 1, &text, &len) != 0 ||
	    !text)
		return -1;
	const char *p = strstr(text, "\nSeccomp:");
	int mode = p ? atoi(p + 9) : -1;
	free(text);
	return mode;
}

/* Why we may not ptrace (tid != 0) or read the memory of (tid == 0) pid,
 * as one line saying what to do, from what this machine says. */
struct cs_error *cs_live_denied(int pid, int tid)
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
		.seccomp = cs_live_our_seccomp(),
		.name = have_st ? st.name : NULL,
	};
	char *text = NULL, *lsm = NULL;
	size_t len;
	if (cs_live_slurp("/sys/kernel/security/lsm", 4096, 1, &lsm, &len) ==
		    0 &&
	    lsm) {
		lsm[strcspn(lsm, "\n")] = 0;
		d.lsm = lsm;
	}
	if (cs_live_slurp("/proc/sys/kernel/yama/ptrace_scope", 64, 1, &text,
			  &len) == 0 &&
	    text) {
		d.yama_scope = atoi(text);
		free(text);
	}
	struct cs_error *err = cs_live_denial_message(&d);
	free(lsm);
	return err;
}

/* The process is gone, or never was. */
struct cs_error *cs_live_vanished(int pid, int attaching)
{
	if (attaching) {
		return cs_error_create(CS_ERR_OS,
				       "pid %d exited while corestack was "
				       "attaching to it",
				       pid);
	}
	return cs_error_create(CS_ERR_OS, "pid %d: no such process", pid);
}

int cs_live_is_dead_state(char state)
{
	return state == 0 || state == 'Z' || state == 'X' || state == 'x';
}

/* Can we go on with pid: it exists, is a process (not a thread of one)
 * and is not a zombie. */
struct cs_error *cs_live_check_process(int pid, int attaching,
				       struct cs_live_status *st)
{
	int e = cs_live_read_status(pid, 0, st);
	if (e == ENOENT || e == ESRCH)
		return cs_live_vanished(pid, attaching);
	if (e) {
		return cs_error_create(CS_ERR_OS,
				       "pid %d: reading "
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
		return cs_error_create(
			CS_ERR_OS,
			"pid %d (%s) is a zombie: it has exited "
			"and its parent (pid %d) has not reaped "
			"it yet; there is no memory left to read",
			pid, st->name, st->ppid);
	}
	return NULL;
}
