/* The live reader's own state, shared by its files (live_*.c); nothing
 * else includes this. See live.h.
 *
 * Everything about the target comes from /proc/PID and from ptrace, and
 * every step may race with the target: threads appear and exit while we
 * attach, the whole process may die at any point. Each such race ends in
 * either a skipped thread or a one-line error, and every loop that waits
 * on the target has a deadline. */
#ifndef CS_TARGET_LIVE_INTERNAL_H
#define CS_TARGET_LIVE_INTERNAL_H

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
#define CS_LIVE_CAP_SYS_PTRACE 19
#define CS_LIVE_PF_KTHREAD 0x00200000 /* task flag of kernel threads */

/* What /proc/PID/task/TID/status says of a thread (live_proc.c). */
struct cs_live_status {
	char state; /* 'R', 'S', 'Z'… */
	int tgid, ppid, tracer, threads;
	unsigned uid; /* real */
	char name[64];
};

/* A seized thread is in one of three states: stopped (in a ptrace-stop
 * whose report we took), running (we let it go with PTRACE_CONT, or never
 * saw it stop), or listening (PTRACE_LISTEN: in a group-stop from SIGSTOP
 * and the like, which we must not end). A running or listening thread may
 * have stopped since, with a report we have not taken yet. */
struct cs_live_thread {
	struct cs_thread pub;
	int seized;       /* we are its tracer */
	int stopped;      /* in a ptrace-stop whose report we took */
	int listening;    /* let go with PTRACE_LISTEN */
	int interrupted;  /* a PTRACE_INTERRUPT of ours may still be
				   * pending: do not send another */
	int gone;         /* exited */
	int resig;        /* signal to give back on resume or detach
				   * (the stop was a signal-delivery-stop) */
	int group_stop;   /* the stop was a group-stop, by this
				   * signal: resume with PTRACE_LISTEN */
	int slot;         /* in live_signal.c, -1 if none */
	int slow_to_stop; /* its last stop took long: it was asleep
				   * (see cs_live_pause) */
	int left_running; /* not stopped by later pauses
				   * (cs_live_leave_running) */
};

struct cs_live {
	int pid;
	char name[32];               /* "process PID" */
	int pause;                   /* attached with pause */
	int attached;                /* threads seized, not yet detached */
	int running;                 /* attached, let run by cs_live_resume */
	int sig_installed;           /* cs_live_sig_install called */
	int we_are_parent;           /* the target is our child: its exit
				   * status is not ours to take here */
	struct cs_live_thread *work; /* every thread seized, sorted by tid */
	size_t nwork, work_cap;
	/* The public thread list (see live.h), the file mappings, the
	 * regions, auxv and the process's facts, all owned here. The
	 * mappings and regions are one reading of /proc/PID/maps at attach
	 * (every line a region, those of a file a mapping too); the regions
	 * are read again when asked for once the threads ran (JIT code,
	 * thread stacks and heap come and go), the mappings never. */
	struct cs_target_tables tables;
	struct cs_siginfo stop_signal; /* tables.siginfo */
	int regions_fresh;
	uint64_t *auxv;        /* pairs: tables.auxv */
	char *exe, *cmd, *cwd; /* tables.executable, command, cwd */
	/* Where to read memory and /proc files from: the main thread, or
	 * when it has exited (a zombie has no mm, its maps read empty) the
	 * first live thread; all share one address space. */
	int mem_tid;
	char procdir[48]; /* "/proc/PID/task/MEM_TID" */
	int memfd;        /* its mem, -1 until needed */
	int no_vm_readv;  /* process_vm_readv unavailable here */
	int no_registers; /* pauses leave registers out */
};

/* live_stop.c */
int cs_live_check_released(struct cs_live_thread *t);
int cs_live_interrupt(struct cs_live_thread *t);
int cs_live_poll(struct cs_live *live, struct cs_live_thread *t);
struct cs_error *cs_live_list_threads(struct cs_live *live);
struct cs_error *cs_live_stop_all(struct cs_live *live, int64_t deadline,
				  int timeout_ms);
struct cs_error *cs_live_take_threads(struct cs_live *live);
struct cs_error *cs_live_wait_stops(struct cs_live *live, int64_t deadline,
				    int timeout_ms);
struct cs_live_thread *cs_live_find_work(struct cs_live *live, size_t n,
					 int tid);
void cs_live_order_threads(struct cs_live *live);
void cs_live_sig_arm(const struct cs_live_thread *t);
void cs_live_sig_disarm(const struct cs_live_thread *t);

/* live_proc.c */
char cs_live_stat(int pid, int tid, unsigned long *flags);
char cs_live_thread_state(int pid, int tid);
int cs_live_kernel_thread_count(int pid);
int cs_live_list_tasks(int pid, int **ret, size_t *count);
int cs_live_read_status(int pid, int tid, struct cs_live_status *st);
int cs_live_slurp(const char *path, size_t max, int truncate, char **ret,
		  size_t *retlen);
int64_t cs_live_now_ms(void);
int64_t cs_live_now_us(void);
struct cs_error *cs_live_errno(int pid, int e, const char *what);
struct cs_error *cs_live_read_proc(struct cs_live *live);
void cs_live_nap(long *us);

/* live_denial.c */
int cs_live_is_dead_state(char state);
struct cs_error *cs_live_check_process(int pid, int attaching,
				       struct cs_live_status *st);
struct cs_error *cs_live_denied(int pid, int tid);
struct cs_error *cs_live_traced_error(int pid, int tid, int tracer);
struct cs_error *cs_live_vanished(int pid, int attaching);

#endif
