/* Opening the Ruby in a process: one step for every front end. */
#ifndef CS_CORESTACK_RUBY_OPEN_H
#define CS_CORESTACK_RUBY_OPEN_H

#include <stdbool.h>

#include "../rubyvm/layout.h"
#include "../rubyvm/model.h"
#include "../process/memory.h"
#include "../process/target.h"
#include "vm_module.h"

/* A Ruby opened on a target: the module holding its VM (with its debug
 * info and warnings), and a session reading the model through the
 * target. */
struct cs_ruby {
	struct cs_vm_module vm;
	struct rv_session *session;
	bool layout_cached; /* the layout came from the cache, not DWARF */
};

struct cs_ruby_options {
	const char *executable;        /* NULL: the one the image names */
	const char *const *debug_dirs; /* NULL: the default directories */
	/* How the user adds a debug directory here ("pass --debug-dir"),
	 * for the message when debug info is missing; NULL: generic. */
	const char *debug_dir_advice;
	const char *cache_dir;   /* layouts: NULL default, "" none */
	struct rv_options model; /* the session's (rv_session_create) */
	/* NULL: read the target's memory; else through this (a page cache
	 * in front of it). */
	const struct cs_memory *memory;
};

/* A truncated core explains most failures of reading it: err with that
 * said first. Consumes err. */
struct cs_error *cs_ruby_explain(const struct cs_target *t,
				 struct cs_error *err);

/* Find the module holding the VM in t, its layout (cache, else DWARF)
 * and start a session reading t. On failure nothing is left open, and
 * the error says first when the target is truncated. */
struct cs_error *cs_ruby_open(const struct cs_target *t,
			      const struct cs_ruby_options *o,
			      struct cs_ruby *ret);
void cs_ruby_close(struct cs_ruby *r);

/* The layout of the module file at path (corestack --layout): from the
 * cache when *cached, else resolved from its DWARF. */
struct cs_error *cs_ruby_layout_of(const char *path,
				   const struct cs_ruby_options *o,
				   struct rv_layout *ret, int *cached);

#endif
