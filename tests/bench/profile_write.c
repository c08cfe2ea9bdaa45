/* How long each profile format takes to write a large recording: a
 * profile of SAMPLES snapshots of THREADS threads, each snapshot a stack
 * DEPTH frames deep whose inner frames change often (a new sample almost
 * every snapshot, the worst case for the writers), states cycling, every
 * thread named only after the first tenth of the snapshots (so that the
 * settle pass has every thread to merge and every line to count again),
 * then settled and every format written to /dev/null, timed (make
 * bench-profile-write).
 *
 * usage: bench-profile-write [SAMPLES] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/profile.h"
#include "profile/profile_format.h"

#define THREADS 4
#define DEPTH 40
#define METHODS 500

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long samples = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
	if (samples <= 0) {
		fprintf(stderr, "usage: bench-profile-write [SAMPLES]\n");
		return 64;
	}
	static char names[METHODS][32];
	for (int i = 0; i < METHODS; i++)
		snprintf(names[i], sizeof(names[i]), "App::Worker%d#step", i);
	static struct rv_frame frames[THREADS][DEPTH];
	static struct rv_thread threads[THREADS];
	static char thread_names[THREADS][16];
	struct rv_process proc = {.threads = threads, .nthreads = THREADS};
	for (int t = 0; t < THREADS; t++) {
		snprintf(thread_names[t], sizeof(thread_names[t]), "worker %d",
			 t);
		threads[t] = (struct rv_thread){.addr = 0x1000 + (uint64_t)t,
						.tid = 100 + t,
						.name = thread_names[t],
						.frames = frames[t],
						.nframes = DEPTH};
	}
	struct cs_profile p;
	cs_profile_init(&p);
	unsigned seed = 1;
	double t0 = now();
	/* samples counts thread samples: one snapshot holds THREADS */
	for (long s = 0; s < samples / THREADS; s++) {
		for (int t = 0; t < THREADS; t++) {
			struct rv_thread *th = &threads[t];
			th->name = s < samples / THREADS / 10 ? NULL
							      : thread_names[t];
			th->holds_gvl = (s + t) % THREADS == 0;
			th->status = (s / 7 + t) % 3 ? RV_STATUS_RUN
						     : RV_STATUS_SLEEP;
			for (int d = 0; d < DEPTH; d++) {
				/* outer frames stay, inner ones wander */
				int m = d < DEPTH - 4
						? d
						: (int)((seed = seed * 1103515245u +
								12345u) %
							METHODS);
				struct rv_frame *f = &frames[t][d];
				*f = (struct rv_frame){.kind = RV_FRAME_RUBY,
						       .label = names[m],
						       .stable = names[m],
						       .path = "app/worker.rb",
						       .lineno = 10 + m % 50};
			}
		}
		if (!cs_profile_add(&p, &proc, 0, (uint64_t)s * 1000000ull)) {
			fprintf(stderr, "out of memory\n");
			return 1;
		}
	}
	double built = now() - t0;
	printf("profile of %ld thread samples (%zu samples after merging "
	       "repeats, %zu stacks, %zu frames): built in %.3f s\n",
	       samples, p.nsamples, p.nstacks, p.nframes, built);
	size_t before = p.nthreads;
	double s0 = now();
	if (!cs_profile_settle(&p)) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	printf("settled (%zu threads into %zu) in %.3f s\n", before, p.nthreads,
	       now() - s0);
	struct cs_profile_run run = {
		.seconds = (double)samples / THREADS / 1000.0,
		.rate = 1000.0,
		.pid = 1,
	};
	for (const struct cs_profile_format *f = cs_profile_formats; f->name;
	     f++) {
		FILE *out = fopen("/dev/null", "w");
		if (!out)
			return 1;
		double w0 = now();
		f->write(out, &p, &run);
		double w = now() - w0;
		fclose(out);
		printf("%-12s %8.3f s\n", f->name, w);
	}
	cs_profile_free(&p);
	return 0;
}
