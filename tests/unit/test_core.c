/* Unit test for corestack/core.c.
 *
 * Builds small synthetic cores byte by byte (so every field is known), plus
 * broken ones: empty, not ELF, not a core, truncated everywhere, lying note
 * sizes, random corruption. If gcore is installed, also checks a real core
 * of `sleep`. Build and run:
 *   cc -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -g \
 *      -fsanitize=address,undefined -I. tests/unit/test_core.c \
 *      corestack/core.c util/error.c -lelf -o /tmp/test_core && /tmp/test_core
 */
#include "target/core.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;
static char tmpdir[64];  /* short: mkdtemp under /tmp */

/* One line per check; why is the first thing that went wrong, or NULL. */
static void report(const char *name, const char *why)
{
	if (why && *why) {
		printf("FAIL %s: %s\n", name, why);
		failed++;
	} else {
		printf("ok   %s\n", name);
		passed++;
	}
	fflush(stdout);
}

/* First failure wins, later ones are ignored: keeps checks short. */
static void fail(char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(char *why, size_t size, const char *fmt, ...)
{
	if (*why)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
}
#define FAIL(...) fail(why, sizeof(why), __VA_ARGS__)
/* Consumes err; FAIL if it is not NULL. */
#define NO_ERROR(err, what)                                                  \
	do {                                                                 \
		struct cs_error *e_ = (err);                                 \
		if (e_)                                                      \
			FAIL("%s: %s", what, e_->message);                   \
		cs_error_destroy(e_);                                        \
	} while (0)

/* ---- byte buffers ---- */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	if (d)
		memcpy(b->p + b->len, d, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
}

static void put16(struct buf *b, uint16_t v)
{
	uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
	put(b, x, 2);
}

static void put32(struct buf *b, uint32_t v)
{
	put16(b, (uint16_t)v);
	put16(b, (uint16_t)(v >> 16));
}

static void put64(struct buf *b, uint64_t v)
{
	put32(b, (uint32_t)v);
	put32(b, (uint32_t)(v >> 32));
}

static void pad(struct buf *b, size_t align)
{
	while (b->len % align)
		put(b, NULL, 1);
}

static void set32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void set64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void note(struct buf *b, const char *name, uint32_t type,
		 const void *desc, size_t descsz)
{
	put32(b, (uint32_t)strlen(name) + 1);
	put32(b, (uint32_t)descsz);
	put32(b, type);
	put(b, name, strlen(name) + 1);
	pad(b, 4);
	put(b, desc, descsz);
	pad(b, 4);
}

static void ehdr(struct buf *b, uint8_t cls, uint16_t type, uint16_t machine,
		 uint16_t phnum)
{
	uint8_t ident[EI_NIDENT] = {0x7f, 'E', 'L', 'F', cls, ELFDATA2LSB,
				    EV_CURRENT};
	put(b, ident, sizeof(ident));
	put16(b, type);
	put16(b, machine);
	put32(b, EV_CURRENT);
	put64(b, 0);              /* e_entry */
	put64(b, phnum ? 64 : 0); /* e_phoff */
	put64(b, 0);              /* e_shoff */
	put32(b, 0);              /* e_flags */
	put16(b, 64);             /* e_ehsize */
	put16(b, 56);             /* e_phentsize */
	put16(b, phnum);
	put16(b, 64);             /* e_shentsize */
	put16(b, 0);              /* e_shnum */
	put16(b, 0);              /* e_shstrndx */
}

static void phdr(struct buf *b, uint32_t type, uint64_t off, uint64_t vaddr,
		 uint64_t filesz, uint64_t memsz, uint64_t align)
{
	put32(b, type);
	put32(b, PF_R);
	put64(b, off);
	put64(b, vaddr);
	put64(b, 0);
	put64(b, filesz);
	put64(b, memsz);
	put64(b, align);
}

static char *tmp_path(const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
		abort();
	return p;
}

static void write_file(const char *path, const void *data, size_t len)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	/* mkdir -p of the parent, for the sysroot tree */
	for (char *s = dir + strlen(tmpdir) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(dir, 0755);
		*s = '/';
	}
	/* a fresh file: ext4 flushes a truncated-and-rewritten one on close,
	 * which made the thousands of rewrites below take seconds */
	unlink(path);
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

/* ---- the synthetic core ----
 *
 *   A 0x10000-0x12000  in the core (the "executable"; AT_EXECFN string)
 *   B 0x12000-0x13000  in the core, right after A
 *   C 0x20000-0x23000  first page in the core (a module's ELF header with
 *                      a build-id), the rest only in /fake/lib/libfake.so.1
 *   D 0x30000-0x34000  NT_FILE only, no PT_LOAD (as gcore leaves text out);
 *                      the file ends at 0x33000
 *   E 0x40000-0x41000  PT_LOAD with p_filesz 0 and no NT_FILE mapping
 */
#define LIB_PATH "/fake/lib/libfake.so.1"
#define EXE_PATH "/fake/bin/ruby"
#define EXECFN "/usr/local/bin/ruby-from-execfn"
#define EXECFN_ADDR 0x11f00

static uint8_t pat_a(uint64_t addr) { return (uint8_t)(addr * 13 + 1); }
static uint8_t pat_b(uint64_t addr) { return (uint8_t)(addr * 7 + 5); }
static uint8_t pat_f(uint64_t off) { return (uint8_t)(off * 11 + 3); }

static const uint8_t build_id[20] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6,
				     0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad,
				     0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3};

