/* The system call a kernel thread is blocked in (blocked_call.h). */
#include "blocked_call.h"

#include <stdlib.h>
#include <string.h>

/* Exactly len bytes at addr, or false (the error dropped). */
static bool read_ok(const struct cs_memory *mem, uint64_t addr, void *buf,
		    size_t len)
{
	struct cs_error *err = cs_memory_read(mem, addr, buf, len);
	cs_error_destroy(err);
	return !err;
}

/* How a call's arguments say what it waits on. */
enum args {
	ARGS_NONE,
	ARGS_FD_READ,  /* arg 0 a descriptor it reads from */
	ARGS_FD_WRITE, /* arg 0 a descriptor it writes to */
	ARGS_FD,       /* arg 0 a descriptor, direction unsaid */
	ARGS_POLL,     /* arg 0 a struct pollfd array, arg 1 its length */
	ARGS_SELECT,   /* arg 0 nfds, args 1 and 2 the read and write sets */
	ARGS_WAIT4,    /* arg 0 the pid */
	ARGS_WAITID,   /* arg 0 idtype, arg 1 id */
};

struct call {
	int number;
	const char *name;
	enum args args;
};

/* The calls a blocked thread is found in, by their x86-64 numbers
 * (arch/x86/entry/syscalls/syscall_64.tbl). */
static const struct call calls[] = {
	{0, "read", ARGS_FD_READ},
	{1, "write", ARGS_FD_WRITE},
	{7, "poll", ARGS_POLL},
	{17, "pread64", ARGS_FD_READ},
	{18, "pwrite64", ARGS_FD_WRITE},
	{19, "readv", ARGS_FD_READ},
	{20, "writev", ARGS_FD_WRITE},
	{23, "select", ARGS_SELECT},
	{34, "pause", ARGS_NONE},
	{35, "nanosleep", ARGS_NONE},
	{42, "connect", ARGS_FD_WRITE},
	{43, "accept", ARGS_FD_READ},
	{44, "sendto", ARGS_FD_WRITE},
	{45, "recvfrom", ARGS_FD_READ},
	{46, "sendmsg", ARGS_FD_WRITE},
	{47, "recvmsg", ARGS_FD_READ},
	{61, "wait4", ARGS_WAIT4},
	{72, "fcntl", ARGS_FD},
	{73, "flock", ARGS_FD},
	{128, "rt_sigtimedwait", ARGS_NONE},
	{130, "rt_sigsuspend", ARGS_NONE},
	{202, "futex", ARGS_NONE},
	/* a call interrupted by a stop goes on in restart_syscall, its
	 * arguments kept in the kernel: nothing to read */
	{219, "restart_syscall", ARGS_NONE},
	{230, "clock_nanosleep", ARGS_NONE},
	{232, "epoll_wait", ARGS_FD},
	{247, "waitid", ARGS_WAITID},
	{270, "pselect6", ARGS_SELECT},
	{271, "ppoll", ARGS_POLL},
	{281, "epoll_pwait", ARGS_FD},
	{288, "accept4", ARGS_FD_READ},
	{295, "preadv", ARGS_FD_READ},
	{296, "pwritev", ARGS_FD_WRITE},
	{299, "recvmmsg", ARGS_FD_READ},
	{307, "sendmmsg", ARGS_FD_WRITE},
	{327, "preadv2", ARGS_FD_READ},
	{328, "pwritev2", ARGS_FD_WRITE},
	{441, "epoll_pwait2", ARGS_FD},
};

/* rax of a thread stopped inside a call: -ENOSYS (stopped on entry),
 * -EINTR, or a restart code (-ERESTARTSYS, -ERESTARTNOINTR,
 * -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK) the kernel returns when a
 * signal or a stop interrupts a sleeping call. */
static bool interrupted(uint64_t rax)
{
	int64_t v = (int64_t)rax;
	return v == -38 || v == -4 || v == -512 || v == -513 || v == -514 ||
	       v == -516;
}

#define POLLIN 0x001
#define POLLPRI 0x002
#define POLLOUT 0x004

static void add_fd(struct cs_blocked_call *c, int fd, int direction)
{
	if (fd < 0)
		return;
	for (size_t i = 0; i < c->nfds; i++)
		if (c->fds[i].fd == fd) {
			c->fds[i].direction |= direction;
			return;
		}
	if (c->nfds == CS_BLOCKED_MAX_FDS) {
		c->fds_cut = true;
		return;
	}
	c->fds[c->nfds++] =
		(struct cs_blocked_fd){.fd = fd, .direction = direction};
}

static void poll_fds(const struct cs_memory *mem, uint64_t array, uint64_t n,
		     struct cs_blocked_call *c)
{
	/* struct pollfd { int fd; short events, revents; } */
	uint8_t buf[8 * (CS_BLOCKED_MAX_FDS + 1)];
	size_t want = n > CS_BLOCKED_MAX_FDS + 1 ? CS_BLOCKED_MAX_FDS + 1
						 : (size_t)n;
	if (n > 0x100000 || !read_ok(mem, array, buf, 8 * want)) {
		c->fds_error = "its pollfd array is unreadable";
		return;
	}
	for (size_t i = 0; i < want; i++) {
		int32_t fd;
		int16_t events;
		memcpy(&fd, buf + 8 * i, 4);
		memcpy(&events, buf + 8 * i + 4, 2);
		if (fd < 0) /* an entry poll ignores */
			continue;
		add_fd(c, fd,
		       (events & (POLLIN | POLLPRI) ? CS_FD_READ : 0) |
			       (events & POLLOUT ? CS_FD_WRITE : 0));
	}
	if (n > want)
		c->fds_cut = true;
}

