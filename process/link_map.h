/* The file mappings of a core that has no NT_FILE note.
 *
 * The kernel leaves NT_FILE out when it would be too large (a process with
 * ~100,000 mappings). The ELF modules, and the mappings NT_FILE would have
 * listed for them, are rebuilt from what the core still holds: the
 * auxiliary vector (AT_PHDR, AT_EXECFN, AT_SYSINFO_EHDR), the executable's
 * dynamic section (DT_DEBUG), the dynamic linker's r_debug and link_map
 * list (each library's load bias and name) and the ELF and program headers
 * the kernel dumps in the first page of each module. Every file found for
 * them is then checked by build-id like one NT_FILE names. */
#ifndef CS_CORESTACK_LINK_MAP_H
#define CS_CORESTACK_LINK_MAP_H

#include <stddef.h>

#include "../util/error.h"
#include "core.h"

#include "../util/u64map.h"

#define CS_LINK_MAP_ID_MAX 64

struct cs_link_map_module {
	char *name; /* the loader's name for it: the maps' path */
	uint8_t build_id[CS_LINK_MAP_ID_MAX];
	size_t build_id_len; /* 0 when the core lacks it */
};

struct cs_link_map {
	struct cs_mapping *maps; /* sorted by start, disjoint */
	size_t nmaps;
	struct cs_link_map_module *modules;
	size_t nmodules;
	struct u64map by_name; /* name pointer -> module index + 1 */
	char *incomplete; /* NULL, or why a module may be missing (one line) */
};

/* Reads only the core's own bytes (there are no mappings yet). Only
 * running out of memory is an error: what cannot be read is said in
 * lm->incomplete, and the modules found so far are kept. */
struct cs_error *cs_link_map_read(struct cs_core *core, struct cs_link_map *lm);
/* Safe on a zeroed lm. */
void cs_link_map_free(struct cs_link_map *lm);

/* The module whose maps' path is path (the same pointer), or NULL. */
struct cs_link_map_module *cs_link_map_module_of(const struct cs_link_map *lm,
						 const char *path);
#endif
