/* The message the C library kept before it aborted. glibc formats the
 * text of a failed assert() or of a heap check ("free(): invalid
 * pointer") into a buffer, points __abort_msg at it and then aborts, so
 * that a core keeps what stderr showed. */
#ifndef CS_CORESTACK_ABORT_MSG_H
#define CS_CORESTACK_ABORT_MSG_H

#include "../process/memory.h"
#include "../process/target.h"

/* That message (malloc'd, without its final newline; control characters
 * and invalid UTF-8 shown as '?'), or NULL: the process kept none, or it
 * cannot be read, and then *why (malloc'd, or NULL) says so when the
 * process did keep one: one line with the reason and what to install.
 * The place of the text in glibc's record comes from libc's DWARF
 * (debug_dirs as for dw_module_open); without it, from the record's own
 * bytes when they are what glibc writes there (abort_msg.c). */
char *cs_abort_message(const struct cs_target *img, const struct cs_memory *mem,
		       const char *const *debug_dirs, char **why);

#endif
