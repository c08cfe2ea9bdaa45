/* The core reader's own state, shared by its files (core_*.c); nothing
 * else includes this. See core.h. */
#ifndef CS_TARGET_CORE_INTERNAL_H
#define CS_TARGET_CORE_INTERNAL_H

#include "core.h"
#include "build_id.h"
#include "decompress.h"
#include "link_map.h"
#include "../util/hex.h"
#include <elf.h>
#include <linux/magic.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Files opened for NT_FILE fallback reads are kept open, but a process can
 * map hundreds of files; least recently used ones are closed beyond this. */
#define CS_CORE_MAX_OPEN_FILES 16

#define CS_CORE_PRSTATUS_REG_OFFSET 112 /* offsetof(elf_prstatus, pr_reg) */
#define CS_CORE_PRSTATUS_MIN (CS_CORE_PRSTATUS_REG_OFFSET + 27 * 8)
#define CS_CORE_PRPSINFO_SIZE 136

/* One PT_LOAD. Bytes in [promised_end, end) the dumper left out because
 * they equal the mapped file (kernel: unmodified file pages; gcore leaves
 * whole mappings out), so the file may supply them. Bytes in [data_end,
 * promised_end) were dumped, perhaps because they differ from the file
 * (.data, RELRO after relocation), and then lost to truncation: the file
 * would give stale values, so they fault. */
struct cs_core_segment {
	uint64_t start, end;   /* [p_vaddr, p_vaddr + p_memsz) */
	uint64_t data_end;     /* [start, data_end) is in the file */
	uint64_t promised_end; /* start + p_filesz */
	const uint8_t *data;   /* the byte for start */
	bool exec;             /* PF_X: the mapping could run code */
	bool write;            /* PF_W: the process could write it */
};

struct cs_core_file {     /* a file named by NT_FILE, opened lazily */
	const char *path; /* target path, points into the note */
	int fd;           /* -1 while not open */
	int open_errno;   /* opening failed: don't retry every read */
	int checked;      /* build-id compared with the core's */
	int mismatched;   /* ... and it differs: never read from it */
	/* the file with its build-id, found in place of one that cannot be
	 * used (module_search.h), or NULL */
	const struct cs_module_found *found;
	uint64_t last_use; /* LRU stamp from cs_core.clock */
};

struct cs_core {
	char *path;
	int fd;
	Elf *elf;
	const uint8_t *image; /* the whole core, mmapped by libelf */
	size_t image_size;

	struct cs_core_segment *segs; /* sorted by start, disjoint */
	size_t nsegs;
	size_t last_seg; /* last hit: reads cluster */

	/* Threads (NT_PRSTATUS), mappings (NT_FILE, else rebuilt), auxv
	 * (NT_AUXV), regions (the PT_LOADs) and the process's facts, all
	 * owned here; filled by cs_core_open. */
	struct cs_target_tables tables;
	size_t *map_file; /* of each of tables.maps: index into files */
	struct cs_core_file *files;
	size_t nfiles, nopen;
	uint64_t clock;
	char *sysroot;
	char **lib_dirs; /* --lib-search-path, NULL-terminated */
	/* where a file that cannot be used is looked for by its build-id:
	 * the search the engine gave (cs_core_use_module_search), else one
	 * of lib_dirs */
	struct cs_module_search *search, *own_search;
	const char *compression; /* "zstd"... when inflated from that */
	char *warnings[CS_CORE_MAX_WARNINGS];
	size_t nwarnings;

	struct cs_core_process process;
	struct cs_siginfo siginfo;
	uint64_t *auxv; /* NT_AUXV's pairs in host order (tables.auxv) */
	int have_file_note;
	struct cs_link_map recovered; /* the mappings, when NT_FILE is absent */
	const char *exe_target; /* cs_core_set_executable: the executable's */
	char *exe_host;         /* path in the target, and the file given */
	/* cs_core_set_file_map: pairs (path in the target, file here),
	 * NULL-terminated, the caller's; NULL for none */
	const char *const *file_map;

	uint64_t described;     /* where the last thing the headers name ends */
	uint64_t load_bytes;    /* PT_LOAD bytes the headers promise */
	uint64_t missing_bytes; /* of those, past the end of the file */
	int notes_truncated;

	char *exe_buf; /* tables.executable, when read from memory */
};

/* The image may be unaligned and the host order is not assumed. */
static inline uint16_t cs_core_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t cs_core_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t cs_core_le64(const uint8_t *p)
{
	return (uint64_t)cs_core_le32(p) | (uint64_t)cs_core_le32(p + 4) << 32;
}

static inline struct cs_error *cs_core_format(const struct cs_core *core,
					      const char *what)
{
	return cs_error_create(CS_ERR_FORMAT, "%s: %s", core->path, what);
}

/* The one message of a core cut short: its size, what its headers
 * describe (at least, when only part of them is there), what is missing,
 * why that happens and what to do. core_memory.c */
struct cs_error *cs_core_cut(const struct cs_core *core, uint64_t described,
			     bool at_least, const char *missing);
/* Note that the headers describe bytes up to offset + size. */
void cs_core_describes(struct cs_core *core, uint64_t offset, uint64_t size);

/* core_memory.c: the tables once the notes and segments are read. */
struct cs_error *cs_core_fill_tables(struct cs_core *core);

/* core_notes.c */
struct cs_error *cs_core_parse_notes(struct cs_core *core, const GElf_Phdr *ph,
				     size_t index);

/* core_open.c */
void cs_core_close_files(struct cs_core *core);
void cs_core_free_lib_dirs(struct cs_core *core);

/* core_files.c */
struct cs_error *cs_core_fault(const struct cs_core *core, uint64_t addr,
			       size_t len, uint64_t at, const char *why);
struct cs_error *cs_core_read_file(struct cs_core *core,
				   const struct cs_mapping *m, uint64_t at,
				   uint8_t *out, size_t n, uint64_t addr,
				   size_t len);

#endif
