/* A process image whose facts the debugger supplies: the mapped files it
 * lists (gdb's `info proc mappings`, lldb's module list), the auxiliary
 * vector entries it shows, the executable it loaded, and memory read
 * through a callback (gdb's read_memory, lldb's ReadMemory). The slow path
 * of gdbext, used when the target is not a local process or core (a remote
 * gdbserver), or when asked for. */
#ifndef CS_GDBEXT_DEBUGGER_IMAGE_H
#define CS_GDBEXT_DEBUGGER_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../corestack/image.h"
#include "../rubyvm/target.h"

#define GX_AUXV_MAX 64

struct gx_debugger_image {
	struct cs_core_mapping *maps; /* sorted by start; paths owned */
	size_t nmaps;
	uint64_t auxv[GX_AUXV_MAX][2]; /* type, value */
	size_t nauxv;
	char *executable; /* NULL if unknown */
	struct rv_target mem;
	const char *name; /* "gdb inferior 1": subject of messages */
	int fd;           /* the mapped file last read from disk, or -1 */
	char *fd_path;
};

/* Start with {.fd = -1} and these: */
/* Takes a copy of path; maps need not come sorted. 0 on allocation failure. */
int gx_debugger_image_add_mapping(struct gx_debugger_image *d, uint64_t start,
				  uint64_t end, uint64_t offset,
				  const char *path);
/* Sort the mappings: call once all are added. */
void gx_debugger_image_finish(struct gx_debugger_image *d);
void gx_debugger_image_free(struct gx_debugger_image *d);
struct cs_image gx_debugger_image(struct gx_debugger_image *d);
/* Memory through the debugger; where it cannot read bytes of a file
 * mapping (lldb reads of a core that left the file's pages out), from the
 * mapped file on disk, as the core reader does. Build-ids are read through
 * the debugger only: they are what proves the file on disk matches. */
struct rv_target gx_debugger_image_target(struct gx_debugger_image *d);

#endif
