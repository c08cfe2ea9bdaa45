/* Baseline for the layout benchmark: open an ELF file and inflate exactly
 * the compressed debug sections corestack's layout resolver hands to libdw
 * (dwarf/module.c lean_sections), then exit.
 *
 * bench-inflate ELF          as libelf inflates them (elf_compress: a
 *                            buffer of its own per section)
 * bench-inflate --image ELF  as the resolver does: zlib straight into one
 *                            anonymous mapping advised for huge pages */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

static const char *const sections[] = {
	".debug_info",        ".debug_abbrev", ".debug_str",  ".debug_line_str",
	".debug_str_offsets", ".debug_macro",  ".debug_addr", NULL,
};

static int wanted(const char *name)
{
	for (const char *const *s = sections; name && *s; s++)
		if (strcmp(name, *s) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int image = argc == 3 && strcmp(argv[1], "--image") == 0;
	if (argc != 2 + image) {
		fprintf(stderr, "usage: bench-inflate [--image] ELF\n");
		return 64;
	}
	elf_version(EV_CURRENT);
	int fd = open(argv[1 + image], O_RDONLY);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) {
		fprintf(stderr, "bench-inflate: cannot read %s\n",
			argv[1 + image]);
		return 2;
	}
	size_t total = 0, inflated = 0;
	for (int pass = image ? 0 : 1; pass < 2; pass++) {
		unsigned char *out = NULL;
		if (image && pass == 1) {
			void *p = mmap(NULL, total ? total : 1,
				       PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				return 2;
			madvise(p, total ? total : 1, MADV_HUGEPAGE);
			out = p;
		}
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) ||
			    !wanted(elf_strptr(elf, shstrndx, sh.sh_name)) ||
			    !(sh.sh_flags & SHF_COMPRESSED))
				continue;
			if (!image) {
				if (elf_compress(scn, 0, 0) < 0)
					return 2;
				Elf_Data *d = elf_getdata(scn, NULL);
				inflated += d ? d->d_size : 0;
				continue;
			}
			GElf_Chdr ch;
			Elf_Data *raw = elf_rawdata(scn, NULL);
			if (!raw || raw->d_size <= sizeof(Elf64_Chdr) ||
			    !gelf_getchdr(scn, &ch) ||
			    ch.ch_type != ELFCOMPRESS_ZLIB)
				return 2;
			if (pass == 0) {
				total += (ch.ch_size + 7) & ~(size_t)7;
				continue;
			}
			z_stream s;
			memset(&s, 0, sizeof(s));
			if (inflateInit(&s) != Z_OK)
				return 2;
			s.next_in = (Bytef *)raw->d_buf + sizeof(Elf64_Chdr);
			s.avail_in = (uInt)(raw->d_size - sizeof(Elf64_Chdr));
			s.next_out = out;
			s.avail_out = (uInt)ch.ch_size;
			if (inflate(&s, Z_FINISH) != Z_STREAM_END)
				return 2;
			inflateEnd(&s);
			inflated += ch.ch_size;
			out += (ch.ch_size + 7) & ~(size_t)7;
		}
	}
	printf("%zu bytes inflated\n", inflated);
	elf_end(elf);
	close(fd);
	return 0;
}
