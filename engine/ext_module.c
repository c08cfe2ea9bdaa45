/* Finding the modules of C extensions CRuby ships (monitor.so) among the
 * files a target maps, and reading their items from their own DWARF.
 *
 * An extension is loaded at run time from the Ruby's architecture
 * directory (lib/ruby/X.Y.0/x86_64-linux/monitor.so) and is a module of
 * its own: its structs and data types are in its DWARF only, and its
 * variables at its own load bias. It is told by its file's name, EXT.so
 * or a tail of a copy's (cs_module_names: Ruby::Box loads an extension
 * from /tmp/_ruby_box_..._monitor.so, deleted at once); the model then
 * checks each object against the extension's data type
 * (rv_typed_data_of), so a file of that name that is another library
 * describes no object it meets. */
#include "ext_module.h"

#include <stdlib.h>
#include <string.h>

#include "../dwarf/module.h"
#include "../rubyvm/layout.h"
#include "vm_module.h"

#define MAX_NAMES 16

/* Whether the target's file path is named ext.so, or a tail of its name
 * is. */
static bool named(const char *path, const char *ext)
{
	char *names[MAX_NAMES];
	size_t n = cs_module_names(path, names, MAX_NAMES), len = strlen(ext);
	bool is = false;
	for (size_t i = 0; i < n; i++) {
		is = is || (!strncmp(names[i], ext, len) &&
			    !strcmp(names[i] + len, ".so"));
		free(names[i]);
	}
	return is;
}

/* The layout of ext from the module mapped at m, when it can be had and
 * holds the extension's items. */
static struct cs_error *
try_module(const struct cs_target *t, struct cs_module_search *search,
	   struct rv_session *s, const char *ext, const struct cs_mapping *m,
	   const char *const *debug_dirs, const char *debug_dir_advice,
	   const char *cache_dir)
{
	const struct cs_module_found *found =
		cs_target_module_found(t, search, m);
	struct dw_module *mod;
	uint64_t bias;
	struct cs_error *err =
		cs_image_module_open(t, m->path, found ? found->file : NULL,
				     debug_dirs, debug_dir_advice, &mod, &bias);
	if (!err) {
		struct rv_layout layout;
		int cached;
		err = rv_layout_for_ext_module(mod, ext, cache_dir, &layout,
					       &cached);
		dw_module_close(mod);
		bool any = false;
		for (int i = 0; !err && !any && i < RVL_COUNT; i++)
			any = layout.items[i].source != RV_MISSING;
		if (any)
			return rv_session_set_ext_module(s, ext, &layout, bias);
	}
	if (err && err->code == CS_ERR_NOMEM)
		return err;
	/* loaded, not described: what its items show is not known */
	struct cs_error *noted = rv_session_note_ext_unread(
		s, ext,
		err ? err->message : "its debug info has none of its items");
	cs_error_destroy(err);
	return noted;
}

/* Whether item i is the first of its extension's in layout.def. */
static bool first_of_ext(int i)
{
	const char *ext = rv_layout_item_ext(i);
	for (int j = 0; ext && j < i; j++)
		if (rv_layout_item_of_ext(j, ext))
			return false;
	return ext != NULL;
}

struct cs_error *cs_ext_modules_attach(const struct cs_target *t,
				       struct cs_module_search *search,
				       struct rv_session *s,
				       const char *const *debug_dirs,
				       const char *debug_dir_advice,
				       const char *cache_dir)
{
	for (int i = 0; i < RVL_COUNT; i++) {
		const char *ext = rv_layout_item_ext(i);
		if (!first_of_ext(i) || !rv_session_lacks_ext(s, ext))
			continue; /* libruby defines it */
		for (size_t k = 0; k < cs_target_mapping_count(t) &&
				   rv_session_lacks_ext(s, ext);
		     k++) {
			const struct cs_mapping *m = cs_target_mapping_at(t, k);
			struct cs_error *err =
				m->file_offset == 0 && named(m->path, ext)
					? try_module(t, search, s, ext, m,
						     debug_dirs,
						     debug_dir_advice,
						     cache_dir)
					: NULL;
			if (err)
				return err;
		}
	}
	return NULL;
}
