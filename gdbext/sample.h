/* ruby-sample: a sampling profile of a debugger's live inferior while the
 * debugger lets it run.
 *
 * The debugger is the inferior's tracer, so the samples are read without
 * ptrace (process_vm_readv, /proc/PID/mem) from a thread of our own while
 * the debugger's main thread waits for the inferior to stop. When the time
 * is up the sampler stops the inferior the way the debugger notices: a
 * signal the debugger intercepts (gdb: SIGINT, not passed to the program),
 * or the caller stops it itself (lldb: interrupt_signal 0). */
#ifndef CS_GDBEXT_SAMPLE_H
#define CS_GDBEXT_SAMPLE_H

#include "../util/error.h"

struct gx_sampler;

/* Resolve the Ruby VM of pid (executable may be NULL), then start
 * sampling every Ruby thread at rate Hz for seconds. After seconds, if
 * interrupt_signal is not 0, it is sent to pid. */
struct cs_error *gx_sampler_start(int pid, const char *executable,
				  double seconds, double rate,
				  int interrupt_signal,
				  struct gx_sampler **ret);
/* Stop sampling (now, if the time is not up yet: the inferior stopped or
 * exited), write the profile to out_path (if not NULL) in format (a name
 * of profile_format.h's table; NULL: collapsed) and return the summary in
 * *summary (malloc'd); *interrupted tells whether the sampler sent
 * interrupt_signal. Frees the sampler. */
struct cs_error *gx_sampler_finish(struct gx_sampler *s, const char *out_path,
				   const char *format, char **summary,
				   int *interrupted);

#endif
