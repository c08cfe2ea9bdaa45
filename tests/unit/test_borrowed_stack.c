/* Which kernel thread's native stack holds a Ruby thread's frames
 * (engine/borrowed_stack.c through engine/thread_tids.c): its own, unless
 * exactly one kernel thread that runs no Ruby thread has its stack pointer
 * in the machine stack Ruby records for it. Synthetic threads: a Ruby
 * thread known by its pthread_t (its kernel thread's fs_base), as where
 * Ruby keeps no tid. */
#include <stdlib.h>

#include "../../engine/thread_tids.h"
#include "check.h"

#define STACK_TOP 0x7f0000100000ull
#define STACK_SIZE 0x100000ull
#define OWN_PTHREAD 0x7f0000200000ull

static struct cs_thread kernel(int tid, uint64_t fs_base, uint64_t rsp)
{
	return (struct cs_thread){.tid = tid, .fs_base = fs_base, .rsp = rsp};
}

/* The native tid the one Ruby thread gets, among natives (n of them). */
static int64_t native_tid(const struct cs_thread *natives, size_t n,
			  int64_t *tid)
{
	struct rv_thread t = {.tid = -1,
			      .pthread_id = OWN_PTHREAD,
			      .machine_stack_start = STACK_TOP,
			      .machine_stack_size = STACK_SIZE,
			      .status = RV_STATUS_SLEEP};
	struct rv_process p = {.threads = &t, .nthreads = 1};
	const struct cs_thread *ptrs[4];
	for (size_t k = 0; k < n; k++)
		ptrs[k] = &natives[k];
	struct cs_thread_tids r = {0};
	if (cs_thread_tids_find(&p, ptrs, n, -1, NULL, -1, &r))
		abort();
	int64_t ret = r.native_tids[0];
	*tid = r.tids[0];
	cs_thread_tids_free(&r, 1);
	return ret;
}

static void expect(const char *what, const struct cs_thread *natives, size_t n,
		   int64_t want_native, int64_t want_tid)
{
	int64_t tid, got = native_tid(natives, n, &tid);
	CHECK(got == want_native && tid == want_tid,
	      "%s: native tid %lld, tid %lld; expected %lld, %lld", what,
	      (long long)got, (long long)tid, (long long)want_native,
	      (long long)want_tid);
}

int main(void)
{
	/* its own kernel thread alone, on its own stack */
	struct cs_thread alone[] = {kernel(10, OWN_PTHREAD, STACK_TOP - 0x800)};
	expect("alone", alone, 1, 10, 10);

	/* another kernel thread on its stack (it jumped there): that one's
	 * stack holds its frames, its tid stays its own */
	struct cs_thread jumped[] = {kernel(10, OWN_PTHREAD, STACK_TOP - 0x800),
				     kernel(11, 0x7f0000300000ull,
					    STACK_TOP - 0x900)};
	expect("jumped", jumped, 2, 11, 10);

	/* kernel threads on their own stacks elsewhere, or just above its
	 * base: not on the Ruby thread's */
	struct cs_thread elsewhere[] = {
		kernel(10, OWN_PTHREAD, STACK_TOP - 0x800),
		kernel(11, 0x7f0000300000ull, 0x7f0000280000ull),
		kernel(12, 0x7f0000400000ull, STACK_TOP + 0x10)};
	expect("elsewhere", elsewhere, 3, 10, 10);

	/* two strangers on its stack: neither is believed */
	struct cs_thread two[] = {
		kernel(10, OWN_PTHREAD, STACK_TOP - 0x800),
		kernel(11, 0x7f0000300000ull, STACK_TOP - 0x900),
		kernel(12, 0x7f0000400000ull, STACK_TOP - 0xa00)};
	expect("two", two, 3, 10, 10);
	return check_summary("borrowed_stack");
}
