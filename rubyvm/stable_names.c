/* Stable names: a method's owner named with no address in it, so that
 * the same method has the same name in every process of a program and
 * after GC.compact (the rules of Ruby's Feature #19119, docs/names.md):
 *
 *   Foo::Bar                       a class or module with a permanent path
 *   #<singleton of X>              the singleton class of X
 *   #<instance of Foo>             an object that is not a class or module
 *   #<refinement Outer of Foo>     a refinement of Foo made in Outer
 *   #<anonymous subclass of Foo>   a class with no path (Foo: its nearest
 *                                  named superclass)
 *   #<anonymous module>            a module with no path
 *
 * A method of the singleton class of a class or module X is "X.m" (what
 * Ruby prints); any other method is "Owner#m". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* Owners nested deeper than this (a singleton of a singleton of ...) are
 * taken for a cycle in damaged memory. */
#define MAX_NESTING 16
/* Superclasses climbed at most looking for a named one. */
#define MAX_ANCESTORS 4096

static struct cs_error *module_name(struct rv_session *s, uint64_t klass,
				    uint64_t me, int depth, char **ret);

static struct cs_error *wrap(const char *fmt, char *inner, char **ret)
{
	int n = asprintf(ret, fmt, inner);
	free(inner);
	if (n < 0) {
		*ret = NULL;
		return &cs_error_nomem;
	}
	return NULL;
}

static bool is_type(uint64_t type, struct rv_session *s, enum rv_item_id id)
{
	return rv_bt_is_type(s, (int64_t)type, id);
}

static bool class_or_module(struct rv_session *s, uint64_t v)
{
	uint64_t type;
	return v && !rv_special_const(s, v) &&
	       !rv_failed(rv_builtin_type(s, v, &type, NULL)) &&
	       (is_type(type, s, RVL_t_class) ||
		is_type(type, s, RVL_t_module));
}

static bool flagged(struct rv_session *s, uint64_t flags, enum rv_item_id id)
{
	return s->layout.items[id].source != RV_MISSING &&
	       (flags & (uint64_t)s->layout.items[id].value) != 0;
}

/* The first superclass of klass that is not an iclass (an included
 * module's proxy) or, skipping them, a singleton class; 0 when there is
 * none. */
static struct cs_error *real_super(struct rv_session *s, uint64_t klass,
				   bool skip_singletons, uint64_t *ret)
{
	uint64_t super;
	struct cs_error *err = rv_superclass(s, klass, &super);
	return err ? err : rv_real_class(s, super, skip_singletons, ret);
}

/* The module whose body holds the refine block a method was defined in:
 * the cref the method was defined under is the refine block's, and the
 * one after it the module body's. 0 when the method does not tell. */
static uint64_t refinement_outer(struct rv_session *s, uint64_t me)
{
	uint64_t def, type, cref, next, klass;
	enum rv_item_id klass_item = RV_HAS(s, cref_klass_or_self)
					     ? RVL_cref_klass_or_self
					     : RVL_cref_klass;
	if (!me || !RV_HAS(s, method_type_iseq) ||
	    !rv_try_member(s, me, RVL_me_def, &def) ||
	    !rv_try_member(s, def, RVL_def_type, &type) ||
	    type != (uint64_t)RV_VAL(s, method_type_iseq) ||
	    !rv_try_member(s, def, RVL_def_iseq_cref, &cref) || !cref ||
	    !rv_try_member(s, cref, RVL_cref_next, &next) || !next ||
	    !rv_try_member(s, next, klass_item, &klass) ||
	    !class_or_module(s, klass))
		return 0;
	return klass;
}

static struct cs_error *refinement_name(struct rv_session *s, uint64_t klass,
					uint64_t me, int depth, char **ret)
{
	uint64_t refined = 0, outer = refinement_outer(s, me);
	char *of = NULL, *in = NULL;
	struct cs_error *err = real_super(s, klass, false, &refined);
	if (!err && refined)
		err = module_name(s, refined, 0, depth + 1, &of);
	if (!err && outer)
		err = module_name(s, outer, 0, depth + 1, &in);
	if (!err && asprintf(ret, "#<refinement %s%sof %s>", in ? in : "",
			     in ? " " : "", of ? of : "?") < 0) {
		*ret = NULL;
		err = &cs_error_nomem;
	}
	free(of);
	free(in);
	return err;
}

