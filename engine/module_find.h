/* Finding a module's file by its build-id, when the file the target names
 * for it cannot be used: gone (an extension Ruby::Box loaded from a
 * temporary copy, deleted since; the kernel names it "... (deleted)") or
 * another build. The build-id is the one in the target's own memory
 * (the module's first page, which a core keeps), and a file is taken
 * only when its build-id is that one: a name only says where to look.
 *
 * Where: the directories the user gave (--lib-search-path, --debug-dir
 * and its .build-id tree), by name and then every file in them; and the
 * directories the Ruby loads from ($LOAD_PATH, the directories of
 * $LOADED_FEATURES: rv_load_dirs), by name. A name is the module's
 * basename or a tail of it (cs_module_names). */
#ifndef CS_ENGINE_MODULE_FIND_H
#define CS_ENGINE_MODULE_FIND_H

#include <stddef.h>
#include <stdint.h>

#include "../process/target.h"

struct cs_module_scan; /* files of the user's directories, read once */

struct cs_module_search {
	const char *lib_search_path;   /* "a:b" (host paths), or NULL */
	const char *const *debug_dirs; /* NULL-terminated, or NULL */
	/* The Ruby's own directories (paths in the target), asked for
	 * once, when a module is first looked for; may be NULL. */
	void (*ruby_dirs)(void *ctx, char ***dirs, size_t *n);
	void *ctx;
	/* state: filled as the search goes, freed by cs_module_search_free */
	char **dirs;
	size_t ndirs;
	int dirs_asked;
	struct cs_module_scan *scan;
};

/* How a module's file was found (for the report). */
struct cs_module_found {
	char *mapped; /* the path the target mapped it from */
	char *file;   /* the file with its build-id, on this machine */
	char *dir;    /* the directory it was found in */
	char build_id[2 * 64 + 1]; /* hex */
};

/* The file (malloc'd, a path on this machine) whose build-id is
 * id[0, len), for the module the target mapped from mapped; NULL when
 * none is found. A file is an ELF object with code (not a separate debug
 * file) and that build-id. *dir (malloc'd) says where it was. */
char *cs_module_find(const struct cs_target *img, struct cs_module_search *s,
		     const char *mapped, const uint8_t *id, size_t len,
		     char **dir);
void cs_module_search_free(struct cs_module_search *s);

/* The names a module mapped from path may have in a directory, best
 * first: its basename without the kernel's " (deleted)", then each tail
 * of that which follows a '_' or a '+', with every '+' read as '/'
 * (Ruby::Box names its copy of an extension "_ruby_box_p<pid>_<box>_"
 * and the feature's path with '+' for '/': "json+ext+parser.so" gives
 * "json/ext/parser.so", "ext/parser.so", "parser.so"). At most max
 * names, each malloc'd; returns how many. */
size_t cs_module_names(const char *path, char **out, size_t max);

#endif
