/* Live-process target: memory, threads and mappings of a running process
 * (corestack --pid PID), in the same tables as the core reader's so the
 * code that finds libruby works on either.
 *
 * Paused: every thread is PTRACE_SEIZEd and PTRACE_INTERRUPTed, and
 * cs_live_attach returns only once each has stopped, so memory and
 * registers form one consistent snapshot. Threads created while attaching
 * are caught by re-reading /proc/PID/task until it holds nothing new.
 * Unpaused: no ptrace at all; memory is read while the process runs (reads
 * may tear), threads carry no registers.
 *
 * Memory is read with process_vm_readv, falling back to /proc/PID/mem.
 * Both need the same permission as ptrace, checked at attach time.
 *
 * Never leaves the target stopped: every error path resumes what it
 * stopped, and while threads are stopped SIGINT, SIGTERM and SIGHUP are
 * caught to resume them before corestack dies (the handler then restores
 * the previous disposition and re-raises). For any other death (SIGKILL,
 * a crash) the kernel detaches the tracees itself.
 *
 * Not thread-safe: use a cs_live from the thread that attached it (ptrace
 * requests only work from the tracing thread). */
#ifndef CS_CORESTACK_LIVE_H
#define CS_CORESTACK_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "memory.h"
#include "../util/error.h"
#include "target.h"

struct cs_live;

/* Most threads a process may have for us (paused or not): CS_ERR_LIMIT
 * beyond. As many as a snapshot reads, so that a live process is read as
 * far as its core would be. */
#define CS_LIVE_MAX_THREADS CS_TARGET_MAX_THREADS

/* Attach to every thread of pid; see above for pause. Errors, each one line
 * naming the pid: no such process, a zombie, a process that exits while we
 * attach, another tracer (named, with its pid), ptrace_scope, missing
 * permission or CAP_SYS_PTRACE, threads that do not stop in time. On error
 * nothing is left stopped and *ret is NULL. */
struct cs_error *cs_live_attach(int pid, int pause, struct cs_live **ret);

/* The signals thread tid blocks (PTRACE_GETSIGMASK), while a pause holds
 * it stopped; false otherwise. */
bool cs_live_thread_blocked(struct cs_live *live, int tid, uint64_t *mask);

/* Attached without pause, to a process a debugger holds: kt, the thread
 * it holds stopped at the fatal signal si, with the debugger's registers
 * (an unpaused read has none of its own), becomes a thread with
 * registers that took si, as a core's. A tid not the process's is left
 * out. */
void cs_live_set_stopped(struct cs_live *live, const struct cs_thread *kt,
			 const struct cs_siginfo *si);
/* Not paused, no thread stopped at a fatal signal: the registers a
 * debugger holds for threads (n of them, matched by tid), for the crash
 * scan and the native unwind. The tables still say they carry none: a
 * debugger may leave some out (lldb shows no orig_rax), and what goes by
 * that (a blocked call's number and arguments) reads /proc instead. */
void cs_live_set_registers(struct cs_live *live, const struct cs_thread *kts,
			   size_t n);
/* Resume (PTRACE_DETACH) every thread we stopped, re-delivering a signal a
 * thread was stopped with; reaps threads that died meanwhile. Safe on NULL,
 * safe twice, and after the target died. The cs_live stays usable for
 * reads (no longer consistent) and for the captured threads and maps.
 * A thread still not stopped after a bounded wait (stuck in an
 * uninterruptible sleep) is released by the kernel when corestack exits. */
void cs_live_detach(struct cs_live *live);
/* Detach if needed and free. Safe on NULL. Whether stopped or resumed,
 * the target is left running (or in the group-stop it was in) and
 * untraced. */
void cs_live_close(struct cs_live *live);

/* Sampling many times: attach paused once, then per sample read, resume,
 * wait, pause; close at the end. Both are for a paused attachment only
 * (CS_ERR_USAGE otherwise, or after cs_live_detach); each is a no-op when
 * the target is already in the state asked for.
 *
 * cs_live_resume lets every seized thread run again (PTRACE_CONT, giving
 * back a signal it stopped with; PTRACE_LISTEN for a thread in a
 * group-stop, which stays stopped until SIGCONT), staying attached. The
 * thread list stays that of the last stop; reads tear, as unpaused. While
 * it runs, a thread that gets a signal stops until the next pause (the
 * signal is handed on at the resume after), and threads it creates are
 * not traced until the next pause finds them. The signal handlers stay
 * installed and leave running threads alone.
 *
 * cs_live_pause stops every thread again, as attach does: seizes the
 * threads created since, forgets those that exited, and refreshes the
 * thread table and registers (pointers into cs_live_tables' threads are
 * valid until the next pause). A thread not stopped within 1 s (of the last
 * other thread that stopped) is CS_ERR_LIMIT.
 * "process PID exited" (CS_ERR_OS) when the process is gone. On any error
 * the threads it did stop are resumed, the thread list is empty, and the
 * cs_live stays attached: pause may be tried again, close works. */
struct cs_error *cs_live_resume(struct cs_live *live);
struct cs_error *cs_live_pause(struct cs_live *live);
/* What decides the message for a refused ptrace or memory read: the
 * machine's facts, so that every case (Yama's ptrace_scope 1 to 3, another
 * user's process, root without CAP_SYS_PTRACE) can be tested on any
 * machine. Another tracer has its own message. */
