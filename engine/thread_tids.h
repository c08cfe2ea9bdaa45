/* Which kernel thread runs each Ruby thread, cross-checked. */
#ifndef CS_CORESTACK_THREAD_TIDS_H
#define CS_CORESTACK_THREAD_TIDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../rubyvm/model.h"
#include "../process/core.h"

struct cs_thread_tids {
	int64_t *tids; /* per Ruby thread: kernel tid, or -1 when unknown */
	char **errors; /* per Ruby thread: why its tid or its registers are
			 * not believed, or NULL */
	/* per Ruby thread: the kernel thread that runs its code, whose native
	 * stack holds its frames: its own (tids), or one that jumped onto its
	 * machine stack (borrowed_stack.h); -1 when unknown or not believed */
	int64_t *native_tids;
	bool ok; /* no error at all */
};

/* The tids of p's threads: Ruby's own (3.1+) or, where Ruby keeps only a
 * pthread_t (glibc x86-64: the thread's fs_base), the kernel thread with
 * that fs_base among natives (n of them; fs_base 0 when its registers are
 * not known; when none has an fs_base but some a stack pointer, the tid
 * glibc records, if the stack pointer agrees). A Ruby tid that is no
 * kernel thread's (a forked child's, kept from its parent) is replaced the
 * same ways. pid is the process's, -1 if unknown. glibc_tids (NULL: none)
 * holds, per Ruby thread, the tid glibc records at its pthread_t (-1:
 * unknown; pthread_tid.h). crash_tid: the thread that took a fatal signal
 * (its stack pointer is its handler's), -1 for none. Every tid is checked
 * against the other sources
 * (docs/untrusted-input.md); a failed check is an error for that thread,
 * never a silent pick. */
struct cs_error *cs_thread_tids_find(const struct rv_process *p,
				     const struct cs_thread *const *natives,
				     size_t n, int64_t pid,
				     const int64_t *glibc_tids,
				     int64_t crash_tid,
				     struct cs_thread_tids *ret);
void cs_thread_tids_free(struct cs_thread_tids *t, size_t nthreads);

#endif
