/* ruby-frame, ruby-up, ruby-down: the Ruby frames of one thread, numbered
 * as ruby-bt numbers them, each with the frame of the debugger's own
 * native stack that runs it. The debugger's frames are merged with the
 * Ruby ones as corestack --native merges its own (engine/merge.h), so
 * the index found is the debugger's frame number. */
#ifndef CS_GDBEXT_FRAMES_H
#define CS_GDBEXT_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/native.h"
#include "backtrace.h"

struct gx_ruby_frame {
	char *text;  /* as ruby-bt prints it, without "#N " and newline */
	char *path;  /* the file: its absolute path (Location#absolute_path),
		      * else as Ruby reports it; NULL when none */
	int lineno;  /* 0 when none */
	long native; /* index into the native frames given, or -1 */
};

struct gx_thread_frames {
	struct gx_ruby_frame *frames; /* innermost first: #0 first */
	size_t nframes;
	char *native_error; /* why no frame has a native one, or NULL */
};

/* The Ruby frames of the thread with kernel id tid. native (innermost
 * first: the debugger's frames 0..nnative-1, inlined ones included) may
 * be NULL: then no native frame is looked for. An error when the thread
 * runs no Ruby, as for ruby-bt N. *ret is always safe to free. */
struct cs_error *gx_thread_frames(const struct gx_source *src,
				  const struct gx_backtrace_request *req,
				  int64_t tid,
				  const struct cs_native_frame *native,
				  size_t nnative, struct gx_thread_frames *ret);
void gx_thread_frames_free(struct gx_thread_frames *f);

/* The frame that command ("ruby-frame", "ruby-up" or "ruby-down") with
 * argument line ("", "N") selects of nframes, current being selected: an
 * error of one line, as gdb's own up and down say them, when there is
 * none. */
struct cs_error *gx_frame_select(const char *command, const char *line,
				 size_t current, size_t nframes, size_t *ret);

#endif
