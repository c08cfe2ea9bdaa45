/* ruby-list: the lines of a Ruby source file around a line, read from the
 * file on disk where the debugger finds files (under its sysroot), with
 * one line first when the file may not be what ran: changed after the
 * core was written or the process started. */
#ifndef CS_GDBEXT_SOURCE_LIST_H
#define CS_GDBEXT_SOURCE_LIST_H

#include "../util/error.h"

struct gx_list_request {
	const char *path;    /* as Ruby reports it */
	int line;            /* marked; 0: none */
	int first, last;     /* the lines shown, clamped to the file */
	const char *sysroot; /* NULL or "": none */
	/* A relative path is taken from here: the live process's working
	 * directory; NULL: the debugger's (said in the output). */
	const char *cwd;
	/* What the file is compared with: a core's mtime, or the start of
	 * live process pid; neither (NULL, <= 0): no comparison. */
	const char *core_path;
	int pid;
};

/* The listing into *out (malloc'd). An error of one line when there is no
 * file to read: Ruby's own <internal:...> code, a missing file, a line
 * past its end. *last_shown: the last line listed. */
struct cs_error *gx_list_source(const struct gx_list_request *req, char **out,
				int *last_shown);

#endif