/* "#<instance of Foo>": Foo the object's class, past its singleton. */
static struct cs_error *instance_name(struct rv_session *s, uint64_t obj,
				      int depth, char **ret)
{
	uint64_t klass;
	struct cs_error *err;
	if ((err = rv_read_member(s, obj, RVL_basic_klass, &klass)) ||
	    (err = rv_real_class(s, klass, true, &klass)))
		return err;
	if (!klass)
		return cs_error_create(CS_ERR_CORRUPT,
				       "object 0x%llx has no class",
				       (unsigned long long)obj);
	char *inner = NULL;
	if ((err = module_name(s, klass, 0, depth + 1, &inner)))
		return err;
	return wrap("#<instance of %s>", inner, ret);
}

static struct cs_error *singleton_name(struct rv_session *s, uint64_t klass,
				       int depth, char **ret)
{
	uint64_t attached = 0;
	char *inner = NULL;
	struct cs_error *err = rv_attached_object(s, klass, &attached);
	if (err)
		return err;
	/* Ruby attaches a singleton class right after it allocates it: one
	 * caught in between is attached to nothing yet (0, or nil). */
	if (!attached || rv_is_nil(s, attached)) {
		*ret = strdup("#<singleton class not yet attached>");
		return *ret ? NULL : &cs_error_nomem;
	}
	if (rv_special_const(s, attached))
		return cs_error_create(CS_ERR_CORRUPT,
				       "singleton class 0x%llx is attached "
				       "to no object",
				       (unsigned long long)klass);
	err = class_or_module(s, attached)
		      ? module_name(s, attached, 0, depth + 1, &inner)
		      : instance_name(s, attached, depth, &inner);
	if (err)
		return err;
	return wrap("#<singleton of %s>", inner, ret);
}

static struct cs_error *anonymous_name(struct rv_session *s, uint64_t klass,
				       bool module, char **ret)
{
	if (module) {
		*ret = strdup("#<anonymous module>");
		return *ret ? NULL : &cs_error_nomem;
	}
	/* the nearest superclass with a name */
	struct cs_error *err;
	for (int i = 0; i < MAX_ANCESTORS; i++) {
		char *path = NULL;
		if ((err = real_super(s, klass, true, &klass)))
			return err;
		if (!klass)
			break;
		if ((err = rv_stable_path(s, klass, &path)))
			return err;
		if (path)
			return wrap("#<anonymous subclass of %s>", path, ret);
	}
	*ret = strdup("#<anonymous class>");
	return *ret ? NULL : &cs_error_nomem;
}

static struct cs_error *module_name(struct rv_session *s, uint64_t klass,
				    uint64_t me, int depth, char **ret)
{
	uint64_t type, flags;
	*ret = NULL;
	if (depth > MAX_NESTING)
		return cs_error_create(CS_ERR_CORRUPT,
				       "owner nested more than %d deep",
				       MAX_NESTING);
	struct cs_error *err = rv_builtin_type(s, klass, &type, &flags);
	if (err)
		return err;
	bool module = is_type(type, s, RVL_t_module);
	if (!module && !is_type(type, s, RVL_t_class))
		return cs_error_create(CS_ERR_CORRUPT,
				       "owner 0x%llx is not a class or module",
				       (unsigned long long)klass);
	if (rv_singleton_class_p(s, type, flags))
		return singleton_name(s, klass, depth, ret);
	if (module && flagged(s, flags, RVL_rmodule_is_refinement))
		return refinement_name(s, klass, me, depth, ret);
	if ((err = rv_stable_path(s, klass, ret)) || *ret)
		return err;
	return anonymous_name(s, klass, module, ret);
}

struct cs_error *rv_stable_owner_name(struct rv_session *s, uint64_t owner,
				      uint64_t me, char **ret, bool *dot)
{
	uint64_t type, flags, attached = 0;
	struct cs_error *err = rv_builtin_type(s, owner, &type, &flags);
	*ret = NULL;
	*dot = false;
	if (err)
		return err;
	if (rv_singleton_class_p(s, type, flags) &&
	    !rv_failed(rv_attached_object(s, owner, &attached)) &&
	    class_or_module(s, attached)) {
		*dot = true;
		return module_name(s, attached, 0, 1, ret);
	}
	return module_name(s, owner, me, 0, ret);
}

struct cs_error *rv_stable_class_name(struct rv_session *s, uint64_t klass,
				      char **ret)
{
	return module_name(s, klass, 0, 0, ret);
}
