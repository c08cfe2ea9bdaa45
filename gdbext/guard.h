/* A guard of the inferior while ruby-sample lets it run: a small process
 * of its own that outlives the debugger.
 *
 * If the debugger dies (SIGKILL, a crash) while the inferior runs, the
 * kernel detaches it, but a stop signal already sent by the debugger to
 * stop the threads (SIGSTOP) then puts the whole process in a group stop:
 * it stays stopped (T) with nobody to resume it. The guard notices the
 * debugger is gone (the pipe it reads reaches end of file without a word),
 * waits until the inferior has no tracer, and resumes it with SIGCONT. */
#ifndef CS_GDBEXT_GUARD_H
#define CS_GDBEXT_GUARD_H

/* Start a guard of pid; -1 when it cannot be (the caller samples
 * unguarded). The debugger keeps the returned descriptor until
 * gx_guard_release. */
int gx_guard_start(int pid);
/* The debugger holds the inferior again: the guard ends quietly. */
void gx_guard_release(int fd);

#endif
