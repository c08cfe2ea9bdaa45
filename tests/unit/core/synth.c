/* The synthetic core the core tests read: byte buffers, the ELF and note
 * writers, the core and its library built byte by byte, and the checks of
 * what reading it gives. */
#include "tests/unit/core/core_test.h"

#include <elf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One line per check; why is the first thing that went wrong, or NULL. */
void report(const char *name, const char *why)
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
void fail(char *why, size_t size, const char *fmt, ...)
{
	if (*why)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
}

/* ---- byte buffers ---- */

void put(struct buf *b, const void *d, size_t n)
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

void put64(struct buf *b, uint64_t v)
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

void set64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void note(struct buf *b, const char *name, uint32_t type, const void *desc,
	  size_t descsz)
{
	put32(b, (uint32_t)strlen(name) + 1);
	put32(b, (uint32_t)descsz);
	put32(b, type);
	put(b, name, strlen(name) + 1);
	pad(b, 4);
	put(b, desc, descsz);
	pad(b, 4);
}

void ehdr(struct buf *b, uint8_t cls, uint16_t type, uint16_t machine,
	  uint16_t phnum)
{
	uint8_t ident[EI_NIDENT] = {0x7f, 'E',         'L',       'F',
				    cls,  ELFDATA2LSB, EV_CURRENT};
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
	put16(b, 64); /* e_shentsize */
	put16(b, 0);  /* e_shnum */
	put16(b, 0);  /* e_shstrndx */
}

void phdr(struct buf *b, uint32_t type, uint64_t off, uint64_t vaddr,
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

char *tmp_path(const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
		abort();
	return p;
}

void write_file(const char *path, const void *data, size_t len)
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

static uint8_t pat_a(uint64_t addr)
{
	return (uint8_t)(addr * 13 + 1);
}
static uint8_t pat_b(uint64_t addr)
{
	return (uint8_t)(addr * 7 + 5);
}
uint8_t pat_f(uint64_t off)
{
	return (uint8_t)(off * 11 + 3);
}

const uint8_t build_id[20] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6,
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
void lib_file(uint8_t *data, size_t size)
{
	module_page(data);
	for (size_t i = 0x1000; i < size; i++)
		data[i] = pat_f(i);
}

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

struct buf synth_core(const struct synth *o, struct layout *lay)
{
	struct buf notes = {0};
	prstatus(&notes, 101, SIGSEGV, 0x1000);
	{
		uint8_t d[136] = {0};
		set32(d + 16, 1000);
		set32(d + 20, 1001);
		set32(d + 24, 101);
		set32(d + 28, 1);
		memcpy(d + 40, "ruby-fname-16chr", 16); /* no NUL: full */
		strcpy((char *)d + 56, "ruby -e crash");
		note(&notes, "CORE", NT_PRPSINFO, d, sizeof(d));
	}
	{
		uint8_t d[128] = {0};
		set32(d, SIGSEGV);
		set32(d + 8, 1); /* SEGV_MAPERR */
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

void check_range(struct cs_core *core, uint64_t addr, size_t len, char *why,
		 size_t whysize)
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
			fail(why, whysize,
			     "read 0x%llx+%zu: byte at 0x%llx is "
			     "0x%02x, expected 0x%02x",
			     (unsigned long long)addr, len,
			     (unsigned long long)(addr + i), got[i],
			     expect_byte(addr + i));
			return;
		}
	}
}

void check_fault(struct cs_core *core, uint64_t addr, size_t len,
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

char *core_path, *lib_host_path;
struct layout lay;
struct buf good;

struct cs_core *open_good(char *why, size_t whysize)
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
