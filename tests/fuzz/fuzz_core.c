/* libFuzzer harness for the ELF core reader (process/core_*.c).
 *
 * Each input is written to a memfd (one per process, rewritten per input)
 * and opened with cs_core_open through /proc/self/fd/N (a compressed one,
 * told by its magic, inflated first: process/decompress.c). If it opens, every
 * accessor is exercised, plus reads at each mapping start and at addresses
 * taken from the input's last bytes. NT_FILE paths are resolved under a
 * private sysroot (a temp dir holding one small file, /lib/x.so), so a
 * mutated core never reads the host's files.
 *
 * Build: see tests/fuzz/Makefile.inc (make fuzz-build). */
#include "process/core.h"
#include "tests/fuzz/core_input.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct core_input in = {.memfd = -1};
static char lib_dir[128], lib_file[160];

static void cleanup(void)
{
	unlink(lib_file);
	rmdir(lib_dir);
	rmdir(in.sysroot);
}

static void setup(void)
{
	core_input_init(&in, "fuzz_core");
	snprintf(lib_dir, sizeof(lib_dir), "%s/lib", in.sysroot);
	mkdir(lib_dir, 0755);
	snprintf(lib_file, sizeof(lib_file), "%s/x.so", lib_dir);
	atexit(cleanup);
	FILE *f = fopen(lib_file, "wb");
	if (!f)
		abort();
	for (int i = 0; i < 3 * 4096; i++)
		fputc((i * 7 + 3) & 0xff, f);
	fclose(f);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void read_at(struct cs_core *core, uint64_t addr, size_t len)
{
	uint8_t buf[256];
	if (len > sizeof(buf))
		len = sizeof(buf);
	cs_error_destroy(cs_core_read(core, addr, buf, len));
	cs_error_destroy(cs_core_read_dumped(core, addr, buf, len));
	struct cs_memory t = cs_core_memory(core);
	cs_error_destroy(cs_memory_read(&t, addr, buf, len));
}

/* Touch every byte of a string the reader hands out (ASan checks it). */
static volatile size_t sink;
static void touch(const char *s)
{
	if (s)
		sink += strlen(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (in.memfd < 0)
		setup();
	struct cs_core *core = core_input_open(&in, data, size);
	if (!core)
		return 0;
	touch(cs_core_path(core));
	struct cs_error *err;

	size_t nt = cs_core_tables(core)->nthreads;
	for (size_t i = 0; i <= nt; i++) {
		const struct cs_thread *t =
			cs_tables_thread_at(cs_core_tables(core), i);
		if (i == nt ? t != NULL : t == NULL)
			abort();
		if (t)
			sink += (size_t)t->tid + t->rip + t->regs[26];
	}
	size_t nm = cs_core_tables(core)->nmaps;
	uint64_t prev = 0;
	for (size_t i = 0; i <= nm; i++) {
		const struct cs_mapping *m =
			cs_tables_mapping_at(cs_core_tables(core), i);
		if (i == nm) {
			if (m)
				abort();
			break;
		}
		if (!m || m->start < prev) /* documented: sorted by start */
			abort();
		prev = m->start;
		touch(m->path);
		const struct cs_mapping *of =
			cs_tables_mapping_of(cs_core_tables(core), m->start);
		if (of)
			touch(of->path);
		if (m->end)
			(void)cs_tables_mapping_of(cs_core_tables(core),
						   m->end - 1);
		uint8_t id[64];
		size_t idlen = 0;
		err = cs_core_module_build_id(core, m->start, id, sizeof(id),
					      &idlen);
		if (!err && idlen > sizeof(id))
			abort();
		cs_error_destroy(err);
		err = cs_core_module_build_id(core, m->start, id, 4, &idlen);
		if (!err && idlen > 4)
			abort();
		cs_error_destroy(err);
		if (i < 16) {
			read_at(core, m->start, 64);
			read_at(core, m->end - 8, 16); /* spans the end */
		}
	}
	const struct cs_core_process *p = cs_core_process(core);
	if (p) {
		touch(p->fname);
		touch(p->psargs);
	}
	const struct cs_siginfo *si = cs_core_tables(core)->siginfo;
	if (si)
		sink += (size_t)si->signo + si->addr;
	for (uint64_t type = 0; type < 48; type++)
		sink += cs_tables_auxv(cs_core_tables(core), type);
	sink += cs_tables_auxv(cs_core_tables(core), UINT64_MAX);
	touch(cs_core_tables(core)->executable);
	const struct cs_mapping *lib =
		cs_tables_find_mapping(cs_core_tables(core), "libruby.so");
	if (lib)
		touch(lib->path);
	lib = cs_tables_find_mapping(cs_core_tables(core), "");
	if (lib)
		touch(lib->path);
	sink += cs_core_truncated_bytes(core) + cs_core_segment_bytes(core);
	err = cs_core_truncation(core);
	if (err)
		touch(err->message);
	cs_error_destroy(err);

	/* Addresses from the input's tail: both arbitrary ones and ones near
	 * the mappings, with lengths that may cross segment boundaries. */
	for (size_t off = 0; off + 10 <= size && off < 80; off += 10) {
		const uint8_t *q = data + size - off - 10;
		uint64_t a = le64(q);
		size_t len = (size_t)(q[8] | (q[9] << 8)) % 257;
		read_at(core, a, len);
		if (nm) {
			const struct cs_mapping *m = cs_tables_mapping_at(
				cs_core_tables(core), q[8] % nm);
			read_at(core, m->start + (a % 0x3000), len);
		}
		uint8_t id[32];
		size_t idlen;
		cs_error_destroy(cs_core_module_build_id(core, a, id,
							 sizeof(id), &idlen));
	}
	read_at(core, 0, 1);
	read_at(core, UINT64_MAX - 3, 8);
	cs_error_destroy(cs_core_read(core, 0x1000, NULL, 0));
	cs_core_close(core);
	return 0;
}
