/* What fuzz_core and fuzz_native share: each input written to a memfd
 * (one per process, rewritten per input) that cs_core_open reads through
 * /proc/self/fd/N, and a private sysroot (a temp dir) under which NT_FILE
 * paths are resolved, so a mutated core never reads the host's files.
 * Header-only: each harness is one translation unit. */
#ifndef CS_TESTS_FUZZ_CORE_INPUT_H
#define CS_TESTS_FUZZ_CORE_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process/core.h"

struct core_input {
	int memfd;     /* -1 until core_input_init */
	char path[64]; /* /proc/self/fd/N */
	char sysroot[64];
};

static void core_input_init(struct core_input *in, const char *name)
{
	in->memfd = memfd_create(name, MFD_CLOEXEC);
	if (in->memfd < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(in->path, sizeof(in->path), "/proc/self/fd/%d", in->memfd);
	snprintf(in->sysroot, sizeof(in->sysroot), "/tmp/%s_root.XXXXXX", name);
	if (!mkdtemp(in->sysroot)) {
		perror("mkdtemp");
		abort();
	}
}

static void core_input_write(struct core_input *in, const uint8_t *data,
			     size_t size)
{
	if (ftruncate(in->memfd, 0) != 0 ||
	    ftruncate(in->memfd, (off_t)size) != 0 ||
	    (size && pwrite(in->memfd, data, size, 0) != (ssize_t)size))
		abort();
}

/* The input opened as a core, NT_FILE under the sysroot; NULL when the
 * reader refuses it (its error must carry a message: the CLI prints it). */
static struct cs_core *core_input_open(struct core_input *in,
				       const uint8_t *data, size_t size)
{
	core_input_write(in, data, size);
	struct cs_core *core = NULL;
	struct cs_error *err = cs_core_open(in->path, &core);
	if (err) {
		if (!err->message)
			abort();
		cs_error_destroy(err);
		return NULL;
	}
	cs_error_destroy(cs_core_set_sysroot(core, in->sysroot));
	return core;
}

#endif
