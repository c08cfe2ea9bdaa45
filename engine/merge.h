/* One stack per thread from its native and Ruby frames, in the real call
 * order: each native frame of the interpreter loop (vm_exec_core) is
 * replaced by the Ruby frames that vm_exec() invocation ran (a group
 * begins at each frame flagged VM_FRAME_FLAG_FINISH), and each Ruby
 * C-method frame sits on the native frame of its C function. When the two
 * stacks do not fit together, the merge says why and gives nothing. */
#ifndef CS_CORESTACK_MERGE_H
#define CS_CORESTACK_MERGE_H

#include "../rubyvm/model.h"
#include "native.h"

struct cs_merged_frame {
	const struct cs_native_frame *native; /* NULL for a Ruby frame */
	const struct rv_frame *ruby;          /* NULL for a native frame */
	/* A Ruby frame without a native one: the native frame that runs it
	 * (its interpreter loop, or the frame that took the place of a C
	 * function that tail-called). What a debugger selects for it. */
	const struct cs_native_frame *runs_on;
};

struct cs_merged_stack {
	struct cs_merged_frame *frames; /* innermost first */
	size_t nframes;
	char *error; /* NULL, or why the stacks could not be matched */
	/* an M:N thread parked on no native thread: no native stack to
	 * merge, which is no error (rv_thread.off_native) */
	bool off_native;
	/* The native stack was cut at the frame limit (truncated): frames
	 * [0, cut_at) are merged; the frames from cut_at on are the Ruby
	 * frames outside the native frames shown, where no native frame of
	 * theirs is known. */
	bool cut;
	size_t cut_at;
};

/* nt may be NULL (no native stack for the thread). Only allocation
 * failure is an error; a mismatch is out->error. */
struct cs_error *cs_merge_stacks(const struct rv_thread *rt,
				 const struct cs_native_thread *nt,
				 struct cs_merged_stack *out);
void cs_merged_stack_free(struct cs_merged_stack *m);

#endif
