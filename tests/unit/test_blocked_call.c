/* The system call a thread is blocked in (process/blocked_call.c), from
 * registers set by hand as the kernel leaves them for a thread stopped in
 * a call (x86-64: orig_rax the number, rdi, rsi, rdx the first arguments,
 * rax a restart code, rip past `syscall`), and from what a target without
 * registers says (/proc/PID/task/TID/syscall's fields). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../process/blocked_call.h"
#include "check.h"

#define BASE 0x7f0000001000ull

static unsigned char memory[4096];

static struct cs_error *read_memory(void *priv, uint64_t addr, void *buf,
				    size_t len)
{
	(void)priv;
	if (addr < BASE || addr + len > BASE + sizeof(memory))
		return cs_error_create(CS_ERR_FAULT, "0x%llx unreadable",
				       (unsigned long long)addr);
	memcpy(buf, memory + (addr - BASE), len);
	return NULL;
}

static char *describe(void *priv, int fd)
{
	(void)priv;
	char *s;
	return asprintf(&s, "pipe:[%d]", 1000 + fd) < 0 ? NULL : s;
}

/* what the /proc of the target without registers says */
static uint64_t proc_call[7];
static bool proc_blocked;

static bool thread_syscall(void *priv, int tid, uint64_t nr_args[7],
			   uint64_t *pc)
{
	(void)priv;
	(void)tid;
	memcpy(nr_args, proc_call, sizeof(proc_call));
	*pc = BASE + 2;
	return proc_blocked;
}

static const struct cs_target_ops ops = {
	.read = read_memory,
	.describe_fd = describe,
	.thread_syscall = thread_syscall,
};

static struct cs_target_tables tables = {.has_registers = true};
static struct cs_target target = {.ops = &ops, .tables = &tables};

/* A thread stopped in call nr(a0, a1, a2), rax the restart code rax. */
static struct cs_thread stopped(int64_t nr, uint64_t a0, uint64_t a1,
				uint64_t a2, int64_t rax)
{
	struct cs_thread th = {.tid = 42, .rip = BASE + 2};
	th.regs[CS_REG_ORIG_RAX] = (uint64_t)nr;
	th.regs[CS_REG_RAX] = (uint64_t)rax;
	th.regs[CS_REG_RDI] = a0;
	th.regs[CS_REG_RSI] = a1;
	th.regs[CS_REG_RDX] = a2;
	th.regs[CS_REG_RIP] = th.rip;
	return th;
}

static void pollfd(size_t i, int32_t fd, int16_t events)
{
	memcpy(memory + 0x100 + 8 * i, &fd, 4);
	memcpy(memory + 0x100 + 8 * i + 4, &events, 2);
}

