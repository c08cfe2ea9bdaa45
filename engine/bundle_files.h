/* The files a bundle of a core holds (process/bundle.h): the core, and
 * for every ELF module the core maps, its file (the executable, the
 * libraries) and the separate debug file its DWARF comes from, found as
 * an analysis finds them (the target's host paths, module_search.c by
 * build-id, in the Ruby's own directories too when its Ruby can be read,
 * dwarf/module.c's debug file search). */
#ifndef CS_ENGINE_BUNDLE_FILES_H
#define CS_ENGINE_BUNDLE_FILES_H

#include <stddef.h>

#include "../process/bundle.h"
#include "../process/open.h"

struct cs_bundle_files {
	struct cs_bundle_entry *entries; /* the core first */
	size_t n;
	/* one line per module whose file was not found, and why */
	char **missing;
	size_t nmissing;
};

/* The files of the core req names, looked for as req says (sysroot, lib
 * search path, executable) and debug files under debug_dirs
 * (NULL-terminated). An error only when the core cannot be read. */
struct cs_error *cs_bundle_files_find(const struct cs_target_request *req,
				      const char *const *debug_dirs,
				      struct cs_bundle_files *ret);
void cs_bundle_files_free(struct cs_bundle_files *f);

#endif
