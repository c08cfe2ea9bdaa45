/* Bundles written and unpacked: see bundle.h for the format. A bundle is
 * untrusted input like a core: every count, length and size is bounded
 * before it is used, a stored path is only compared, never opened, and
 * the unpacked files get names made here. */
#include "bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include "decompress.h"
#include "../util/hex.h"
#include "../util/open_regular.h"
#include "../util/utf8.h"

#define HEADER_SIZE 16
#define RECORD_SIZE 32
#define CHUNK (256 * 1024)

const char *cs_bundle_kind_name(int kind)
{
	static const char *const names[] = {"?", "core", "exe", "lib", "debug"};
	return kind >= CS_BUNDLE_CORE && kind <= CS_BUNDLE_DEBUG ? names[kind]
								 : names[0];
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

bool cs_bundle_is(const char *path)
{
	int fd = cs_open_regular(path);
	if (fd < 0)
		return false;
	char head[8];
	bool is = pread(fd, head, sizeof(head), 0) == (ssize_t)sizeof(head) &&
		  memcmp(head, CS_BUNDLE_MAGIC, sizeof(head)) == 0;
	close(fd);
	return is;
}

/* ---- writing ---- */

static struct cs_error *write_all(int fd, const char *out, const void *buf,
				  size_t n)
{
	const uint8_t *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return cs_error_create(
				CS_ERR_OS, "%s: cannot write: %s", out,
				w < 0 ? strerror(errno) : "nothing written");
		p += w;
		n -= (size_t)w;
	}
	return NULL;
}

/* The index: header and records, with each entry's size, offset and
 * length as known so far. */
static uint8_t *index_bytes(const struct cs_bundle_entry *e, size_t n,
			    const uint64_t *off, const uint64_t *len,
			    size_t *size)
{
	size_t total = HEADER_SIZE;
	for (size_t i = 0; i < n; i++)
		total += RECORD_SIZE + e[i].build_id_len + strlen(e[i].path);
	uint8_t *buf = calloc(1, total);
	if (!buf)
		return NULL;
	static const char magic[8] = CS_BUNDLE_MAGIC;
	memcpy(buf, magic, sizeof(magic));
	put_le(buf + 8, CS_BUNDLE_VERSION, 4);
	put_le(buf + 12, n, 4);
	uint8_t *p = buf + HEADER_SIZE;
	for (size_t i = 0; i < n; i++) {
		size_t plen = strlen(e[i].path);
		p[0] = (uint8_t)e[i].kind;
		p[1] = (uint8_t)e[i].build_id_len;
		put_le(p + 2, plen, 2);
		put_le(p + 8, e[i].size, 8);
		put_le(p + 16, off[i], 8);
		put_le(p + 24, len[i], 8);
		memcpy(p + RECORD_SIZE, e[i].build_id, e[i].build_id_len);
		memcpy(p + RECORD_SIZE + e[i].build_id_len, e[i].path, plen);
		p += RECORD_SIZE + e[i].build_id_len + plen;
	}
	*size = total;
	return buf;
}

/* The file of e opened for reading. A compressed core (zstd, gzip, xz,
 * lz4, bzip2: told by its magic bytes, as the core reader tells it) is
 * inflated into memory, bounded as for an analysis, and that is what is
 * bundled: the bundle holds the core itself, which gdb and lldb read once
 * extracted, and is compressed its own way. */
static struct cs_error *open_entry(const struct cs_bundle_entry *e, int *ret)
{
	int fd = cs_open_regular(e->file);
	if (fd < 0)
		return cs_error_create(CS_ERR_OS, "%s: cannot read: %s",
				       e->file, strerror(errno));
	uint8_t head[8];
	ssize_t got = e->kind == CS_BUNDLE_CORE
			      ? pread(fd, head, sizeof(head), 0)
			      : 0;
	const char *kind = got > 0 ? cs_compression_of(head, (size_t)got)
				   : NULL;
	if (cs_compression_supported(kind)) {
		int inflated = -1;
		struct cs_error *err =
			cs_decompress_core(fd, e->file, kind, 0, &inflated);
		close(fd);
		if (err)
			return err;
		fd = inflated;
	}
	*ret = fd;
	return NULL;
}

/* Compress the file e->file (a compressed core inflated) onto fd as one
 * gzip stream; *size its bytes read, *len the stream's. */
