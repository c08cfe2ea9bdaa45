/* The sampler's reads of the process, timed (request.time_target_reads):
 * what a sample spends in the system calls that copy the target's bytes,
 * the floor its cost is measured against (tests/bench_sampling.py). */
#ifndef CS_SAMPLING_READ_TIMING_H
#define CS_SAMPLING_READ_TIMING_H

#include "../engine/engine.h"

/* Put timed reads of live, through inner, in front of the engine's page
 * cache for the next sample. */
void cs_read_timing_install(struct cs_engine *e, struct cs_live *live,
			    struct cs_memory inner);

#endif