/* The first page of the module: ELF header, two phdrs, a build-id note. */
static void module_page(uint8_t *page)
{
	struct buf b = {0};
	ehdr(&b, ELFCLASS64, ET_DYN, EM_X86_64, 2);
	phdr(&b, PT_LOAD, 0, 0, 0x3000, 0x3000, 0x1000);
	size_t notesz = 16 + sizeof(build_id);
	phdr(&b, PT_NOTE, 0x100, 0x100, notesz, notesz, 4);
	put(&b, NULL, 0x100 - b.len);
	note(&b, "GNU", NT_GNU_BUILD_ID, build_id, sizeof(build_id));
	memset(page, 0, 0x1000);
	memcpy(page, b.p, b.len);
	free(b.p);
}

/* The file behind C and D: the module page, then a pattern. */
static void lib_file(uint8_t *data, size_t size)
{
	module_page(data);
	for (size_t i = 0x1000; i < size; i++)
		data[i] = pat_f(i);
}

struct synth {
	int nt_file;      /* write NT_FILE */
	uint32_t bad_file_descsz;  /* if set, the NT_FILE note lies about its size */
};

struct layout {
	size_t notes_off, a_off, c_off, end;
};

static void prstatus(struct buf *b, int tid, int cursig, uint64_t base)
{
	uint8_t d[336] = {0};
	d[12] = (uint8_t)cursig;
	set32(d + 32, (uint32_t)tid);
	for (int i = 0; i < 27; i++)
		set64(d + 112 + 8 * i, base + (uint64_t)i);
	note(b, "CORE", NT_PRSTATUS, d, sizeof(d));
	/* kernel cores follow each prstatus with FP state; must be skipped */
	uint8_t fp[512] = {0};
	note(b, "CORE", NT_FPREGSET, fp, sizeof(fp));
}

