/* The tid glibc keeps for a thread, from the thread's own memory. */
#ifndef CS_CORESTACK_PTHREAD_TID_H
#define CS_CORESTACK_PTHREAD_TID_H

#include <stdbool.h>
#include <stdint.h>

#include "../process/memory.h"
#include "../process/target.h"

/* Where struct pthread keeps its tid, from libc's debug info. */
struct cs_pthread_tid {
	bool known;
	uint64_t offset;
	uint64_t size;
};

/* Look the tid member up in the DWARF of the libc img maps (its own, or
 * found under debug_dirs by build-id: Debian's libc6-dbg), or in the cache
 * (cache_dir as for layouts: NULL default, "" none). known stays false
 * when there is none; that is not an error. */
void cs_pthread_tid_layout(const struct cs_target *img,
			   const char *const *debug_dirs, const char *cache_dir,
			   struct cs_pthread_tid *ret);

/* The tid of the thread whose pthread_t is pthread; -1 when unknown. */
int64_t cs_pthread_tid_read(const struct cs_pthread_tid *l,
			    const struct cs_memory *mem, uint64_t pthread);

#endif
