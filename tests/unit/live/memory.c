/* process/live_*.c: reading the target's memory when process_vm_readv is
 * unavailable. */
#include "tests/unit/live/live_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

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
			 SECCOMP_RET_ERRNO |
				 ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(code) / sizeof(code[0]), code};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* Reads through /proc/PID/mem when process_vm_readv is unavailable: run
 * in a fork that blocks it; the exit code says which step failed. */
void test_mem_fallback(int blocked_with)
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
			struct cs_error *err =
				cs_live_attach(c.pid, pause, &live);
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
			if (!err || err->code != CS_ERR_FAULT ||
			    !contains(err, want))
				failed |= 4;
			cs_error_destroy(err);
			err = cs_live_read(live, 0x10, buf, 8);
			if (!err || err->code != CS_ERR_FAULT)
				failed |= 8;
			cs_error_destroy(err);
			uint8_t id[64];
			size_t len = 0;
			const struct cs_mapping *libc = cs_tables_find_mapping(
				cs_live_tables(live), "libc.so");
			err = libc ? cs_live_module_build_id(live, libc->start,
							     id, sizeof(id),
							     &len)
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
