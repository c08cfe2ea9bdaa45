/* ruby-sample: a sampling profile of a debugger's live inferior while the
 * debugger lets it run.
 *
 * The debugger is the inferior's tracer, so the samples are read without
 * ptrace (process_vm_readv, /proc/PID/mem) from a thread of our own while
 * the debugger's main thread waits for the inferior to stop. When the time
 * is up the sampler stops the inferior the way the debugger notices: a
 * signal the debugger intercepts (gdb: SIGURG, not passed to the program;
 * ignored by default should the debugger die before it intercepts it), or
 * the caller stops it itself (lldb: interrupt_signal 0). */
#ifndef CS_GDBEXT_SAMPLE_H
#define CS_GDBEXT_SAMPLE_H

#include "../util/error.h"

struct gx_sampler;

struct gx_sample_request {
	int pid;
	const char *executable; /* may be NULL */
	double seconds, rate;
	/* Sent to pid when the time is up, or when the debugger gets SIGTERM
	 * or SIGHUP meanwhile (those are held until gx_sampler_finish); 0:
	 * the caller stops the inferior itself. */
	int interrupt_signal;
	const char *out_path; /* the profile; opened at the start */
	/* how out_path is written: a name of profile_format.h's table;
	 * NULL: collapsed */
	const char *format;
	unsigned states; /* the states kept (profile.h); 0: every state */
	/* as in struct gx_source (backtrace.h) */
	const char *const *debug_dirs;
	const char *debug_dir_advice;
};

struct gx_sample_end {
	int interrupted; /* the sampler sent interrupt_signal */
	int quit_signal; /* SIGTERM or SIGHUP the debugger got, or 0 */
};

/* Resolve the Ruby VM of req->pid, open req->out_path, then start sampling
 * every Ruby thread at rate Hz for seconds, with a guard (guard.h) that
 * resumes the inferior should the debugger die meanwhile. */
struct cs_error *gx_sampler_start(const struct gx_sample_request *req,
				  struct gx_sampler **ret);
/* Stop sampling (now, if the time is not up yet: the inferior stopped or
 * exited), write the profile to out_path and return the summary in *summary
 * (malloc'd; it says where the stacks went or why they could not be
 * written). The caller quits if end->quit_signal. Frees the sampler. */
struct cs_error *gx_sampler_finish(struct gx_sampler *s, char **summary,
				   struct gx_sample_end *end);

#endif
