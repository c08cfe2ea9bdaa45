/* Names: ID -> String through the global symbol table, and class paths.
 *
 * Where a class keeps its path moved over the versions: an instance
 * variable of the class up to 3.2 (in the classext's iv_tbl, an st_table,
 * up to 3.1; at the index the class's shape gives in the classext's
 * iv_ptr in 3.2: ivars.c), a field of the classext from 3.3. Which one is
 * used follows the DWARF members present. Results are cached per session:
 * a stack names the same classes and methods again and again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/u64map.h"
#include "session.h"

struct rv_id_cache {
	struct u64map ids;     /* ID -> char* */
	struct u64map classes; /* class VALUE -> char* (NULL: anonymous) */
};

struct cs_error *rv_names_init(struct rv_session *s)
{
	s->ids = calloc(1, sizeof(*s->ids));
	if (!s->ids)
		return &cs_error_nomem;
	/* Up to 3.2 the IDs of "__classpath__" live in static variables. */
	s->classpath_id = s->tmp_classpath_id = 0;
	rv_try_var(s, RVL_var_classpath, 8, &s->classpath_id);
	rv_try_var(s, RVL_var_tmp_classpath, 8, &s->tmp_classpath_id);
	return NULL;
}

void rv_names_destroy(struct rv_session *s)
{
	if (!s->ids)
		return;
	u64map_free(&s->ids->ids, free);
	u64map_free(&s->ids->classes, free);
	free(s->ids);
	s->ids = NULL;
}

/* The String of entry i of one ID_ENTRY_UNIT block of the symbol table:
 * an Array of ID_ENTRY_SIZE VALUEs per ID (up to 4.0) ... */
static struct cs_error *entry_in_array(struct rv_session *s, uint64_t ary,
				       uint64_t i, uint64_t *str)
{
	uint64_t entry_size = (uint64_t)RV_VAL(s, id_entry_size);
	if (!RV_HAS(s, id_entry_size) || entry_size == 0)
		return rv_missing(RVL_id_entry_size);
	return rv_array_entry(
		s, ary, i * entry_size + (uint64_t)RV_VAL(s, id_entry_str),
		str);
}

/* ... or a T_DATA holding an rb_darray of struct sym_id_entry. */
static struct cs_error *entry_in_darray(struct rv_session *s, uint64_t list,
					uint64_t i, uint64_t *str)
{
	uint64_t darray = 0, len = 0;
	struct cs_error *err;
	if (!RV_HAS(s, darray_meta_size) || !RV_HAS(s, darray_meta_len))
		return rv_missing(RVL_darray_meta_size);
	if (!RV_HAS(s, sym_id_entry_size))
		return rv_missing(RVL_sym_id_entry_size);
	if ((err = rv_typed_data_ptr(s, list, &darray)) ||
	    (err = rv_read_member(s, darray, RVL_darray_meta_len, &len)))
		return err;
	if (i >= len)
		return cs_error_create(CS_ERR_CORRUPT,
				       "symbol entry %llu past the %llu of "
				       "its block",
				       (unsigned long long)i,
				       (unsigned long long)len);
	uint64_t entry = darray + (uint64_t)RV_VAL(s, darray_meta_size) +
			 i * (uint64_t)RV_VAL(s, sym_id_entry_size);
	return rv_read_member(s, entry, RVL_sym_id_entry_str, str);
}

/* Block i of the symbol table ids: an element of the Array ids (up to
 * 4.0), or of the directory ids is the T_DATA of (4.1-dev). */
static struct cs_error *id_block(struct rv_session *s, uint64_t ids, uint64_t i,
				 uint64_t *ret)
{
	if (!RV_HAS(s, id_entry_dir_entries))
		return rv_array_entry(s, ids, i, ret);
	uint64_t dir = 0, capa = 0, entries = 0;
	struct cs_error *err;
	if ((err = rv_typed_data_ptr(s, ids, &dir)) ||
	    (err = rv_read_member(s, dir, RVL_id_entry_dir_capa, &capa)) ||
	    (err = rv_read_member(s, dir, RVL_id_entry_dir_entries, &entries)))
		return err;
	if (i >= capa)
		return cs_error_create(CS_ERR_CORRUPT,
				       "symbol block %llu past the %llu of "
				       "the directory",
				       (unsigned long long)i,
				       (unsigned long long)capa);
	if ((err = rv_read_u64(s, entries + i * 8, ret)))
		return err;
	if (!*ret)
		return cs_error_create(CS_ERR_CORRUPT,
				       "symbol block %llu not made",
				       (unsigned long long)i);
	return NULL;
}

