/* The loop of a sampling profiler: samples at a rate, for a duration or
 * until asked to stop, each taken by a callback; it counts the samples
 * taken and lost and the time spent taking them. `corestack record` and
 * the debuggers' ruby-sample run it. */
#ifndef CS_CORESTACK_SAMPLING_LOOP_H
#define CS_CORESTACK_SAMPLING_LOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct cs_sampling_loop {
	double rate;     /* samples per second */
	double duration; /* seconds; 0: until stopped */
	/* Set by a signal handler or another thread: stop at once. May be
	 * NULL. */
	const atomic_int *stop;
	/* One sample: 1 taken, 0 lost, -1 the target is gone (the loop
	 * ends). */
	int (*take)(void *ctx);
	/* Before each sample, may be NULL: false ends the loop. */
	bool (*before)(void *ctx);
	/* After each sample that does not end the loop, may be NULL. */
	void (*after)(void *ctx, const struct cs_sampling_loop *loop);
	void *ctx;

	/* What the run counted. */
	size_t taken, lost;
	double start;       /* cs_sampling_now() when it began */
	double elapsed;     /* seconds it ran */
	double reading;     /* seconds spent in take */
	double reading_cpu; /* of which on this thread's CPU, the kernel's
			     * time for the reads included */
	/* of which the first take: it reads and decodes every frame, what
	 * the later ones mostly find again */
	double first, first_cpu;
};

/* Run l until its duration is up, its stop flag is set, before says no,
 * or take says the target is gone. */
void cs_sampling_run(struct cs_sampling_loop *l);

/* Seconds on CLOCK_MONOTONIC. */
double cs_sampling_now(void);

#endif
