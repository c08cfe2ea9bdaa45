/* See module_find.h. */
#include "module_find.h"

#include <dirent.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../process/build_id.h"
#include "../util/hex.h"
#include "../util/open_regular.h"

#define MAX_NAMES 64     /* names tried per directory */
#define MAX_SCANNED 4096 /* files read in all of the user's directories */
#define BUILD_ID_MAX 64
#define DELETED " (deleted)" /* what the kernel adds to a deleted file */

size_t cs_module_names(const char *path, char **out, size_t max)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t len = strlen(base);
	size_t tail = sizeof(DELETED) - 1;
	if (len > tail && strcmp(base + len - tail, DELETED) == 0)
		len -= tail;
	size_t n = 0;
	if (len && n < max && (out[n] = strndup(base, len)))
		n++;
	for (size_t i = 0; i + 1 < len && n < max; i++) {
		if (base[i] != '_' && base[i] != '+')
			continue;
		char *name = strndup(base + i + 1, len - i - 1);
		if (!name)
			break;
		for (char *p = name; *p; p++)
			if (*p == '+')
				*p = '/';
		bool again = false;
		for (size_t k = 0; k < n && !again; k++)
			again = strcmp(out[k], name) == 0;
		if (again || name[0] == '/')
			free(name);
		else
			out[n++] = name;
	}
	return n;
}

/* A file of the user's directories with its build-id. */
struct scanned {
	char *path;
	uint8_t id[BUILD_ID_MAX];
	size_t len;
};

struct cs_module_scan {
	struct scanned *files;
	size_t n;
	bool done;
};

/* Is path an ELF object with code and the build-id id? A separate debug
 * file has the build-id too, but its .text holds nothing. */
