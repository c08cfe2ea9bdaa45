/* Writes the synthetic core seeds of tests/fuzz/corpus/core: tiny x86-64
 * ELF cores built byte by byte, with every note the reader knows (two
 * NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV, NT_FILE), a dumped module
 * header with a GNU build-id note, a file-backed mapping the core leaves
 * out (served from fuzz_core's private sysroot, /lib/x.so), and a stack
 * holding the AT_EXECFN string. Variants: full, truncated, minimal.
 *   cc -std=c17 -D_GNU_SOURCE tests/fuzz/make_core_seeds.c -o mk && ./mk DIR */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 256;
		if (!(b->p = realloc(b->p, b->cap)))
			abort();
	}
	if (d)
		memcpy(b->p + b->len, d, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
}

static void le(struct buf *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) {
		uint8_t c = (uint8_t)(v >> (8 * i));
		put(b, &c, 1);
	}
}

static void align(struct buf *b, size_t a)
{
	while (b->len % a)
		put(b, NULL, 1);
}

static void setle(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void note(struct buf *b, const char *name, uint32_t type,
		 const void *desc, size_t n)
{
	le(b, strlen(name) + 1, 4);
	le(b, n, 4);
	le(b, type, 4);
	put(b, name, strlen(name) + 1);
	align(b, 4);
	put(b, desc, n);
	align(b, 4);
}

static void ehdr(struct buf *b, uint16_t type, uint16_t phnum)
{
	uint8_t ident[EI_NIDENT] = {0x7f,       'E',         'L',       'F',
				    ELFCLASS64, ELFDATA2LSB, EV_CURRENT};
	put(b, ident, sizeof(ident));
	le(b, type, 2);
	le(b, EM_X86_64, 2);
	le(b, EV_CURRENT, 4);
	le(b, 0, 8);  /* e_entry */
	le(b, 64, 8); /* e_phoff */
	le(b, 0, 8);  /* e_shoff */
	le(b, 0, 4);  /* e_flags */
	le(b, 64, 2); /* e_ehsize */
	le(b, 56, 2); /* e_phentsize */
	le(b, phnum, 2);
	le(b, 64, 2);
	le(b, 0, 2);
	le(b, 0, 2);
}

static void phdr(struct buf *b, uint32_t type, uint64_t off, uint64_t vaddr,
		 uint64_t filesz, uint64_t memsz)
{
	le(b, type, 4);
	le(b, PF_R | PF_W, 4);
	le(b, off, 8);
	le(b, vaddr, 8);
	le(b, 0, 8);
	le(b, filesz, 8);
	le(b, memsz, 8);
	le(b, 0x1000, 8);
}

#define MOD 0x400000ull   /* /lib/x.so: header dumped, rest from the file */
#define STACK 0x7ff000ull /* the stack: AT_EXECFN string */

static void write_file(const char *dir, const char *name, const void *d,
		       size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(d, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	/* the notes */
	struct buf notes = {0};
	for (int t = 0; t < 2; t++) {
		uint8_t pr[336] = {0};
		setle(pr + 12, t ? 0 : 11, 2); /* pr_cursig */
		setle(pr + 32, 1000 + t, 4);   /* pr_pid */
		uint8_t *regs = pr + 112;
		setle(regs + 4 * 8, STACK + 0x200, 8);          /* rbp */
		setle(regs + 16 * 8, MOD + 0x1010, 8);          /* rip */
		setle(regs + 19 * 8, STACK + 0x100, 8);         /* rsp */
		setle(regs + 21 * 8, 0x7f0000001000ull + t, 8); /* fs_base */
		note(&notes, "CORE", NT_PRSTATUS, pr, sizeof(pr));
	}
	uint8_t ps[136] = {0};
	setle(ps + 24, 1000, 4);
	setle(ps + 28, 1, 4);
	memcpy(ps + 40, "prog", 4);
	memcpy(ps + 56, "prog --flag", 11);
	note(&notes, "CORE", NT_PRPSINFO, ps, sizeof(ps));
	uint8_t si[128] = {0};
	setle(si, 11, 4);    /* SIGSEGV */
	setle(si + 8, 1, 4); /* SEGV_MAPERR */
	setle(si + 16, 0xdead0000, 8);
	note(&notes, "CORE", NT_SIGINFO, si, sizeof(si));
	struct buf aux = {0};
	le(&aux, AT_PHDR, 8), le(&aux, MOD + 64, 8);
	le(&aux, AT_ENTRY, 8), le(&aux, MOD + 0x1000, 8);
	le(&aux, AT_EXECFN, 8), le(&aux, STACK + 0xf00, 8);
	le(&aux, AT_PAGESZ, 8), le(&aux, 4096, 8);
	le(&aux, AT_NULL, 8), le(&aux, 0, 8);
	note(&notes, "CORE", NT_AUXV, aux.p, aux.len);
	struct buf fn = {0};
	le(&fn, 2, 8), le(&fn, 4096, 8);
	le(&fn, MOD, 8), le(&fn, MOD + 0x3000, 8), le(&fn, 0, 8);
	le(&fn, 0x600000, 8), le(&fn, 0x601000, 8), le(&fn, 0, 8);
	put(&fn, "/lib/x.so", 10);
	put(&fn, "/bin/libruby.so.3.3 (deleted)", 30);
	note(&notes, "CORE", NT_FILE, fn.p, fn.len);

	/* the module's first bytes as dumped: ELF header, PT_LOAD, PT_NOTE
	 * with a GNU build-id */
	struct buf mod = {0};
	ehdr(&mod, ET_DYN, 2);
	phdr(&mod, PT_LOAD, 0, 0, 0x3000, 0x3000);
	phdr(&mod, PT_NOTE, 0xb0, 0xb0, 36, 36);
	uint8_t id[20];
	for (int i = 0; i < 20; i++)
		id[i] = (uint8_t)(0xa0 + i);
	note(&mod, "GNU", NT_GNU_BUILD_ID, id, sizeof(id));
	size_t modlen = mod.len;
	put(&mod, NULL, 0x100 - modlen);

	struct buf stack = {0};
	put(&stack, NULL, 0xf00);
	put(&stack, "/bin/prog", 10);
	put(&stack, NULL, 0x1000 - stack.len);

	/* the core: header, 3 phdrs, notes, module page, stack page */
	struct buf c = {0};
	uint16_t phnum = 3;
	size_t notes_off = 64 + phnum * 56;
	size_t mod_off = (notes_off + notes.len + 0xfff) & ~(size_t)0xfff;
	size_t stack_off = mod_off + 0x1000;
	ehdr(&c, ET_CORE, phnum);
	phdr(&c, PT_NOTE, notes_off, 0, notes.len, 0);
	/* kernel style: header page dumped, the rest left to the file */
	phdr(&c, PT_LOAD, mod_off, MOD, 0x1000, 0x3000);
	phdr(&c, PT_LOAD, stack_off, STACK, 0x1000, 0x1000);
	put(&c, notes.p, notes.len);
	put(&c, NULL, mod_off - c.len);
	put(&c, mod.p, mod.len);
	put(&c, NULL, stack_off - c.len);
	put(&c, stack.p, stack.len);

	write_file(argv[1], "full", c.p, c.len);
	write_file(argv[1], "truncated", c.p, stack_off + 0x800);

	/* minimal: no notes, one tiny PT_LOAD */
	struct buf m = {0};
	ehdr(&m, ET_CORE, 1);
	phdr(&m, PT_LOAD, 120, 0x10000, 16, 32);
	put(&m, "0123456789abcdef", 16);
	write_file(argv[1], "minimal", m.p, m.len);
	return 0;
}
