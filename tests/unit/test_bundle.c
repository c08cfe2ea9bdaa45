/* Bundles written and unpacked again (process/bundle.c): the files come
 * back byte for byte under the names the reader makes, the file map pairs
 * the paths the core names with them, what a duplicate or a bad -o is
 * refused with, and that nothing is left once removed. A bundle made as
 * those written before a compressed core was bundled inflated (its core
 * entry the compressed core) unpacks and extracts to the core itself;
 * one whose compressed core is cut off or corrupt is refused. */
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "process/bundle.h"
#include "tests/unit/check.h"

static char dir[64];

static void write_file(const char *path, const char *text, size_t copies)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	for (size_t i = 0; i < copies; i++)
		fputs(text, f);
	fclose(f);
}

static int same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int same = fa && fb;
	while (same) {
		int ca = fgetc(fa), cb = fgetc(fb);
		same = ca == cb;
		if (ca == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

static char *in_dir(const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

static uint8_t *read_whole(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0)
		abort();
	*n = (size_t)ftell(f);
	uint8_t *p = malloc(*n);
	rewind(f);
	if (!p || fread(p, 1, *n, f) != *n)
		abort();
	fclose(f);
	return p;
}

/* s[0..n) as one gzip stream (malloc'd, *len its size). */
static uint8_t *gzip_of(const uint8_t *s, size_t n, size_t *len)
{
	z_stream z = {0};
	size_t cap = compressBound((uLong)n) + 64;
	uint8_t *out = malloc(cap);
	if (!out || deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	z.next_in = (uint8_t *)s;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	*len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* ... as one xz stream. */
static uint8_t *xz_of(const uint8_t *s, size_t n, size_t *len)
{
	size_t cap = n + n / 2 + 4096;
	uint8_t *out = malloc(cap);
	*len = 0;
	if (!out || lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL, s, n,
					    out, len, cap) != LZMA_OK)
		abort();
	return out;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#define OLD_CORE_PATH "/var/crash/core.1.xz"

/* The bundle at out as one written before compressed cores were bundled
 * inflated: one entry, the core, whose file is z[0..n) (a compressed
 * core, as given), made by hand as process/bundle.h lays it out. */
static void write_old_bundle(const char *out, const uint8_t *z, size_t n)
{
	size_t glen, plen = strlen(OLD_CORE_PATH);
	uint8_t *g = gzip_of(z, n, &glen);
	uint8_t head[16 + 32] = "CSBUNDLE";
	put_le(head + 8, 1, 4);
	put_le(head + 12, 1, 4);
	head[16] = CS_BUNDLE_CORE;
	put_le(head + 18, plen, 2);
	put_le(head + 24, n, 8);
	put_le(head + 32, sizeof(head) + plen, 8);
	put_le(head + 40, glen, 8);
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(head, 1, sizeof(head), f) != sizeof(head) ||
	    fwrite(OLD_CORE_PATH, 1, plen, f) != plen ||
	    fwrite(g, 1, glen, f) != glen || fclose(f) != 0)
		abort();
	free(g);
}

/* Old bundles of the core, its bytes plain[0..n): whole, each unpacks
 * and extracts to the core itself; cut off or corrupt, each is refused
 * (CS_ERR_FORMAT, one line naming the bundle and what to do) and leaves
 * nothing. */
static void test_old_bundles(const char *core)
{
	size_t n, zn[2];
	uint8_t *plain = read_whole(core, &n);
	uint8_t *z[2] = {gzip_of(plain, n, &zn[0]), xz_of(plain, n, &zn[1])};
	const char *kinds[2] = {"gzip", "xz"};
	char *out = in_dir("old.bundle"), *unpack = in_dir("old-u"),
	     *ext = in_dir("old-x"), *at_core = in_dir("old-x/core"),
	     *tmp = in_dir("old-x/core.inflating");
	struct cs_bundle b;
	struct stat st;
	for (int k = 0; k < 2; k++) {
		write_old_bundle(out, z[k], zn[k]);
		CHECK(mkdir(unpack, 0700) == 0, "mkdir");
		struct cs_error *err = cs_bundle_unpack(out, unpack, &b);
		CHECK(!err, "%s: unpack: %s", kinds[k],
		      err ? err->message : "");
		if (!err) {
			CHECK(same_bytes(b.entries[0].file, core),
			      "%s: unpacked, the core itself", kinds[k]);
			CHECK(b.entries[0].size == n,
			      "%s: the core's size, %zu, not %llu", kinds[k], n,
			      (unsigned long long)b.entries[0].size);
		}
		cs_error_destroy(err);
		cs_bundle_remove_files(&b);
		cs_bundle_free(&b);
		CHECK(stat(unpack, &st) != 0, "%s: nothing left", kinds[k]);

		CHECK(mkdir(ext, 0700) == 0, "mkdir");
		err = cs_bundle_extract(out, ext, false, &b);
		CHECK(!err, "%s: extract: %s", kinds[k],
		      err ? err->message : "");
		CHECK(same_bytes(at_core, core) && stat(tmp, &st) != 0,
		      "%s: extracted, DIR/core the core itself, nothing "
		      "beside it",
		      kinds[k]);
		cs_error_destroy(err);
		cs_bundle_remove_files(&b);
		cs_bundle_free(&b);
		CHECK(stat(ext, &st) != 0, "%s: nothing left extracted",
		      kinds[k]);
	}

	/* the xz core cut off, then with bytes flipped in its middle */
	static const char *const says[] = {"compressed (xz), is cut off",
					   "the stream is corrupt"};
	for (int how = 0; how < 2; how++) {
		uint8_t *bad = malloc(zn[1]);
		memcpy(bad, z[1], zn[1]);
		for (size_t i = zn[1] / 2; how && i < zn[1] / 2 + 16; i++)
			bad[i] ^= 0x5a;
		write_old_bundle(out, bad, how ? zn[1] : zn[1] / 2);
		free(bad);
		for (int extract = 0; extract < 2; extract++) {
			const char *d = extract ? ext : unpack;
			CHECK(mkdir(d, 0700) == 0, "mkdir");
			struct cs_error *err =
				extract ? cs_bundle_extract(out, d, false, &b)
					: cs_bundle_unpack(out, d, &b);
			CHECK(err && err->code == CS_ERR_FORMAT &&
				      strstr(err->message, out) &&
				      strstr(err->message, says[how]) &&
				      strstr(err->message,
					     "bundle the core again") &&
				      !strchr(err->message, '\n'),
			      "%s: %s", says[how],
			      err ? err->message : "accepted");
			cs_error_destroy(err);
			cs_bundle_remove_files(&b);
			cs_bundle_free(&b);
			CHECK(stat(d, &st) != 0, "%s: nothing left", says[how]);
		}
	}
	unlink(out);
	free(plain);
	free(z[0]);
	free(z[1]);
	free(out);
	free(unpack);
	free(ext);
	free(at_core);
	free(tmp);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_bundle.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	char *core = in_dir("core.1"), *lib = in_dir("libx.so"),
	     *dbg = in_dir("x.debug"), *out = in_dir("b.bundle"),
	     *unpack = in_dir("u");
	write_file(core, "core bytes ", 100000);
	write_file(lib, "\177ELF library", 1);
	write_file(dbg, "", 0);
	struct cs_bundle_entry e[3] = {
		{.kind = CS_BUNDLE_CORE, .path = core, .file = core},
		{.kind = CS_BUNDLE_LIB,
		 .path = "/usr/lib/libx.so",
		 .file = lib,
		 .build_id = {1, 2, 3, 4},
		 .build_id_len = 4},
		{.kind = CS_BUNDLE_DEBUG,
		 .path = "/usr/lib/debug/x.debug",
		 .file = dbg,
		 .build_id = {1, 2, 3, 4},
		 .build_id_len = 4},
	};
	struct cs_error *err = cs_bundle_write(out, false, e, 3);
	CHECK(!err, "write: %s", err ? err->message : "");
	CHECK(e[0].size == 1100000, "the core's size set: %llu",
	      (unsigned long long)e[0].size);
	CHECK(cs_bundle_is(out) && !cs_bundle_is(core), "told by its magic");

	/* an existing -o: refused, untouched, unless forced */
	err = cs_bundle_write(core, false, e, 3);
	CHECK(err && strstr(err->message, "exists; pass --force"),
	      "existing: %s", err ? err->message : "written");
	cs_error_destroy(err);
	CHECK(e[0].size == 1100000, "the refused write leaves sizes");

	CHECK(mkdir(unpack, 0700) == 0, "mkdir");
	struct cs_bundle b;
	err = cs_bundle_unpack(out, unpack, &b);
	CHECK(!err, "unpack: %s", err ? err->message : "");
	CHECK(b.n == 3, "3 entries, not %zu", b.n);
	if (!err && b.n == 3) {
		CHECK(same_bytes(b.entries[0].file, core), "core back");
		CHECK(same_bytes(b.entries[1].file, lib), "lib back");
		CHECK(same_bytes(b.entries[2].file, dbg), "debug file back");
		CHECK(strstr(b.entries[2].file, "/.build-id/01/020304.debug") !=
			      NULL,
		      "debug file by build-id: %s", b.entries[2].file);
		CHECK(b.file_map[0] &&
			      strcmp(b.file_map[0], "/usr/lib/libx.so") == 0 &&
			      b.file_map[1] == b.entries[1].file &&
			      !b.file_map[2],
		      "the file map: the library alone");
		CHECK(strcmp(cs_bundle_path_of(&b, b.entries[1].file),
			     "/usr/lib/libx.so") == 0,
		      "path of the unpacked file");
		CHECK(cs_bundle_core(&b) == &b.entries[0], "the core entry");
	}
	cs_bundle_remove_files(&b);
	cs_bundle_free(&b);
	struct stat st;
	CHECK(stat(unpack, &st) != 0, "nothing left of the unpacked bundle");

	/* extracted for a debugger: each file at its path under the
	 * directory, the debug file under usr/lib/debug by build-id */
	char *ext = in_dir("x");
	CHECK(mkdir(ext, 0700) == 0, "mkdir");
	err = cs_bundle_extract(out, ext, true, &b);
	CHECK(!err, "extract: %s", err ? err->message : "");
	char *at_core = in_dir("x/core"), *at_lib = in_dir("x/usr/lib/libx.so"),
	     *at_dbg = in_dir("x/usr/lib/debug/.build-id/01/020304.debug");
	CHECK(same_bytes(at_core, core), "core at DIR/core");
	CHECK(same_bytes(at_lib, lib), "lib at DIR/usr/lib/libx.so");
	CHECK(same_bytes(at_dbg, dbg), "debug file by build-id");
	CHECK(b.n == 3 && b.entries[1].file &&
		      strcmp(b.entries[1].file, at_lib) == 0,
	      "the entry names its file: %s",
	      b.n == 3 ? b.entries[1].file : "");
	cs_bundle_remove_files(&b);
	cs_bundle_free(&b);
	CHECK(stat(ext, &st) == 0 && rmdir(ext) == 0,
	      "removed but the directory kept (keep_dir)");

	/* a stored path that could lead outside: refused, nothing made */
	static const char *const unsafe[] = {
		"usr/lib/libx.so", "/usr/../../libx.so", "/usr//libx.so",
		"/usr/./libx.so",  "/usr/lib/",          "/usr/lib\nx.so"};
	static const char *const says[] = {
		"is not absolute",        "has a \"..\" component",
		"has an empty component", "has a \".\" component",
		"has an empty component", "holds a control character"};
	for (size_t i = 0; i < sizeof(unsafe) / sizeof(*unsafe); i++) {
		struct cs_bundle_entry bad_e[2] = {e[0], e[1]};
		bad_e[1].path = (char *)unsafe[i];
		CHECK(!(err = cs_bundle_write(out, true, bad_e, 2)), "write");
		cs_error_destroy(err);
		CHECK(mkdir(ext, 0700) == 0, "mkdir");
		err = cs_bundle_extract(out, ext, false, &b);
		CHECK(err && err->code == CS_ERR_FORMAT &&
			      strstr(err->message, says[i]) &&
			      strstr(err->message, out),
		      "%s: %s", unsafe[i], err ? err->message : "accepted");
		cs_error_destroy(err);
		cs_bundle_remove_files(&b);
		cs_bundle_free(&b);
		CHECK(stat(ext, &st) != 0,
		      "%s: nothing left, the directory "
		      "removed",
		      unsafe[i]);
	}
	free(ext);
	free(at_core);
	free(at_lib);
	free(at_dbg);
	CHECK(!(err = cs_bundle_write(out, true, e, 3)), "rewrite");
	cs_error_destroy(err);

	/* the same library twice: written, but refused when read */
	struct cs_bundle_entry twice[3] = {e[0], e[1], e[1]};
	CHECK(!(err = cs_bundle_write(out, true, twice, 3)), "forced write");
	cs_error_destroy(err);
	CHECK(mkdir(unpack, 0700) == 0, "mkdir");
	err = cs_bundle_unpack(out, unpack, &b);
	CHECK(err && strstr(err->message, "entries 1 and 2 are the same lib"),
	      "duplicate: %s", err ? err->message : "accepted");
	cs_error_destroy(err);
	cs_bundle_remove_files(&b);
	cs_bundle_free(&b);
	CHECK(stat(unpack, &st) != 0, "nothing left of the refused bundle");

	/* a file that cannot be read: no bundle left behind */
	struct cs_bundle_entry gone[2] = {e[0], e[1]};
	gone[1].file = "/nonexistent/libx.so";
	err = cs_bundle_write(out, true, gone, 2);
	CHECK(err && strstr(err->message, "/nonexistent/libx.so"),
	      "unreadable file: %s", err ? err->message : "written");
	cs_error_destroy(err);
	CHECK(stat(out, &st) != 0, "the partial bundle removed");

	test_old_bundles(core);

	unlink(core);
	unlink(lib);
	unlink(dbg);
	rmdir(dir);
	free(core);
	free(lib);
	free(dbg);
	free(out);
	free(unpack);
	return check_summary("test_bundle");
}
