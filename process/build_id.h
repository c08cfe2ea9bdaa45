/* The GNU build-id of an ELF module loaded in a target, read from the
 * target's memory: ELF header, program headers, PT_NOTE, NT_GNU_BUILD_ID.
 * Shared by the core reader (bytes dumped in the core only) and the live
 * target, since it is what proves a file on disk is the one that ran. */
#ifndef CS_CORESTACK_BUILD_ID_H
#define CS_CORESTACK_BUILD_ID_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory.h"
#include "../util/error.h"

/* The ELF header and program headers of the module loaded at start, from
 * the target's memory (*phdrs malloc'd, the caller frees it). who names the
 * target in messages. CS_ERR_FAULT if the bytes cannot be read,
 * CS_ERR_CORRUPT if they are not a plausible 64-bit little-endian ELF. */
struct cs_error *cs_module_headers_read(const struct cs_memory *mem,
					const char *who, uint64_t start,
					Elf64_Ehdr *eh, Elf64_Phdr **phdrs,
					size_t *phnum);

/* who names the target in messages. CS_ERR_FAULT if the bytes cannot be
 * read, CS_ERR_CORRUPT if they are not a 64-bit little-endian ELF,
 * CS_ERR_LOOKUP without a build-id, CS_ERR_LIMIT if it exceeds bufsize. */
struct cs_error *cs_build_id_read(const struct cs_memory *mem, const char *who,
				  uint64_t start, uint8_t *buf, size_t bufsize,
				  size_t *len);

/* Whether two build-ids are the one: the same length and bytes, and not
 * empty. */
bool cs_build_id_same(const uint8_t *a, size_t alen, const uint8_t *b,
		      size_t blen);

/* The build-id in the notes of the ELF file open as fd, or of the regular
 * file at path; the length, 0 if it has none or is no such file. */
size_t cs_build_id_of_fd(int fd, uint8_t *out, size_t max);
size_t cs_build_id_of_path(const char *path, uint8_t *out, size_t max);

#endif
