/* process/core_*.c on the synthetic core: reads, notes, the files
 * NT_FILE names. */
#include "tests/unit/core/core_test.h"

#include <dirent.h>
#include <elf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void test_reads(void)
{
	char why[1024] = "";
	struct cs_core *core = open_good(why, sizeof(why));
	if (core) {
		check_range(core, 0x10000, 16, why, sizeof(why));
		check_range(core, 0x11ff0, 16, why, sizeof(why));
		check_range(core, 0x12abc, 3, why, sizeof(why));
		check_range(core, 0x20000, 64, why, sizeof(why));
		/* again, after another segment was cached */
		check_range(core, 0x10010, 8, why, sizeof(why));
		struct cs_error *t = cs_core_truncation(core);
		if (t || cs_core_truncated_bytes(core))
			FAIL("complete core reported truncated: %s",
			     t ? t->message : "bytes");
		cs_error_destroy(t);
	}
	report("reads inside PT_LOAD segments", why);

	why[0] = '\0';
	if (core) {
		check_range(core, 0x11ff8, 16, why, sizeof(why));
		check_range(core, 0x10000, 0x3000, why, sizeof(why));
	}
	report("read across a segment boundary", why);

	why[0] = '\0';
	if (core) {
		check_range(core, 0x21000, 32, why, sizeof(why));
		check_range(core, 0x22ff0, 16, why, sizeof(why));
		/* starts in the core's bytes, ends in the file's */
		check_range(core, 0x20ff0, 0x20, why, sizeof(why));
		/* a mapping with no PT_LOAD at all (gcore leaves text out) */
		check_range(core, 0x30000, 0x2000, why, sizeof(why));
	}
	report("read from the file behind an NT_FILE mapping", why);

	why[0] = '\0';
	if (core) {
		check_fault(core, 0x50000, 8, "not in the core", why,
			    sizeof(why));
		check_fault(core, 0x0, 1, "not in the core", why, sizeof(why));
		/* p_filesz 0 and no NT_FILE mapping to fall back on */
		check_fault(core, 0x40010, 8, "not in the core", why,
			    sizeof(why));
		/* starts fine, runs off the end of B */
		check_fault(core, 0x12ff8, 16, "0x13000", why, sizeof(why));
		/* mapping past the end of the file on disk (0x3000 bytes) */
		check_fault(core, 0x32ff8, 16, "ends", why, sizeof(why));
		check_fault(core, UINT64_MAX - 3, 8, "wraps", why, sizeof(why));
		uint8_t x;
		NO_ERROR(cs_core_read(core, 0x50000, &x, 0),
			 "zero-length read");
		/* the rubyvm adapter goes through the same path */
		struct cs_memory t = cs_core_memory(core);
		uint8_t got[4];
		NO_ERROR(cs_memory_read(&t, 0x21000, got, 4), "cs_memory read");
		if (got[0] != pat_f(0x1000))
			FAIL("cs_memory read returned wrong bytes");
		struct cs_error *e = cs_memory_read(&t, 0x50000, got, 4);
		if (!e || e->code != CS_ERR_FAULT)
			FAIL("cs_memory read outside did not fault");
		cs_error_destroy(e);
	}
	report("reads outside memory fault and name the address", why);
	cs_core_close(core);
}