static struct buf synth_core(const struct synth *o, struct layout *lay)
{
	struct buf notes = {0};
	prstatus(&notes, 101, SIGSEGV, 0x1000);
	{
		uint8_t d[136] = {0};
		set32(d + 16, 1000);
		set32(d + 20, 1001);
		set32(d + 24, 101);
		set32(d + 28, 1);
		memcpy(d + 40, "ruby-fname-16chr", 16);  /* no NUL: full */
		strcpy((char *)d + 56, "ruby -e crash");
		note(&notes, "CORE", NT_PRPSINFO, d, sizeof(d));
	}
	{
		uint8_t d[128] = {0};
		set32(d, SIGSEGV);
		set32(d + 8, 1);  /* SEGV_MAPERR */
		set64(d + 16, 0xdead);
		note(&notes, "CORE", NT_SIGINFO, d, sizeof(d));
	}
	{
		struct buf a = {0};
		put64(&a, AT_PHDR), put64(&a, 0x10040);
		put64(&a, AT_ENTRY), put64(&a, 0x10100);
		put64(&a, AT_EXECFN), put64(&a, EXECFN_ADDR);
		put64(&a, AT_PAGESZ), put64(&a, 4096);
		put64(&a, AT_NULL), put64(&a, 0);
		note(&notes, "CORE", NT_AUXV, a.p, a.len);
		free(a.p);
	}
	if (o->nt_file) {
		struct buf f = {0};
		put64(&f, 3);
		put64(&f, 0x1000);
		put64(&f, 0x10000), put64(&f, 0x12000), put64(&f, 0);
		put64(&f, 0x20000), put64(&f, 0x23000), put64(&f, 0);
		put64(&f, 0x30000), put64(&f, 0x34000), put64(&f, 0);
		put(&f, EXE_PATH, sizeof(EXE_PATH));
		put(&f, LIB_PATH, sizeof(LIB_PATH));
		put(&f, LIB_PATH, sizeof(LIB_PATH));
		size_t at = notes.len;
		note(&notes, "CORE", NT_FILE, f.p, f.len);
		if (o->bad_file_descsz)
			set32(notes.p + at + 4, o->bad_file_descsz);
		free(f.p);
	}
	prstatus(&notes, 102, 0, 0x2000);
	/* a note we don't know, with another owner */
	note(&notes, "GDB", 0xff000000u, "<xml/>", 6);

	const uint16_t phnum = 5;
	struct buf b = {0};
	ehdr(&b, ELFCLASS64, ET_CORE, EM_X86_64, phnum);
	lay->notes_off = 64 + 56 * phnum;
	lay->a_off = lay->notes_off + notes.len;
	lay->c_off = lay->a_off + 0x3000;
	lay->end = lay->c_off + 0x1000;
	phdr(&b, PT_NOTE, lay->notes_off, 0, notes.len, 0, 4);
	/* out of address order on purpose: the reader sorts */
	phdr(&b, PT_LOAD, lay->c_off, 0x20000, 0x1000, 0x3000, 1);
	phdr(&b, PT_LOAD, lay->a_off, 0x10000, 0x2000, 0x2000, 1);
	phdr(&b, PT_LOAD, lay->a_off + 0x2000, 0x12000, 0x1000, 0x1000, 1);
	phdr(&b, PT_LOAD, lay->end, 0x40000, 0, 0x1000, 1);
	put(&b, notes.p, notes.len);
	free(notes.p);
	for (uint64_t a = 0x10000; a < 0x12000; a++) {
		uint8_t v = pat_a(a);
		put(&b, &v, 1);
	}
	memcpy(b.p + lay->a_off + (EXECFN_ADDR - 0x10000), EXECFN,
	       sizeof(EXECFN));
	for (uint64_t a = 0x12000; a < 0x13000; a++) {
		uint8_t v = pat_b(a);
		put(&b, &v, 1);
	}
	uint8_t page[0x1000];
	module_page(page);
	put(&b, page, sizeof(page));
	return b;
}

static uint8_t expect_byte(uint64_t addr)
{
	if (addr >= 0x10000 && addr < 0x12000) {
		if (addr >= EXECFN_ADDR && addr < EXECFN_ADDR + sizeof(EXECFN))
			return (uint8_t)EXECFN[addr - EXECFN_ADDR];
		return pat_a(addr);
	}
	if (addr >= 0x12000 && addr < 0x13000)
		return pat_b(addr);
	uint8_t page[0x1000];
	uint64_t off = addr >= 0x30000 ? addr - 0x30000 : addr - 0x20000;
	if (off < 0x1000) {
		module_page(page);
		return page[off];
	}
	return pat_f(off);
}

