/* The core reader: the files a core's mappings name, found on this machine
 * (sysroot, library search path, the executable given), checked by
 * build-id, kept open in a small LRU, and read for the bytes a core left
 * out. */
#include "core_internal.h"
#include "../util/open_regular.h"

struct cs_error *cs_core_set_sysroot(struct cs_core *core, const char *dir)
{
	char *copy = NULL;
	if (dir && *dir) {
		copy = strdup(dir);
		if (!copy)
			return &cs_error_nomem;
	}
	free(core->sysroot);
	core->sysroot = copy;
	cs_core_close_files(core);
	return NULL;
}

struct cs_error *cs_core_set_lib_search_path(struct cs_core *core,
					     const char *dirs)
{
	cs_core_free_lib_dirs(core);
	cs_core_close_files(core);
	if (!dirs || !*dirs)
		return NULL;
	if (!(core->own_search = cs_module_search_new(dirs, NULL)))
		return &cs_error_nomem;
	size_t n = 1;
	for (const char *p = dirs; *p; p++)
		n += *p == ':';
	core->lib_dirs = calloc(n + 1, sizeof(*core->lib_dirs));
	if (!core->lib_dirs)
		return &cs_error_nomem;
	size_t k = 0;
	for (const char *p = dirs; k < n; k++) {
		size_t len = strcspn(p, ":");
		if (!(core->lib_dirs[k] = strndup(p, len))) {
			cs_core_free_lib_dirs(core);
			return &cs_error_nomem;
		}
		p += len + (p[len] == ':');
	}
	return NULL;
}

