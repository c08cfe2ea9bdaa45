/* An ELF core file as a target (core.h behind target.h). */
#ifndef CS_TARGET_CORE_TARGET_H
#define CS_TARGET_CORE_TARGET_H

#include "core.h"
#include "open.h"

/* A view of an open core as a target; the core stays the caller's to
 * close (cs_target_close is not for it). */
struct cs_target cs_target_of_core(struct cs_core *core);

/* For target/open.c: a request naming a core file, opened with its
 * sysroot, library search path and executable. */
bool cs_core_target_wanted(const struct cs_target_request *req);
struct cs_error *cs_core_target_open(const struct cs_target_request *req,
				     struct cs_target **ret);

#endif
