/* A bundle: one file holding a core and the files its analysis reads (the
 * executable, the shared libraries the core maps, their debug files), so
 * that the core can be read on a machine that has none of them.
 * docs/bundle.md describes it for users.
 *
 * The format, every integer little-endian:
 *
 *   header   8 bytes  magic "CSBUNDLE"
 *            4        version (CS_BUNDLE_VERSION)
 *            4        number of entries (1 to CS_BUNDLE_MAX_ENTRIES)
 *   index    one record per entry, in the order of the data:
 *            1        kind (enum cs_bundle_kind)
 *            1        build-id length (0 to CS_BUNDLE_MAX_BUILD_ID)
 *            2        path length (1 to CS_BUNDLE_MAX_PATH)
 *            4        zero
 *            8        size of the file (inflated)
 *            8        offset of its data in the bundle
 *            8        length of its data
 *            the build-id's bytes, then the path's (no NUL)
 *   data     per entry, the file as one gzip stream (RFC 1952)
 *
 * Bundles written before a compressed core was bundled inflated hold it as
 * given: the core entry's file is the compressed core (its size the
 * compressed file's). The reader inflates it (cs_bundle_unpack).
 *
 * The path is where the file was on the machine that wrote the bundle:
 * for the core, the core given; for the others, the path the core names
 * (the executable's, a library's), or for a debug file where it was
 * found. Unpacked for an analysis, it is only ever compared with the
 * paths the core names, never used as a path: the files get names the
 * reader makes. Extracted for a debugger, the executable and the
 * libraries are laid out under a directory at the paths they were
 * bundled by, once each path is checked to be plain and absolute.
 *
 * Exactly one core entry; at most one executable; no two entries of one
 * kind with the same path, nor two debug files with one build-id. */
#ifndef CS_PROCESS_BUNDLE_H
#define CS_PROCESS_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"

#define CS_BUNDLE_MAGIC "CSBUNDLE"
#define CS_BUNDLE_VERSION 1
#define CS_BUNDLE_MAX_ENTRIES 4096
#define CS_BUNDLE_MAX_PATH 4096
#define CS_BUNDLE_MAX_BUILD_ID 64
/* The most all entries may inflate to together (also bounded by the free
 * space where they are unpacked). */
#define CS_BUNDLE_MAX_TOTAL ((uint64_t)256 << 30)
/* Where cs_bundle_extract puts the debug files, under its directory: the
 * debug directory a Linux system has by default (.build-id/ under it). */
#define CS_BUNDLE_DEBUG_DIR "usr/lib/debug"

enum cs_bundle_kind {
	CS_BUNDLE_CORE = 1,
	CS_BUNDLE_EXE = 2,
	CS_BUNDLE_LIB = 3,
	CS_BUNDLE_DEBUG = 4,
};

/* "core", "exe", "lib", "debug"; "?" for another value. */
const char *cs_bundle_kind_name(int kind);

/* One file of a bundle: to write, where it is here (file); read back,
 * where it was unpacked (file, a name the reader made). */
struct cs_bundle_entry {
	int kind;
	char *path; /* on the machine that wrote the bundle */
	char *file; /* on this machine */
	uint8_t build_id[CS_BUNDLE_MAX_BUILD_ID];
	size_t build_id_len;
	uint64_t size;
};

/* Does the file at path start as a bundle does? */
bool cs_bundle_is(const char *path);

/* Write a bundle of the n entries (each's kind, path, file, build-id; its
 * size is set) to out, which must not exist unless force. On failure (a file that cannot
 * be read, a write error such as ENOSPC) the partial file is removed. */
struct cs_error *cs_bundle_write(const char *out, bool force,
				 struct cs_bundle_entry *entries, size_t n);

/* A bundle unpacked into a directory. */
struct cs_bundle {
	char *source;    /* the bundle file */
	const char *dir; /* the directory (made by the caller) */
	struct cs_bundle_entry *entries;
	size_t n;
	/* The core's paths mapped to the unpacked files: pairs, ended by
	 * NULL (what cs_core_set_file_map takes). */
	const char **file_map;
	/* Every file and directory made in dir, in the order made (room
	 * for all made before the first): what cs_bundle_remove_files
	 * removes, with system calls only, so a signal handler may too. */
	char **made;
	size_t nmade;
	bool sysroot;  /* laid out by cs_bundle_extract */
	bool keep_dir; /* cs_bundle_remove_files leaves dir itself */
};

/* Check the bundle at path and unpack every entry into dir, an empty
 * directory that only the caller can write: the core as "core", the
 * executable as "exe", library i as "lib-i", a debug file under
 * ".build-id/xx/yyyy.debug" by its build-id; a core entry that is a
 * compressed core (told by its magic) is inflated in its place, its size
 * then the core's. A malformed bundle is CS_ERR_FORMAT (a compressed
 * core that is corrupt or cut off too), one whose files would not fit
 * CS_ERR_LIMIT, each with a message naming path and what is wrong. Files already unpacked stay in
 * dir on failure: cs_bundle_remove_files removes them, then
 * cs_bundle_free. */
struct cs_error *cs_bundle_unpack(const char *path, const char *dir,
				  struct cs_bundle *ret);

/* Check the bundle at path as cs_bundle_unpack does and lay its files
 * out under dir as on the machine that wrote it, for a debugger to read
 * with dir as its sysroot: the core as "core", the executable and each
 * library at the path the core names it by (without the " (deleted)" the
 * kernel adds to a file deleted since it was mapped: the dynamic
 * linker's name of it) under dir, a debug file under
 * CS_BUNDLE_DEBUG_DIR "/.build-id/xx/yyyy.debug". dir must exist and be
 * empty. A stored path that is not absolute or has an empty, "." or ".."
 * component or a control character is refused (CS_ERR_FORMAT) before
 * anything is made, as is one that lands on a file extracted before it.
 * Every file and directory is made relative to one made here, follows no
 * symbolic link and opens nothing that exists (O_EXCL, O_NOFOLLOW), so
 * nothing is made or written outside dir. Files are mode 0666 and
 * directories 0777 less the umask, the core 0600. On failure, as for
 * cs_bundle_unpack: cs_bundle_remove_files removes what was made (dir
 * too unless keep_dir), then cs_bundle_free. */
struct cs_error *cs_bundle_extract(const char *path, const char *dir,
				   bool keep_dir, struct cs_bundle *ret);

/* Remove what cs_bundle_unpack (or cs_bundle_extract) made in b->dir,
 * newest first, then the directory itself unless b->keep_dir;
 * async-signal-safe. Also after a failed unpack. */
void cs_bundle_remove_files(const struct cs_bundle *b);

void cs_bundle_free(struct cs_bundle *b);

/* The path file (an unpacked file) had when it was bundled; file itself
 * when it is none of b's. */
const char *cs_bundle_path_of(const struct cs_bundle *b, const char *file);

/* The entry of the core (there is one in an unpacked bundle). */
const struct cs_bundle_entry *cs_bundle_core(const struct cs_bundle *b);

#endif
