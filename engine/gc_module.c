/* Finding the GC library a Ruby loaded from RUBY_GC_LIBRARY.
 *
 * libruby calls its GC through a table of functions (rb_gc_functions);
 * with a library loaded, each points into the library. The mapped file
 * holding the one that allocates the object space is therefore the GC's
 * module, whatever it is called, and that function's compile unit is
 * where its DWARF describes the heap (gc/default/default.c for the
 * default GC built as a library). Its file is checked as libruby's is:
 * loaded where its segments say, with the build-id the target holds. */
#include "gc_module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dwarf/module.h"
#include "../rubyvm/layout.h"
#include "vm_module.h"

/* Tell the session there is no layout for the library, and why. */
static struct cs_error *without(struct rv_session *s, const char *path,
				const char *fmt, const char *detail)
{
	char *why = NULL;
	if (asprintf(&why,
		     "this Ruby runs the GC of %s (RUBY_GC_LIBRARY), %s%s",
		     path ? path : "a library", fmt, detail ? detail : "") < 0)
		return &cs_error_nomem;
	struct cs_error *err = rv_session_set_gc_module(s, NULL, path, why);
	free(why);
	return err;
}

struct cs_error *cs_gc_module_attach(const struct cs_target *t,
				     struct rv_session *s,
				     const char *const *debug_dirs,
				     const char *debug_dir_advice,
				     const char *cache_dir)
{
	uint64_t entry;
	if (!rv_session_gc_library(s, &entry))
		return NULL; /* the GC built into libruby */
	const struct cs_mapping *m = entry ? cs_target_mapping_of(t, entry)
					   : NULL;
	if (!m)
		return without(s, NULL,
			       "whose code is in no file the target maps",
			       NULL);
	struct dw_module *mod = NULL;
	uint64_t bias;
	struct cs_error *err = cs_image_module_open(
		t, m->path, NULL, debug_dirs, debug_dir_advice, &mod, &bias);
	if (err && err->code == CS_ERR_NOMEM)
		return err;
	if (err) {
		struct cs_error *out =
			err->code == CS_ERR_MISMATCH
				? without(s, m->path,
					  "whose file is not the one the "
					  "process loaded",
					  NULL)
				: without(s, m->path, "which cannot be read: ",
					  err->message);
		cs_error_destroy(err);
		return out;
	}
	uint64_t pc = entry - bias;
	struct rv_layout layout;
	int cached;
	err = rv_layout_for_gc_module(mod, pc, cache_dir, &layout, &cached);
	dw_module_close(mod);
	if (err) {
		struct cs_error *out = without(
			s, m->path,
			"whose debug info cannot be read: ", err->message);
		cs_error_destroy(err);
		return out;
	}
	return rv_session_set_gc_module(s, &layout, m->path, NULL);
}
