/* A process image: what finding the Ruby VM needs from a target, whether a
 * core file or a live process — its file mappings, auxiliary vector,
 * executable path, and the build-ids of loaded modules read from memory. */
#ifndef CS_CORESTACK_IMAGE_H
#define CS_CORESTACK_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"
#include "core.h"

struct cs_image_ops {
	size_t (*mapping_count)(const void *priv);
	const struct cs_core_mapping *(*mapping_at)(const void *priv, size_t i);
	const struct cs_core_mapping *(*mapping_of)(const void *priv,
						    uint64_t addr);
	/* Lowest mapping of a file whose basename starts with a prefix. */
	const struct cs_core_mapping *(*find_mapping)(const void *priv,
						      const char *prefix);
	uint64_t (*auxv)(const void *priv, uint64_t type);
	const char *(*executable)(void *priv);
	struct cs_error *(*module_build_id)(void *priv, uint64_t start,
					    uint8_t *buf, size_t bufsize,
					    size_t *len);
	/* Where a file the target mapped is on this machine (--sysroot,
	 * --lib-search-path for cores); malloc'd, NULL on ENOMEM. */
	char *(*host_path)(const void *priv, const char *path);
	/* NULL, or one line on why the mappings may lack a module (a core
	 * without NT_FILE whose link map could not be read whole). May be
	 * NULL itself: the mappings are complete. */
	const char *(*mapping_gap)(const void *priv);
	/* The region holding addr (false: none), for telling a native stack
	 * from garbage. May be NULL itself: regions unknown (the unwinder
	 * then checks nothing). */
	bool (*region_of)(const void *priv, uint64_t addr,
			  struct cs_region *ret);
};

struct cs_image {
	const struct cs_image_ops *ops;
	void *priv;
	const char *name;  /* subject of messages: "core.1234", "process 1234" */
	const char *comm;  /* process name, "" if unknown */
	const char *what;  /* "core" or "process": "does not match the core" */
};

struct cs_live;

struct cs_image cs_image_of_core(struct cs_core *core);
struct cs_image cs_image_of_live(struct cs_live *live);

#endif
