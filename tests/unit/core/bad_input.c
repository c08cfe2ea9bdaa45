/* process/core_*.c on bad input: files that are no core, a sysroot that
 * must confine, truncated and randomly corrupted cores. */
#include "tests/unit/core/core_test.h"

#include <elf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- bad input ---- */

/* Open must fail with CS_ERR_FORMAT and a one-line message naming the
 * file and containing want. */
static void expect_format(const char *path, const char *want, char *why,
			  size_t whysize)
{
	struct cs_core *core = NULL;
	struct cs_error *err = cs_core_open(path, &core);
	if (!err) {
		fail(why, whysize, "%s opened", path);
		cs_core_close(core);
		return;
	}
	if (core)
		fail(why, whysize, "*ret not NULL on error");
	if (err->code != CS_ERR_FORMAT)
		fail(why, whysize, "code %d: %s", err->code, err->message);
	else if (strncmp(err->message, path, strlen(path)) != 0 ||
		 !strstr(err->message, want) || strchr(err->message, '\n'))
		fail(why, whysize, "message lacks '%s': %s", want,
		     err->message);
	else
		printf("     (%s)\n", err->message);
	cs_error_destroy(err);
}

/* NT_FILE paths under --sysroot: ".." never climbs out of it. */
void test_sysroot_confined(void)
{
	static const char *const cases[][2] = {
		{"/lib/x.so", "/lib/x.so"},
		{"/../../etc/passwd", "/etc/passwd"},
		{"/lib/../../../../etc/shadow", "/etc/shadow"},
		{"/./lib//./x.so", "/lib/x.so"},
		{"lib/x.so", "/lib/x.so"},
		{"/a/b/../c", "/a/c"},
		{"/..", "/"},
		{"", "/"},
	};
	char why[1024] = "";
	struct cs_core *core = NULL;
	NO_ERROR(cs_core_open(core_path, &core), "open");
	if (core)
		NO_ERROR(cs_core_set_sysroot(core, "/srv/root"), "set_sysroot");
	for (size_t i = 0; core && i < sizeof(cases) / sizeof(*cases); i++) {
		char want[64];
		snprintf(want, sizeof(want), "/srv/root%s", cases[i][1]);
		char *got = cs_core_host_path(core, cases[i][0]);
		if (!got || strcmp(got, want) != 0)
			snprintf(why, sizeof(why), "'%s' -> '%s', want '%s'",
				 cases[i][0], got ? got : "(null)", want);
		free(got);
	}
	cs_core_close(core);
	report("NT_FILE paths stay under the sysroot", why);
}

void test_bad_files(void)
{
	char why[1024] = "";
	char *p = tmp_path("core.empty");
	write_file(p, "", 0);
	expect_format(p, "empty file", why, sizeof(why));
	free(p);
	report("empty file is refused", why);

	why[0] = '\0';
	p = tmp_path("core.text");
	write_file(p, "hello, world\n", 13);
	expect_format(p, "not an ELF file (is this a core dump?)", why,
		      sizeof(why));
	free(p);
	p = tmp_path("core.tiny");
	write_file(p, "\x7f", 1);
	expect_format(p, "not an ELF file", why, sizeof(why));
	free(p);
	p = tmp_path("core.zst");
	write_file(p, "\x28\xb5\x2f\xfd\0\0\0\0", 8);
	expect_format(p, "zstd-compressed", why, sizeof(why));
	free(p);
	/* an lz4 frame descriptor of version 0, a bzip2 stream whose first
	 * block has no block magic */
	p = tmp_path("core.lz4");
	write_file(p, "\x04\x22\x4d\x18\0\0\0\0", 8);
	expect_format(p, "lz4-compressed, but the stream is corrupt", why,
		      sizeof(why));
	free(p);
	p = tmp_path("core.bz2");
	write_file(p, "BZh9\0\0\0\0\0\0\0\0", 12);
	expect_format(p, "bzip2-compressed, but the stream is corrupt", why,
		      sizeof(why));
	free(p);
	p = tmp_path("core.dir");
	mkdir(p, 0755);
	expect_format(p, "directory", why, sizeof(why));
	rmdir(p);
	free(p);
	report("non-ELF files are refused", why);

	why[0] = '\0';
	struct buf b = {0};
	ehdr(&b, ELFCLASS64, ET_EXEC, EM_X86_64, 0);
	p = tmp_path("exec");
	write_file(p, b.p, b.len);
	expect_format(p, "ELF type is EXEC, not a core dump (did you swap", why,
		      sizeof(why));
	free(p);
	free(b.p);
	b = (struct buf){0};
	ehdr(&b, ELFCLASS64, ET_DYN, EM_X86_64, 0);
	p = tmp_path("libx.so");
	write_file(p, b.p, b.len);
	expect_format(p, "ELF type is DYN", why, sizeof(why));
	free(p);
	free(b.p);
	b = (struct buf){0};
	ehdr(&b, ELFCLASS64, ET_CORE, EM_AARCH64, 0);
	p = tmp_path("core.arm");
	write_file(p, b.p, b.len);
	expect_format(p, "not x86-64", why, sizeof(why));
	free(p);
	free(b.p);
	b = (struct buf){0};
	ehdr(&b, ELFCLASS32, ET_CORE, EM_386, 0);
	p = tmp_path("core.32");
	write_file(p, b.p, 52);
	expect_format(p, "64-bit", why, sizeof(why));
	free(p);
	free(b.p);
	b = (struct buf){0};
	ehdr(&b, ELFCLASS64, ET_CORE, EM_X86_64, 0);
	p = tmp_path("core.nophdr");
	write_file(p, b.p, b.len);
	expect_format(p, "no program headers", why, sizeof(why));
	free(p);
	free(b.p);
	report("ELF files that are not x86-64 cores are refused", why);

	why[0] = '\0';
	struct synth o = {.nt_file = 1, .bad_file_descsz = 0xfffffff0u};
	struct layout l2;
	b = synth_core(&o, &l2);
	p = tmp_path("core.badnote");
	write_file(p, b.p, b.len);
	expect_format(p, "past the end of its segment", why, sizeof(why));
	free(b.p);
	free(p);
	/* and a NT_FILE count that does not fit its note */
	b = synth_core(&(struct synth){.nt_file = 1}, &l2);
	/* "CORE" padded, count 3, page size 0x1000 */
	uint8_t *nf =
		memmem(b.p, b.len, "CORE\0\0\0\0\x03\0\0\0\0\0\0\0\0\x10", 18);
	if (!nf) {
		FAIL("test bug: NT_FILE note not found");
	} else {
		set64(nf + 8, 1000000);
		p = tmp_path("core.badcount");
		write_file(p, b.p, b.len);
		expect_format(p, "NT_FILE note is malformed", why, sizeof(why));
		free(p);
	}
	free(b.p);
	report("note sizes past their segment are refused", why);
}