static struct cs_error *id_name_uncached(struct rv_session *s, uint64_t id,
					 char **ret)
{
	if (!RV_HAS(s, global_symbols) || !RV_HAS(s, symbols_ids))
		return rv_missing(RVL_global_symbols);
	uint64_t serial = id;
	if (RV_HAS(s, tlast_op_id) && id > (uint64_t)RV_VAL(s, tlast_op_id))
		serial = rv_shr(id, RV_VAL(s, id_scope_shift));
	uint64_t symbols = s->load_bias + (uint64_t)RV_VAL(s, global_symbols);
	uint64_t last = 0, ids = 0, ary = 0, str = 0;
	struct cs_error *err;
	if (RV_HAS(s, symbols_last_id)) {
		if ((err = rv_read_member(s, symbols, RVL_symbols_last_id,
					  &last)))
			return err;
		if (serial == 0 || serial > last)
			return cs_error_create(CS_ERR_CORRUPT,
					       "ID %llu out of range",
					       (unsigned long long)id);
	} else if (RV_HAS(s, symbols_next_id)) {
		if ((err = rv_read_member(s, symbols, RVL_symbols_next_id,
					  &last)))
			return err;
		if (serial >= last)
			return cs_error_create(CS_ERR_CORRUPT,
					       "ID %llu out of range",
					       (unsigned long long)id);
	}
	uint64_t unit = (uint64_t)RV_VAL(s, id_entry_unit);
	if (!RV_HAS(s, id_entry_unit) || unit == 0)
		return rv_missing(RVL_id_entry_unit);
	if ((err = rv_read_member(s, symbols, RVL_symbols_ids, &ids)) ||
	    (err = id_block(s, ids, serial / unit, &ary)))
		return err;
	if (RV_HAS(s, sym_id_entry_str))
		err = entry_in_darray(s, ary, serial % unit, &str);
	else
		err = entry_in_array(s, ary, serial % unit, &str);
	return err ? err : rv_string(s, str, ret);
}

struct cs_error *rv_id_name(struct rv_session *s, uint64_t id, char **ret)
{
	int found;
	char *name = u64map_get(&s->ids->ids, id, &found);
	if (!found) {
		struct cs_error *err = id_name_uncached(s, id, &name);
		if (err)
			return cs_error_wrap(err, "name of ID %llu",
					     (unsigned long long)id);
		if (!u64map_put(&s->ids->ids, id, name)) {
			free(name);
			return &cs_error_nomem;
		}
	}
	*ret = strdup(name);
	return *ret ? NULL : &cs_error_nomem;
}

/* Value of the ivar `key` of a class (versions up to 3.2), 0 when it
 * has none. */
static struct cs_error *class_ivar(struct rv_session *s, uint64_t klass,
				   uint64_t key, uint64_t *ret)
{
	bool found;
	struct cs_error *err;
	*ret = 0;
	if (!key)
		return NULL;
	if ((err = rv_class_ivar(s, klass, key, ret, &found)))
		return cs_error_wrap(err, "ivars of 0x%llx",
				     (unsigned long long)klass);
	return NULL;
}

/* Up to 3.2 a class's path is an ivar, __classpath__ when permanent,
 * __tmp_classpath__ while an enclosing module has no name. */
static bool path_in_ivars(struct rv_session *s)
{
	return !RV_HAS(s, classext_classpath);
}

struct cs_error *rv_classext(struct rv_session *s, uint64_t klass,
			     uint64_t *ret)
{
	if (RV_HAS(s, rclass_classext)) {
		*ret = klass + (uint64_t)RV_VAL(s, rclass_classext);
		return NULL;
	}
	if (RV_HAS(s, rclass_ptr))
		return rv_read_member(s, klass, RVL_rclass_ptr, ret);
	/* RCLASS_EXT_EMBEDDED (3.2, and 3.1 with USE_RVARGC): right after
	 * the RClass */
	if (!RV_HAS(s, rclass_size))
		return rv_missing(RVL_rclass_ptr);
	*ret = klass + (uint64_t)RV_VAL(s, rclass_size);
	return NULL;
}

