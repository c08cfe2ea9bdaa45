/* Writes a fuzz_native seed from a gcore'd core of tests/fuzz/native_target:
 * the same process in a few kilobytes. Kept: the notes corestack reads
 * (NT_PRPSINFO, NT_PRSTATUS, NT_SIGINFO, NT_AUXV, NT_FILE; the FPU state
 * goes) and the stack page(s) from the stack pointer up (the frames the
 * unwinder reads); every other segment is dropped, so its bytes come from
 * the module file as with any gcore'd text.
 *   make_native_seed CORE OUT [STACK_BYTES] */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0) {
		perror(path);
		exit(1);
	}
	long n = ftell(f);
	rewind(f);
	uint8_t *p = malloc((size_t)n);
	if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(1);
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void fail(const char *why)
{
	fprintf(stderr, "make_native_seed: %s\n", why);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		fail("usage: make_native_seed CORE OUT [STACK_BYTES]");
	size_t stack_bytes = argc > 3 ? strtoul(argv[3], NULL, 0) : 4096;
	size_t len;
	uint8_t *core = slurp(argv[1], &len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)core;
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_type != ET_CORE ||
	    eh->e_phoff + eh->e_phnum * sizeof(Elf64_Phdr) > len)
		fail("not an ELF core");
	Elf64_Phdr *ph = (Elf64_Phdr *)(core + eh->e_phoff);

	/* The notes to keep, and the first thread's stack pointer. */
	uint8_t *notes = malloc(len);
	size_t nlen = 0;
	uint64_t rsp = 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_NOTE ||
		    ph[i].p_offset + ph[i].p_filesz > len)
			continue;
		size_t off = ph[i].p_offset, end = off + ph[i].p_filesz;
		while (off + sizeof(Elf64_Nhdr) <= end) {
			Elf64_Nhdr *n = (Elf64_Nhdr *)(core + off);
			size_t total = sizeof(*n) + ((n->n_namesz + 3) & ~3u) +
				       ((n->n_descsz + 3) & ~3u);
			if (off + total > end)
				break;
			const uint8_t *desc = core + off + sizeof(*n) +
					      ((n->n_namesz + 3) & ~3u);
			if (n->n_type == NT_PRSTATUS && !rsp)
				/* pr_reg starts at 112; rsp is user_regs[19] */
				memcpy(&rsp, desc + 112 + 19 * 8, 8);
			if (n->n_type == NT_PRPSINFO ||
			    n->n_type == NT_PRSTATUS ||
			    n->n_type == NT_SIGINFO || n->n_type == NT_AUXV ||
			    n->n_type == NT_FILE) {
				memcpy(notes + nlen, n, total);
				nlen += total;
			}
			off += total;
		}
	}
	if (!rsp)
		fail("no NT_PRSTATUS");

	/* The stack from rsp's page up, within its segment. */
	Elf64_Phdr stack = {0};
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || rsp < ph[i].p_vaddr ||
		    rsp >= ph[i].p_vaddr + ph[i].p_filesz)
			continue;
		uint64_t from = rsp & ~(uint64_t)0xfff;
		uint64_t to = from + stack_bytes;
		if (to > ph[i].p_vaddr + ph[i].p_filesz)
			to = ph[i].p_vaddr + ph[i].p_filesz;
		stack = ph[i];
		stack.p_offset = ph[i].p_offset + (from - ph[i].p_vaddr);
		stack.p_vaddr = from;
		stack.p_filesz = stack.p_memsz = to - from;
	}
	if (!stack.p_filesz)
		fail("the stack pointer is in no dumped segment");

	Elf64_Ehdr out = *eh;
	out.e_phoff = sizeof(out);
	out.e_phnum = 2;
	out.e_shoff = 0;
	out.e_shnum = 0;
	out.e_shstrndx = 0;
	Elf64_Phdr p[2] = {{.p_type = PT_NOTE, .p_align = 1}, stack};
	p[0].p_offset = sizeof(out) + sizeof(p);
	p[0].p_filesz = nlen;
	uint64_t data = (p[0].p_offset + nlen + 15) & ~(uint64_t)15;
	const uint8_t *stack_bytes_in = core + stack.p_offset;
	p[1].p_offset = data;
	FILE *f = fopen(argv[2], "wb");
	if (!f)
		fail("cannot write the output");
	fwrite(&out, sizeof(out), 1, f);
	fwrite(p, sizeof(p), 1, f);
	fwrite(notes, 1, nlen, f);
	for (uint64_t at = p[0].p_offset + nlen; at < data; at++)
		fputc(0, f);
	fwrite(stack_bytes_in, 1, stack.p_filesz, f);
	if (fclose(f) != 0)
		fail("cannot write the output");
	free(notes);
	free(core);
	return 0;
}
