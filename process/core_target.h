/* An ELF core file as a target (core.h behind target.h). */
#ifndef CS_TARGET_CORE_TARGET_H
#define CS_TARGET_CORE_TARGET_H

#include "core.h"
#include "target.h"

/* A view of an open core as a target; the core stays the caller's to
 * close (cs_target_close is not for it). */
struct cs_target cs_target_of_core(struct cs_core *core);

#endif