#define FD_SETSIZE_BITS 1024

static void select_fds(const struct cs_memory *mem, uint64_t nfds,
		       uint64_t sets[2], struct cs_blocked_call *c)
{
	if (nfds > FD_SETSIZE_BITS) {
		c->fds_error = "its nfds is over FD_SETSIZE";
		return;
	}
	size_t bytes = (nfds + 63) / 64 * 8;
	for (int k = 0; k < 2; k++) {
		uint8_t set[FD_SETSIZE_BITS / 8];
		if (!sets[k] || !bytes)
			continue;
		if (!read_ok(mem, sets[k], set, bytes)) {
			c->fds_error = "its fd_set is unreadable";
			return;
		}
		for (size_t fd = 0; fd < nfds; fd++)
			if (set[fd / 8] & (1u << (fd % 8)))
				add_fd(c, (int)fd,
				       k ? CS_FD_WRITE : CS_FD_READ);
	}
}

/* waitid's (idtype, id) as wait4's pid */
static void waitid_child(uint64_t idtype, uint64_t id,
			 struct cs_blocked_call *c)
{
	int32_t n = (int32_t)id;
	switch (idtype) {
	case 0: /* P_ALL */
		c->waits_child = true;
		c->child = -1;
		break;
	case 1: /* P_PID */
		c->waits_child = true;
		c->child = n;
		break;
	case 2: /* P_PGID: 0 is the caller's group */
		c->waits_child = true;
		c->child = -(int64_t)n;
		break;
	case 3: /* P_PIDFD */
		add_fd(c, n, 0);
		break;
	}
}

/* The call's number and arguments from the thread's registers: only a
 * thread stopped inside a call (interrupted rax, rip past a `syscall`). */
static bool from_registers(const struct cs_target *t,
			   const struct cs_thread *th, uint64_t nr_args[7])
{
	const uint64_t *r = th->regs;
	int64_t nr = (int64_t)r[CS_REG_ORIG_RAX];
	if (nr < 0 || nr > 4096 || !interrupted(r[CS_REG_RAX]))
		return false;
	/* past a `syscall` instruction (0f 05), where the stop leaves rip;
	 * a core that lacks the code page is not taken to contradict it */
	struct cs_memory mem = cs_target_memory(t);
	uint8_t insn[2];
	if (th->rip >= 2 && read_ok(&mem, th->rip - 2, insn, 2) &&
	    (insn[0] != 0x0f || insn[1] != 0x05))
		return false;
	const enum cs_reg args[6] = {CS_REG_RDI, CS_REG_RSI, CS_REG_RDX,
				     CS_REG_R10, CS_REG_R8,  CS_REG_R9};
	nr_args[0] = (uint64_t)nr;
	for (int k = 0; k < 6; k++)
		nr_args[k + 1] = r[args[k]];
	return true;
}

void cs_blocked_call_of(const struct cs_target *t, const struct cs_thread *th,
			struct cs_blocked_call *c)
{
	memset(c, 0, sizeof(*c));
	uint64_t a[7], pc;
	if (!th)
		return;
	if (cs_target_has_registers(t)
		    ? !from_registers(t, th, a)
		    : !cs_target_thread_syscall(t, th->tid, a, &pc))
		return;
	(void)pc;
	if (a[0] > 4096)
		return;
	struct cs_memory mem = cs_target_memory(t);
	int64_t nr = (int64_t)a[0];
	c->known = true;
	c->number = (int)nr;
	const struct call *call = NULL;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i].number == nr)
			call = &calls[i];
	if (!call)
		return;
	c->name = call->name;
	uint64_t a0 = a[1], a1 = a[2], a2 = a[3];
	int fd = (int)(int32_t)a0;
	switch (call->args) {
	case ARGS_NONE:
		break;
	case ARGS_FD_READ:
		add_fd(c, fd, CS_FD_READ);
		break;
	case ARGS_FD_WRITE:
		add_fd(c, fd, CS_FD_WRITE);
		break;
	case ARGS_FD:
		add_fd(c, fd, 0);
		break;
	case ARGS_POLL:
		poll_fds(&mem, a0, a1, c);
		break;
	case ARGS_SELECT: {
		uint64_t sets[2] = {a1, a2};
		select_fds(&mem, a0, sets, c);
		break;
	}
	case ARGS_WAIT4:
		c->waits_child = true;
		c->child = (int32_t)a0;
		break;
	case ARGS_WAITID:
		waitid_child(a0, a1, c);
		break;
	}
	for (size_t i = 0; i < c->nfds; i++)
		c->fds[i].what = cs_target_describe_fd(t, c->fds[i].fd);
}

void cs_blocked_call_free(struct cs_blocked_call *c)
{
	for (size_t i = 0; i < c->nfds; i++)
		free(c->fds[i].what);
	memset(c, 0, sizeof(*c));
}