uint64_t rv_main_box_classext(struct rv_session *s, uint64_t klass)
{
	uint64_t vm = 0, main = 0, root = 0, box = 0, tbl = 0, ext = 0;
	uint64_t flags = 0;
	bool found = false;
	if (!RV_HAS(s, box_object) || !RV_HAS(s, rclass_box_classext_tbl) ||
	    !RV_HAS(s, rclass_boxable) ||
	    !rv_try_member(s, klass, RVL_basic_flags, &flags) ||
	    !(flags & (uint64_t)RV_VAL(s, rclass_boxable)) ||
	    !rv_try_var(s, RVL_vm_ptr, 8, &vm) || !vm ||
	    !rv_try_member(s, vm, RVL_vm_main_box, &main) || !main ||
	    (rv_try_member(s, vm, RVL_vm_root_box, &root) && root == main) ||
	    !rv_try_member(s, main, RVL_box_object, &box) || !box ||
	    !rv_try_member(s, klass, RVL_rclass_box_classext_tbl, &tbl) ||
	    !tbl || rv_failed(rv_st_lookup(s, tbl, box, &ext, &found)) ||
	    !found)
		return 0;
	return ext;
}

static struct cs_error *path_value(struct rv_session *s, uint64_t klass,
				   uint64_t *ret)
{
	struct cs_error *err;
	if (!path_in_ivars(s)) {
		uint64_t ext = 0;
		if ((err = rv_classext(s, klass, &ext)))
			return err;
		return rv_read_member(s, ext, RVL_classext_classpath, ret);
	}
	if ((err = class_ivar(s, klass, s->classpath_id, ret)))
		return err;
	if (!*ret || rv_is_nil(s, *ret))
		err = class_ivar(s, klass, s->tmp_classpath_id, ret);
	return err;
}

static struct cs_error *class_path_uncached(struct rv_session *s,
					    uint64_t klass, char **ret)
{
	uint64_t v = 0;
	*ret = NULL;
	struct cs_error *err = path_value(s, klass, &v);
	if (err)
		return err;
	if (!v || rv_special_const(s, v))
		return NULL; /* anonymous */
	return rv_string(s, v, ret);
}

bool rv_singleton_class_p(struct rv_session *s, uint64_t type, uint64_t flags)
{
	return RV_HAS(s, fl_singleton) &&
	       type == (uint64_t)RV_VAL(s, t_class) &&
	       (flags & (uint64_t)RV_VAL(s, fl_singleton));
}

struct cs_error *rv_attached_object(struct rv_session *s, uint64_t klass,
				    uint64_t *ret)
{
	if (RV_HAS(s, classext_attached)) {
		uint64_t ext = 0;
		struct cs_error *err = rv_classext(s, klass, &ext);
		if (err)
			return err;
		return rv_read_member(s, ext, RVL_classext_attached, ret);
	}
	if (!RV_HAS(s, id_attached))
		return rv_missing(RVL_id_attached);
	return class_ivar(s, klass, (uint64_t)RV_VAL(s, id_attached), ret);
}

static char *anonymous(uint64_t klass)
{
	char *s;
	if (asprintf(&s, "#<Class:0x%016llx>", (unsigned long long)klass) < 0)
		return NULL;
	return s;
}

/* The class path of klass, NULL when anonymous; owned by the cache. */
static struct cs_error *cached_path(struct rv_session *s, uint64_t klass,
				    const char **ret)
{
	int found;
	char *path = u64map_get(&s->ids->classes, klass, &found);
	if (!found) {
		struct cs_error *err = class_path_uncached(s, klass, &path);
		if (err)
			return err;
		if (!u64map_put(&s->ids->classes, klass, path)) {
			free(path);
			return &cs_error_nomem;
		}
	}
	*ret = path;
	return NULL;
}

struct cs_error *rv_class_path(struct rv_session *s, uint64_t klass, char **ret)
{
	const char *path;
	struct cs_error *err = cached_path(s, klass, &path);
	if (err)
		return err;
	*ret = path ? strdup(path) : anonymous(klass);
	return *ret ? NULL : &cs_error_nomem;
}

