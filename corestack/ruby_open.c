/* Opening the Ruby in a process: the module that holds its VM, the layout
 * of that module, a session reading through a target. The CLI, record and
 * both debugger commands open a Ruby this one way, so a change to how a
 * Ruby is found or read is made once. */
#include "ruby_open.h"

#include <string.h>

#include "../rubyvm/layout.h"

struct cs_error *cs_ruby_open(const struct cs_image *img,
			      const struct rv_target *target,
			      const struct cs_ruby_options *o,
			      struct cs_ruby *ret)
{
	memset(ret, 0, sizeof(*ret));
	struct cs_error *err =
		cs_vm_module_open(img, o->executable, o->debug_dirs, &ret->vm);
	if (err)
		return err;
	struct rv_layout layout;
	int cached = 0;
	if (!(err = rv_layout_for_module(ret->vm.vm, o->cache_dir, &layout,
					 &cached)))
		err = rv_session_create(target, &layout, ret->vm.vm->path,
					ret->vm.load_bias, &o->model,
					&ret->session);
	if (err) {
		cs_vm_module_close(&ret->vm);
		memset(ret, 0, sizeof(*ret));
		return err;
	}
	ret->layout_cached = cached != 0;
	return NULL;
}

struct cs_error *cs_ruby_layout_of(const char *path,
				   const char *const *debug_dirs,
				   const char *cache_dir, struct rv_layout *ret,
				   int *cached)
{
	struct dw_module *mod;
	struct cs_error *err = dw_module_open(path, debug_dirs, &mod);
	if (err)
		return err;
	err = rv_layout_for_module(mod, cache_dir, ret, cached);
	dw_module_close(mod);
	return err;
}

void cs_ruby_close(struct cs_ruby *r)
{
	rv_session_destroy(r->session);
	r->session = NULL;
	if (r->vm.vm)
		cs_vm_module_close(&r->vm);
}
