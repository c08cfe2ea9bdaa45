/* Counting the engine's reads of the target. Each read is logged too, so
 * that the floor a snapshot is measured against can be told: the bytes it
 * needed, each once, and what copying just those costs. */
#include "read_counts.h"

#include <stdlib.h>
#include <time.h>

/* The log stops growing past this many reads (a snapshot of 10,000
 * threads makes a few million): the counts go on, the floor is not told. */
#define MAX_LOGGED_READS (64u << 20)

static void log_read(struct cs_engine *e, uint64_t addr, size_t len)
{
	if (e->read_log_full || len == 0)
		return;
	if (e->nread_log == e->read_log_cap) {
		size_t cap = e->read_log_cap ? e->read_log_cap * 2 : 4096;
		struct cs_read_range *log =
			cap <= MAX_LOGGED_READS
				? realloc(e->read_log, cap * sizeof(*log))
				: NULL;
		if (!log) {
			e->read_log_full = true;
			return;
		}
		e->read_log = log;
		e->read_log_cap = cap;
	}
	e->read_log[e->nread_log++] = (struct cs_read_range){addr, len};
}

static struct cs_error *counted_read(void *priv, uint64_t addr, void *buf,
				     size_t len)
{
	struct cs_engine *e = priv;
	e->counts.reads++;
	e->counts.bytes += len;
	e->counts.small += len <= 8;
	struct cs_error *err =
		cs_memory_read(&e->counted_inner, addr, buf, len);
	if (!err) /* a read that failed touched nothing of the floor */
		log_read(e, addr, len);
	return err;
}

void cs_engine_count_reads(struct cs_engine *e)
{
	e->counted_inner = e->cached ? e->memory : cs_target_memory(e->target);
	e->memory = (struct cs_memory){.read = counted_read, .priv = e};
}

static int by_address(const void *a, const void *b)
{
	const struct cs_read_range *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The log sorted and merged into its union, in place; its length. */
static size_t merge_ranges(struct cs_read_range *r, size_t n)
{
	if (n == 0)
		return 0;
	qsort(r, n, sizeof(*r), by_address);
	size_t out = 0;
	for (size_t i = 1; i < n; i++) {
		uint64_t end = r[out].addr + r[out].len;
		if (r[i].addr <= end) {
			uint64_t iend = r[i].addr + r[i].len;
			if (iend > end)
				r[out].len = iend - r[out].addr;
		} else {
			r[++out] = r[i];
		}
	}
	return out + 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Copy each range of the union once, as the snapshot's reads did. */
static uint64_t touch_once(struct cs_engine *e, const struct cs_read_range *r,
			   size_t n)
{
	uint8_t buf[4096];
	uint64_t start = now_ns();
	for (size_t i = 0; i < n; i++) {
		for (uint64_t off = 0; off < r[i].len; off += sizeof(buf)) {
			uint64_t left = r[i].len - off;
			size_t len = left < sizeof(buf) ? left : sizeof(buf);
			cs_error_destroy(cs_memory_read(
				&e->counted_inner, r[i].addr + off, buf, len));
		}
	}
	return now_ns() - start;
}

struct cs_read_counts cs_engine_read_counts(struct cs_engine *e)
{
	struct cs_read_counts c = e->counts;
	if (!e->request.count_reads || e->read_log_full)
		return c;
	size_t n = merge_ranges(e->read_log, e->nread_log);
	e->nread_log = n;
	uint64_t last_page = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		const struct cs_read_range *r = &e->read_log[i];
		if (r->len == 0)
			continue;
		c.distinct += r->len;
		uint64_t first = r->addr >> 12,
			 last = (r->addr + r->len - 1) >> 12;
		c.pages += last - first + 1 - (first == last_page);
		last_page = last;
	}
	c.touch_ns = touch_once(e, e->read_log, n);
	return c;
}

const struct cs_read_range *cs_engine_read_ranges(const struct cs_engine *e,
						  size_t *n)
{
	*n = e->read_log_full ? 0 : e->nread_log;
	return e->read_log_full ? NULL : e->read_log;
}
