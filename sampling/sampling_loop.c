#include "sampling_loop.h"

#include <time.h>
#include <unistd.h>

static double clock_seconds(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double cs_sampling_now(void)
{
	return clock_seconds(CLOCK_MONOTONIC);
}

static bool stopped(const struct cs_sampling_loop *l)
{
	return l->stop && atomic_load(l->stop);
}

static bool time_up(const struct cs_sampling_loop *l)
{
	return l->duration > 0 && cs_sampling_now() - l->start >= l->duration;
}

/* Sleep until t or a stop, in naps short enough that a stop set by
 * another thread (no signal cuts the sleep short) ends it soon. */
static void sleep_until(const struct cs_sampling_loop *l, double t)
{
	for (double left; !stopped(l) && (left = t - cs_sampling_now()) > 0;)
		usleep((useconds_t)((left < 0.05 ? left : 0.05) * 1e6));
}

void cs_sampling_run(struct cs_sampling_loop *l)
{
	double interval = 1.0 / l->rate;
	double next = l->start = cs_sampling_now();
	while (!stopped(l) && !time_up(l)) {
		sleep_until(l, next);
		/* A sample due when the time is up is still taken (as many
		 * samples as ticks in the duration, both ends included). */
		if (stopped(l))
			break;
		next += interval;
		if (l->before && !l->before(l->ctx))
			break;
		double t0 = cs_sampling_now();
		double c0 = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
		bool first = l->taken + l->lost == 0;
		int r = l->take(l->ctx);
		double took = cs_sampling_now() - t0;
		double took_cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
		l->reading += took;
		l->reading_cpu += took_cpu;
		if (first) {
			l->first = took;
			l->first_cpu = took_cpu;
		}
		if (r < 0)
			break;
		if (r > 0)
			l->taken++;
		else
			l->lost++;
		if (l->after)
			l->after(l->ctx, l);
	}
	l->elapsed = cs_sampling_now() - l->start;
}
