/* Where the code a JIT generated lies in a target's memory: what tells the
 * native unwinder that a frame runs JIT code (native.h). */
#ifndef CS_CORESTACK_JIT_REGIONS_H
#define CS_CORESTACK_JIT_REGIONS_H

#include <stddef.h>

#include "../rubyvm/jit.h"
#include "../process/target.h"
#include "native.h"

/* For each of j's code addresses in memory that holds code and no file
 * (a module's code has its CFI and its symbols), the run of adjacent
 * regions without a file around it: a JIT reserves its memory in one
 * mapping and makes parts of it executable as it writes code. Nothing
 * when the target knows no regions. *ret is malloc'd (NULL when none);
 * only allocation fails. */
struct cs_error *cs_jit_regions(const struct cs_target *t,
				const struct rv_jit *j,
				struct cs_jit_region **ret, size_t *n);

#endif