/* Open, then touch everything; must not crash whatever the input. */
int exercise(const char *path, struct cs_core **keep)
{
	struct cs_core *core = NULL;
	struct cs_error *err = cs_core_open(path, &core);
	if (err) {
		int ok = err->code == CS_ERR_FORMAT && err->message &&
			 !strchr(err->message, '\n');
		cs_error_destroy(err);
		return ok ? 0 : -1;
	}
	cs_core_set_sysroot(core, tmpdir);
	static const uint64_t addrs[] = {0,       0x10000, 0x11ff8, 0x12ff0,
					 0x20000, 0x20ff8, 0x22000, 0x30000,
					 0x40000, 0xdead};
	uint8_t buf[0x100];
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		cs_error_destroy(
			cs_core_read(core, addrs[i], buf, sizeof(buf)));
		cs_error_destroy(cs_core_read_dumped(core, addrs[i], buf, 8));
		size_t len;
		cs_error_destroy(cs_core_module_build_id(core, addrs[i], buf,
							 sizeof(buf), &len));
	}
	for (size_t i = 0; i < cs_core_tables(core)->nthreads; i++) {
		const struct cs_thread *t =
			cs_tables_thread_at(cs_core_tables(core), i);
		cs_error_destroy(cs_core_read(core, t->rsp, buf, 16));
	}
	for (size_t i = 0; i < cs_core_tables(core)->nmaps; i++) {
		const struct cs_mapping *m =
			cs_tables_mapping_at(cs_core_tables(core), i);
		if (strlen(m->path) > PATH_MAX * 4)
			abort();
		cs_error_destroy(cs_core_read(core, m->start, buf, 8));
	}
	const char *exe = cs_core_tables(core)->executable;
	if (exe && strlen(exe) > PATH_MAX * 4)
		abort();
	cs_tables_find_mapping(cs_core_tables(core), "lib");
	cs_tables_auxv(cs_core_tables(core), AT_PHDR);
	(void)cs_core_process(core)->psargs[0];
	(void)cs_core_tables(core)->siginfo->addr;
	cs_error_destroy(cs_core_truncation(core));
	if (keep)
		*keep = core;
	else
		cs_core_close(core);
	return 1;
}

/* What a truncated core's message says of its size. */
static const char *expect_cut(char *buf, size_t size, size_t have,
			      const char *at_least, uint64_t described,
			      const char *missing)
{
	snprintf(buf, size,
		 "truncated core: the file has %zu bytes but its headers "
		 "describe %s%llu, so %s missing",
		 have, at_least, (unsigned long long)described, missing);
	return buf;
}

