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
 * The path is where the file was on the machine that wrote the bundle:
 * for the core, the core given; for the others, the path the core names
 * (the executable's, a library's), or for a debug file where it was
 * found. It is only ever compared with the paths the core names, never
 * used as a path here: unpacked files get names the reader makes.
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
};

/* Check the bundle at path and unpack every entry into dir, an empty
 * directory that only the caller can write: the core as "core", the
 * executable as "exe", library i as "lib-i", a debug file under
 * ".build-id/xx/yyyy.debug" by its build-id. A malformed bundle is
 * CS_ERR_FORMAT, one whose files would not fit CS_ERR_LIMIT, each with a
 * message naming path and what is wrong. Files already unpacked stay in
 * dir on failure: cs_bundle_remove_files removes them, then
 * cs_bundle_free. */
struct cs_error *cs_bundle_unpack(const char *path, const char *dir,
				  struct cs_bundle *ret);

/* Remove what cs_bundle_unpack made in b->dir, newest first, then the
 * directory itself; async-signal-safe. Also after a failed unpack. */
void cs_bundle_remove_files(const struct cs_bundle *b);

void cs_bundle_free(struct cs_bundle *b);

/* The path file (an unpacked file) had when it was bundled; file itself
 * when it is none of b's. */
const char *cs_bundle_path_of(const struct cs_bundle *b, const char *file);

/* The entry of the core (there is one in an unpacked bundle). */
const struct cs_bundle_entry *cs_bundle_core(const struct cs_bundle *b);

#endif