void test_notes(void)
{
	char why[1024] = "";
	struct cs_core *core = open_good(why, sizeof(why));
	if (core) {
		const struct cs_thread *t0 =
			cs_tables_thread_at(cs_core_tables(core), 0);
		const struct cs_thread *t1 =
			cs_tables_thread_at(cs_core_tables(core), 1);
		if (cs_core_tables(core)->nthreads != 2 || !t0 || !t1 ||
		    cs_tables_thread_at(cs_core_tables(core), 2))
			FAIL("thread count %zu, expected 2",
			     cs_core_tables(core)->nthreads);
		else if (t0->tid != 101 || t0->cursig != SIGSEGV ||
			 t1->tid != 102 || t1->cursig != 0)
			FAIL("tid/cursig %d/%d %d/%d", t0->tid, t0->cursig,
			     t1->tid, t1->cursig);
		else if (t0->rip != 0x1000 + CS_REG_RIP ||
			 t0->rsp != 0x1000 + CS_REG_RSP ||
			 t0->rbp != 0x1000 + CS_REG_RBP ||
			 t0->fs_base != 0x1000 + 21 ||
			 t1->regs[CS_REG_R15] != 0x2000 ||
			 t1->regs[26] != 0x2000 + 26)
			FAIL("registers wrong: rip 0x%llx fs_base 0x%llx",
			     (unsigned long long)t0->rip,
			     (unsigned long long)t0->fs_base);
	}
	report("threads from NT_PRSTATUS", why);

	why[0] = '\0';
	if (core) {
		const struct cs_core_process *p = cs_core_process(core);
		const struct cs_siginfo *s = cs_core_tables(core)->siginfo;
		if (!p->present || p->pid != 101 || p->ppid != 1 ||
		    p->uid != 1000 || p->gid != 1001 ||
		    strcmp(p->fname, "ruby-fname-16chr") != 0 ||
		    strcmp(p->psargs, "ruby -e crash") != 0)
			FAIL("process: %d %d %d %d '%s' '%s'", p->pid, p->ppid,
			     p->uid, p->gid, p->fname, p->psargs);
		if (!s->present || s->signo != SIGSEGV || s->code != 1 ||
		    s->err != 0 || s->addr != 0xdead)
			FAIL("siginfo: %d %d %d 0x%llx", s->signo, s->code,
			     s->err, (unsigned long long)s->addr);
		if (cs_tables_auxv(cs_core_tables(core), AT_PAGESZ) != 4096 ||
		    cs_tables_auxv(cs_core_tables(core), AT_BASE) != 0)
			FAIL("auxv");
	}
	report("process, siginfo and auxv notes", why);

	why[0] = '\0';
	if (core) {
		const char *exe = cs_core_tables(core)->executable;
		if (!exe || strcmp(exe, EXE_PATH) != 0)
			FAIL("executable '%s', expected mapping path %s",
			     exe ? exe : "(null)", EXE_PATH);
		if (cs_core_tables(core)->nmaps != 3)
			FAIL("mapping count %zu", cs_core_tables(core)->nmaps);
		const struct cs_mapping *m = cs_tables_find_mapping(
			cs_core_tables(core), "libfake.so");
		if (!m || m->start != 0x20000 || m->end != 0x23000 ||
		    m->file_offset != 0 || strcmp(m->path, LIB_PATH) != 0)
			FAIL("find_mapping libfake.so");
		if (cs_tables_find_mapping(cs_core_tables(core), "libnothere"))
			FAIL("find_mapping found a missing library");
		m = cs_tables_mapping_of(cs_core_tables(core), 0x31000);
		if (!m || m->start != 0x30000)
			FAIL("mapping_of 0x31000");
		for (size_t i = 1; i < cs_core_tables(core)->nmaps; i++)
			if (cs_tables_mapping_at(cs_core_tables(core), i - 1)
				    ->start >=
			    cs_tables_mapping_at(cs_core_tables(core), i)->start)
				FAIL("mappings not sorted");
	}
	/* without NT_FILE, the AT_EXECFN string from memory */
	struct synth o = {.nt_file = 0};
	struct layout l2;
	struct buf b = synth_core(&o, &l2);
	char *p = tmp_path("core.nofile");
	write_file(p, b.p, b.len);
	struct cs_core *c2 = NULL;
	NO_ERROR(cs_core_open(p, &c2), "open core without NT_FILE");
	if (c2) {
		const char *exe = cs_core_tables(c2)->executable;
		if (!exe || strcmp(exe, EXECFN) != 0)
			FAIL("AT_EXECFN executable '%s'", exe ? exe : "(null)");
		check_fault(c2, 0x21000, 4, "not in the core", why,
			    sizeof(why));
	}
	cs_core_close(c2);
	free(b.p);
	free(p);
	report("executable, mappings (NT_FILE and AT_EXECFN)", why);

	why[0] = '\0';
	if (core) {
		uint8_t id[64];
		size_t len = 0;
		NO_ERROR(cs_core_module_build_id(core, 0x20000, id, sizeof(id),
						 &len),
			 "build-id at 0x20000");
		if (len != sizeof(build_id) || memcmp(id, build_id, len) != 0)
			FAIL("build-id wrong (%zu bytes)", len);
		/* same bytes exist at 0x30000, but only in the file on disk:
		 * a build-id must come from the core */
		struct cs_error *e = cs_core_module_build_id(core, 0x30000, id,
							     sizeof(id), &len);
		if (!e || e->code != CS_ERR_FAULT)
			FAIL("build-id from a file-backed mapping: %s",
			     e ? e->message : "succeeded");
		cs_error_destroy(e);
		e = cs_core_module_build_id(core, 0x10000, id, sizeof(id),
					    &len);
		if (!e || e->code != CS_ERR_CORRUPT)
			FAIL("build-id of a non-ELF: %s",
			     e ? e->message : "succeeded");
		cs_error_destroy(e);
		e = cs_core_module_build_id(core, 0x20000, id, 4, &len);
		if (!e || e->code != CS_ERR_LIMIT)
			FAIL("build-id into a small buffer: %s",
			     e ? e->message : "succeeded");
		cs_error_destroy(e);
	}
	report("module build-id from core memory only", why);
	cs_core_close(core);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

void test_files(void)
{
	char why[1024] = "";
	struct cs_core *core = NULL;
	NO_ERROR(cs_core_open(core_path, &core), "open");
	if (core) {
		/* no sysroot: /fake/... does not exist here */
		check_fault(core, 0x21000, 8, LIB_PATH, why, sizeof(why));
		NO_ERROR(cs_core_set_sysroot(core, tmpdir), "set_sysroot");
		check_range(core, 0x21000, 8, why, sizeof(why));
		NO_ERROR(cs_core_set_sysroot(core, NULL), "clear sysroot");
		check_fault(core, 0x21000, 8, LIB_PATH, why, sizeof(why));
	}
	cs_core_close(core);
	report("sysroot hook for NT_FILE paths", why);

	/* 40 files, each mapped once, no PT_LOADs for them */
	why[0] = '\0';
	enum { NFILES = 40 };
	struct buf f = {0}, names = {0};
	put64(&f, NFILES);
	put64(&f, 4096);
	for (int i = 0; i < NFILES; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "/many/f%02d", i);
		char *host = tmp_path(rel + 1);
		uint8_t content[8];
		memset(content, 'a' + i % 26, sizeof(content));
		write_file(host, content, sizeof(content));
		free(host);
		put64(&f, 0x100000 + 0x1000 * (uint64_t)i);
		put64(&f, 0x101000 + 0x1000 * (uint64_t)i);
		put64(&f, 0);
		put(&names, rel, strlen(rel) + 1);
	}
	put(&f, names.p, names.len);
	struct buf notes = {0};
	note(&notes, "CORE", NT_FILE, f.p, f.len);
	struct buf b = {0};
	ehdr(&b, ELFCLASS64, ET_CORE, EM_X86_64, 1);
	phdr(&b, PT_NOTE, 120, 0, notes.len, 0, 4);
	put(&b, notes.p, notes.len);
	char *p = tmp_path("core.many");
	write_file(p, b.p, b.len);
	int before = count_fds();
	NO_ERROR(cs_core_open(p, &core), "open core.many");
	if (core) {
		NO_ERROR(cs_core_set_sysroot(core, tmpdir), "set_sysroot");
		for (int round = 0; round < 2; round++) {
			for (int i = 0; i < NFILES; i++) {
				char got[8];
				NO_ERROR(
					cs_core_read(
						core,
						0x100000 + 0x1000 * (uint64_t)i,
						got, sizeof(got)),
					"read a many-file mapping");
				if (got[0] != 'a' + i % 26)
					FAIL("file %d: wrong content", i);
			}
		}
		int during = count_fds();
		/* one for the core itself, 16 for mapped files */
		if (during - before > 17)
			FAIL("%d descriptors open for 40 files",
			     during - before);
	}
	cs_core_close(core);
	if (count_fds() != before)
		FAIL("descriptors leaked: %d before, %d after", before,
		     count_fds());
	report("NT_FILE files opened lazily, at most 16 at a time", why);
	free(f.p);
	free(names.p);
	free(notes.p);
	free(b.p);
	free(p);
}