static int cs_core_is_regular(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* path under sysroot, with "." and ".." resolved by name as if sysroot
 * were /: a core naming /../../etc/passwd stays inside the sysroot. */
static char *under_sysroot(const char *sysroot, const char *path)
{
	size_t root = strlen(sysroot);
	char *out = malloc(root + strlen(path) + 2);
	if (!out)
		return NULL;
	memcpy(out, sysroot, root);
	size_t n = root;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > root && out[n - 1] != '/')
				n--;
			if (n > root)
				n--; /* the slash before the dropped name */
		} else if (len && !(len == 1 && p[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == root)
		out[n++] = '/';
	out[n] = '\0';
	return out;
}

struct cs_error *cs_core_set_executable(struct cs_core *core, const char *path)
{
	char *copy = NULL;
	if (path && !(copy = strdup(path)))
		return &cs_error_nomem;
	free(core->exe_host);
	core->exe_host = copy;
	core->exe_target = copy ? core->tables.executable : NULL;
	cs_core_close_files(core);
	return NULL;
}

const char *cs_core_mapping_gap(const struct cs_core *core)
{
	if (core->tables.nmaps && !core->recovered.nmaps)
		return NULL; /* NT_FILE's */
	if (core->recovered.incomplete)
		return core->recovered.incomplete;
	return core->tables.nmaps ? NULL : "no module was found";
}

/* The usual places for a file the target knew as path, NULL-terminated:
 * under the sysroot (else path itself), then by basename in each
 * directory of the search path. NULL on ENOMEM. */
static char **cs_core_candidates(const struct cs_core *core, const char *path)
{
	size_t n = 1;
	while (core->lib_dirs && core->lib_dirs[n - 1])
		n++;
	char **out = calloc(n + 1, sizeof(*out));
	if (!out)
		return NULL;
	if (core->sysroot)
		out[0] = under_sysroot(core->sysroot, path);
	else
		out[0] = strdup(path);
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t k = 1;
	for (size_t i = 0; out[0] && i + 1 < n; i++)
		if (*core->lib_dirs[i] &&
		    asprintf(&out[k++], "%s/%s", core->lib_dirs[i], base) < 0)
			out[--k] = NULL;
	if (!out[0]) {
		free(out);
		return NULL;
	}
	return out;
}

void cs_core_set_file_map(struct cs_core *core, const char *const *pairs)
{
	core->file_map = pairs;
	cs_core_close_files(core);
}

/* The usual place of the file the target knew as path: a file the caller
 * mapped it to (a bundle's), the executable given, else the first
 * regular file of the candidates, else the first candidate. malloc'd,
 * NULL on ENOMEM. */
static char *usual_host(const struct cs_core *core, const char *path)
{
	for (size_t i = 0; core->file_map && core->file_map[i]; i += 2)
		if (strcmp(path, core->file_map[i]) == 0)
			return strdup(core->file_map[i + 1]);
	if (core->exe_host && core->exe_target &&
	    strcmp(path, core->exe_target) == 0)
		return strdup(core->exe_host);
	char **cands = cs_core_candidates(core, path);
	if (!cands)
		return NULL;
	const char *pick = NULL;
	for (size_t i = 0; !pick && cands[i]; i++)
		if (cs_core_is_regular(cands[i]))
			pick = cands[i];
	if (!pick)
		pick = cands[0];
	char *out = pick ? strdup(pick) : NULL;
	for (size_t i = 0; cands[i]; i++)
		free(cands[i]);
	free(cands);
	return out;
}

static struct cs_core_file *file_named(struct cs_core *core, const char *path)
{
	for (size_t i = 0; i < core->nfiles; i++)
		if (strcmp(core->files[i].path, path) == 0)
			return &core->files[i];
	return NULL;
}

static int cs_core_file_fd(struct cs_core *core, struct cs_core_file *f);

char *cs_core_host_path(struct cs_core *core, const char *path)
{
	struct cs_core_file *f = file_named(core, path);
	if (f && cs_core_file_fd(core, f) >= 0 && f->found)
		return strdup(f->found->file);
	return usual_host(core, path);
}

void cs_core_use_module_search(struct cs_core *core, struct cs_module_search *s)
{
	core->search = s;
	cs_core_close_files(core); /* what failed may be found now */
}

const struct cs_module_found *cs_core_module_found(struct cs_core *core,
						   const struct cs_mapping *m)
{
	size_t i = (size_t)(m - core->tables.maps);
	if (i >= core->tables.nmaps)
		return NULL;
	struct cs_core_file *f = &core->files[core->map_file[i]];
	return cs_core_file_fd(core, f) >= 0 ? f->found : NULL;
}

size_t cs_core_warning_count(const struct cs_core *core)
{
	return core->nwarnings;
}

const char *cs_core_warning_at(const struct cs_core *core, size_t i)
{
	return i < core->nwarnings ? core->warnings[i] : NULL;
}

struct cs_error *cs_core_fault(const struct cs_core *core, uint64_t addr,
			       size_t len, uint64_t at, const char *why)
{
	if (at == addr) {
		return cs_error_fault(at,
				      "%s: cannot read %zu bytes at 0x%" PRIx64
				      ": %s",
				      core->path, len, addr, why);
	}
	/* a read that ran off the end names where it stopped */
	return cs_error_fault(at,
			      "%s: cannot read %zu bytes at 0x%" PRIx64
			      ": 0x%" PRIx64 ": %s",
			      core->path, len, addr, at, why);
}

/* Does the file open as fd, found for the core's file f, differ from
 * what the process mapped? Compared by build-id: the core's from the
 * module's ELF header dumped at each offset-0 mapping of f (one match
 * will do: Ruby's crash reporter maps libruby whole a second time), the
 * file's from its notes (fd -1: no file). A module whose header the core
 * left out, or without build-id, cannot be checked and passes. On a
 * mismatch, want[0, *want_len) is the core's build-id, have[0,
 * *have_len) the file's. */
static int cs_core_file_mismatch(struct cs_core *core, struct cs_core_file *f,
				 int fd, uint8_t *want, size_t *want_len,
				 uint8_t *have, size_t *have_len)
{
	*want_len = *have_len = 0;
	int file_read = 0;
	for (size_t i = 0; i < core->tables.nmaps; i++) {
		const struct cs_mapping *m = &core->tables.maps[i];
		if (&core->files[core->map_file[i]] != f || m->file_offset != 0)
			continue;
		uint8_t id[64];
		size_t len;
		struct cs_error *err = cs_core_module_build_id(
			core, m->start, id, sizeof(id), &len);
		if (err) {
			cs_error_destroy(err);
			continue;
		}
		memcpy(want, id, len);
		*want_len = len;
		if (!file_read && fd >= 0)
			*have_len = cs_build_id_of_fd(fd, have, 64);
		file_read = 1;
		if (cs_build_id_same(have, *have_len, want, *want_len))
			return 0;
	}
	return *want_len != 0;
}

/* The warning for a file host whose build-id differs from the one the
 * process mapped for f. */
static void warn_mismatch(struct cs_core *core, const struct cs_core_file *f,
			  const char *host, const uint8_t *want,
			  size_t want_len, const uint8_t *have, size_t have_len)
{
	char have_hex[2 * 64 + 1] = "none", want_hex[2 * 64 + 1];
	if (have_len)
		cs_hex(have, have_len, have_hex);
	cs_hex(want, want_len, want_hex);
	if (core->nwarnings < CS_CORE_MAX_WARNINGS &&
	    asprintf(&core->warnings[core->nwarnings],
		     "%s: build-id %s, but the %s the process mapped has %s: "
		     "a different build, not used (give the right file with "
		     "--sysroot or --lib-search-path)",
		     host, have_hex, f->path, want_hex) >= 0)
		core->nwarnings++;
}

/* The directory of host, to read whole for a module a core without
 * NT_FILE names by the loader's name (a soname link a copied tree may
 * lack, not the file); NULL for others. malloc'd. */
static char *near_dir(const struct cs_core *core, const struct cs_core_file *f,
		      const char *host)
{
	if (!cs_link_map_module_of(&core->recovered, f->path))
		return NULL;
	const char *slash = strrchr(host, '/');
	if (!slash)
		return NULL;
	return slash == host ? strdup("/")
			     : strndup(host, (size_t)(slash - host));
}

/* f's file found by the build-id the core holds for it, open; -1 when
 * none is found. */
static int found_fd(struct cs_core *core, struct cs_core_file *f,
		    const char *host, const uint8_t *id, size_t len)
{
	struct cs_module_search *s = core->search ? core->search
						  : core->own_search;
	char *near = s && len ? near_dir(core, f, host) : NULL;
	const struct cs_module_found *found =
		s && len ? cs_module_search_find(s, f->path, id, len, near)
			 : NULL;
	free(near);
	int fd = found ? cs_open_regular(found->file) : -1;
	if (fd >= 0)
		f->found = found;
	return fd;
}

static int cs_core_file_fd(struct cs_core *core, struct cs_core_file *f)
{
	f->last_use = ++core->clock;
	if (f->fd >= 0)
		return f->fd;
	if (f->open_errno)
		return -1;
	if (core->nopen >= CS_CORE_MAX_OPEN_FILES) {
		struct cs_core_file *lru = NULL;
		for (size_t i = 0; i < core->nfiles; i++) {
			struct cs_core_file *g = &core->files[i];
			if (g->fd >= 0 && (!lru || g->last_use < lru->last_use))
				lru = g;
		}
		if (lru) {
			close(lru->fd);
			lru->fd = -1;
			core->nopen--;
		}
	}
	if (f->mismatched)
		return -1;
	if (f->found) { /* found before, closed since */
		int fd = cs_open_regular(f->found->file);
		if (fd < 0)
			f->open_errno = errno;
		else
			core->nopen++;
		return f->fd = fd;
	}
	char *host = usual_host(core, f->path);
	if (!host) {
		f->open_errno = ENOMEM;
		return -1;
	}
	/* NT_FILE also names devices (/dev/zero, GPU drivers) and the like;
	 * opening those can block or have side effects, so only regular
	 * files, checked before opening and again after. */
	int fd = cs_open_regular(host);
	int open_errno = errno == EISDIR ? ENODEV : errno;
	if (!f->checked) {
		f->checked = 1;
		uint8_t want[64], have[64];
		size_t want_len, have_len;
		int bad = cs_core_file_mismatch(core, f, fd, want, &want_len,
						have, &have_len);
		/* not the file mapped, or none: one with its build-id */
		int other = bad ? found_fd(core, f, host, want, want_len) : -1;
		if (other >= 0) {
			if (fd >= 0)
				close(fd);
			fd = other;
		} else if (bad && fd >= 0) {
			f->mismatched = 1;
			warn_mismatch(core, f, host, want, want_len, have,
				      have_len);
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0 && !f->mismatched) /* not a regular file: ENODEV */
		f->open_errno = open_errno;
	free(host);
	if (fd < 0)
		return -1;
	f->fd = fd;
	core->nopen++;
	return fd;
}

void cs_core_check_files(struct cs_core *core)
{
	for (size_t i = 0; i < core->nfiles; i++)
		if (!core->files[i].checked)
			(void)cs_core_file_fd(core, &core->files[i]);
}

/* Bytes the core lacks, from the file the mapping names. */
struct cs_error *cs_core_read_file(struct cs_core *core,
				   const struct cs_mapping *m, uint64_t at,
				   uint8_t *out, size_t n, uint64_t addr,
				   size_t len)
{
	struct cs_core_file *f =
		&core->files[core->map_file[m - core->tables.maps]];
	int fd = cs_core_file_fd(core, f);
	if (fd < 0) {
		char why[PATH_MAX + 200];
		snprintf(why, sizeof(why),
			 "not in the core, and its file %s%s cannot be "
			 "opened: %s",
			 core->sysroot ? core->sysroot : "", f->path,
			 f->open_errno == ENODEV ? "not a regular file"
						 : strerror(f->open_errno));
		return cs_core_fault(core, addr, len, at, why);
	}
	uint64_t off;
	if (__builtin_add_overflow(m->file_offset, at - m->start, &off) ||
	    off > (uint64_t)INT64_MAX - n) {
		return cs_core_fault(core, addr, len, at,
				     "maps to an impossible file offset");
	}
	while (n > 0) {
		ssize_t r = pread(fd, out, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			char why[PATH_MAX + 200];
			snprintf(why, sizeof(why),
				 "not in the core, and %s%s %s at offset "
				 "0x%" PRIx64 " (not the file the process "
				 "mapped?)",
				 core->sysroot ? core->sysroot : "", f->path,
				 r < 0 ? "cannot be read" : "ends", off);
			return cs_core_fault(core, addr, len, at, why);
		}
		out += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return NULL;
}
