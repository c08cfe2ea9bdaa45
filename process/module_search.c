/* See module_search.h. */
#include "module_search.h"

#include <dirent.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/hex.h"
#include "../util/open_regular.h"
#include "build_id.h"

#define MAX_NAMES 64      /* names tried per directory */
#define MAX_SCANNED 65536 /* files read for their build-id, in all */
#define MAX_ANSWERS 4096  /* build-ids looked for and kept */
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

/* A file of a directory read whole, with its build-id. */
struct scanned {
	char *path;
	uint8_t id[BUILD_ID_MAX];
	size_t len;
};

/* A build-id looked for: the file found, or none (found.file NULL). */
struct answer {
	uint8_t id[BUILD_ID_MAX];
	size_t len;
	struct cs_module_found found;
};

struct cs_module_search {
	char **user_dirs; /* host paths, NULL-terminated */
	/* the program's own directories (paths in the target) */
	void (*target_dirs)(void *ctx, char ***dirs, size_t *n);
	void *ctx;
	char *(*host)(void *hctx, const char *path);
	void *hctx;
	char **dirs;
	size_t ndirs;
	bool dirs_asked;
	/* directories read whole, and their files */
	char **read;
	size_t nread;
	struct scanned *files;
	size_t nfiles, cap, seen;
	struct answer **answers; /* each its own: the caller keeps found */
	size_t nanswers;
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

/* dir/name, when it is the module; malloc'd. With host, dir is a path
 * in the target, mapped to this machine. */
static char *try_name(const struct cs_module_search *s, bool host,
		      const char *dir, const char *name, const uint8_t *id,
		      size_t len)
{
	char *path = NULL;
	if (asprintf(&path, "%s/%s", strcmp(dir, "/") ? dir : "", name) < 0)
		return NULL;
	if (host && s->host) {
		char *on_host = s->host(s->hctx, path);
		free(path);
		path = on_host;
	}
	if (path && is_the_module(path, id, len))
		return path;
	free(path);
	return NULL;
}

/* Every file directly in dir, read once per directory; a bounded number
 * of files in all. Out of memory leaves a partial list. */
static void read_dir(struct cs_module_search *s, const char *dir)
{
	for (size_t i = 0; i < s->nread; i++)
		if (strcmp(s->read[i], dir) == 0)
			return;
	char **read = reallocarray(s->read, s->nread + 1, sizeof(*read));
	if (!read)
		return;
	s->read = read;
	if (!(read[s->nread] = strdup(dir)))
		return;
	s->nread++;
	DIR *d = *dir ? opendir(dir) : NULL;
	struct dirent *e;
	while (d && s->seen < MAX_SCANNED && (e = readdir(d))) {
		if (e->d_name[0] == '.' ||
		    (e->d_type != DT_REG && e->d_type != DT_LNK &&
		     e->d_type != DT_UNKNOWN))
			continue;
		s->seen++;
		struct scanned f = {0};
		if (asprintf(&f.path, "%s/%s", dir, e->d_name) < 0)
			break;
		f.len = cs_build_id_of_path(f.path, f.id, sizeof(f.id));
		if (!f.len) {
			free(f.path);
			continue;
		}
		if (s->nfiles == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 64;
			void *p = reallocarray(s->files, cap, sizeof(f));
			if (!p) {
				free(f.path);
				break;
			}
			s->files = p;
			s->cap = cap;
		}
		s->files[s->nfiles++] = f;
	}
	if (d)
		closedir(d);
}

/* A file read so far with the build-id; *where, its directory. */
static char *in_files_read(const struct cs_module_search *s, const uint8_t *id,
			   size_t len, char **where)
{
	for (size_t i = 0; i < s->nfiles; i++) {
		const struct scanned *f = &s->files[i];
		if (!cs_build_id_same(f->id, f->len, id, len) ||
		    !is_the_module(f->path, id, len))
			continue;
		char *found = strdup(f->path);
		const char *slash = strrchr(f->path, '/');
		*where = found && slash
				 ? strndup(f->path, (size_t)(slash - f->path))
				 : NULL;
		return found;
	}
	return NULL;
}

/* By name in the user's directories and their .build-id trees, then
 * every file of them and of near; then by name in the program's. */
static char *look(struct cs_module_search *s, char *const *names, size_t nnames,
		  const uint8_t *id, size_t len, const char *near, char **where)
{
	char *found = NULL;
	char hex[2 * BUILD_ID_MAX + 1];
	cs_hex(id, len, hex);
	char **dirs = s->user_dirs;
	for (size_t i = 0; dirs[i] && !found; i++) {
		for (size_t k = 0; k < nnames && !found; k++)
			found = try_name(s, false, dirs[i], names[k], id, len);
		char tree[2 * BUILD_ID_MAX + 16];
		snprintf(tree, sizeof(tree), ".build-id/%.2s/%s", hex,
			 len > 1 ? hex + 2 : "");
		if (!found && len > 1)
			found = try_name(s, false, dirs[i], tree, id, len);
		if (found)
			*where = strdup(dirs[i]);
	}
	if (found)
		return found;
	for (size_t i = 0; dirs[i]; i++)
		read_dir(s, dirs[i]);
	if (near)
		read_dir(s, near);
	if ((found = in_files_read(s, id, len, where)))
		return found;
	if (!s->dirs_asked && s->target_dirs) {
		s->dirs_asked = true;
		s->target_dirs(s->ctx, &s->dirs, &s->ndirs);
	}
	for (size_t i = 0; !found && i < s->ndirs; i++)
		for (size_t k = 0; k < nnames && !found; k++)
			if ((found = try_name(s, true, s->dirs[i], names[k], id,
					      len)))
				*where = strdup(s->dirs[i]);
	return found;
}

const struct cs_module_found *
cs_module_search_find(struct cs_module_search *s, const char *mapped,
		      const uint8_t *id, size_t len, const char *near)
{
	if (!s || !len || len > BUILD_ID_MAX)
		return NULL;
	for (size_t i = 0; i < s->nanswers; i++) {
		struct answer *a = s->answers[i];
		if (cs_build_id_same(a->id, a->len, id, len))
			return a->found.file ? &a->found : NULL;
	}
	char *names[MAX_NAMES];
	size_t nnames = cs_module_names(mapped, names, MAX_NAMES);
	char *dir = NULL;
	char *file = look(s, names, nnames, id, len, near, &dir);
	for (size_t k = 0; k < nnames; k++)
		free(names[k]);
	struct answer **more = NULL, *a = NULL;
	if (s->nanswers < MAX_ANSWERS &&
	    (more = reallocarray(s->answers, s->nanswers + 1, sizeof(*more))))
		s->answers = more;
	if (more)
		a = calloc(1, sizeof(*a));
	char *copy = file && a ? strdup(mapped) : NULL;
	if (!a || (file && !copy)) {
		free(a);
		free(file);
		free(dir);
		free(copy);
		return NULL;
	}
	s->answers[s->nanswers++] = a;
	memcpy(a->id, id, len);
	a->len = len;
	if (file) {
		a->found = (struct cs_module_found){
			.mapped = copy, .file = file, .dir = dir};
		cs_hex(id, len, a->found.build_id);
		return &a->found;
	}
	free(dir);
	return NULL;
}

/* The directories of "a:b", then those of list, NULL-terminated. */
static char **dir_list(const char *path, const char *const *list)
{
	size_t n = 1;
	for (const char *p = path; p && *p; p++)
		n += *p == ':';
	for (size_t i = 0; list && list[i]; i++)
		n++;
	char **out = calloc(n + 1, sizeof(*out));
	size_t k = 0;
	for (const char *p = path; out && p && *p;) {
		size_t len = strcspn(p, ":");
		if (len && (out[k] = strndup(p, len)))
			k++;
		p += len + (p[len] == ':');
	}
	for (size_t i = 0; out && list && list[i]; i++)
		if (*list[i] && (out[k] = strdup(list[i])))
			k++;
	return out;
}

struct cs_module_search *cs_module_search_new(const char *lib_search_path,
					      const char *const *debug_dirs)
{
	struct cs_module_search *s = calloc(1, sizeof(*s));
	if (s && !(s->user_dirs = dir_list(lib_search_path, debug_dirs))) {
		free(s);
		s = NULL;
	}
	return s;
}

/* Forget the build-ids not found (where to look changed). */
static void forget_misses(struct cs_module_search *s)
{
	size_t k = 0;
	for (size_t i = 0; i < s->nanswers; i++)
		if (s->answers[i]->found.file)
			s->answers[k++] = s->answers[i];
		else
			free(s->answers[i]);
	s->nanswers = k;
}

static void free_list(char **l, size_t n)
{
	for (size_t i = 0; l && i < n; i++)
		free(l[i]);
	free(l);
}

void cs_module_search_set_target_dirs(
	struct cs_module_search *s,
	void (*dirs)(void *ctx, char ***dirs, size_t *n), void *ctx,
	char *(*host)(void *hctx, const char *path), void *hctx)
{
	free_list(s->dirs, s->ndirs);
	s->dirs = NULL;
	s->ndirs = 0;
	s->dirs_asked = false;
	s->target_dirs = dirs;
	s->ctx = ctx;
	s->host = host;
	s->hctx = hctx;
	forget_misses(s);
}

void cs_module_search_free(struct cs_module_search *s)
{
	if (!s)
		return;
	size_t n = 0;
	while (s->user_dirs[n])
		n++;
	free_list(s->user_dirs, n);
	free_list(s->dirs, s->ndirs);
	free_list(s->read, s->nread);
	for (size_t i = 0; i < s->nfiles; i++)
		free(s->files[i].path);
	free(s->files);
	for (size_t i = 0; i < s->nanswers; i++) {
		free(s->answers[i]->found.mapped);
		free(s->answers[i]->found.file);
		free(s->answers[i]->found.dir);
		free(s->answers[i]);
	}
	free(s->answers);
	free(s);
}
