/* Baseline for the layout benchmark: open an ELF file and inflate exactly
 * the compressed debug sections corestack's layout resolver hands to libdw
 * (dwarf/module.c lean_sections), then exit. */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const sections[] = {
	".debug_info",        ".debug_abbrev", ".debug_str",  ".debug_line_str",
	".debug_str_offsets", ".debug_macro",  ".debug_addr", NULL,
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench-inflate ELF\n");
		return 64;
	}
	elf_version(EV_CURRENT);
	int fd = open(argv[1], O_RDONLY);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) {
		fprintf(stderr, "bench-inflate: cannot read %s\n", argv[1]);
		return 2;
	}
	size_t total = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		for (const char *const *s = sections; name && *s; s++) {
			if (strcmp(name, *s) != 0)
				continue;
			if ((sh.sh_flags & SHF_COMPRESSED) &&
			    elf_compress(scn, 0, 0) < 0)
				return 2;
			Elf_Data *d = elf_getdata(scn, NULL);
			total += d ? d->d_size : 0;
		}
	}
	printf("%zu bytes inflated\n", total);
	elf_end(elf);
	close(fd);
	return 0;
}
