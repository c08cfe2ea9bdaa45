/* Bundles written and unpacked again (process/bundle.c): the files come
 * back byte for byte under the names the reader makes, the file map pairs
 * the paths the core names with them, what a duplicate or a bad -o is
 * refused with, and that nothing is left once removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
