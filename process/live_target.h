/* A live process as a target (live.h behind target.h). */
#ifndef CS_TARGET_LIVE_TARGET_H
#define CS_TARGET_LIVE_TARGET_H

#include "live.h"
#include "target.h"

/* A view of an attached process as a target; the attachment stays the
 * caller's to close (cs_target_close is not for it). Releasing the target
 * detaches (cs_live_detach). */
struct cs_target cs_target_of_live(struct cs_live *live);

#endif
