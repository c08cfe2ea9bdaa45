/* corestack bundle --extract FILE -o DIR: a bundle laid out as the machine
 * that wrote it had its files (process/bundle.h, cs_bundle_extract), for
 * gdb and lldb, with the command lines that open it there
 * (docs/bundle.md). */
#include "bundle.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "corestack bundle"

enum { EXIT_OK = 0, EXIT_UNUSABLE = 2 };

/* Characters a shell and the debuggers' command lines take as they are. */
static bool plain_word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_@%+=:,./-",
			    *s))
			return false;
	return true;
}

/* s as one word of a POSIX shell. */
static void put_shell(FILE *out, const char *s)
{
	if (plain_word(s)) {
		fputs(s, out);
		return;
	}
	fputc('\'', out);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", out);
		else
			fputc(*s, out);
	fputc('\'', out);
}

/* A path as one argument of an lldb command: in double quotes, with lldb's
 * escapes, when it is not a plain word. Malloc'd. */
static char *lldb_word(const char *s)
{
	if (plain_word(s))
		return strdup(s);
	char *w = malloc(2 * strlen(s) + 3), *p = w;
	if (!w)
		return NULL;
	*p++ = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\' || *s == '`')
			*p++ = '\\';
		*p++ = *s;
	}
	*p++ = '"';
	*p = 0;
	return w;
}

/* One argument of a command line: flag ("-iex", "-O") and a debugger's
 * command made from fmt, quoted for the shell. */
static void put_arg(FILE *out, const char *flag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void put_arg(FILE *out, const char *flag, const char *fmt, ...)
{
	char *command;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&command, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	fprintf(out, " %s ", flag);
	put_shell(out, command);
	free(command);
}

/* Where corestack's gdb and lldb module is: $CORESTACK_GDBEXT_DIR (as
 * its loaders read it), else beside this corestack as make install lays
 * it out (PREFIX/bin, PREFIX/lib/corestack) or as make builds it
 * (build/, build/gdbext). Malloc'd, or NULL: not found. */
static char *gdbext_dir(void)
{
	const char *env = getenv("CORESTACK_GDBEXT_DIR");
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *dir = n > 0 ? (self[n] = 0, strrchr(self, '/')) : NULL;
	if (dir)
		*dir = 0;
	const char *under[] = {"/../lib/corestack", "/gdbext"};
	for (int i = -1; i < 2; i++) {
		char *cand = NULL;
		if (i < 0 ? !env || !*env || asprintf(&cand, "%s", env) < 0
			  : !dir || asprintf(&cand, "%s%s", self, under[i]) < 0)
			continue;
		char *gdb = NULL, *lldb = NULL;
		bool there = asprintf(&gdb, "%s/ruby-gdb.py", cand) >= 0 &&
			     asprintf(&lldb, "%s/ruby_lldb.py", cand) >= 0 &&
			     access(gdb, R_OK) == 0 && access(lldb, R_OK) == 0;
		free(gdb);
		free(lldb);
		char *real = there ? realpath(cand, NULL) : NULL;
		free(cand);
		if (real)
			return real;
	}
	return NULL;
}

/* The directories of the libraries extracted, once each, for gdb's
 * solib-search-path and lldb's target.exec-search-paths, where they
 * find a library by its file name (the dynamic linker's name of it need
 * not be its path: /lib for /usr/lib, a soname link): joined by sep,
 * each made a word by quote when given (malloc'd). A directory whose
 * name holds sep is left out. */
static char *lib_dirs(const struct cs_bundle *b, const char *sep,
		      char *(*quote)(const char *))
{
	char *all = strdup("");
	for (size_t i = 0; all && i < b->n; i++) {
		const struct cs_bundle_entry *e = &b->entries[i];
		if (e->kind != CS_BUNDLE_LIB)
			continue;
		char *d = strdup(e->file), *slash = d ? strrchr(d, '/') : NULL;
		if (slash)
			*slash = 0;
		char *w = !slash ? NULL : quote ? quote(d) : strdup(d);
		free(d);
		if (!w) {
			free(all);
			return NULL;
		}
		/* seen: the same word between separators */
		size_t wl = strlen(w), sl = strlen(sep);
		bool seen = strstr(w, sep) != NULL;
		for (const char *p = all; !seen && (p = strstr(p, w)); p++)
			seen = (p == all || strncmp(p - sl, sep, sl) == 0) &&
			       (p[wl] == 0 || strncmp(p + wl, sep, sl) == 0);
		char *more = NULL;
		if (!seen &&
		    asprintf(&more, "%s%s%s", all, *all ? sep : "", w) >= 0) {
			free(all);
			all = more;
		}
		free(w);
	}
	return all;
}

static void print_commands(FILE *out, const struct cs_bundle *b,
			   const char *dir)
{
	const struct cs_bundle_entry *core = cs_bundle_core(b), *exe = NULL;
	size_t count[CS_BUNDLE_DEBUG + 1] = {0};
	for (size_t i = 0; i < b->n; i++) {
		count[b->entries[i].kind]++;
		if (b->entries[i].kind == CS_BUNDLE_EXE)
			exe = &b->entries[i];
	}
	char *debug = NULL, *gdbext = gdbext_dir();
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0)
		self[n] = 0;
	else
		snprintf(self, sizeof(self), "corestack");
	if (asprintf(&debug, "%s/%s", dir, CS_BUNDLE_DEBUG_DIR) < 0)
		return;

	fprintf(out, "# %s laid out as on the machine that wrote it:\n",
		b->source);
	fprintf(out, "#   core         %s (bundled as %s)\n", core->file,
		core->path);
	if (exe)
		fprintf(out, "#   executable   %s\n", exe->file);
	else
		fputs("#   executable   none: the bundle holds none\n", out);
	fprintf(out, "#   libraries    %zu, each at its path under %s\n",
		count[CS_BUNDLE_LIB], dir);
	fprintf(out, "#   debug files  %zu, under %s/.build-id\n",
		count[CS_BUNDLE_DEBUG], debug);
	if (!gdbext)
		fputs("# corestack's gdb and lldb module is not beside this "
		      "corestack: set CORESTACK_GDBEXT_DIR to its directory "
		      "(docs/gdb-lldb.md)\n",
		      out);

	fputs("\n# gdb, with ruby-bt and the other commands:\ngdb", out);
	put_arg(out, "-iex", "set sysroot %s", dir);
	put_arg(out, "-iex", "set debug-file-directory %s", debug);
	char *solib = lib_dirs(b, ":", NULL);
	if (solib && *solib)
		put_arg(out, "-iex", "set solib-search-path %s", solib);
	free(solib);
	if (gdbext)
		put_arg(out, "-iex", "source %s/ruby-gdb.py", gdbext);
	fputc(' ', out);
	if (exe) {
		put_shell(out, exe->file);
		fputc(' ', out);
	} else {
		fputs("-c ", out);
	}
	put_shell(out, core->file);

	char *w_dir = lldb_word(dir), *w_debug = lldb_word(debug),
	     *w_libs = lib_dirs(b, " ", lldb_word);
	fputs("\n\n# lldb, with ruby-bt and the other commands:\nlldb", out);
	if (w_dir)
		put_arg(out, "-O", "platform select --sysroot %s remote-linux",
			w_dir);
	if (w_libs && *w_libs)
		put_arg(out, "-O", "settings set target.exec-search-paths %s",
			w_libs);
	if (w_debug)
		put_arg(out, "-O",
			"settings set target.debug-file-search-paths %s",
			w_debug);
	if (gdbext)
		put_arg(out, "-O", "command script import %s/ruby_lldb.py",
			gdbext);
	fputs(" --core ", out);
	put_shell(out, core->file);
	if (exe) {
		fputc(' ', out);
		put_shell(out, exe->file);
	}

	fputs("\n\n# corestack:\n", out);
	put_shell(out, self);
	fputs(" --sysroot ", out);
	put_shell(out, dir);
	fputs(" --debug-dir ", out);
	put_shell(out, debug);
	fputc(' ', out);
	put_shell(out, core->file);
	if (exe) {
		fputc(' ', out);
		put_shell(out, exe->file);
	}
	fputc('\n', out);
	free(w_dir);
	free(w_debug);
	free(w_libs);
	free(debug);
	free(gdbext);
}

/* DIR made, or found empty: *made says which. Else one line on stderr. */
static bool take_dir(const char *dir, bool *made)
{
	*made = false;
	if (mkdir(dir, 0777) == 0) {
		*made = true;
		return true;
	}
	if (errno != EEXIST) {
		fprintf(stderr, PROG ": %s: cannot create: %s\n", dir,
			strerror(errno));
		return false;
	}
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr,
			PROG ": %s: exists and %s; name a new or empty "
			     "directory\n",
			dir,
			errno == ENOTDIR ? "is not a directory"
					 : strerror(errno));
		return false;
	}
	struct dirent *ent;
	bool empty = true;
	while (empty && (ent = readdir(d)))
		empty = strcmp(ent->d_name, ".") == 0 ||
			strcmp(ent->d_name, "..") == 0;
	closedir(d);
	if (!empty)
		fprintf(stderr,
			PROG ": %s: exists and is not empty; name a new or "
			     "empty directory\n",
			dir);
	return empty;
}

int cs_bundle_extract_main(const char *bundle, const char *dir)
{
	bool made;
	if (!take_dir(dir, &made))
		return EXIT_UNUSABLE;
	char *abs = realpath(dir, NULL);
	if (!abs) {
		fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
		if (made)
			(void)rmdir(dir);
		return EXIT_UNUSABLE;
	}
	struct cs_bundle b = {.dir = abs, .keep_dir = !made};
	cs_bundle_guard_extract(&b);
	struct cs_error *err = cs_bundle_extract(bundle, abs, !made, &b);
	if (err) {
		fprintf(stderr, PROG ": %s\n", err->message);
		cs_error_destroy(err);
		cs_bundle_remove_files(&b);
		cs_bundle_guard_extract(NULL);
		cs_bundle_free(&b);
		free(abs);
		return EXIT_UNUSABLE;
	}
	cs_bundle_guard_extract(NULL);
	size_t count[CS_BUNDLE_DEBUG + 1] = {0};
	uint64_t bytes = 0;
	for (size_t i = 0; i < b.n; i++) {
		count[b.entries[i].kind]++;
		bytes += b.entries[i].size;
	}
	print_commands(stdout, &b, abs);
	fprintf(stderr,
		PROG ": extracted %s into %s: the core, %zu executable, %zu "
		     "libraries, %zu debug files (%llu MiB)\n",
		bundle, abs, count[CS_BUNDLE_EXE], count[CS_BUNDLE_LIB],
		count[CS_BUNDLE_DEBUG], (unsigned long long)(bytes >> 20));
	cs_bundle_free(&b);
	free(abs);
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_UNUSABLE;
}
