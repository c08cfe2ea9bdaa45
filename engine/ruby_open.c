/* Opening the Ruby in a process: the module that holds its VM, the layout
 * of that module, a session reading through a target. The CLI, record and
 * both debugger commands open a Ruby this one way, so a change to how a
 * Ruby is found or read is made once. */
#include "ruby_open.h"

#include <string.h>

#include "../rubyvm/layout.h"
#include "gc_module.h"

struct cs_error *cs_ruby_explain(const struct cs_target *t,
				 struct cs_error *err)
{
	struct cs_error *trunc = cs_target_truncation(t);
	if (trunc)
		err = cs_error_wrap(err, "%s", trunc->message);
	cs_error_destroy(trunc);
	return err;
}

struct cs_error *cs_ruby_open(const struct cs_target *t,
			      const struct cs_ruby_options *o,
			      struct cs_ruby *ret)
{
	memset(ret, 0, sizeof(*ret));
	struct cs_error *err =
		cs_vm_module_open(t, o->executable, o->debug_dirs, &ret->vm);
	if (err)
		return cs_ruby_explain(t, err);
	ret->vm.exe->debug_dir_advice = o->debug_dir_advice;
	ret->vm.vm->debug_dir_advice = o->debug_dir_advice;
	struct rv_layout layout;
	int cached = 0;
	struct cs_memory own = cs_target_memory(t);
	if (!(err = rv_layout_for_module(ret->vm.vm, o->cache_dir, &layout,
					 &cached)))
		err = rv_session_create(o->memory ? o->memory : &own, &layout,
					ret->vm.vm->path, ret->vm.load_bias,
					&o->model, &ret->session);
	if (!err) /* a GC from RUBY_GC_LIBRARY: its own module's layout */
		err = cs_gc_module_attach(t, ret->session, o->debug_dirs,
					  o->debug_dir_advice, o->cache_dir);
	if (err) {
		cs_vm_module_close(&ret->vm);
		memset(ret, 0, sizeof(*ret));
		return cs_ruby_explain(t, err);
	}
	if (!o->memory) { /* a core's pages may not be in memory yet */
		struct cs_prefetcher hint = cs_target_prefetcher(t);
		if (hint.prefetch)
			rv_session_set_prefetcher(ret->session, &hint);
	}
	struct cs_writable_regions regions = cs_target_writable_regions(t);
	rv_session_set_regions(ret->session, &regions);
	ret->layout_cached = cached != 0;
	return NULL;
}

struct cs_error *cs_ruby_layout_of(const char *path,
				   const struct cs_ruby_options *o,
				   struct rv_layout *ret, int *cached)
{
	struct dw_module *mod;
	struct cs_error *err = dw_module_open(path, o->debug_dirs, &mod);
	if (err)
		return err;
	mod->debug_dir_advice = o->debug_dir_advice;
	err = rv_layout_for_module(mod, o->cache_dir, ret, cached);
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
