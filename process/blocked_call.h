/* The system call a kernel thread is blocked in, from the registers the
 * target gives it: a core's NT_PRSTATUS or a paused thread's.
 *
 * On x86-64 Linux the kernel saves, on entry to a system call, its number
 * in orig_rax and its arguments in rdi, rsi, rdx, r10, r8, r9, and leaves
 * them there while the call sleeps; a thread stopped there (to write a
 * core, or by ptrace) returns with rax one of the restart codes, its rip
 * just past the `syscall` instruction. A thread stopped anywhere else has
 * orig_rax -1 (an interrupt, an exception). What a call waits for is read
 * from its arguments (a live process's thread read without its registers:
 * /proc/PID/task/TID/syscall, which the kernel fills while it sleeps): the file descriptors of read(2), poll(2), select(2)
 * and their kin (a poll's array and a select's sets from the thread's
 * memory), the child of wait4(2) and waitid(2).
 *
 * The numbers are the kernel's x86-64 ABI, not a fact of any Ruby. */
#ifndef CS_PROCESS_BLOCKED_CALL_H
#define CS_PROCESS_BLOCKED_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target.h"

/* The descriptors shown of one call; a poll or select on more says so. */
#define CS_BLOCKED_MAX_FDS 8

enum cs_fd_direction {
	CS_FD_READ = 1,  /* the call waits to read (or accept) */
	CS_FD_WRITE = 2, /* to write (or connect) */
};

struct cs_blocked_fd {
	int fd;
	int direction; /* cs_fd_direction bits; 0 when the call does not say */
	char *what;    /* what the descriptor is (target op describe_fd):
			* "pipe:[1234]", "socket:[5678]", a path; NULL */
};

struct cs_blocked_call {
	bool known;       /* the thread sits in a system call */
	int number;       /* its x86-64 number */
	const char *name; /* "wait4", static; NULL for a call not known here */
	/* wait4/waitid: the child waited for, as wait4 takes it: a pid, -1
	 * for any child, 0 for any in the caller's group, -PGID for any in
	 * group PGID */
	bool waits_child;
	int64_t child;
	struct cs_blocked_fd fds[CS_BLOCKED_MAX_FDS];
	size_t nfds;
	bool fds_cut; /* more descriptors than shown */
	/* Why the descriptors of a poll or select are not shown (their
	 * array could not be read), else NULL; static. */
	const char *fds_error;
};

/* The call thread th is blocked in; c->known false when it is in none or
 * neither its registers nor the target (thread_syscall) tell. Reads a poll's array or a select's sets
 * from the target's memory and asks the target what each descriptor is
 * (a live process: /proc). */
void cs_blocked_call_of(const struct cs_target *t, const struct cs_thread *th,
			struct cs_blocked_call *c);
void cs_blocked_call_free(struct cs_blocked_call *c);

#endif
