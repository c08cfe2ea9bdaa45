/* The C extensions CRuby ships whose structs the model reads (EXT_* in
 * rubyvm/layout.def: the monitor extension's struct rb_monitor), where
 * libruby does not define them: each is the module the process loaded as
 * EXT.so, described by its own DWARF. */
#ifndef CS_CORESTACK_EXT_MODULE_H
#define CS_CORESTACK_EXT_MODULE_H

#include "../process/module_search.h"
#include "../process/target.h"
#include "../rubyvm/model.h"

/* For each extension whose items libruby's layout lacks, find its module
 * among the target's mapped files (EXT.so, or a copy whose name ends in
 * _EXT.so as Ruby::Box makes; its file, or the one search finds by its
 * build-id when that cannot be used; loaded where its segments say, with
 * the build-id the target holds) and give the session its layout and load
 * bias. An extension the process has not loaded, or whose file or debug
 * info cannot be read, leaves its items missing: what they describe is
 * not shown. Fails only when out of memory. */
struct cs_error *cs_ext_modules_attach(const struct cs_target *t,
				       struct cs_module_search *search,
				       struct rv_session *s,
				       const char *const *debug_dirs,
				       const char *debug_dir_advice,
				       const char *cache_dir);

#endif