struct cs_live_denial {
	int pid;
	int attaching;      /* ptrace, or else reading memory */
	int cap_sys_ptrace; /* we have it */
	int yama_scope;     /* kernel.yama.ptrace_scope, -1 without Yama */
	unsigned our_uid;   /* effective */
	int target_uid_known;
	unsigned target_uid; /* real */
	int seccomp;         /* our Seccomp: mode, 0 none, -1 unknown */
	const char *lsm;     /* the active security modules, or NULL */
	const char *name;    /* the target's command name, or NULL */
};
struct cs_error *cs_live_denial_message(const struct cs_live_denial *d);

/* Later pauses leave thread tid running (leave) or stop it again (!leave).
 * A sampler leaves the threads that run no Ruby alone: stopping them
 * distorts the program, since a system call that a stop interrupts may
 * start over with its whole timeout (epoll_wait does): Ruby 3.3's timer
 * thread, stopped 100 times a second, never ends its 100 ms wait, and
 * threads waiting for the GVL are never given it. Such a thread is still
 * traced; a stop of its own (a signal) is taken and handed on as for any
 * thread. It is not in the thread list while it runs. */
void cs_live_leave_running(struct cs_live *live, int tid, int leave);
/* Undo every cs_live_leave_running: the next pause stops every thread
 * (when the ones it was to stop have all exited). */
void cs_live_stop_every_thread(struct cs_live *live);
/* 1 when tid is a thread of the process this attachment traces (stopped
 * or left running): a tid read from the process's memory may be stale (a
 * forked child's copy of its parent's). */
int cs_live_traces(const struct cs_live *live, int64_t tid);

/* Later pauses leave the registers out (zero): a sampler that reads only
 * Ruby stacks saves a system call per thread and sample. */
void cs_live_without_registers(struct cs_live *live);

/* 1 when process pid has ended: it is gone, or every one of its threads
 * is dead or a zombie (its parent has not reaped it yet, or its threads
 * still wait for their tracer, us, to reap them). A sampler asks when a
 * sample fails: such a process never gives one again. */
int cs_live_exited(int pid);

int cs_live_pid(const struct cs_live *live);
/* "process PID", for messages. */
const char *cs_live_name(const struct cs_live *live);
/* attached paused and stopped now (not resumed) */
int cs_live_paused(const struct cs_live *live);

/* Read exactly len bytes at addr; a short read is CS_ERR_FAULT naming the
 * address (and where it stopped, if past addr). */
struct cs_error *cs_live_read(struct cs_live *live, uint64_t addr, void *buf,
			      size_t len);
/* The error cs_live_read gives for len bytes at addr when addr's page is
 * not mapped or not readable, made without a system call (a page cache's
 * cs_unreadable_fn: the process's memory is readable by whole pages). */
struct cs_error *cs_live_unreadable(void *live, uint64_t addr, size_t len);
/* Read the n ranges, lens[i] bytes at addrs[i] into bufs[i], in one system
 * call. Returns how many ranges, from the first, were read whole; a range
 * that cannot be read ends the batch (not an error: read it alone to learn
 * why). At most 64 ranges a call. */
size_t cs_live_read_ranges(struct cs_live *live, const uint64_t *addrs,
			   void *const *bufs, const size_t *lens, size_t n);
/* The process as memory (memory.h); valid until cs_live_close. */
struct cs_memory cs_live_memory(struct cs_live *live);

/* The process as a target's tables (target.h), valid until the next
 * pause (threads), the next regions update (regions) or cs_live_close.
 * Threads: thread 0 is the main thread (when it is alive), then
 * ascending tid. Paused: registers from PTRACE_GETREGS, and cursig the
 * signal a thread stopped with (0 for our own interrupt). Unpaused: tid
 * only, everything else zero, and has_registers false. Exited (zombie)
 * threads are left out.
 * Mappings and regions: one reading of /proc/PID/maps at attach (after
 * stopping, when paused), sorted by start: every line a region, the
 * file-backed ones (inode != 0) a mapping too, path as the kernel prints
 * it (may end in " (deleted)"). The mappings are not read again; the
 * regions are, by cs_live_update_regions, once the threads ran.
 * auxv: /proc/PID/auxv. executable: readlink /proc/PID/exe, else the
 * mapping containing AT_PHDR; NULL if neither is known. command:
 * /proc/PID/cmdline with NULs as spaces; NULL if empty or unreadable.
 * cwd: readlink /proc/PID/cwd; NULL if unreadable. No siginfo. */
const struct cs_target_tables *cs_live_tables(const struct cs_live *live);
/* Read the regions again if the threads ran since they were read, so
 * that they show the memory the threads run in now; false when
 * /proc/PID/maps cannot be read (no region is then known). */
bool cs_live_update_regions(struct cs_live *live);

/* The same read now, of any process (a title set since, as Ruby's $0=
 * does): malloc'd, NULL if empty or unreadable. */
char *cs_live_read_command(int pid);

/* GNU build-id of the ELF module loaded at start, read from process memory
 * (ELF header, program headers, PT_NOTE), like cs_core_module_build_id:
 * CS_ERR_FAULT if unreadable, CS_ERR_CORRUPT if not a valid ELF,
 * CS_ERR_LOOKUP if it has none, CS_ERR_LIMIT if it does not fit bufsize. */
struct cs_error *cs_live_module_build_id(struct cs_live *live, uint64_t start,
					 uint8_t *buf, size_t bufsize,
					 size_t *len);

/* /proc/PID/stat of any process read into buf (size bytes at most),
 * without allocating: the fields after the command, which may hold
 * anything, ')' too (" S ppid pgrp ..."), or NULL if unreadable. */
const char *cs_proc_stat_fields(int pid, char *buf, size_t size);

#endif
