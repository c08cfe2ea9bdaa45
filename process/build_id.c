#include "build_id.h"
#include "../util/open_regular.h"

#include <elf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bounds for untrusted headers: no real module comes near them. */
#define MAX_PHNUM 1024
#define MAX_NOTES (64 * 1024)

static size_t align_up(size_t n, size_t align)
{
	return (n + align - 1) & ~(align - 1);
}

/* The first GNU build-id note in notes; *found says if there was one. */
static struct cs_error *note_build_id(const uint8_t *notes, size_t size,
				      size_t align, uint8_t *buf,
				      size_t bufsize, size_t *len, int *found)
{
	size_t pos = 0;
	while (size - pos >= 12) { /* pos grows by at least 12 per note */
		uint32_t namesz, descsz, type;
		memcpy(&namesz, notes + pos, 4);
		memcpy(&descsz, notes + pos + 4, 4);
		memcpy(&type, notes + pos + 8, 4);
		size_t name = pos + 12;
		if (namesz > size - name)
			break;
		size_t desc = name + align_up(namesz, align);
		if (desc > size || descsz > size - desc)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && descsz > 0 &&
		    memcmp(notes + name, "GNU", 4) == 0) {
			if (descsz > bufsize)
				return cs_error_create(CS_ERR_LIMIT,
						       "build-id of %" PRIu32
						       " bytes does "
						       "not fit in %zu",
						       descsz, bufsize);
			memcpy(buf, notes + desc, descsz);
			*len = descsz;
			*found = 1;
			return NULL;
		}
		size_t next = desc + align_up(descsz, align);
		if (next > size)
			break;
		pos = next;
	}
	return NULL;
}

struct cs_error *cs_module_headers_read(const struct cs_memory *mem,
					const char *who, uint64_t start,
					Elf64_Ehdr *eh, Elf64_Phdr **phdrs,
					size_t *phnum)
{
	*phdrs = NULL;
	*phnum = 0;
	/* x86-64 targets only: the host's byte order */
	struct cs_error *err = cs_memory_read(mem, start, eh, sizeof(*eh));
	if (err)
		return cs_error_wrap(
			err, "ELF header of the module at 0x%" PRIx64, start);
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return cs_error_create(CS_ERR_CORRUPT,
				       "%s: no 64-bit little-endian ELF header "
				       "at 0x%" PRIx64,
				       who, start);
	uint64_t phaddr;
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 ||
	    eh->e_phnum > MAX_PHNUM ||
	    __builtin_add_overflow(start, eh->e_phoff, &phaddr))
		return cs_error_create(CS_ERR_CORRUPT,
				       "%s: the module at 0x%" PRIx64
				       " has implausible program headers",
				       who, start);
	size_t n = eh->e_phnum;
	Elf64_Phdr *ph = malloc(n * sizeof(*ph));
	if (!ph)
		return &cs_error_nomem;
	if ((err = cs_memory_read(mem, phaddr, ph, n * sizeof(*ph)))) {
		free(ph);
		return cs_error_wrap(
			err, "program headers of the module at 0x%" PRIx64,
			start);
	}
	*phdrs = ph;
	*phnum = n;
	return NULL;
}

struct cs_error *cs_build_id_read(const struct cs_memory *mem, const char *who,
				  uint64_t start, uint8_t *buf, size_t bufsize,
				  size_t *len)
{
	*len = 0;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph;
	size_t phnum;
	struct cs_error *err =
		cs_module_headers_read(mem, who, start, &eh, &ph, &phnum);
	if (err)
		return err;
	/* Load bias: the first PT_LOAD maps file offset 0 at start. */
	uint64_t bias = start;
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			bias = start - (ph[i].p_vaddr - ph[i].p_offset);
			break;
		}
	struct cs_error *fault = NULL;
	int found = 0;
	for (size_t i = 0; i < phnum && !found && !err; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_filesz == 0 ||
		    ph[i].p_filesz > MAX_NOTES)
			continue;
		size_t size = ph[i].p_filesz;
		uint8_t *notes = malloc(size);
		if (!notes) {
			err = &cs_error_nomem;
			break;
		}
		struct cs_error *e =
			cs_memory_read(mem, bias + ph[i].p_vaddr, notes, size);
		if (e) {
			/* Another PT_NOTE may still be readable. */
			if (!fault)
				fault = e;
			else
				cs_error_destroy(e);
		} else {
			err = note_build_id(notes, size,
					    ph[i].p_align == 8 ? 8 : 4, buf,
					    bufsize, len, &found);
		}
		free(notes);
	}
	free(ph);
	if (err || found) {
		cs_error_destroy(fault);
		return err;
	}
	if (fault)
		return cs_error_wrap(fault, "notes of the module at 0x%" PRIx64,
				     start);
	return cs_error_create(CS_ERR_LOOKUP,
			       "%s: the module at 0x%" PRIx64
			       " has no GNU build-id",
			       who, start);
}

size_t cs_build_id_of_fd(int fd, uint8_t *out, size_t max)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return 0;
	const void *id = NULL;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &id);
	size_t n = len > 0 && id && (size_t)len <= max ? (size_t)len : 0;
	if (n) /* id is NULL when there is none: memcpy wants a pointer */
		memcpy(out, id, n);
	elf_end(elf);
	return n;
}

size_t cs_build_id_of_path(const char *path, uint8_t *out, size_t max)
{
	int fd = cs_open_regular(path);
	if (fd < 0)
		return 0;
	size_t n = cs_build_id_of_fd(fd, out, max);
	close(fd);
	return n;
}

bool cs_build_id_same(const uint8_t *a, size_t alen, const uint8_t *b,
		      size_t blen)
{
	return alen && alen == blen && memcmp(a, b, alen) == 0;
}
