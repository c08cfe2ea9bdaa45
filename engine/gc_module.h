/* The GC library a Ruby runs when it was built --with-modular-gc and
 * RUBY_GC_LIBRARY names one: a module of its own, whose DWARF describes
 * the GC's heap. */
#ifndef CS_CORESTACK_GC_MODULE_H
#define CS_CORESTACK_GC_MODULE_H

#include "../rubyvm/model.h"
#include "../process/target.h"

/* When the session's Ruby runs a GC library, find it among the target's
 * mapped files and give the session its layout (its GC_* items), or why
 * there is none; nothing when the Ruby runs its own GC. Fails only when
 * out of memory: a library that cannot be read leaves the heap to the
 * memory scan, and the report says why. */
struct cs_error *cs_gc_module_attach(const struct cs_target *t,
				     struct rv_session *s,
				     const char *const *debug_dirs,
				     const char *debug_dir_advice,
				     const char *cache_dir);

#endif
