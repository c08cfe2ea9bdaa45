/* The engine handle: one Ruby opened on one target, what every front end
 * (the CLI, record, top, ruby-bt, ruby-sample) works through. */
#ifndef CS_ENGINE_ENGINE_H
#define CS_ENGINE_ENGINE_H

#include <stdbool.h>

#include "../process/bundle.h"
#include "../process/live.h"
#include "../process/open.h"
#include "../process/page_cache.h"
#include "ruby_open.h"
#include "snapshot.h"

struct cs_engine_request {
	/* What to read: the core or process the request names, or, when
	 * borrowed is set, a target a front end made (the debugger's
	 * inferior), which must outlive the handle. */
	struct cs_target_request target;
	const struct cs_target *borrowed;
	/* Every read is slow (a system call, a debugger's round trip) and
	 * the target stands still: keep the pages read. */
	bool page_cache;
	/* Where the Ruby's debug info and its layouts are found: for the
	 * Ruby, the GC library, libc and the native unwinder alike. */
	const char *const *debug_dirs; /* NULL: the default directories */
	/* How the user adds a debug directory here ("pass --debug-dir"),
	 * for the message when debug info is missing; NULL: generic. */
	const char *debug_dir_advice;
	const char *cache_dir; /* layouts: NULL default, "" none */
	struct rv_options model;
	/* The bundle target.core was unpacked from, or NULL: the report
	 * names it, and the core by the path it had. */
	const struct cs_bundle *bundle;
	/* count the reads of the target's memory (cs_engine_read_counts):
	 * what a snapshot costs, for the benchmarks */
	bool count_reads;
	/* a sampler: time the reads that reach the process (its system
	 * calls; cs_engine.target_reads), for the benchmarks */
	bool time_target_reads;
};

/* The reads of the target's memory the Ruby model and the native
 * unwinder made through the engine, since it was opened. */
struct cs_read_counts {
	uint64_t reads; /* calls */
	uint64_t bytes; /* bytes asked for */
	uint64_t small; /* calls of 8 bytes or less: one value each */
	/* cs_engine_read_floor's: the bytes in the union of the ranges
	 * read (each byte once), the 4 KiB pages they touch, and the
	 * nanoseconds taken to copy that union once from the target */
	uint64_t distinct, pages, touch_ns;
};

/* It owns the target (unless borrowed), the page cache in front of it,
 * the Ruby found there with its session, and the request's options. */
struct cs_engine {
	/* as asked; a sampler's target.pid and target.pause: the process
	 * its samples read and whether they stop it */
	struct cs_engine_request request;
	struct cs_target *owned;
	const struct cs_target *target; /* NULL once let go (sampling) */
	struct cs_ruby ruby;
	struct cs_page_cache cache;
	struct cs_memory memory; /* the cache's, read by the session */
	bool cached;
	/* request.count_reads: memory counts every read, then reads
	 * counted_inner (the cache's or the target's) */
	struct cs_memory counted_inner;
	struct cs_read_counts counts;
	struct cs_read_range {
		uint64_t addr, len;
	} * read_log; /* every counted read, for the floor */
	size_t nread_log, read_log_cap;
	bool read_log_full; /* out of memory: no floor */
#define CS_SAMPLE_RANGES 256
	/* request.time_target_reads: the sampler's reads of the process,
	 * each timed (sampling/read_timing.c) */
	struct cs_target_reads {
		uint64_t calls;  /* system calls: reads and batched reads */
		uint64_t ranges; /* ranges those calls read */
		uint64_t bytes;
		uint64_t ns; /* spent in them */
		struct cs_memory inner;
		struct cs_live *live;
		/* the ranges read whole by the sample under way and by the
		 * one before it, for a floor replayed elsewhere
		 * (CORESTACK_READ_LOG); past CS_SAMPLE_RANGES, cut */
		struct cs_read_range sample[CS_SAMPLE_RANGES],
			last[CS_SAMPLE_RANGES];
		size_t nsample, nlast;
		bool sample_cut, last_cut;
	} target_reads;
	/* where a module whose file cannot be used is looked for by its
	 * build-id: the request's directories and the Ruby's own; the
	 * target reads with it (cs_target_use_module_search) */
	struct cs_module_search *search;
	/* sampling (cs_engine_open_sampling) */
	struct cs_live *kept; /* one attachment for every sample */
	char *ruby_version;   /* as the first look read it; NULL: unknown */
};

/* The reads counted so far (request.count_reads; zeros otherwise), with
 * the floor they are measured against: the distinct bytes and pages, and
 * the time to copy each byte once from the target (the pages are mapped
 * by then: what the reads themselves cost, not the disk). */
struct cs_read_counts cs_engine_read_counts(struct cs_engine *e);
/* After cs_engine_read_counts: the union of the ranges read, by address
 * (NULL when the log was not kept). */
const struct cs_read_range *cs_engine_read_ranges(const struct cs_engine *e,
						  size_t *n);

/* Open the target the request names (or take the borrowed one) and the
 * Ruby on it. On failure nothing is left open or stopped, and the error
 * says first when the target is truncated. */
struct cs_error *cs_engine_open(const struct cs_engine_request *r,
				struct cs_engine **ret);

/* Read every Ruby thread (and fiber), release the target (a live process
 * runs again), and build the report (snapshot.c): header, warnings, tids
 * cross-checked, native stacks merged, with the engine's debug
 * directories and layout cache. An error only when there is no report at
 * all; a partial one says so in report.complete. *ret is always safe to
 * free with cs_snapshot_free. */
struct cs_error *cs_engine_snapshot(struct cs_engine *e,
				    const struct cs_snapshot_options *o,
				    struct cs_snapshot *ret);

/* A live Ruby for a sampler: the Ruby resolved once on a first look at
 * r->target.pid, that target let go, reads of every sample through one
 * page cache; paused (r->target.pause), one attachment kept for every
 * sample, taken now so that what rules out stopping the process (another
 * tracer, a thread that never stops) is said at once. Frames are reused
 * from sample to sample. */
struct cs_error *cs_engine_open_sampling(const struct cs_engine_request *r,
					 struct cs_engine **ret);

/* A sampler's process let go before its profile is written: the
 * attachment kept for the samples closed (threads run again). */
void cs_engine_let_go(struct cs_engine *e);

/* Everything the handle owns closed and let go; NULL is fine. */
void cs_engine_close(struct cs_engine *e);

#endif
