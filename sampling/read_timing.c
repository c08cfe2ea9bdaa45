/* Each read the page cache sends to the process is timed on the monotonic
 * clock (a vDSO call, tens of nanoseconds): only when a benchmark asks. */
#include "read_timing.h"

#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void log_range(struct cs_target_reads *t, uint64_t addr, size_t len)
{
	if (t->nsample == CS_SAMPLE_RANGES) {
		t->sample_cut = true;
		return;
	}
	t->sample[t->nsample].addr = addr;
	t->sample[t->nsample].len = len;
	t->nsample++;
}

static struct cs_error *timed_read(void *priv, uint64_t addr, void *buf,
				   size_t len)
{
	struct cs_target_reads *t = priv;
	uint64_t start = now_ns();
	struct cs_error *err = cs_memory_read(&t->inner, addr, buf, len);
	t->ns += now_ns() - start;
	t->calls++;
	t->ranges++;
	if (!err) {
		t->bytes += len;
		log_range(t, addr, len);
	}
	return err;
}

static size_t timed_read_ranges(void *priv, const uint64_t *addrs,
				void *const *bufs, const size_t *lens, size_t n)
{
	struct cs_target_reads *t = priv;
	uint64_t start = now_ns();
	size_t got = cs_live_read_ranges(t->live, addrs, bufs, lens, n);
	t->ns += now_ns() - start;
	t->calls++;
	t->ranges += got;
	for (size_t i = 0; i < got && i < n; i++) {
		t->bytes += lens[i];
		log_range(t, addrs[i], lens[i]);
	}
	return got;
}

void cs_read_timing_install(struct cs_engine *e, struct cs_live *live,
			    struct cs_memory inner)
{
	struct cs_target_reads *t = &e->target_reads;
	/* a sample (or a paused sample's try) begins */
	if (t->nsample) {
		memcpy(t->last, t->sample, t->nsample * sizeof(*t->sample));
		t->nlast = t->nsample;
		t->last_cut = t->sample_cut;
	}
	t->nsample = 0;
	t->sample_cut = false;
	t->inner = inner;
	t->live = live;
	e->cache.inner = (struct cs_memory){.read = timed_read, .priv = t};
	e->cache.read_ranges = timed_read_ranges;
	e->cache.read_ranges_priv = t;
}
