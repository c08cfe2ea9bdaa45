/* Opening a target from what the user named: a core file or a process. */
#ifndef CS_TARGET_OPEN_H
#define CS_TARGET_OPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"
#include "target.h"

struct cs_target_request {
	const char *core;            /* a core file, or NULL */
	int pid;                     /* a live process, or 0 */
	bool pause;                  /* stop a live process while it is read */
	const char *sysroot;         /* core: where its files are (NULL: /) */
	const char *lib_search_path; /* core: directories to look in by name */
	const char *executable;      /* core: the executable given, or NULL */
	/* core: files given for the paths it names, taken first (pairs of
	 * path in the target and file here, NULL-terminated: a bundle's,
	 * cs_core_set_file_map), or NULL */
	const char *const *file_map;
	/* live, not paused: a thread a debugger holds stopped at a fatal
	 * signal, with its registers (the debugger's), and that signal:
	 * the crash summary of a process stopped at its fault; NULL: none */
	const struct cs_thread *stopped;
	const struct cs_siginfo *stop_signal;
	/* live, not paused, no thread stopped at a fatal signal: every
	 * thread's registers as a debugger holds them (nthreads of them), so
	 * that a crash in progress with no signal yet (a handler, a bug
	 * report hanging) is seen; NULL: unknown */
	const struct cs_thread *threads;
	size_t nthreads;
};

/* A kind of target the CLI opens (process/open.c lists them): whether a
 * request names it, and how to open it. */
struct cs_target_kind {
	const char *name;
	bool (*wanted)(const struct cs_target_request *req);
	struct cs_error *(*open)(const struct cs_target_request *req,
				 struct cs_target **ret);
};

/* The kind of target the request names, opened; on failure nothing is
 * left open (and nothing stopped). Close with cs_target_close. */
struct cs_error *cs_target_open(const struct cs_target_request *req,
				struct cs_target **ret);

/* Whether a file starting with head (size bytes) may be a core: an ELF
 * core, or a compressed file (what it holds is known only once inflated).
 * Tells by content, never by name. */
bool cs_looks_like_core(const uint8_t *head, size_t size);

#endif