static void check_range(struct cs_core *core, uint64_t addr, size_t len,
			char *why, size_t whysize)
{
	uint8_t got[0x3000];
	struct cs_error *err = cs_core_read(core, addr, got, len);
	if (err) {
		fail(why, whysize, "read 0x%llx+%zu: %s",
		     (unsigned long long)addr, len, err->message);
		cs_error_destroy(err);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		if (got[i] != expect_byte(addr + i)) {
			fail(why, whysize, "read 0x%llx+%zu: byte at 0x%llx is "
			     "0x%02x, expected 0x%02x",
			     (unsigned long long)addr, len,
			     (unsigned long long)(addr + i), got[i],
			     expect_byte(addr + i));
			return;
		}
	}
}

static void check_fault(struct cs_core *core, uint64_t addr, size_t len,
			const char *want, char *why, size_t whysize)
{
	uint8_t got[64];
	struct cs_error *err = cs_core_read(core, addr, got, len);
	char hex[32];
	snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)addr);
	if (!err)
		fail(why, whysize, "read at %s succeeded", hex);
	else if (err->code != CS_ERR_FAULT)
		fail(why, whysize, "read at %s: code %d: %s", hex, err->code,
		     err->message);
	else if (!strstr(err->message, hex) || !strstr(err->message, want))
		fail(why, whysize, "read at %s: message lacks '%s': %s", hex,
		     want, err->message);
	cs_error_destroy(err);
}

static char *core_path, *lib_host_path;
static struct layout lay;
static struct buf good;

static struct cs_core *open_good(char *why, size_t whysize)
{
	struct cs_core *core = NULL;
	struct cs_error *err = cs_core_open(core_path, &core);
	if (err) {
		fail(why, whysize, "open: %s", err->message);
		cs_error_destroy(err);
		return NULL;
	}
	err = cs_core_set_sysroot(core, tmpdir);
	cs_error_destroy(err);
	return core;
}

static void test_reads(void)
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
		NO_ERROR(cs_core_read(core, 0x50000, &x, 0), "zero-length read");
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

