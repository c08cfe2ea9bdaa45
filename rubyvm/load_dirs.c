/* The directories a Ruby loads its files from: its $LOAD_PATH and the
 * directories of its $LOADED_FEATURES, the VM's or, where the VM has
 * boxes (Ruby::Box), the root box's and the main box's. See model.h. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* Entries read of each Array, and directories kept in all. */
#define MAX_LOAD_ENTRIES 16384
#define MAX_LOAD_DIRS 1024

struct dir_list {
	char **dirs;
	size_t n;
};

/* dir[0, len), without its trailing slashes, once. A relative entry is
 * relative to a working directory a core does not record: left out. */
static void add_dir(struct dir_list *l, const char *dir, size_t len)
{
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0 || dir[0] != '/' || l->n == MAX_LOAD_DIRS)
		return;
	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->dirs[i]) == len &&
		    memcmp(l->dirs[i], dir, len) == 0)
			return;
	char *copy = strndup(dir, len);
	if (copy)
		l->dirs[l->n++] = copy;
}

/* Each String of the Array ary as a directory, or (parent) the
 * directory holding the file it names. What cannot be read is passed
 * over: these are places to look, not facts to report. */
static void add_array(struct rv_session *s, uint64_t ary, bool parent,
		      struct dir_list *l)
{
	uint64_t ptr = 0, len = 0;
	if (!ary || rv_failed(rv_array_span(s, ary, &ptr, &len)))
		return;
	if (len > MAX_LOAD_ENTRIES)
		len = MAX_LOAD_ENTRIES;
	size_t width = (size_t)RV_VAL(s, value_size);
	for (uint64_t i = 0; i < len && l->n < MAX_LOAD_DIRS; i++) {
		uint64_t v = 0;
		char *path = NULL;
		if (!rv_try_read(s, ptr + i * width, &v, sizeof(v)) ||
		    rv_failed(rv_string(s, v, &path)))
			continue;
		size_t n = strlen(path);
		if (parent) {
			const char *slash = strrchr(path, '/');
			n = slash ? (size_t)(slash - path) + (slash == path)
				  : 0;
		}
		add_dir(l, path, n);
		free(path);
	}
}

struct cs_error *rv_load_dirs(struct rv_session *s, char ***ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	struct dir_list l = {.dirs = calloc(MAX_LOAD_DIRS + 1, sizeof(char *))};
	if (!l.dirs)
		return &cs_error_nomem;
	uint64_t vm = 0, ary = 0, box = 0;
	if (rv_try_var(s, RVL_vm_ptr, sizeof(vm), &vm) && vm) {
		if (rv_try_member(s, vm, RVL_vm_load_path, &ary))
			add_array(s, ary, false, &l);
		if (rv_try_member(s, vm, RVL_vm_loaded_features, &ary))
			add_array(s, ary, true, &l);
		enum rv_item_id boxes[] = {RVL_vm_main_box, RVL_vm_root_box};
		for (size_t i = 0; i < sizeof(boxes) / sizeof(boxes[0]); i++) {
			if (!rv_try_member(s, vm, boxes[i], &box) || !box)
				continue;
			if (rv_try_member(s, box, RVL_box_load_path, &ary))
				add_array(s, ary, false, &l);
			if (rv_try_member(s, box, RVL_box_loaded_features,
					  &ary))
				add_array(s, ary, true, &l);
		}
	}
	*ret = l.dirs;
	*n = l.n;
	return NULL;
}

void rv_load_dirs_free(char **dirs, size_t n)
{
	for (size_t i = 0; dirs && i < n; i++)
		free(dirs[i]);
	free(dirs);
}