static bool is_the_module(const char *path, const uint8_t *id, size_t len)
{
	int fd = cs_open_regular(path);
	if (fd < 0)
		return false;
	uint8_t have[BUILD_ID_MAX];
	bool ok = cs_build_id_same(
		have, cs_build_id_of_fd(fd, have, sizeof(have)), id, len);
	Elf *elf = ok ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	size_t shstrndx;
	ok = elf && elf_getshdrstrndx(elf, &shstrndx) == 0;
	bool code = false;
	for (Elf_Scn *scn = NULL; ok && (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name =
			gelf_getshdr(scn, &sh)
				? elf_strptr(elf, shstrndx, sh.sh_name)
				: NULL;
		if (name && strcmp(name, ".text") == 0)
			code = sh.sh_type == SHT_PROGBITS;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ok && code;
}

/* dir/name, when it is the module; malloc'd. host maps a path in the
 * target to this machine (the Ruby's directories), or NULL. */
static char *try_name(const struct cs_target *img, const char *dir,
		      const char *name, const uint8_t *id, size_t len)
{
	char *path = NULL;
	if (asprintf(&path, "%s/%s", strcmp(dir, "/") ? dir : "", name) < 0)
		return NULL;
	if (img) {
		char *host = cs_target_host_path(img, path);
		free(path);
		path = host;
	}
	if (path && is_the_module(path, id, len))
		return path;
	free(path);
	return NULL;
}

/* Every file directly in the user's directories, read once. */
static void scan_dir(struct cs_module_scan *scan, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && scan->n < MAX_SCANNED && (e = readdir(d))) {
		if (e->d_name[0] == '.' ||
		    (e->d_type != DT_REG && e->d_type != DT_LNK &&
		     e->d_type != DT_UNKNOWN))
			continue;
		struct scanned *f = &scan->files[scan->n];
		if (asprintf(&f->path, "%s/%s", dir, e->d_name) < 0)
			break;
		f->len = cs_build_id_of_path(f->path, f->id, sizeof(f->id));
		if (f->len)
			scan->n++;
		else
			free(f->path);
	}
	if (d)
		closedir(d);
}

/* The user's directories, host paths: --lib-search-path's, then the
 * debug directories. NULL-terminated, malloc'd. */
static char **user_dirs(const struct cs_module_search *s)
{
	size_t n = 1;
	for (const char *p = s->lib_search_path; p && *p; p++)
		n += *p == ':';
	for (size_t i = 0; s->debug_dirs && s->debug_dirs[i]; i++)
		n++;
	char **out = calloc(n + 1, sizeof(*out));
	size_t k = 0;
	for (const char *p = s->lib_search_path; out && p && *p;) {
		size_t len = strcspn(p, ":");
		if (len && (out[k] = strndup(p, len)))
			k++;
		p += len + (p[len] == ':');
	}
	for (size_t i = 0; out && s->debug_dirs && s->debug_dirs[i]; i++)
		if ((out[k] = strdup(s->debug_dirs[i])))
			k++;
	return out;
}

static void free_dirs(char **dirs)
{
	for (size_t i = 0; dirs && dirs[i]; i++)
		free(dirs[i]);
	free(dirs);
}

/* In the user's directories: by name, in a .build-id tree, then any
 * file with the build-id. */
static char *in_user_dirs(struct cs_module_search *s, char *const *names,
			  size_t nnames, const uint8_t *id, size_t len,
			  char **where)
{
	char **dirs = user_dirs(s);
	char *found = NULL;
	char hex[2 * BUILD_ID_MAX + 1];
	cs_hex(id, len, hex);
	for (size_t i = 0; dirs && dirs[i] && !found; i++) {
		for (size_t k = 0; k < nnames && !found; k++)
			found = try_name(NULL, dirs[i], names[k], id, len);
		char tree[2 * BUILD_ID_MAX + 16];
		snprintf(tree, sizeof(tree), ".build-id/%.2s/%s", hex,
			 len > 1 ? hex + 2 : "");
		if (!found && len > 1)
			found = try_name(NULL, dirs[i], tree, id, len);
		if (found)
			*where = strdup(dirs[i]);
	}
	if (!found && dirs && !s->scan &&
	    (s->scan = calloc(1, sizeof(*s->scan))) &&
	    !(s->scan->files = calloc(MAX_SCANNED, sizeof(struct scanned)))) {
		free(s->scan);
		s->scan = NULL;
	}
	if (!found && dirs && s->scan && !s->scan->done) {
		s->scan->done = true;
		for (size_t i = 0; dirs[i]; i++)
			scan_dir(s->scan, dirs[i]);
	}
	for (size_t i = 0; !found && s->scan && i < s->scan->n; i++) {
		const struct scanned *f = &s->scan->files[i];
		if (cs_build_id_same(f->id, f->len, id, len) &&
		    is_the_module(f->path, id, len)) {
			found = strdup(f->path);
			char *slash = found ? strrchr(f->path, '/') : NULL;
			*where = slash ? strndup(f->path,
						 (size_t)(slash - f->path))
				       : NULL;
		}
	}
	free_dirs(dirs);
	return found;
}

char *cs_module_find(const struct cs_target *img, struct cs_module_search *s,
		     const char *mapped, const uint8_t *id, size_t len,
		     char **dir)
{
	*dir = NULL;
	if (!len || len > BUILD_ID_MAX)
		return NULL;
	char *names[MAX_NAMES];
	size_t nnames = cs_module_names(mapped, names, MAX_NAMES);
	char *found = in_user_dirs(s, names, nnames, id, len, dir);
	if (!found && !s->dirs_asked && s->ruby_dirs) {
		s->dirs_asked = 1;
		s->ruby_dirs(s->ctx, &s->dirs, &s->ndirs);
	}
	for (size_t i = 0; !found && i < s->ndirs; i++)
		for (size_t k = 0; k < nnames && !found; k++)
			if ((found = try_name(img, s->dirs[i], names[k], id,
					      len)))
				*dir = strdup(s->dirs[i]);
	for (size_t k = 0; k < nnames; k++)
		free(names[k]);
	return found;
}

void cs_module_search_free(struct cs_module_search *s)
{
	for (size_t i = 0; s->dirs && i < s->ndirs; i++)
		free(s->dirs[i]);
	free(s->dirs);
	s->dirs = NULL;
	s->ndirs = 0;
	for (size_t i = 0; s->scan && i < s->scan->n; i++)
		free(s->scan->files[i].path);
	if (s->scan)
		free(s->scan->files);
	free(s->scan);
	s->scan = NULL;
}
