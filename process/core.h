/* ELF core-file reader: process memory, threads and mappings of a core dump.
 *
 * Reads x86-64 ELF64 little-endian cores written by the Linux kernel or by
 * gdb's gcore. Everything in the file is untrusted: bad sizes give
 * CS_ERR_FORMAT errors, a truncated core opens with what it has (see
 * cs_core_truncation). The core is mmapped, not copied.
 *
 * Memory a core leaves out but a mapped file backs (kernel cores leave
 * unmodified file pages out with p_filesz < p_memsz; gcore leaves out whole
 * file mappings, text and rodata) is read from that file on disk, as named
 * in NT_FILE (optionally under a sysroot). Bytes a core did include but lost
 * to truncation are not: they were dumped because they may differ from the
 * file (.data, relocated RELRO), so they fault instead.
 * Not thread-safe: one cs_core per thread. */
#ifndef CS_CORESTACK_CORE_H
#define CS_CORESTACK_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory.h"
#include "target.h"
#include "../util/error.h"

struct cs_core;

struct cs_core_process { /* NT_PRPSINFO */
	int present;
	int pid, ppid, uid, gid;
	char fname[17];
	char psargs[81];
};

/* A core compressed with zstd, gzip or xz (told by its magic bytes) is
 * inflated into memory first; see decompress.h. */
struct cs_error *cs_core_open(const char *path, struct cs_core **ret);
/* Safe on NULL. */
void cs_core_close(struct cs_core *core);
const char *cs_core_path(const struct cs_core *core);

/* Read exactly len bytes of process memory at addr, from the core where it
 * has them, else (for bytes it left out, see above) from the file an
 * NT_FILE mapping names; else CS_ERR_FAULT naming the address. Reads may
 * span segments. */
struct cs_error *cs_core_read(struct cs_core *core, uint64_t addr, void *buf,
			      size_t len);
/* As cs_core_read, but only bytes stored in the core itself: for checks
 * that must not trust the files on disk (build-ids). */
struct cs_error *cs_core_read_dumped(struct cs_core *core, uint64_t addr,
				     void *buf, size_t len);
/* The core as memory (memory.h); valid while core is open. */
struct cs_memory cs_core_memory(struct cs_core *core);
/* A prefetch hint (memory.h): the core's pages that
 * hold a range are read ahead with MADV_WILLNEED. */
void cs_core_prefetch(struct cs_core *core, uint64_t addr, size_t len);

/* Prefix every NT_FILE path with dir when opening it (a copied-out
 * container or machine root); NULL for none (the default). Closes files
 * already open and forgets failed opens. */
struct cs_error *cs_core_set_sysroot(struct cs_core *core, const char *dir);

/* --lib-search-path: colon-separated directories where a file NT_FILE
 * names is looked for by its basename when it is not at its path (under
 * the sysroot, if any). NULL or "" for none. Closes open files. */
struct cs_error *cs_core_set_lib_search_path(struct cs_core *core,
					     const char *dirs);
/* The file to read the executable's mappings from (the EXECUTABLE
 * argument), taken as it is, in place of the path the core names for it
 * (the tables' executable, see cs_core_tables). NULL for none. Closes open files. */
struct cs_error *cs_core_set_executable(struct cs_core *core, const char *path);
/* Files given for paths the core names, taken before any other place
 * (a bundle's files, process/bundle.h): pairs of the path in the target
 * and the file on this machine, ended by a NULL; the array and its
 * strings are the caller's and must outlive the core. NULL for none.
 * Closes open files. */
void cs_core_set_file_map(struct cs_core *core, const char *const *pairs);
/* Where the file the target knew as path is on this machine: the file
 * the file map gives for it, the file
 * cs_core_set_executable gave for the executable, else under the
 * sysroot, else by basename in the lib search path, else path itself;
 * but a file of a mapping that is not the one the process mapped (gone,
 * another build) is the file with its build-id, where one was found
 * (cs_core_use_module_search). malloc'd (NULL on ENOMEM); it may not
 * exist. */
char *cs_core_host_path(struct cs_core *core, const char *path);
/* Look for a file NT_FILE names that cannot be used (gone, another
 * build) with s (module_search.h), and read the bytes the core left out
 * from the file found; NULL: with the lib search path alone. Closes
 * files already open and forgets failed opens. */
void cs_core_use_module_search(struct cs_core *core,
			       struct cs_module_search *s);
/* The file found so for the module mapped at m (a mapping of the
 * core's tables), or NULL. */
const struct cs_module_found *cs_core_module_found(struct cs_core *core,
						   const struct cs_mapping *m);

/* Open every file NT_FILE names now rather than on first read, so that
 * each found file whose build-id differs from the one dumped in the core
 * gives its warning (see cs_core_warning_at) whatever is read later.
 * Such a file is never read: its bytes fault. */
void cs_core_check_files(struct cs_core *core);
/* Warnings about the input (mismatched files), one line each. */
#define CS_CORE_MAX_WARNINGS 8
size_t cs_core_warning_count(const struct cs_core *core);
const char *cs_core_warning_at(const struct cs_core *core, size_t i);

/* Threads, mappings, auxv, regions (the PT_LOADs) and the process's
 * facts, as a target's tables (target.h), valid while core is open.
 * Thread 0 is the one the kernel reported first (for kernel cores, the
 * thread that took the signal). Mappings are NT_FILE's; without that
 * note (the kernel leaves it out when it would be too large), those of
 * the ELF modules the dynamic linker lists, rebuilt from their headers in
 * the core (link_map.h), with AT_EXECFN as the executable's path. A
 * region is writable or runs code as its segment's PF_W and PF_X say.
 * The executable is the mapping containing AT_PHDR (or AT_ENTRY), else
 * the AT_EXECFN string from memory, else NULL: the mapping comes first
 * because AT_EXECFN is the path given to execve, which may be relative,
 * or a #! script rather than the interpreter. siginfo is always given
 * (present 0 without NT_SIGINFO); pid and command are NT_PRPSINFO's. */
const struct cs_target_tables *cs_core_tables(const struct cs_core *core);
/* NULL when the mappings are NT_FILE's or every module was rebuilt; else
 * one line on why the rebuilt list may lack a module. */
const char *cs_core_mapping_gap(const struct cs_core *core);
const struct cs_core_process *cs_core_process(const struct cs_core *core);
/* A NUL-terminated string of at most max bytes from memory; malloc'd,
 * NULL when it cannot be read whole. */
char *cs_core_read_string(struct cs_core *core, uint64_t addr, size_t max);
/* GNU build-id of the ELF module loaded at start, read from the core's own
 * bytes (ELF header, program headers, PT_NOTE, NT_GNU_BUILD_ID); never from
 * disk, since it is what proves a disk file matches. CS_ERR_FAULT if those
 * bytes are not in the core, CS_ERR_CORRUPT if they are not a valid ELF,
 * CS_ERR_LOOKUP if it has no build-id. */
struct cs_error *cs_core_module_build_id(struct cs_core *core, uint64_t start,
					 uint8_t *buf, size_t bufsize,
					 size_t *len);

/* Truncation: bytes of PT_LOAD data the headers promise but the file lacks,
 * out of the total promised. */
uint64_t cs_core_truncated_bytes(const struct cs_core *core);
uint64_t cs_core_segment_bytes(const struct cs_core *core);
/* NULL if the core is complete, else a CS_ERR_FORMAT error (the caller
 * destroys it) with a one-line message for the CLI to print as a warning. */
struct cs_error *cs_core_truncation(const struct cs_core *core);

#endif