void test_truncated(void)
{
	char why[1024] = "";
	char *p = tmp_path("core.cut");
	size_t phdr_end = 64 + 56 * 5;
	int opened = 0, refused = 0;
	for (size_t cut = 0; cut < good.len; cut++) {
		write_file(p, good.p, cut);
		struct cs_core *core = NULL;
		int r = exercise(p, &core);
		if (r < 0)
			FAIL("cut at %zu: error is not a one-line "
			     "CS_ERR_FORMAT",
			     cut);
		if (r == 1) {
			opened++;
			struct cs_error *t = cs_core_truncation(core);
			if (!t)
				FAIL("cut at %zu: opened, but no truncation "
				     "reported",
				     cut);
			else if (!strstr(t->message, "truncated"))
				FAIL("cut at %zu: %s", cut, t->message);
			cs_error_destroy(t);
			cs_core_close(core);
		} else {
			refused++;
		}
		if (cut < phdr_end && r != 0)
			FAIL("cut at %zu inside the headers: opened", cut);
		if (cut >= phdr_end && r != 1)
			FAIL("cut at %zu after the headers: refused", cut);
		/* beyond the notes the rest is sampled: it is all alike */
		if (cut > lay.a_off + 64 && cut < lay.end - 64)
			cut += 61;
	}
	printf("     (%d cuts opened, %d refused cleanly)\n", opened, refused);
	report("truncated at every offset: opens or fails cleanly", why);

	why[0] = '\0';
	/* cut in the ELF header and in the program headers: one message,
	 * the bytes the file has and the least its headers describe */
	char want[256];
	for (size_t k = 0; k < 2; k++) {
		size_t cut = k ? 100 : 30;
		write_file(p, good.p, cut);
		struct cs_core *c = NULL;
		struct cs_error *e = cs_core_open(p, &c);
		expect_cut(want, sizeof(want), cut, "at least ",
			   k ? phdr_end : 64,
			   k ? "the program headers and all they describe are"
			     : "the ELF header and all after it are");
		if (!e || !strstr(e->message, want) ||
		    !strstr(e->message, "ulimit -c"))
			FAIL("cut at %zu: %s, expected %s", cut,
			     e ? e->message : "(opened)", want);
		cs_error_destroy(e);
		cs_core_close(c);
	}

	/* half of the memory data gone: segments total 0x4000 bytes */
	write_file(p, good.p, lay.a_off + 0x2000);
	struct cs_core *core = NULL;
	NO_ERROR(cs_core_open(p, &core), "open cut core");
	if (core) {
		NO_ERROR(cs_core_set_sysroot(core, tmpdir), "set_sysroot");
		struct cs_error *t = cs_core_truncation(core);
		if (cs_core_truncated_bytes(core) != 0x2000 ||
		    cs_core_segment_bytes(core) != 0x4000)
			FAIL("truncated bytes 0x%llx of 0x%llx",
			     (unsigned long long)cs_core_truncated_bytes(core),
			     (unsigned long long)cs_core_segment_bytes(core));
		else if (!t ||
			 !strstr(t->message,
				 expect_cut(want, sizeof(want),
					    lay.a_off + 0x2000, "", lay.end,
					    "50% of the memory "
					    "segments are")))
			FAIL("message: %s, expected %s",
			     t ? t->message : "(none)", want);
		else
			printf("     (%s)\n", t->message);
		cs_error_destroy(t);
		/* what is left still reads; the lost module page does not */
		check_range(core, 0x11ff0, 16, why, sizeof(why));
		check_fault(core, 0x12000, 8, "cut off", why, sizeof(why));
		/* C's first page was dumped, then lost: the file on disk
		 * may hold other bytes than the process had, so no fallback;
		 * C's never-dumped rest still comes from the file */
		check_fault(core, 0x20000, 16, "cut off", why, sizeof(why));
		check_range(core, 0x21000, 16, why, sizeof(why));
		if (cs_core_tables(core)->nthreads != 2)
			FAIL("threads lost");
	}
	cs_core_close(core);
	/* cut inside the notes: the threads before the cut remain */
	write_file(p, good.p, lay.notes_off + 400);
	core = NULL;
	NO_ERROR(cs_core_open(p, &core), "open core cut in its notes");
	if (core) {
		struct cs_error *t = cs_core_truncation(core);
		if (cs_core_tables(core)->nthreads != 1)
			FAIL("%zu threads from cut notes",
			     cs_core_tables(core)->nthreads);
		if (!t || !strstr(t->message, "notes"))
			FAIL("message: %s", t ? t->message : "(none)");
		else
			printf("     (%s)\n", t->message);
		cs_error_destroy(t);
	}
	cs_core_close(core);
	free(p);
	report("truncation is measured and reported", why);
}

void test_fuzz(void)
{
	char why[1024] = "";
	char *p = tmp_path("core.fuzz");
	uint64_t s = 0x9e3779b97f4a7c15ull; /* fixed seed: reproducible */
	int opened = 0, n = 3000;
	struct buf m = {0};
	put(&m, NULL, good.len);
	for (int i = 0; i < n; i++) {
		memcpy(m.p, good.p, good.len);
		int flips = 1 + (int)(s % 8);
		for (int k = 0; k < flips; k++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			/* mostly the headers and notes, where sizes live */
			size_t at = (size_t)(s >> 16) %
				    (k & 1 ? good.len : lay.a_off);
			uint8_t v = (uint8_t)(s >> 8);
			m.p[at] = (s & 3) == 0 ? 0xff : (s & 3) == 1 ? 0 : v;
		}
		write_file(p, m.p, m.len);
		int r = exercise(p, NULL);
		if (r < 0)
			FAIL("mutant %d: bad error", i);
		opened += r == 1;
	}
	printf("     (%d of %d mutants opened)\n", opened, n);
	free(m.p);
	free(p);
	report("randomly corrupted cores never crash", why);
}
