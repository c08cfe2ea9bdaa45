/* Finding a module's file by its build-id, when the file the target names
 * for it cannot be used: gone (an extension Ruby::Box loaded from a
 * temporary copy, deleted since; the kernel names it "... (deleted)"),
 * another build, or named by a loader whose name a copied tree lacks (a
 * core without NT_FILE). The build-id is the one in the target's own
 * memory (the module's first page, which a core keeps), and a file is
 * taken only when it is an ELF object with code (not a separate debug
 * file) and that build-id: a name only says where to look.
 *
 * Where: the user's directories (--lib-search-path, --debug-dir and its
 * .build-id tree), by name and then every file in them; a directory the
 * caller names (every file in it); and the directories the program loads
 * from (for a Ruby: its $LOAD_PATH and the directories of its
 * $LOADED_FEATURES, which the engine hands down), by name. A name is the
 * module's basename or a tail of it (cs_module_names).
 *
 * One search serves every reader: a core reads the pages it left out of
 * a module from the file found (target.h, cs_target_use_module_search),
 * and the native unwinder takes its symbols and CFI from it. */
#ifndef CS_PROCESS_MODULE_SEARCH_H
#define CS_PROCESS_MODULE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* A module's file found by its build-id (for the report). */
struct cs_module_found {
	char *mapped; /* the path the target mapped it from */
	char *file;   /* the file with its build-id, on this machine */
	char *dir;    /* the directory it was found in */
	char build_id[2 * 64 + 1]; /* hex */
};

struct cs_module_search;

/* A search of lib_search_path ("a:b", host paths; NULL or "" for none)
 * and debug_dirs (NULL-terminated, or NULL). NULL when out of memory. */
struct cs_module_search *cs_module_search_new(const char *lib_search_path,
					      const char *const *debug_dirs);
/* Safe on NULL. */
void cs_module_search_free(struct cs_module_search *s);

/* The directories the program loads from, paths in the target: dirs
 * gives them (malloc'd, each malloc'd) when a module is first looked for
 * there, once; host maps such a path to this machine (malloc'd, NULL on
 * ENOMEM). Forgets what was not found so far. */
void cs_module_search_set_target_dirs(
	struct cs_module_search *s,
	void (*dirs)(void *ctx, char ***dirs, size_t *n), void *ctx,
	char *(*host)(void *hctx, const char *path), void *hctx);

/* The file of the module the target mapped from mapped whose build-id
 * is id[0, len), or NULL when none is found. near, when not NULL, is one
 * more directory (a host path) each file of which is read. The answer
 * (found or not) is kept for that build-id and owned by s. */
const struct cs_module_found *
cs_module_search_find(struct cs_module_search *s, const char *mapped,
		      const uint8_t *id, size_t len, const char *near);

/* The names a module mapped from path may have in a directory, best
 * first: its basename without the kernel's " (deleted)", then each tail
 * of that which follows a '_' or a '+', with every '+' read as '/'
 * (Ruby::Box names its copy of an extension "_ruby_box_p<pid>_<box>_"
 * and the feature's path with '+' for '/': "json+ext+parser.so" gives
 * "json/ext/parser.so", "ext/parser.so", "parser.so"). At most max
 * names, each malloc'd; returns how many. */
size_t cs_module_names(const char *path, char **out, size_t max);

#endif
