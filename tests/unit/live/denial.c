/* process/live_*.c: the refusal messages, for every machine setting. */
#include "tests/unit/live/live_test.h"

#include <stdio.h>
#include <string.h>

/* The refusal messages for every machine setting, Yama's included (this
 * machine may have no Yama): one line, naming the pid, saying what to do. */
static void expect_denial(const struct cs_live_denial *d, const char *want1,
			  const char *want2)
{
	struct cs_error *err = cs_live_denial_message(d);
	const char *m = err ? err->message : "";
	char pid[32];
	snprintf(pid, sizeof(pid), "pid %d", d->pid);
	CHECK(err && err->code == CS_ERR_OS, "denial: an OS error");
	CHECK(strstr(m, pid) && !strchr(m, '\n'),
	      "denial: one line naming the pid: %s", m);
	CHECK(strstr(m, want1) && strstr(m, want2),
	      "denial: '%s' and '%s' in: %s", want1, want2, m);
	cs_error_destroy(err);
}

void test_denial_messages(void)
{
	struct cs_live_denial d = {.pid = 4242,
				   .attaching = 1,
				   .cap_sys_ptrace = 1,
				   .yama_scope = 3};
	expect_denial(&d, "attach to pid 4242",
		      "ptrace_scope is 3, which "
		      "forbids ptrace for everyone until reboot");
	d = (struct cs_live_denial){.pid = 4242,
				    .attaching = 1,
				    .yama_scope = 2,
				    .our_uid = 1000,
				    .target_uid_known = 1,
				    .target_uid = 1000};
	expect_denial(&d, "ptrace_scope is 2", "run corestack as root");
	d.yama_scope = 1;
	expect_denial(&d, "ptrace_scope is 1 (only a parent may trace)",
		      "sysctl kernel.yama.ptrace_scope=0");
	d.attaching = 0;
	expect_denial(&d, "read the memory of pid 4242", "ptrace_scope is 1");
	/* another user's process: that, not Yama, is what to fix first */
	d.target_uid = 0;
	expect_denial(&d, "runs as uid 0 and corestack as uid 1000",
		      "run corestack as that user");
	d = (struct cs_live_denial){
		.pid = 4242, .attaching = 1, .yama_scope = 1, .our_uid = 0};
	expect_denial(&d, "root but without CAP_SYS_PTRACE",
		      "--cap-add=SYS_PTRACE");
	d = (struct cs_live_denial){.pid = 4242,
				    .attaching = 1,
				    .yama_scope = -1,
				    .our_uid = 1000,
				    .target_uid_known = 1,
				    .target_uid = 1000};
	expect_denial(&d, "setuid or undumpable", "run corestack as root");
	d.cap_sys_ptrace = 1;
	d.yama_scope = 1; /* scope 1 and 2 do not stop CAP_SYS_PTRACE */
	d.seccomp = 2;
	expect_denial(&d, "even with CAP_SYS_PTRACE", "seccomp filter");
	/* no filter, no Yama: not seccomp's fault, and said so */
	d = (struct cs_live_denial){.pid = 1,
				    .attaching = 1,
				    .cap_sys_ptrace = 1,
				    .yama_scope = -1,
				    .name = "init",
				    .lsm = "lockdown,bpf"};
	expect_denial(&d, "pid 1 (init): permission denied although",
		      "no seccomp filter and Yama is absent: a security "
		      "module refuses it (active here: lockdown,bpf); pid 1");
	d.lsm = NULL;
	expect_denial(&d, "a security module refuses it (AppArmor",
		      "pid 1 is the init");
}
