/* The method a frame really runs, named by its definition.
 *
 * A frame's qualified name names the class its method entry is installed
 * in: an alias made in a subclass (class Napper < Thread::Mutex;
 * alias_method :nap, :sleep) runs Mutex#sleep's body as "Napper#sleep".
 * What the body is follows from the entry's definition, which an alias
 * shares with its original: the name it was defined with (original_id),
 * and the module that defined it. A definition that records that module
 * (original_module, what the labels follow: backtrace_rules.c) names it;
 * else the entry's defined_class does, which rb_alias copies from the
 * original's entry: the class itself, or for a module's method the iclass
 * that module is included as (its klass is the module). */
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* The module that defined the body of method entry me, whose owner is
 * owner. */
static struct cs_error *definer(struct rv_session *s, uint64_t me,
				uint64_t owner, uint64_t *ret)
{
	uint64_t defined, type, module;
	struct cs_error *err = rv_bt_label_owner(s, me, owner, ret);
	if (err || *ret != owner || !RV_HAS(s, me_defined_class) ||
	    !rv_try_member(s, me, RVL_me_defined_class, &defined) || !defined ||
	    rv_special_const(s, defined) ||
	    rv_failed(rv_builtin_type(s, defined, &type, NULL)))
		return err;
	if (type == (uint64_t)RV_VAL(s, t_class))
		*ret = defined;
	else if (RV_HAS(s, t_iclass) && type == (uint64_t)RV_VAL(s, t_iclass) &&
		 rv_try_member(s, defined, RVL_basic_klass, &module) && module)
		*ret = module;
	return NULL;
}

struct cs_error *rv_frame_definition_name(struct rv_session *s,
					  const struct rv_frame *f, char **ret)
{
	uint64_t me = 0, owner, def, id, module;
	char *name = NULL, *path = NULL;
	bool dot = false;
	struct cs_error *err;
	*ret = NULL;
	if (!f->cfp || f->opaque)
		return NULL;
	if ((err = rv_frame_method_entry(s, f->cfp, &me)) || !me)
		return err;
	if ((err = rv_read_member(s, me, RVL_me_owner, &owner)) ||
	    (err = rv_read_member(s, me, RVL_me_def, &def)) ||
	    (err = rv_read_member(s, def, RVL_def_original_id, &id)) ||
	    (err = definer(s, me, owner, &module)) ||
	    (err = rv_id_name(s, id, &name)) ||
	    (err = rv_owner_name(s, module, &path, &dot))) {
		free(name);
		return err;
	}
	*ret = rv_join3(path, strlen(path), dot ? "." : "#", name);
	free(path);
	free(name);
	return *ret ? NULL : &cs_error_nomem;
}