static struct cs_error *write_entry(int fd, const char *out,
				    const struct cs_bundle_entry *e,
				    uint64_t *size, uint64_t *len)
{
	int in = -1;
	struct cs_error *open_err = open_entry(e, &in);
	if (open_err)
		return open_err;
	uint8_t *ibuf = malloc(CHUNK), *obuf = malloc(CHUNK);
	z_stream s;
	memset(&s, 0, sizeof(s));
	struct cs_error *err = NULL;
	if (!ibuf || !obuf ||
	    deflateInit2(&s, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
		    Z_OK) {
		free(ibuf);
		free(obuf);
		close(in);
		return &cs_error_nomem;
	}
	*size = *len = 0;
	int flush = Z_NO_FLUSH;
	while (!err && flush != Z_FINISH) {
		ssize_t r = read(in, ibuf, CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = cs_error_create(CS_ERR_OS, "%s: cannot read: %s",
					      e->file, strerror(errno));
			break;
		}
		*size += (uint64_t)r;
		flush = r == 0 ? Z_FINISH : Z_NO_FLUSH;
		s.next_in = ibuf;
		s.avail_in = (uInt)r;
		do {
			s.next_out = obuf;
			s.avail_out = CHUNK;
			(void)deflate(&s, flush);
			size_t have = CHUNK - s.avail_out;
			err = write_all(fd, out, obuf, have);
			*len += have;
		} while (!err && s.avail_out == 0);
	}
	deflateEnd(&s);
	free(ibuf);
	free(obuf);
	close(in);
	return err;
}

struct cs_error *cs_bundle_write(const char *out, bool force,
				 struct cs_bundle_entry *entries, size_t n)
{
	if (n == 0 || n > CS_BUNDLE_MAX_ENTRIES)
		return cs_error_create(CS_ERR_LIMIT,
				       "%s: a bundle holds 1 to %d files, "
				       "not %zu",
				       out, CS_BUNDLE_MAX_ENTRIES, n);
	int fd = open(out,
		      O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK |
			      (force ? O_TRUNC : O_EXCL),
		      0644);
	if (fd < 0) {
		if (errno == EEXIST)
			return cs_error_create(CS_ERR_USAGE,
					       "%s: exists; pass --force to "
					       "overwrite it",
					       out);
		return cs_error_create(CS_ERR_OS, "%s: cannot create: %s", out,
				       strerror(errno));
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		/* --force on a device or a FIFO: not written, nor removed */
		close(fd);
		return cs_error_create(CS_ERR_USAGE,
				       "%s: not a regular file; name a file to "
				       "write the bundle to",
				       out);
	}
	uint64_t *off = calloc(n, sizeof(*off)), *len = calloc(n, sizeof(*len));
	struct cs_bundle_entry *e = calloc(n, sizeof(*e));
	uint8_t *index = NULL;
	size_t isize = 0;
	struct cs_error *err = NULL;
	if (off && len && e) {
		memcpy(e, entries, n * sizeof(*e));
		index = index_bytes(e, n, off, len, &isize);
	}
	if (!index)
		err = &cs_error_nomem;
	else
		err = write_all(fd, out, index, isize);
	uint64_t at = isize;
	for (size_t i = 0; !err && i < n; i++) {
		off[i] = at;
		err = write_entry(fd, out, &e[i], &e[i].size, &len[i]);
		at += len[i];
	}
	if (!err) {
		/* the index again, with every size, offset and length */
		free(index);
		index = index_bytes(e, n, off, len, &isize);
		if (!index)
			err = &cs_error_nomem;
		else if (lseek(fd, 0, SEEK_SET) != 0)
			err = cs_error_create(CS_ERR_OS, "%s: cannot seek: %s",
					      out, strerror(errno));
		else
			err = write_all(fd, out, index, isize);
	}
	if (close(fd) != 0 && !err)
		err = cs_error_create(CS_ERR_OS, "%s: cannot write: %s", out,
				      strerror(errno));
	if (err)
		unlink(out);
	for (size_t i = 0; !err && i < n; i++)
		entries[i].size = e[i].size;
	free(index);
	free(off);
	free(len);
	free(e);
	return err;
}

/* ---- reading ---- */

static struct cs_error *bad(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static struct cs_error *bad(const char *path, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return cs_error_create(CS_ERR_FORMAT, "%s: not a usable bundle: %s",
			       path, why);
}

static struct cs_error *read_at(int fd, const char *path, uint64_t off,
				void *buf, size_t n, uint64_t file_size)
{
	if (off > file_size || n > file_size - off)
		return bad(path,
			   "cut off: its index runs past the end of the file "
			   "(%" PRIu64 " bytes)",
			   file_size);
	if (pread(fd, buf, n, (off_t)off) != (ssize_t)n)
		return cs_error_create(CS_ERR_OS, "%s: cannot read: %s", path,
				       strerror(errno));
	return NULL;
}

/* Record path as made in dir (room was made for it) before it is
 * made: a signal is delivered as the creating system call returns, and
 * its handler removes what is recorded. The fences keep the compiler
 * from storing the count before the path. */
static void will_make(struct cs_bundle *b, char *path)
{
	b->made[b->nmade] = path;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	b->nmade++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Forget the path will_make recorded last: it was not made here. */
static char *not_made(struct cs_bundle *b)
{
	b->nmade--;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return b->made[b->nmade];
}

/* What the kernel adds to the path of a file deleted since it was
 * mapped; the dynamic linker, and so a debugger, names it without. */
#define DELETED " (deleted)"

/* The length of a stored path without the kernel's DELETED. */
static size_t path_len(const char *p)
{
	size_t n = p ? strlen(p) : 0, d = strlen(DELETED);
	return n > d + 1 && strcmp(p + n - d, DELETED) == 0 ? n - d : n;
}

static bool has_control(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return true;
	return false;
}

/* NULL when the first n bytes of p are a path cs_bundle_extract lays out
 * under its directory: absolute, no empty, "." or ".." component, none
 * longer than NAME_MAX, no control character; else what is wrong. */
static const char *unplain(const char *p, size_t n)
{
	if (n == 0 || p[0] != '/')
		return "is not absolute";
	if (has_control(p, n))
		return "holds a control character";
	for (size_t at = 1;;) {
		const char *slash = memchr(p + at, '/', n - at);
		size_t end = slash ? (size_t)(slash - p) : n, len = end - at;
		if (len == 0)
			return "has an empty component";
		if (len == 1 && p[at] == '.')
			return "has a \".\" component";
		if (len == 2 && p[at] == '.' && p[at + 1] == '.')
			return "has a \"..\" component";
		if (len > NAME_MAX)
			return "has a component longer than NAME_MAX";
		if (end == n)
			return NULL;
		at = end + 1;
	}
}

/* Where entry i is unpacked, relative to the directory: a name made from
 * its kind, index or build-id; extracted (b->sysroot), the executable
 * and the libraries at the path they were bundled by. Malloc'd. */
static char *rel_path(const struct cs_bundle *b, size_t i,
		      const struct cs_bundle_entry *e)
{
	char *rel = NULL;
	int r = -1;
	if (e->kind == CS_BUNDLE_DEBUG) {
		char hex[2 * CS_BUNDLE_MAX_BUILD_ID + 1];
		cs_hex(e->build_id, e->build_id_len, hex);
		r = asprintf(&rel, "%s%s.build-id/%.2s/%s.debug",
			     b->sysroot ? CS_BUNDLE_DEBUG_DIR : "",
			     b->sysroot ? "/" : "", hex, hex + 2);
	} else if (e->kind == CS_BUNDLE_CORE) {
		r = asprintf(&rel, "core");
	} else if (b->sysroot) {
		size_t n = path_len(e->path);
		if (n == 0)
			return NULL;
		r = asprintf(&rel, "%.*s", (int)(n - 1), e->path + 1);
	} else if (e->kind == CS_BUNDLE_LIB) {
		r = asprintf(&rel, "lib-%zu", i);
	} else {
		r = asprintf(&rel, "%s", cs_bundle_kind_name(e->kind));
	}
	return r < 0 ? NULL : rel;
}

/* Where a compressed core entry is inflated, beside the core (see
 * inflate_core), before it takes the core's place. */
#define CORE_INFLATING "core.inflating"

/* How many files and directories unpacking entry e may make at most. */
static size_t components(const struct cs_bundle *b,
			 const struct cs_bundle_entry *e)
{
	if (e->kind == CS_BUNDLE_CORE)
		return 2; /* and CORE_INFLATING */
	if (!b->sysroot)
		return e->kind == CS_BUNDLE_DEBUG ? 3 : 1;
	/* a library's soname link too */
	size_t n = e->kind == CS_BUNDLE_DEBUG ? 3 : e->kind == CS_BUNDLE_LIB;
	const char *p = e->kind == CS_BUNDLE_DEBUG ? CS_BUNDLE_DEBUG_DIR
						   : e->path;
	for (; *p; p++)
		n += *p == '/';
	return n + 1;
}

/* The directory of the file rel (plain components) under b->dir, open
 * (*dfd): each directory before it made when create (recorded before it
 * is made; one there already is taken), every step relative to the one
 * before and following no symbolic link (O_NOFOLLOW), so that nothing
 * outside b->dir is reached. *last is rel's last component. On failure
 * *dfd is -1, *why the errno and *where (malloc'd) the path it failed
 * at; only running out of memory is an error. */
static struct cs_error *walk_dirs(struct cs_bundle *b, const char *rel,
				  bool create, mode_t dir_mode, int *dfd,
				  const char **last, int *why, char **where)
{
	*why = 0;
	*where = NULL;
	*dfd = open(b->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dfd < 0) {
		*why = errno;
		*where = strdup(b->dir);
		return NULL;
	}
	const char *c = rel, *slash;
	while ((slash = strchr(c, '/'))) {
		size_t upto = (size_t)(slash - rel);
		char *full;
		if (asprintf(&full, "%s/%.*s", b->dir, (int)upto, rel) < 0) {
			close(*dfd);
			*dfd = -1;
			return &cs_error_nomem;
		}
		char name[NAME_MAX + 1];
		snprintf(name, sizeof(name), "%.*s", (int)(slash - c), c);
		int err = 0;
		if (create) {
			will_make(b, full);
			if (mkdirat(*dfd, name, dir_mode) != 0) {
				err = errno;
				full = not_made(b);
				if (err == EEXIST)
					err = 0;
			} else {
				full = NULL; /* recorded */
			}
		}
		int next = err ? -1
			       : openat(*dfd, name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						O_CLOEXEC);
		if (next < 0 && !err)
			err = errno;
		close(*dfd);
		*dfd = next;
		if (next < 0) {
			*why = err;
			*where = full ? full : strdup(b->dir);
			return NULL;
		}
		free(full);
		c = slash + 1;
	}
	*last = c;
	return NULL;
}

/* Make the file rel (plain components) under b->dir and the directories
 * before it (walk_dirs), recorded before it is made; an existing file is
 * never opened (O_EXCL, O_NOFOLLOW). *fd the file, open for writing and
 * reading (a compressed core is read back); on failure -1, *why and
 * *where as walk_dirs says. */
static struct cs_error *make_file(struct cs_bundle *b, const char *rel,
				  mode_t dir_mode, mode_t mode, int *fd,
				  int *why, char **where)
{
	*fd = -1;
	int dfd;
	const char *last;
	struct cs_error *err =
		walk_dirs(b, rel, true, dir_mode, &dfd, &last, why, where);
	if (err || dfd < 0)
		return err;
	char *full;
	if (asprintf(&full, "%s/%s", b->dir, rel) < 0) {
		close(dfd);
		return &cs_error_nomem;
	}
	will_make(b, full);
	*fd = openat(dfd, last,
		     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (*fd < 0) {
		*why = errno;
		*where = not_made(b);
	}
	close(dfd);
	return NULL;
}

/* The DT_SONAME of the ELF file name in the directory dfd (a library the
 * bundle holds: untrusted), when it is a plain file name other than
 * name; malloc'd, else NULL. */
static char *soname_of(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	char *soname = NULL;
	Elf_Scn *scn = NULL;
	while (elf && !soname && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn) ||
			    dyn.d_tag == DT_NULL)
				break;
			const char *s = dyn.d_tag == DT_SONAME
						? elf_strptr(elf, sh.sh_link,
							     dyn.d_un.d_val)
						: NULL;
			if (s && *s && strlen(s) <= NAME_MAX &&
			    !strchr(s, '/') && strcmp(s, ".") != 0 &&
			    strcmp(s, "..") != 0 && strcmp(s, name) != 0 &&
			    !has_control(s, strlen(s))) {
				soname = strdup(s);
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return soname;
}

/* Extracted: each library also by its soname in its directory (a hard
 * link), where nothing has that name: the name the dynamic linker opened
 * it by (libruby.so.3.4 for libruby.so.3.4.5), which a debugger looks
 * for. */
static struct cs_error *link_sonames(struct cs_bundle *b)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct cs_bundle_entry *e = &b->entries[i];
		if (e->kind != CS_BUNDLE_LIB)
			continue;
		const char *rel = e->file + strlen(b->dir) + 1, *last;
		int dfd, why;
		char *where;
		struct cs_error *err =
			walk_dirs(b, rel, false, 0, &dfd, &last, &why, &where);
		free(where);
		if (err || dfd < 0) {
			if (err)
				return err;
			continue;
		}
		char *soname = soname_of(dfd, last), *full = NULL;
		if (soname && asprintf(&full, "%.*s%s", (int)(last - e->file),
				       e->file, soname) >= 0) {
			will_make(b, full);
			if (linkat(dfd, last, dfd, soname, 0) != 0)
				free(not_made(b));
		} else if (soname) {
			err = &cs_error_nomem;
		}
		free(soname);
		close(dfd);
		if (err)
			return err;
	}
	return NULL;
}

/* How large a compressed core entry may inflate (inflate_core): to what
 * the bound on all files leaves beside the others, and within the space
 * free where they are unpacked once all of them are, the compressed core
 * too (both are there while it inflates). */
struct room {
	uint64_t bound;
	uint64_t free; /* UINT64_MAX: not known */
};

/* The index read and checked: kinds, lengths, where the data lies, no
 * entry twice, sizes within the bounds; *room what they leave. */
static struct cs_error *read_index(int fd, const char *path, uint64_t file_size,
				   struct cs_bundle *b, uint64_t **off,
				   uint64_t **len, struct room *room)
{
	uint8_t head[HEADER_SIZE];
	if (file_size < HEADER_SIZE)
		return bad(path,
			   "cut off: %" PRIu64 " bytes, shorter than "
			   "a bundle's header",
			   file_size);
	struct cs_error *err =
		read_at(fd, path, 0, head, sizeof(head), file_size);
	if (err)
		return err;
	if (memcmp(head, CS_BUNDLE_MAGIC, 8) != 0)
		return bad(path, "it does not start with \"%s\"",
			   CS_BUNDLE_MAGIC);
	uint64_t version = get_le(head + 8, 4), n = get_le(head + 12, 4);
	if (version != CS_BUNDLE_VERSION)
		return bad(path,
			   "version %" PRIu64 ", this corestack reads "
			   "version %d",
			   version, CS_BUNDLE_VERSION);
	if (n == 0 || n > CS_BUNDLE_MAX_ENTRIES)
		return bad(path, "%" PRIu64 " entries, not 1 to %d", n,
			   CS_BUNDLE_MAX_ENTRIES);
	b->entries = calloc(n, sizeof(*b->entries));
	*off = calloc(n, sizeof(**off));
	*len = calloc(n, sizeof(**len));
	b->file_map = calloc(2 * n + 1, sizeof(*b->file_map));
	if (!b->entries || !*off || !*len || !b->file_map)
		return &cs_error_nomem;
	b->n = (size_t)n; /* what cs_bundle_free frees, also on failure */
	uint64_t at = HEADER_SIZE, total = 0;
	size_t cores = 0, exes = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t rec[RECORD_SIZE] = {0};
		if ((err = read_at(fd, path, at, rec, sizeof(rec), file_size)))
			return err;
		struct cs_bundle_entry *e = &b->entries[i];
		e->kind = rec[0];
		e->build_id_len = rec[1];
		size_t plen = (size_t)get_le(rec + 2, 2);
		e->size = get_le(rec + 8, 8);
		(*off)[i] = get_le(rec + 16, 8);
		(*len)[i] = get_le(rec + 24, 8);
		if (e->kind < CS_BUNDLE_CORE || e->kind > CS_BUNDLE_DEBUG)
			return bad(path, "entry %zu has kind %d, unknown", i,
				   e->kind);
		if (e->build_id_len > CS_BUNDLE_MAX_BUILD_ID ||
		    (e->kind == CS_BUNDLE_DEBUG && e->build_id_len < 2))
			return bad(path,
				   "entry %zu has a build-id of %zu bytes", i,
				   e->build_id_len);
		if (plen == 0 || plen > CS_BUNDLE_MAX_PATH || rec[4] ||
		    rec[5] || rec[6] || rec[7])
			return bad(path, "entry %zu's record is malformed", i);
		at += RECORD_SIZE;
		if ((err = read_at(fd, path, at, e->build_id, e->build_id_len,
				   file_size)))
			return err;
		at += e->build_id_len;
		if (!(e->path = calloc(1, plen + 1)))
			return &cs_error_nomem;
		if ((err = read_at(fd, path, at, e->path, plen, file_size)))
			return err;
		at += plen;
		if (strlen(e->path) != plen)
			return bad(path, "entry %zu's path holds a NUL", i);
		const char *unsafe =
			b->sysroot && (e->kind == CS_BUNDLE_EXE ||
				       e->kind == CS_BUNDLE_LIB)
				? unplain(e->path, path_len(e->path))
				: NULL;
		if (unsafe) {
			char *shown = strdup(e->path);
			if (!shown)
				return &cs_error_nomem;
			utf8_scrub(shown);
			err = bad(path,
				  "entry %zu (%s) has the path \"%s\", which "
				  "%s: refused, it could lead outside %s",
				  i, cs_bundle_kind_name(e->kind), shown,
				  unsafe, b->dir);
			free(shown);
			return err;
		}
		cores += e->kind == CS_BUNDLE_CORE;
		exes += e->kind == CS_BUNDLE_EXE;
		if (total + e->size < total)
			total = UINT64_MAX;
		else
			total += e->size;
		for (size_t k = 0; k < i; k++) {
			const struct cs_bundle_entry *o = &b->entries[k];
			bool same_file = o->kind == e->kind &&
					 e->kind != CS_BUNDLE_DEBUG &&
					 strcmp(o->path, e->path) == 0;
			bool same_debug = o->kind == CS_BUNDLE_DEBUG &&
					  e->kind == CS_BUNDLE_DEBUG &&
					  o->build_id_len == e->build_id_len &&
					  memcmp(o->build_id, e->build_id,
						 e->build_id_len) == 0;
			if (same_file || same_debug)
				return bad(path,
					   "entries %zu and %zu are the same "
					   "%s (%s)",
					   k, i, cs_bundle_kind_name(e->kind),
					   e->path);
		}
	}
	/* room to record every file and directory before it is made */
	size_t slots = 1;
	for (size_t i = 0; i < n; i++)
		slots += components(b, &b->entries[i]);
	if (!(b->made = calloc(slots, sizeof(*b->made))))
		return &cs_error_nomem;
	if (cores != 1 || exes > 1)
		return bad(path,
			   "%zu cores and %zu executables, not one core "
			   "and at most one executable",
			   cores, exes);
	for (size_t i = 0; i < n; i++)
		if ((*off)[i] < at || (*off)[i] > file_size ||
		    (*len)[i] > file_size - (*off)[i])
			return bad(path,
				   "cut off: entry %zu (%s) lies past the end "
				   "of the file (%" PRIu64 " bytes)",
				   i, b->entries[i].path, file_size);
	if (total > CS_BUNDLE_MAX_TOTAL)
		return cs_error_create(CS_ERR_LIMIT,
				       "%s: its files would take %" PRIu64
				       " MiB unpacked, more than the bound of "
				       "%" PRIu64 " MiB",
				       path, total >> 20,
				       CS_BUNDLE_MAX_TOTAL >> 20);
	const struct cs_bundle_entry *core = cs_bundle_core(b);
	room->bound = CS_BUNDLE_MAX_TOTAL - (total - core->size);
	room->free = UINT64_MAX;
	struct statvfs vfs;
	bool have_vfs = statvfs(b->dir, &vfs) == 0;
	if (have_vfs) {
		uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		room->free = avail > total ? avail - total : 0;
	}
	if (have_vfs && total / vfs.f_frsize > (uint64_t)vfs.f_bavail)
		return cs_error_create(
			CS_ERR_LIMIT,
			"%s: its files take %" PRIu64 " MiB unpacked, more "
			"than the %" PRIu64 " MiB free in %s; %s",
			path, total >> 20,
			(uint64_t)vfs.f_bavail * vfs.f_frsize >> 20, b->dir,
			b->sysroot ? "extract it where there is room"
				   : "set TMPDIR to a directory with room");
	return NULL;
}

/* The file rel of entry i could not be made (make_file's why and where,
 * freed): on a file extracted before it, the bundle's fault. */
static struct cs_error *not_created(struct cs_bundle *b, const char *path,
				    size_t i, int why, char *where)
{
	const struct cs_bundle_entry *e = &b->entries[i];
	struct cs_error *err;
	if (b->sysroot && (why == EEXIST || why == ENOTDIR || why == ELOOP))
		err = bad(path,
			  "entry %zu (%s %s) lands on a file or directory "
			  "extracted before it, %s",
			  i, cs_bundle_kind_name(e->kind), e->path,
			  where ? where : e->file);
	else
		err = cs_error_create(CS_ERR_OS, "%s: cannot create: %s",
				      where ? where : e->file, strerror(why));
	free(where);
	return err;
}

/* A failure to inflate entry i that is this machine's (a full disk), not
 * the bundle's: said so, err destroyed. */
static struct cs_error *cannot_unpack(const struct cs_bundle *b,
				      const char *path, size_t i,
				      struct cs_error *err)
{
	struct cs_error *why = cs_error_create(
		CS_ERR_OS, "%s: cannot unpack entry %zu into %s (%s)", path, i,
		b->dir, err->message);
	cs_error_destroy(err);
	return why;
}

/* What to do about a compressed core entry that does not inflate: a
 * bundle written now holds the core inflated, checked whole. */
#define BUNDLE_AGAIN                                                      \
	"the bundle is damaged; bundle the core again (corestack bundle " \
	"-o FILE CORE)"

/* The core entry i, unpacked into the file fd (its e->file), when it is
 * a compressed core (told by its magic, as the core reader tells one):
 * what bundles hold that were written before a compressed core was
 * bundled inflated. It is inflated in its place, so that a debugger
 * opens it extracted and the sizes are the core's, bounded by room; a
 * stream that is corrupt or cut off is refused as the bundle's fault. */
static struct cs_error *inflate_core(int fd, const char *path,
				     struct cs_bundle *b, size_t i,
				     const struct room *room)
{
	struct cs_bundle_entry *e = &b->entries[i];
	uint8_t head[8];
	ssize_t got = pread(fd, head, sizeof(head), 0);
	const char *kind = got > 0 ? cs_compression_of(head, (size_t)got)
				   : NULL;
	if (!cs_compression_supported(kind))
		return NULL;
	char *tmp;
	if (asprintf(&tmp, "%s/%s", b->dir, CORE_INFLATING) < 0)
		return &cs_error_nomem;
	int out, why;
	char *where;
	struct cs_error *err =
		make_file(b, CORE_INFLATING, 0700, 0600, &out, &why, &where);
	if (!err && out < 0)
		err = not_created(b, path, i, why, where);
	if (err) {
		free(tmp);
		return err;
	}
	uint64_t max = room->bound < room->free ? room->bound : room->free;
	uint64_t written = 0;
	int whole = 0;
	err = cs_decompress_range(fd, e->file, kind, 0, e->size, out, max,
				  &written, &whole);
	if (close(out) != 0 && !err)
		err = cs_error_create(CS_ERR_OS, "%s: cannot write: %s", tmp,
				      strerror(errno));
	if (!err && rename(tmp, e->file) != 0)
		err = cs_error_create(CS_ERR_OS, "%s: cannot rename to %s: %s",
				      tmp, e->file, strerror(errno));
	else if (!err)
		free(not_made(b)); /* it is the core now */
	free(tmp);
	if (err && err->code == CS_ERR_OS)
		return cannot_unpack(b, path, i, err);
	if (err && err->code == CS_ERR_LIMIT) {
		bool by_free = room->free < room->bound;
		cs_error_destroy(err);
		return cs_error_create(
			CS_ERR_LIMIT,
			"%s: entry %zu (core %s), compressed (%s), inflates "
			"to more than %" PRIu64 " MiB, %s",
			path, i, e->path, kind, max >> 20,
			!by_free ? "past the bound on a bundle's files"
			: b->sysroot
				? "more than is free where it is extracted; "
				  "extract it where there is room"
				: "more than is free in TMPDIR; set TMPDIR to "
				  "a directory with room");
	}
	if (err) {
		/* the decoder's words, after the file it names */
		const char *what = err->message;
		size_t n = strlen(e->file);
		if (strncmp(what, e->file, n) == 0 &&
		    strncmp(what + n, ": ", 2) == 0)
			what += n + 2;
		struct cs_error *said =
			bad(path, "entry %zu (core %s): %s; " BUNDLE_AGAIN, i,
			    e->path, what);
		cs_error_destroy(err);
		return said;
	}
	if (!whole)
		return bad(path,
			   "entry %zu (core %s), compressed (%s), is cut off "
			   "after %" PRIu64 " inflated bytes; " BUNDLE_AGAIN,
			   i, e->path, kind, written);
	e->size = written;
	return NULL;
}

static struct cs_error *unpack_entry(int fd, const char *path,
				     struct cs_bundle *b, size_t i,
				     uint64_t off, uint64_t len,
				     const struct room *room)
{
	struct cs_bundle_entry *e = &b->entries[i];
	char *rel = rel_path(b, i, e);
	if (!rel || asprintf(&e->file, "%s/%s", b->dir, rel) < 0) {
		e->file = NULL;
		free(rel);
		return &cs_error_nomem;
	}
	/* extracted for a debugger: what the user's umask lets others read,
	 * but the core, which holds the process's memory */
	mode_t mode = !b->sysroot || e->kind == CS_BUNDLE_CORE ? 0600 : 0666;
	int out, why;
	char *where;
	struct cs_error *err = make_file(b, rel, b->sysroot ? 0777 : 0700, mode,
					 &out, &why, &where);
	free(rel);
	if (err)
		return err;
	if (out < 0)
		return not_created(b, path, i, why, where);
	uint64_t written = 0;
	err = cs_decompress_range(fd, path, "gzip", off, len, out, e->size,
				  &written, NULL);
	if (err && err->code == CS_ERR_OS) {
		/* this machine's fault (a full disk), not the bundle's */
		err = cannot_unpack(b, path, i, err);
	} else if (err || written != e->size) {
		cs_error_destroy(err);
		err = bad(path,
			  "entry %zu (%s %s) is corrupt: its data does not "
			  "inflate to its %" PRIu64 " bytes",
			  i, cs_bundle_kind_name(e->kind), e->path, e->size);
	} else if (e->kind == CS_BUNDLE_CORE) {
		err = inflate_core(out, path, b, i, room);
	}
	if (close(out) != 0 && !err)
		err = cannot_unpack(b, path, i,
				    cs_error_create(CS_ERR_OS,
						    "%s: cannot write: %s",
						    e->file, strerror(errno)));
	return err;
}

static struct cs_error *unpack(const char *path, const char *dir, bool sysroot,
			       bool keep_dir, struct cs_bundle *b)
{
	*b = (struct cs_bundle){
		.dir = dir, .sysroot = sysroot, .keep_dir = keep_dir};
	if (!(b->source = strdup(path)))
		return &cs_error_nomem;
	int fd = cs_open_regular(path);
	if (fd < 0)
		return cs_error_create(CS_ERR_OS, "%s: cannot open: %s", path,
				       strerror(errno));
	struct stat st;
	uint64_t *off = NULL, *len = NULL;
	struct room room = {0};
	struct cs_error *err = NULL;
	if (fstat(fd, &st) != 0)
		err = cs_error_create(CS_ERR_OS, "%s: cannot stat: %s", path,
				      strerror(errno));
	else
		err = read_index(fd, path, (uint64_t)st.st_size, b, &off, &len,
				 &room);
	if (!err && (!off || !len))
		err = &cs_error_nomem;
	for (size_t i = 0; !err && i < b->n; i++)
		err = unpack_entry(fd, path, b, i, off[i], len[i], &room);
	if (!err && sysroot)
		err = link_sonames(b);
	size_t k = 0;
	for (size_t i = 0; !err && i < b->n; i++) {
		const struct cs_bundle_entry *e = &b->entries[i];
		if (e->kind == CS_BUNDLE_EXE || e->kind == CS_BUNDLE_LIB) {
			b->file_map[k++] = e->path;
			b->file_map[k++] = e->file;
		}
	}
	free(off);
	free(len);
	close(fd);
	return err;
}

struct cs_error *cs_bundle_unpack(const char *path, const char *dir,
				  struct cs_bundle *b)
{
	return unpack(path, dir, false, false, b);
}

struct cs_error *cs_bundle_extract(const char *path, const char *dir,
				   bool keep_dir, struct cs_bundle *b)
{
	return unpack(path, dir, true, keep_dir, b);
}

void cs_bundle_remove_files(const struct cs_bundle *b)
{
	for (size_t i = b->made ? b->nmade : 0; i-- > 0;)
		if (unlink(b->made[i]) != 0)
			(void)rmdir(b->made[i]);
	if (b->dir && !b->keep_dir)
		(void)rmdir(b->dir);
}

void cs_bundle_free(struct cs_bundle *b)
{
	for (size_t i = 0; b->entries && i < b->n; i++) {
		free(b->entries[i].path);
		free(b->entries[i].file);
	}
	for (size_t i = 0; b->made && i < b->nmade; i++)
		free(b->made[i]);
	free(b->source);
	free(b->entries);
	free(b->file_map);
	free(b->made);
	memset(b, 0, sizeof(*b));
}

const struct cs_bundle_entry *cs_bundle_core(const struct cs_bundle *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->entries[i].kind == CS_BUNDLE_CORE)
			return &b->entries[i];
	return NULL;
}

const char *cs_bundle_path_of(const struct cs_bundle *b, const char *file)
{
	for (size_t i = 0; file && i < b->n; i++)
		if (b->entries[i].file && strcmp(b->entries[i].file, file) == 0)
			return b->entries[i].path;
	return file;
}