int main(void)
{
	struct cs_blocked_call c;
	memory[0] = 0x0f; /* syscall, ending at BASE + 2 */
	memory[1] = 0x05;

	/* wait4(4242, ...) interrupted: -ERESTARTSYS */
	struct cs_thread th = stopped(61, 4242, 0, 0, -512);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.known && c.name && !strcmp(c.name, "wait4") && c.waits_child &&
		      c.child == 4242 && c.nfds == 0,
	      "wait4: known %d %s child %lld", c.known, c.name ? c.name : "-",
	      (long long)c.child);
	cs_blocked_call_free(&c);
	/* wait4(-1): any child; waitid(P_PGID, 0): the caller's group */
	th = stopped(61, (uint32_t)-1, 0, 0, -512);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.waits_child && c.child == -1, "wait4(-1): %lld",
	      (long long)c.child);
	cs_blocked_call_free(&c);
	th = stopped(247, 2, 0, 0, -512);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.waits_child && c.child == 0, "waitid(P_PGID, 0): %lld",
	      (long long)c.child);
	cs_blocked_call_free(&c);

	/* ppoll on three entries, one ignored (fd -1): -ERESTARTNOHAND */
	pollfd(0, 5, 0x001);
	pollfd(1, -1, 0x001);
	pollfd(2, 7, 0x004);
	th = stopped(271, BASE + 0x100, 3, 0, -514);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.known && c.nfds == 2 && c.fds[0].fd == 5 &&
		      c.fds[0].direction == CS_FD_READ && c.fds[1].fd == 7 &&
		      c.fds[1].direction == CS_FD_WRITE && !c.fds_cut &&
		      c.fds[0].what && !strcmp(c.fds[0].what, "pipe:[1005]"),
	      "ppoll: %zu fds, first %d (%s)", c.nfds, c.fds[0].fd,
	      c.fds[0].what ? c.fds[0].what : "-");
	cs_blocked_call_free(&c);
	/* more entries than shown: cut, and said */
	for (size_t i = 0; i < CS_BLOCKED_MAX_FDS + 2; i++)
		pollfd(i, (int32_t)(10 + i), 0x001);
	th = stopped(7, BASE + 0x100, CS_BLOCKED_MAX_FDS + 2, 0, -516);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.nfds == CS_BLOCKED_MAX_FDS && c.fds_cut,
	      "poll: %zu fds, cut %d", c.nfds, c.fds_cut);
	cs_blocked_call_free(&c);
	/* an array outside memory: said, no descriptor made up */
	th = stopped(271, 0x10, 1, 0, -514);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.known && c.nfds == 0 && c.fds_error, "unreadable pollfd: %zu",
	      c.nfds);
	cs_blocked_call_free(&c);

	/* select(8, {3, 6}, {4}, ...) */
	memset(memory + 0x200, 0, 16);
	memory[0x200] = 1 << 3 | 1 << 6;
	memory[0x208] = 1 << 4;
	th = stopped(23, 8, BASE + 0x200, BASE + 0x208, -514);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.nfds == 3 && c.fds[0].fd == 3 && c.fds[1].fd == 6 &&
		      c.fds[2].fd == 4 && c.fds[2].direction == CS_FD_WRITE,
	      "select: %zu fds", c.nfds);
	cs_blocked_call_free(&c);
	/* select with nfds past FD_SETSIZE: refused */
	th = stopped(23, 5000, BASE + 0x200, 0, -514);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.nfds == 0 && c.fds_error, "select nfds 5000: %zu", c.nfds);
	cs_blocked_call_free(&c);

	/* read(9, ...): the descriptor and its direction */
	th = stopped(0, 9, 0, 0, -512);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.nfds == 1 && c.fds[0].fd == 9 &&
		      c.fds[0].direction == CS_FD_READ,
	      "read: %zu fds", c.nfds);
	cs_blocked_call_free(&c);
	/* a call this table does not know: its number, no name */
	th = stopped(400, 0, 0, 0, -4);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.known && c.number == 400 && !c.name, "unknown call: %d %s",
	      c.number, c.name ? c.name : "-");
	cs_blocked_call_free(&c);

	/* not in a call: orig_rax -1 (an interrupt), a call that returned
	 * (rax its result), rip not past a syscall instruction */
	th = stopped(-1, 0, 0, 0, 0);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(!c.known, "orig_rax -1 taken for a call");
	th = stopped(0, 9, 0, 0, 1);
	cs_blocked_call_of(&target, &th, &c);
	CHECK(!c.known, "a read that returned 1 taken for a blocked one");
	th = stopped(0, 9, 0, 0, -512);
	th.rip = BASE + 4;
	cs_blocked_call_of(&target, &th, &c);
	CHECK(!c.known, "rip past no syscall instruction taken for a call");

	/* no registers: what /proc says, or nothing */
	tables.has_registers = false;
	th = (struct cs_thread){.tid = 42};
	proc_call[0] = 61;
	proc_call[1] = 777;
	proc_blocked = true;
	cs_blocked_call_of(&target, &th, &c);
	CHECK(c.known && c.waits_child && c.child == 777, "/proc wait4: %lld",
	      (long long)c.child);
	cs_blocked_call_free(&c);
	proc_blocked = false; /* running, or in no call */
	cs_blocked_call_of(&target, &th, &c);
	CHECK(!c.known, "a running thread taken for a blocked one");
	return check_summary("test_blocked_call");
}
