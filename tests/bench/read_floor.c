/* The floor of a live sample's reads: the ranges one sample of
 * `corestack record` read (CORESTACK_READ_LOG), read again from the same
 * process in a single process_vm_readv at the same rate, each call timed.
 * Nothing is decoded and no call is spent on a range found missing late:
 * what copying those bytes costs the kernel at that pace, as a sample
 * meets it (tests/bench_sampling.py).
 *
 * bench-read-floor PID RATE SECONDS RANGES
 *
 * prints: "floor: N calls of R ranges, B bytes in P pages: median M us
 * (min A, max Z), mean E us, F failed" */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define MAX_RANGES 1024 /* IOV_MAX */

static uint64_t ns_of(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Distinct 4 KiB pages the ranges touch (a sample's ranges are few). */
static size_t pages_of(const struct iovec *r, size_t n)
{
	static uint64_t page[MAX_RANGES * 2];
	size_t np = 0, distinct = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = (uint64_t)(uintptr_t)r[i].iov_base;
		for (uint64_t p = a >> 12;
		     p <= (a + r[i].iov_len - 1) >> 12 && np < MAX_RANGES * 2;
		     p++)
			page[np++] = p;
	}
	qsort(page, np, sizeof(*page), by_value);
	for (size_t i = 0; i < np; i++)
		distinct += i == 0 || page[i] != page[i - 1];
	return distinct;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: bench-read-floor PID RATE SECONDS "
				"RANGES\n");
		return 2;
	}
	int pid = atoi(argv[1]);
	double rate = atof(argv[2]), seconds = atof(argv[3]);
	FILE *f = fopen(argv[4], "r");
	if (!f || pid <= 0 || rate <= 0 || seconds <= 0) {
		fprintf(stderr, "bench-read-floor: bad arguments or %s: %s\n",
			argv[4], strerror(errno));
		return 2;
	}
	static struct iovec remote[MAX_RANGES], local[MAX_RANGES];
	size_t n = 0, bytes = 0;
	unsigned long long addr, len;
	while (n < MAX_RANGES && fscanf(f, "%llx %llu", &addr, &len) == 2) {
		remote[n].iov_base = (void *)(uintptr_t)addr;
		remote[n].iov_len = len;
		local[n].iov_base = malloc(len);
		local[n].iov_len = len;
		if (!local[n].iov_base)
			return 2;
		bytes += len;
		n++;
	}
	fclose(f);
	size_t calls = (size_t)(rate * seconds), failed = 0;
	uint64_t *took = calloc(calls ? calls : 1, sizeof(*took));
	if (!n || !calls || !took) {
		fprintf(stderr, "bench-read-floor: no ranges or no calls\n");
		return 2;
	}
	struct timespec next, a, b;
	clock_gettime(CLOCK_MONOTONIC, &next);
	uint64_t period = (uint64_t)(1e9 / rate), sum = 0;
	for (size_t i = 0; i < calls; i++) {
		uint64_t t = ns_of(&next) + period;
		next.tv_sec = (time_t)(t / 1000000000u);
		next.tv_nsec = (long)(t % 1000000000u);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		clock_gettime(CLOCK_MONOTONIC, &a);
		ssize_t got = process_vm_readv(pid, local, n, remote, n, 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (got != (ssize_t)bytes)
			failed++;
		took[i] = ns_of(&b) - ns_of(&a);
		sum += took[i];
	}
	qsort(took, calls, sizeof(*took), by_value);
	printf("floor: %zu calls of %zu ranges, %zu bytes in %zu pages: "
	       "median %.1f us (min %.1f, max %.1f), mean %.1f us, %zu "
	       "failed\n",
	       calls, n, bytes, pages_of(remote, n), took[calls / 2] / 1e3,
	       took[0] / 1e3, took[calls - 1] / 1e3,
	       (double)sum / (double)calls / 1e3, failed);
	return 0;
}
