/* libFuzzer harness for the DWARF layout resolver (dwarf/, rubyvm/layout.c):
 * the input is an ELF file with debug info. It is opened as a module (from
 * a memfd, so nothing touches the disk), every item of layout.def is
 * resolved from its DWARF with the layout cache off, and the result goes
 * through rv_session_create's range checks over an empty target.
 *
 * Seeds (tests/fuzz/corpus/dwarf) are small shared objects whose DWARF
 * describes the real CRuby structs: tests/fuzz/make-dwarf-seeds.sh compiles
 * CRuby's own headers from a fixture source tree. Mutations then land in
 * .debug_info, .debug_abbrev and .debug_str as the resolver reads them.
 * Build: see tests/fuzz/Makefile.inc (make fuzz-build). */
#include "dwarf/module.h"
#include "rubyvm/layout.h"
#include "rubyvm/model.h"
#include "process/memory.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static struct cs_error *no_memory(void *priv, uint64_t addr, void *buf,
				  size_t len)
{
	(void)priv, (void)buf;
	return cs_error_create(CS_ERR_FAULT, "no memory at 0x%llx (+%zu)",
			       (unsigned long long)addr, len);
}

/* Every error must carry a message: the front ends print it. */
static void must_have_message(struct cs_error *err)
{
	if (err && !err->message)
		abort();
	cs_error_destroy(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-dwarf", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* No debug directories: only the input's own DWARF is read. */
	const char *const no_dirs[] = {NULL};
	struct dw_module *mod = NULL;
	struct cs_error *err = dw_module_open(path, no_dirs, &mod);
	if (!err) {
		struct rv_layout layout;
		int cached = 0;
		err = rv_layout_for_module(mod, "", &layout, &cached);
		if (!err) {
			struct cs_memory empty = {no_memory, NULL};
			struct rv_session *s = NULL;
			err = rv_session_create(&empty, &layout, path, 0, NULL,
						&s);
			if (!err)
				rv_session_destroy(s);
		}
		dw_module_close(mod);
	}
	must_have_message(err);
	close(fd);
	return 0;
}
