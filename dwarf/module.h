/* An ELF module (executable or shared library) and its debug info.
 *
 * Opening a module finds where its DWARF lives: in the file itself, in the
 * file named by .gnu_debuglink (next to it, in .debug/, under the debug
 * directories), or under DEBUGDIR/.build-id/xx/yyyy.debug. The module knows
 * nothing about Ruby. */
#ifndef CS_DWARF_MODULE_H
#define CS_DWARF_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <gelf.h>

#include "../util/error.h"

#define DW_BUILD_ID_MAX 64

struct dw_module {
	char *path;       /* the ELF file as opened */
	char *debug_path; /* where its DWARF came from (== path if embedded) */
	int fd, debug_fd;
	Elf *elf, *debug_elf; /* debug_elf == elf when embedded */
	Dwarf *dwarf;         /* NULL until dw_module_dwarf() succeeds */
	Elf *lean_elf;        /* in-memory image of the debug sections read */
	char *lean_image;     /* mmap'ed, lean_size bytes */
	size_t lean_size;
	uint8_t build_id[DW_BUILD_ID_MAX];
	size_t build_id_len;
	uint64_t first_vaddr; /* p_vaddr of the first PT_LOAD (for load bias) */
	int is_pie_or_dso; /* ET_DYN: addresses are relative to the load bias */
	char **debug_dirs; /* NULL-terminated; default /usr/lib/debug */
	/* How the user names another debug directory, for the no-debug
	 * message ("pass --debug-dir", a debugger's setting); NULL: said
	 * generically. Set by the caller after opening. */
	const char *debug_dir_advice;
	/* Why DEBUGINFOD_URLS was not asked (libdebuginfod could not be
	 * loaded: dwarf/debuginfod.h); NULL when it was, or was not set. */
	const char *debuginfod_why;
};

/* Open path as an ELF module. Finds the debug file but does not parse DWARF
 * yet. debug_dirs may be NULL (then /usr/lib/debug). */
struct cs_error *dw_module_open(const char *path, const char *const *debug_dirs,
				struct dw_module **ret);
void dw_module_close(struct dw_module *mod);

/* The module's DWARF (opened on first use). CS_ERR_NO_DEBUG with a message
 * that names the file, its build-id and how to get debug info, one of the
 * ways being debug_dir_advice. */
struct cs_error *dw_module_dwarf(struct dw_module *mod, Dwarf **ret);

/* Hex string of the build-id ("" if none) into buf of at least
 * 2*DW_BUILD_ID_MAX+1 bytes. */
void dw_module_build_id_hex(const struct dw_module *mod, char *buf);

/* Address of an ELF symbol (.symtab, then .dynsym) relative to the module's
 * link-time addresses. CS_ERR_LOOKUP when absent. */
struct cs_error *dw_module_symbol(struct dw_module *mod, const char *name,
				  uint64_t *addr, uint64_t *size);
/* The same for a data object (STT_OBJECT) only: a variable, never a
 * function of that name. */
struct cs_error *dw_module_object_symbol(struct dw_module *mod,
					 const char *name, uint64_t *addr);

/* An address range [start, end) relative to the module's link-time
 * addresses. */
struct dw_range {
	uint64_t start, end;
};

/* The ranges of the functions named names[0..nnames) (ELF symbols of
 * type STT_FUNC with a size), a compiler's split-off parts of them
 * included ("f.cold", "f.constprop.0" count as f): with exported_only,
 * those the module exports (.dynsym, a few thousand symbols), else every
 * definition (.symtab, or .dynsym where neither the file nor its debug
 * file has one). *ret (malloc'd, NULL when none) holds *nret ranges, in
 * no order and possibly repeated; one pass over each table read. */
struct cs_error *dw_module_function_ranges(struct dw_module *mod,
					   const char *const *names,
					   size_t nnames, bool exported_only,
					   struct dw_range **ret, size_t *nret);

/* 1 if the module's read-only data (.rodata) holds text at the end of a
 * NUL-terminated string (linkers keep a string that ends another only
 * once), 0 if not (or no such section). Behaviour that shows only in the
 * strings a program prints is told this way. */
int dw_module_has_string(struct dw_module *mod, const char *text);

#endif