struct cs_error *rv_owner_name(struct rv_session *s, uint64_t owner, char **ret,
			       bool *singleton)
{
	uint64_t type, flags;
	struct cs_error *err = rv_builtin_type(s, owner, &type, &flags);
	if (err)
		return err;
	*singleton = rv_singleton_class_p(s, type, flags);
	if (!*singleton)
		return rv_class_path(s, owner, ret);
	uint64_t attached = 0, atype = 0;
	if ((err = rv_attached_object(s, owner, &attached)))
		return err;
	if (!attached || rv_special_const(s, attached) ||
	    rv_failed(rv_builtin_type(s, attached, &atype, NULL)) ||
	    (atype != (uint64_t)RV_VAL(s, t_class) &&
	     atype != (uint64_t)RV_VAL(s, t_module))) {
		/* A singleton method of a plain object: no name to give. */
		*ret = anonymous(owner);
		return *ret ? NULL : &cs_error_nomem;
	}
	return rv_class_path(s, attached, ret);
}

struct cs_error *rv_permanent_path(struct rv_session *s, uint64_t klass,
				   char **ret)
{
	*ret = NULL;
	if (RV_HAS(s, classext_permanent_classpath)) {
		uint64_t ext = 0, permanent = 0;
		struct cs_error *err = rv_classext(s, klass, &ext);
		if (!err)
			err = rv_read_member(s, ext,
					     RVL_classext_permanent_classpath,
					     &permanent);
		if (err || !permanent)
			return err;
	}
	const char *path;
	struct cs_error *err = cached_path(s, klass, &path);
	if (err)
		return err;
	if (path && !(*ret = strdup(path)))
		return &cs_error_nomem;
	return NULL;
}

struct cs_error *rv_stable_path(struct rv_session *s, uint64_t klass,
				char **ret)
{
	*ret = NULL;
	if (path_in_ivars(s)) {
		/* Up to 3.2 a permanent path is the __classpath__ ivar; a
		 * temporary one is kept apart (__tmp_classpath__). */
		uint64_t v = 0;
		struct cs_error *err =
			class_ivar(s, klass, s->classpath_id, &v);
		if (err || !v || rv_special_const(s, v))
			return err;
		if ((err = rv_string(s, v, ret)))
			return err;
	} else {
		struct cs_error *err = rv_permanent_path(s, klass, ret);
		if (err)
			return err;
	}
	/* A temporary path names an anonymous module by its address. */
	if (*ret && strncmp(*ret, "#<", 2) == 0) {
		free(*ret);
		*ret = NULL;
	}
	return NULL;
}

/* Classes climbed at most past include and singleton classes: more than
 * any real ancestry, fewer than a damaged cycle would make us read. */
#define MAX_CLASS_HOPS 1024

struct cs_error *rv_real_class(struct rv_session *s, uint64_t klass,
			       bool skip_singletons, uint64_t *ret)
{
	for (int i = 0; i < MAX_CLASS_HOPS; i++) {
		uint64_t type, flags;
		struct cs_error *err;
		if (!klass || rv_is_nil(s, klass)) {
			*ret = 0;
			return NULL;
		}
		if ((err = rv_builtin_type(s, klass, &type, &flags)))
			return err;
		bool iclass = RV_HAS(s, t_iclass) &&
			      type == (uint64_t)RV_VAL(s, t_iclass);
		bool singleton = skip_singletons &&
				 rv_singleton_class_p(s, type, flags);
		if (!iclass && !singleton) {
			*ret = klass;
			return NULL;
		}
		if ((err = rv_superclass(s, klass, &klass)))
			return err;
	}
	return cs_error_create(CS_ERR_CORRUPT,
			       "more than %d include or singleton classes in a "
			       "row (a cycle?)",
			       MAX_CLASS_HOPS);
}

struct cs_error *rv_superclass(struct rv_session *s, uint64_t klass,
			       uint64_t *ret)
{
	if (RV_HAS(s, rclass_super))
		return rv_read_member(s, klass, RVL_rclass_super, ret);
	uint64_t ext = 0;
	struct cs_error *err = rv_classext(s, klass, &ext);
	if (err)
		return err;
	return rv_read_member(s, ext, RVL_classext_super, ret);
}
