/* A kernel thread on another thread's stack.
 *
 * A Ruby that keeps one execution context for the whole VM takes rb_raise
 * on a thread it did not create as raised in the thread holding the GVL:
 * the raise longjmps to that Ruby thread's innermost tag, which lies on
 * its machine stack. The foreign kernel thread then runs the Ruby
 * thread's code (its rescue, and whatever follows) on the Ruby thread's
 * stack, while the kernel thread Ruby records for it stays where it
 * waited, its frames overwritten by the newcomer's: its native stack no
 * longer holds the Ruby thread's frames, the newcomer's does.
 *
 * So the registers tell: a kernel thread whose stack pointer lies in the
 * machine stack Ruby records for a thread, and which is no Ruby thread's
 * kernel thread, got there by such a jump and runs that thread's code.
 * Only one such thread is believed; with none or several, the Ruby
 * thread's own kernel thread stays the one whose stack is merged. */
#include "borrowed_stack.h"

#include <stdbool.h>

static bool runs_a_ruby_thread(const int64_t *ruby_tids, size_t nruby,
			       int64_t tid)
{
	for (size_t j = 0; j < nruby; j++)
		if (ruby_tids[j] == tid)
			return true;
	return false;
}

int64_t cs_borrowed_stack_runner(const struct rv_thread *t, int64_t tid,
				 const int64_t *ruby_tids, size_t nruby,
				 const struct cs_thread *const *natives,
				 size_t n)
{
	uint64_t top = t->machine_stack_start, size = t->machine_stack_size;
	if (tid < 0 || !top || !size || size > top)
		return tid;
	/* within the stack itself: no slack above its base, which could
	 * reach the stack of a neighbouring mapping */
	int64_t runner = tid;
	size_t found = 0;
	for (size_t k = 0; k < n; k++) {
		const struct cs_thread *nt = natives[k];
		if (!nt->rsp || nt->rsp < top - size || nt->rsp >= top ||
		    nt->tid <= 0 || nt->tid == tid ||
		    runs_a_ruby_thread(ruby_tids, nruby, nt->tid))
			continue;
		runner = nt->tid;
		found++;
	}
	return found == 1 ? runner : tid;
}
