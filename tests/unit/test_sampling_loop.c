/* The sampling loop (sampling/sampling_loop.c): as many samples as ticks
 * of the rate in the duration, lost ones counted apart, and the loop ends
 * when a sample says the target is gone, when the check before a sample
 * says so, or when the stop flag is set. */
#include "sampling/sampling_loop.h"
#include "tests/unit/check.h"

#include <pthread.h>
#include <unistd.h>

struct fake {
	int calls;
	int gone_at;    /* the call that says the target is gone; 0: none */
	int lose_every; /* every Nth call is lost; 0: none */
	int end_before; /* the check before call N says stop; 0: never */
	atomic_int *stop_at_call; /* set at call 3 */
	int after_calls;
};

static int take(void *ctx)
{
	struct fake *f = ctx;
	f->calls++;
	if (f->stop_at_call && f->calls == 3)
		atomic_store(f->stop_at_call, 1);
	if (f->calls == f->gone_at)
		return -1;
	return f->lose_every && f->calls % f->lose_every == 0 ? 0 : 1;
}

static bool before(void *ctx)
{
	struct fake *f = ctx;
	return f->calls + 1 != f->end_before;
}

static void after(void *ctx, const struct cs_sampling_loop *l)
{
	struct fake *f = ctx;
	f->after_calls++;
	(void)l;
}

/* Another thread asks the loop to stop (as ruby-sample's finish does). */
static void *stop_soon(void *arg)
{
	usleep(50000);
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

int main(void)
{
	/* 0.2 s at 50 Hz: ticks at 0, 20, ..., 200 ms, both ends taken
	 * (fewer on a machine too busy to keep up). */
	struct fake f = {.lose_every = 4};
	struct cs_sampling_loop l = {.rate = 50,
				     .duration = 0.2,
				     .take = take,
				     .after = after,
				     .ctx = &f};
	cs_sampling_run(&l);
	CHECK(f.calls >= 5 && f.calls <= 11, "%d samples in 0.2 s at 50 Hz",
	      f.calls);
	CHECK(l.taken + l.lost == (size_t)f.calls &&
		      l.lost == (size_t)f.calls / 4,
	      "taken %zu, lost %zu of %d", l.taken, l.lost, f.calls);
	CHECK(f.after_calls == f.calls, "after each sample");
	CHECK(l.elapsed >= 0.2 && l.elapsed < 1.0, "elapsed %.3f", l.elapsed);
	CHECK(l.reading >= 0 && l.reading < l.elapsed, "reading %.6f",
	      l.reading);

	/* The target gone: that call is neither taken nor lost. */
	f = (struct fake){.gone_at = 3};
	l = (struct cs_sampling_loop){.rate = 1000, .take = take, .ctx = &f};
	cs_sampling_run(&l);
	CHECK(f.calls == 3 && l.taken == 2 && l.lost == 0,
	      "gone at the third: %d calls, %zu taken", f.calls, l.taken);

	/* The check before a sample ends it. */
	f = (struct fake){.end_before = 5};
	l = (struct cs_sampling_loop){
		.rate = 1000, .take = take, .before = before, .ctx = &f};
	cs_sampling_run(&l);
	CHECK(f.calls == 4 && l.taken == 4, "ended before the fifth: %d",
	      f.calls);

	/* A stop flag set during a sample: no sample after it. */
	atomic_int stop = 0;
	f = (struct fake){.stop_at_call = &stop};
	l = (struct cs_sampling_loop){
		.rate = 1000, .stop = &stop, .take = take, .ctx = &f};
	cs_sampling_run(&l);
	CHECK(f.calls == 3 && l.taken == 3, "stopped at the third: %d",
	      f.calls);

	/* A slow rate and a stop from another thread during the wait: the
	 * wait ends soon, without a sample more. */
	stop = 0;
	f = (struct fake){0};
	l = (struct cs_sampling_loop){
		.rate = 0.5, .stop = &stop, .take = take, .ctx = &f};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, stop_soon, &stop) == 0, "thread");
	cs_sampling_run(&l);
	pthread_join(t, NULL);
	CHECK(f.calls == 1 && l.elapsed < 0.5,
	      "stopped during the wait: %d calls in %.3f s", f.calls,
	      l.elapsed);
	return check_summary("test_sampling_loop");
}
