/* Counting the engine's reads of the target (request.count_reads): what a
 * snapshot costs, for the benchmarks (tests/bench.py). */
#ifndef CS_ENGINE_READ_COUNTS_H
#define CS_ENGINE_READ_COUNTS_H

#include "engine.h"

/* From now on every read of the session is counted and logged. */
void cs_engine_count_reads(struct cs_engine *e);

#endif