static void test_notes(void)
{
	char why[1024] = "";
	struct cs_core *core = open_good(why, sizeof(why));
	if (core) {
		const struct cs_thread *t0 = cs_core_thread_at(core, 0);
		const struct cs_thread *t1 = cs_core_thread_at(core, 1);
		if (cs_core_thread_count(core) != 2 || !t0 || !t1 ||
		    cs_core_thread_at(core, 2))
			FAIL("thread count %zu, expected 2",
			     cs_core_thread_count(core));
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
		const struct cs_siginfo *s = cs_core_siginfo(core);
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
		if (cs_core_auxv(core, AT_PAGESZ) != 4096 ||
		    cs_core_auxv(core, AT_BASE) != 0)
			FAIL("auxv");
	}
	report("process, siginfo and auxv notes", why);

	why[0] = '\0';
	if (core) {
		const char *exe = cs_core_executable(core);
		if (!exe || strcmp(exe, EXE_PATH) != 0)
			FAIL("executable '%s', expected mapping path %s",
			     exe ? exe : "(null)", EXE_PATH);
		if (cs_core_mapping_count(core) != 3)
			FAIL("mapping count %zu", cs_core_mapping_count(core));
		const struct cs_mapping *m =
			cs_core_find_mapping(core, "libfake.so");
		if (!m || m->start != 0x20000 || m->end != 0x23000 ||
		    m->file_offset != 0 || strcmp(m->path, LIB_PATH) != 0)
			FAIL("find_mapping libfake.so");
		if (cs_core_find_mapping(core, "libnothere"))
			FAIL("find_mapping found a missing library");
		m = cs_core_mapping_of(core, 0x31000);
		if (!m || m->start != 0x30000)
			FAIL("mapping_of 0x31000");
		for (size_t i = 1; i < cs_core_mapping_count(core); i++)
			if (cs_core_mapping_at(core, i - 1)->start >=
			    cs_core_mapping_at(core, i)->start)
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
		const char *exe = cs_core_executable(c2);
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
		struct cs_error *e =
			cs_core_module_build_id(core, 0x30000, id, sizeof(id),
						&len);
		if (!e || e->code != CS_ERR_FAULT)
			FAIL("build-id from a file-backed mapping: %s",
			     e ? e->message : "succeeded");
		cs_error_destroy(e);
		e = cs_core_module_build_id(core, 0x10000, id, sizeof(id), &len);
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

static void test_files(void)
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
				NO_ERROR(cs_core_read(core,
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
static void test_sysroot_confined(void)
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

static void test_bad_files(void)
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
	expect_format(p, "ELF type is EXEC, not a core dump (did you swap",
		      why, sizeof(why));
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
	uint8_t *nf = memmem(b.p, b.len,
			     "CORE\0\0\0\0\x03\0\0\0\0\0\0\0\0\x10", 18);
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
static int exercise(const char *path, struct cs_core **keep)
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
	static const uint64_t addrs[] = {0, 0x10000, 0x11ff8, 0x12ff0, 0x20000,
					 0x20ff8, 0x22000, 0x30000, 0x40000,
					 0xdead};
	uint8_t buf[0x100];
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		cs_error_destroy(cs_core_read(core, addrs[i], buf, sizeof(buf)));
		cs_error_destroy(cs_core_read_dumped(core, addrs[i], buf, 8));
		size_t len;
		cs_error_destroy(cs_core_module_build_id(core, addrs[i], buf,
							 sizeof(buf), &len));
	}
	for (size_t i = 0; i < cs_core_thread_count(core); i++) {
		const struct cs_thread *t = cs_core_thread_at(core, i);
		cs_error_destroy(cs_core_read(core, t->rsp, buf, 16));
	}
	for (size_t i = 0; i < cs_core_mapping_count(core); i++) {
		const struct cs_mapping *m = cs_core_mapping_at(core, i);
		if (strlen(m->path) > PATH_MAX * 4)
			abort();
		cs_error_destroy(cs_core_read(core, m->start, buf, 8));
	}
	cs_core_executable(core);
	cs_core_find_mapping(core, "lib");
	cs_core_auxv(core, AT_PHDR);
	(void)cs_core_process(core)->psargs[0];
	(void)cs_core_siginfo(core)->addr;
	cs_error_destroy(cs_core_truncation(core));
	if (keep)
		*keep = core;
	else
		cs_core_close(core);
	return 1;
}

static void test_truncated(void)
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
			     "CS_ERR_FORMAT", cut);
		if (r == 1) {
			opened++;
			struct cs_error *t = cs_core_truncation(core);
			if (!t)
				FAIL("cut at %zu: opened, but no truncation "
				     "reported", cut);
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

	/* half of the memory data gone: segments total 0x4000 bytes */
	why[0] = '\0';
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
		else if (!t || !strstr(t->message, "truncated: 50% of the "
					       "memory segments are missing"))
			FAIL("message: %s", t ? t->message : "(none)");
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
		if (cs_core_thread_count(core) != 2)
			FAIL("threads lost");
	}
	cs_core_close(core);
	/* cut inside the notes: the threads before the cut remain */
	write_file(p, good.p, lay.notes_off + 400);
	core = NULL;
	NO_ERROR(cs_core_open(p, &core), "open core cut in its notes");
	if (core) {
		struct cs_error *t = cs_core_truncation(core);
		if (cs_core_thread_count(core) != 1)
			FAIL("%zu threads from cut notes",
			     cs_core_thread_count(core));
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

static void test_fuzz(void)
{
	char why[1024] = "";
	char *p = tmp_path("core.fuzz");
	uint64_t s = 0x9e3779b97f4a7c15ull;  /* fixed seed: reproducible */
	int opened = 0, n = 3000;
	struct buf m = {0};
	put(&m, NULL, good.len);
	for (int i = 0; i < n; i++) {
		memcpy(m.p, good.p, good.len);
		int flips = 1 + (int)(s % 8);
		for (int k = 0; k < flips; k++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			/* mostly the headers and notes, where sizes live */
			size_t at = (size_t)(s >> 16) % (k & 1 ? good.len : lay.a_off);
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

/* ---- a real core from gcore ---- */

static int disk_build_id(const char *path, uint8_t *id, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	int found = -1;
	Elf_Scn *scn = NULL;
	while (e && found < 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)d->d_buf + noff, "GNU", 4) == 0) {
				memcpy(id, (char *)d->d_buf + doff, nh.n_descsz);
				*len = nh.n_descsz;
				found = 0;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

/* fork + exec `sleep 30` in dir; returns once it sleeps, with its
 * executable's path in exe. */
static pid_t start_sleep(const char *dir, int want_core, char *exe,
			 size_t exesize)
{
	char self[PATH_MAX] = "", link[64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0)
		self[n] = '\0';
	pid_t pid = fork();
	if (pid != 0)
		goto parent;
	/* let gdb (our child too, not sleep's parent) attach under Yama
	 * ptrace_scope=1 */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	if (want_core) {
		struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
		if (setrlimit(RLIMIT_CORE, &rl) != 0) {
			getrlimit(RLIMIT_CORE, &rl);
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_CORE, &rl);
		}
		if (chdir(dir) != 0)
			_exit(126);
	}
	execlp("sleep", "sleep", "30", (char *)NULL);
	_exit(127);
parent:
	if (pid < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 200; i++) {
		n = readlink(link, exe, exesize - 1);
		if (n > 0) {
			exe[n] = '\0';
			char statp[64], st[512] = "";
			snprintf(statp, sizeof(statp), "/proc/%d/stat", (int)pid);
			FILE *f = fopen(statp, "r");
			if (f) {
				if (!fgets(st, sizeof(st), f))
					st[0] = '\0';
				fclose(f);
			}
			char *rp = strrchr(st, ')');
			if (strcmp(exe, self) != 0 && rp && rp[2] == 'S')
				break;
		}
		struct timespec ts = {0, 25 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return pid;
}

/* What must hold for any real core of `sleep`, gcore's or the kernel's. */
static void check_sleep_core(const char *corefile, pid_t pid, const char *exe,
			     int kernel, char *why, size_t whysize)
{
	struct cs_core *core = NULL;
	struct cs_error *err = cs_core_open(corefile, &core);
	if (err) {
		fail(why, whysize, "open: %s", err->message);
		cs_error_destroy(err);
		return;
	}
	struct cs_error *t = cs_core_truncation(core);
	if (t)
		fail(why, whysize, "%s", t->message);
	cs_error_destroy(t);
	const struct cs_thread *th = cs_core_thread_at(core, 0);
	if (cs_core_thread_count(core) != 1 || th->tid != pid)
		fail(why, whysize, "%zu threads, first tid %d, expected 1 and %d",
		     cs_core_thread_count(core), th ? th->tid : -1, (int)pid);
	else if (!cs_core_mapping_of(core, th->rip) || !th->fs_base || !th->rsp)
		fail(why, whysize, "registers implausible: rip 0x%llx fs_base "
		     "0x%llx", (unsigned long long)th->rip,
		     (unsigned long long)th->fs_base);
	else if (kernel && th->cursig != SIGSEGV)
		fail(why, whysize, "cursig %d", th->cursig);
	const struct cs_core_process *pr = cs_core_process(core);
	if (!pr->present || pr->pid != pid || strcmp(pr->fname, "sleep") != 0)
		fail(why, whysize, "NT_PRPSINFO: present %d pid %d fname '%s'",
		     pr->present, pr->pid, pr->fname);
	const struct cs_siginfo *si = cs_core_siginfo(core);
	/* kill(2) sends SI_USER: the union holds pid/uid, not an address */
	if (kernel && (!si->present || si->signo != SIGSEGV ||
		       si->code != SI_USER || si->addr != 0))
		fail(why, whysize, "siginfo %d %d %d 0x%llx", si->present,
		     si->signo, si->code, (unsigned long long)si->addr);
	if (cs_core_mapping_count(core) == 0)
		fail(why, whysize, "no NT_FILE mappings");
	const char *x = cs_core_executable(core);
	if (!x || strcmp(x, exe) != 0)
		fail(why, whysize, "executable '%s', expected %s",
		     x ? x : "(null)", exe);
	const char *slash = strrchr(exe, '/');
	const struct cs_mapping *m =
		cs_core_find_mapping(core, slash ? slash + 1 : exe);
	uint8_t hdr[4] = {0};
	if (!m) {
		fail(why, whysize, "no mapping of %s", exe);
	} else if ((err = cs_core_read(core, m->start, hdr, 4))) {
		fail(why, whysize, "read exe ELF header: %s", err->message);
		cs_error_destroy(err);
	} else if (memcmp(hdr, "\x7f" "ELF", 4) != 0) {
		fail(why, whysize, "no \\x7fELF at the executable's mapping");
	}
	/* the core's build-id of sleep is the one on disk */
	uint8_t id[64], want[64];
	size_t len = 0, wlen = 0;
	if (m && disk_build_id(exe, want, &wlen) == 0) {
		err = cs_core_module_build_id(core, m->start, id, sizeof(id),
					      &len);
		if (err)
			fail(why, whysize, "build-id: %s", err->message);
		else if (len != wlen || memcmp(id, want, len) != 0)
			fail(why, whysize, "build-id differs from %s", exe);
		cs_error_destroy(err);
	}
	/* libc text is not in the core (kernel: p_filesz 0; gcore: no
	 * PT_LOAD at all); those bytes must come from the library file */
	const struct cs_mapping *text = NULL;
	for (size_t i = 0; i < cs_core_mapping_count(core) && !text; i++) {
		const struct cs_mapping *c = cs_core_mapping_at(core, i);
		uint8_t b;
		err = cs_core_read_dumped(core, c->start, &b, 1);
		if (err && c->file_offset && strstr(c->path, "libc.so"))
			text = c;
		cs_error_destroy(err);
	}
	if (!text) {
		printf("     (every libc mapping is in the core)\n");
	} else {
		uint8_t got[256], disk[256];
		err = cs_core_read(core, text->start, got, sizeof(got));
		int fd = open(text->path, O_RDONLY);
		if (err)
			fail(why, whysize, "read undumped libc: %s", err->message);
		else if (fd < 0 || pread(fd, disk, sizeof(disk),
					 (off_t)text->file_offset) !=
					   (ssize_t)sizeof(disk) ||
			 memcmp(got, disk, sizeof(got)) != 0)
			fail(why, whysize, "undumped libc bytes differ from %s",
			     text->path);
		cs_error_destroy(err);
		if (fd >= 0)
			close(fd);
	}
	printf("     (%zu mappings, executable %s)\n",
	       cs_core_mapping_count(core), x ? x : "?");
	cs_core_close(core);

	/* cut copies: open or fail cleanly (gcore writes its notes last, so
	 * cuts lose them first; the kernel writes them first) */
	struct stat st;
	int fd = open(corefile, O_RDONLY);
	size_t size = fd >= 0 && fstat(fd, &st) == 0 ? (size_t)st.st_size : 0;
	uint8_t *all = size ? malloc(size) : NULL;
	if (!all || read(fd, all, size) != (ssize_t)size) {
		fail(why, whysize, "cannot read back %s", corefile);
	} else {
		char *p = tmp_path("real.cut");
		size_t cuts[] = {0, 1, 63, 64, 100, 1000, 4096, size / 3,
				 size / 2, size - 4096, size - 100, size - 1};
		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			write_file(p, all, cuts[i]);
			if (exercise(p, NULL) < 0)
				fail(why, whysize, "cut at %zu: bad error",
				     cuts[i]);
		}
		free(p);
	}
	if (fd >= 0)
		close(fd);
	free(all);
}

static void test_gcore(void)
{
	if (system("command -v gcore >/dev/null 2>&1") != 0) {
		printf("skip gcore: not installed\n");
		return;
	}
	char why[2048] = "", exe[PATH_MAX] = "";
	pid_t pid = start_sleep(tmpdir, 0, exe, sizeof(exe));
	if (pid < 0) {
		report("gcore core of sleep", "fork failed");
		return;
	}
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 gcore -o '%s/gcore' %d >'%s/gcore.log' 2>&1",
		 tmpdir, (int)pid, tmpdir);
	int rc = system(cmd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	char corefile[128];
	snprintf(corefile, sizeof(corefile), "%s/gcore.%d", tmpdir, (int)pid);
	struct stat st;
	if (rc != 0 || stat(corefile, &st) != 0) {
		printf("skip gcore: gcore failed (ptrace not permitted?); "
		       "see %s/gcore.log\n", tmpdir);
		return;
	}
	check_sleep_core(corefile, pid, exe, 0, why, sizeof(why));
	report("gcore core of sleep: thread, executable, ELF header, "
	       "build-id, undumped text, cuts", why);
}

/* Only when the kernel writes plain files into the crashing process's
 * directory (core_pattern "core"); pipes to systemd-coredump or apport
 * are not ours to read. */
static void test_kernel_core(void)
{
	char pattern[256] = "", uses_pid[8] = "0";
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "r");
	if (f) {
		if (!fgets(pattern, sizeof(pattern), f))
			pattern[0] = '\0';
		fclose(f);
	}
	pattern[strcspn(pattern, "\n")] = '\0';
	if (!pattern[0] || strpbrk(pattern, "|%/")) {
		printf("skip kernel core: core_pattern is '%s'\n", pattern);
		return;
	}
	if ((f = fopen("/proc/sys/kernel/core_uses_pid", "r"))) {
		if (!fgets(uses_pid, sizeof(uses_pid), f))
			uses_pid[0] = '0';
		fclose(f);
	}
	char *dir = tmp_path("kernel");
	mkdir(dir, 0755);
	char why[2048] = "", exe[PATH_MAX] = "", corefile[512];
	pid_t pid = start_sleep(dir, 1, exe, sizeof(exe));
	int status = 0;
	if (pid > 0) {
		kill(pid, SIGSEGV);
		waitpid(pid, &status, 0);
	}
	if (uses_pid[0] == '1')
		snprintf(corefile, sizeof(corefile), "%s/%s.%d", dir, pattern,
			 (int)pid);
	else
		snprintf(corefile, sizeof(corefile), "%s/%s", dir, pattern);
	struct stat st;
	if (pid < 0 || !WIFSIGNALED(status) || !WCOREDUMP(status) ||
	    stat(corefile, &st) != 0) {
		printf("skip kernel core: no core dumped (RLIMIT_CORE?)\n");
		free(dir);
		return;
	}
	check_sleep_core(corefile, pid, exe, 1, why, sizeof(why));
	free(dir);
	report("kernel core of sleep: thread, siginfo, executable, ELF "
	       "header, build-id, undumped text, cuts", why);
}

static void cleanup(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			continue;
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			cleanup(p);
		else
			unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

int main(void)
{
	elf_version(EV_CURRENT);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_core.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	good = synth_core(&(struct synth){.nt_file = 1}, &lay);
	core_path = tmp_path("core.good");
	write_file(core_path, good.p, good.len);
	lib_host_path = tmp_path(&LIB_PATH[1]);
	uint8_t lib[0x3000];
	lib_file(lib, sizeof(lib));
	write_file(lib_host_path, lib, sizeof(lib));

	test_reads();
	test_notes();
	test_files();
	test_sysroot_confined();
	test_bad_files();
	test_truncated();
	test_fuzz();
	test_gcore();
	test_kernel_core();

	if (!failed)
		cleanup(tmpdir);
	else
		printf("(files kept in %s)\n", tmpdir);
	free(good.p);
	free(core_path);
	free(lib_host_path);
	printf("core: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
