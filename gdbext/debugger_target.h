/* The debugger's inferior as a target, whose facts the debugger supplies: the mapped files it
 * lists (gdb's `info proc mappings`, lldb's module list), the auxiliary
 * vector entries it shows, the executable it loaded, and memory read
 * through a callback (gdb's read_memory, lldb's ReadMemory). The slow path
 * of gdbext, used when the target is not a local process or core (a remote
 * gdbserver), or when asked for. */
#ifndef CS_GDBEXT_DEBUGGER_TARGET_H
#define CS_GDBEXT_DEBUGGER_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../process/target.h"
#include "../process/memory.h"

#define GX_AUXV_MAX 64

struct gx_inferior {
	struct cs_mapping *maps; /* sorted by start; paths owned */
	size_t nmaps;
	uint64_t auxv[GX_AUXV_MAX][2]; /* type, value */
	size_t nauxv;
	char *executable; /* NULL if unknown */
	struct cs_memory mem;
	const char *name; /* "gdb inferior 1": subject of messages */
	/* For the report: what the debugger knows of the process. */
	int pid;                   /* -1 if unknown */
	const char *command;       /* NULL if unknown */
	struct cs_siginfo siginfo; /* the signal of a core it reads */
	int64_t crash_tid;         /* the thread that took it, or -1 */
	bool is_core;              /* it reads a core */
	int fd; /* the mapped file last read from disk, or -1 */
	char *fd_path;
	/* The above as a target's tables, made by gx_inferior_target. */
	struct cs_target_tables tables;
};

/* Start with {.fd = -1, .pid = -1, .crash_tid = -1} and these: */
/* Takes a copy of path; maps need not come sorted. 0 on allocation failure. */
int gx_inferior_add_mapping(struct gx_inferior *d, uint64_t start, uint64_t end,
			    uint64_t offset, const char *path);
/* Sort the mappings: call once all are added. */
void gx_inferior_finish(struct gx_inferior *d);
void gx_inferior_free(struct gx_inferior *d);
/* The inferior as a target, valid while d lives and is not changed: its
 * tables are made from what d holds now. Memory is read through
 * the debugger; where it cannot read bytes of a file mapping (lldb reads
 * of a core that left the file's pages out), from the mapped file on
 * disk, as the core reader does. Build-ids are read through the debugger
 * only: they are what proves the file on disk matches. No threads: the
 * debugger lists them when asked (gx_thread_hints_fn). */
struct cs_target gx_inferior_target(struct gx_inferior *d);

#endif
