#include "module.h"
#include "debuginfod.h"
#include "../util/hex.h"
#include "../util/open_regular.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const char *const default_debug_dirs[] = {"/usr/lib/debug", NULL};

static struct cs_error *open_elf(const char *path, int *fd_ret, Elf **elf_ret)
{
	/* Paths come from cores (NT_FILE) and debug links: only regular
	 * files are read. */
	int fd = cs_open_regular(path);
	if (fd < 0 && (errno == ENODEV || errno == EISDIR))
		return cs_error_create(
			CS_ERR_FORMAT,
			"%s: not a regular file (a device, FIFO "
			"or directory); pass the ELF file itself",
			path);
	if (fd < 0)
		return cs_error_create(CS_ERR_OS, "%s: cannot open: %s", path,
				       strerror(errno));
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return cs_error_create(CS_ERR_FORMAT, "%s: not an ELF file",
				       path);
	}
	*fd_ret = fd;
	*elf_ret = elf;
	return NULL;
}

/* The GNU build-id note, from SHT_NOTE sections or PT_NOTE segments. */
static size_t read_build_id(Elf *elf, uint8_t *out)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nhdr;
		while ((off = gelf_getnote(data, off, &nhdr, &name_off,
					   &desc_off)) > 0) {
			if (nhdr.n_type == NT_GNU_BUILD_ID &&
			    nhdr.n_namesz == 4 &&
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) ==
				    0 &&
			    nhdr.n_descsz <= DW_BUILD_ID_MAX) {
				memcpy(out, (char *)data->d_buf + desc_off,
				       nhdr.n_descsz);
				return nhdr.n_descsz;
			}
		}
	}
	return 0;
}

static int has_debug_info(Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr))
			continue;
		const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
		/* A stripped debug file keeps the header as SHT_NOBITS. */
		if (name &&
		    (strcmp(name, ".debug_info") == 0 ||
		     strcmp(name, ".zdebug_info") == 0) &&
		    shdr.sh_type != SHT_NOBITS)
			return 1;
	}
	return 0;
}

static Elf_Scn *find_section(Elf *elf, const char *want)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr))
			continue;
		const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}

/* Try one candidate debug file: it must exist, be ELF, carry DWARF and, when
 * the module has a build-id, carry the same one. */
static int try_debug_file(struct dw_module *mod, const char *path)
{
	int fd = -1;
	Elf *elf = NULL;
	struct cs_error *err = open_elf(path, &fd, &elf);
	if (err || !elf) {
		cs_error_destroy(err);
		return 0;
	}
	uint8_t id[DW_BUILD_ID_MAX];
	size_t id_len = read_build_id(elf, id);
	if (has_debug_info(elf) && (mod->build_id_len == 0 ||
				    (id_len == mod->build_id_len &&
				     memcmp(id, mod->build_id, id_len) == 0))) {
		mod->debug_fd = fd;
		mod->debug_elf = elf;
		mod->debug_path = strdup(path);
		return mod->debug_path != NULL;
	}
	elf_end(elf);
	close(fd);
	return 0;
}

static int find_by_build_id(struct dw_module *mod)
{
	if (mod->build_id_len < 2)
		return 0;
	char hex[2 * DW_BUILD_ID_MAX + 1];
	dw_module_build_id_hex(mod, hex);
	for (char **dir = mod->debug_dirs; *dir; dir++) {
		char *path;
		if (asprintf(&path, "%s/.build-id/%.2s/%s.debug", *dir, hex,
			     hex + 2) < 0)
			return 0;
		int ok = try_debug_file(mod, path);
		free(path);
		if (ok)
			return 1;
	}
	return 0;
}

/* Entries of a debug directory looked at for a file of the module's
 * build-id: a directory of a few unstripped modules, not a whole tree. */
#define MAX_DIR_ENTRIES 4096

/* A file directly in a debug directory whose build-id is the module's,
 * whatever its name: an unstripped copy of the module (what a build
 * leaves) or its separate debug file. Only with a build-id to match. */
static int find_in_debug_dirs(struct dw_module *mod)
{
	if (mod->build_id_len < 2)
		return 0;
	for (char **d = mod->debug_dirs; *d; d++) {
		DIR *dir = opendir(*d);
		if (!dir)
			continue;
		int ok = 0;
		struct dirent *e;
		for (size_t n = 0;
		     !ok && n < MAX_DIR_ENTRIES && (e = readdir(dir)) != NULL;
		     n++) {
			if (e->d_name[0] == '.' ||
			    (e->d_type != DT_REG && e->d_type != DT_LNK &&
			     e->d_type != DT_UNKNOWN))
				continue;
			char *path;
			if (asprintf(&path, "%s/%s", *d, e->d_name) < 0)
				break;
			ok = try_debug_file(mod, path);
			free(path);
		}
		closedir(dir);
		if (ok)
			return 1;
	}
	return 0;
}

static int find_by_debuglink(struct dw_module *mod)
{
	Elf_Scn *scn = find_section(mod->elf, ".gnu_debuglink");
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || data->d_size < 2)
		return 0;
	const char *name = data->d_buf;
	if (!memchr(name, '\0', data->d_size) || strchr(name, '/'))
		return 0;
	char *copy = strdup(mod->path);
	if (!copy)
		return 0;
	const char *dir = dirname(copy);
	int ok = 0;
	char *path = NULL;
	if (asprintf(&path, "%s/%s", dir, name) >= 0 &&
	    strcmp(path, mod->path) != 0)
		ok = try_debug_file(mod, path);
	free(path);
	path = NULL;
	if (!ok && asprintf(&path, "%s/.debug/%s", dir, name) >= 0)
		ok = try_debug_file(mod, path);
	free(path);
	for (char **d = mod->debug_dirs; !ok && *d; d++) {
		path = NULL;
		if (asprintf(&path, "%s%s/%s", *d, dir, name) >= 0)
			ok = try_debug_file(mod, path);
		free(path);
	}
	free(copy);
	return ok;
}

/* Last resort: the debuginfod servers DEBUGINFOD_URLS names, by build-id
 * (libdebuginfod keeps what it downloads in its own cache). */
static int find_by_debuginfod(struct dw_module *mod)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (!urls || !*urls || mod->build_id_len == 0)
		return 0;
	char *path = NULL;
	int fd = dw_debuginfod_find_debuginfo(mod->build_id, mod->build_id_len,
					      &path, &mod->debuginfod_why);
	int ok = 0;
	if (fd >= 0) {
		close(fd);
		ok = path && try_debug_file(mod, path);
	}
	free(path);
	return ok;
}

struct cs_error *dw_module_open(const char *path, const char *const *debug_dirs,
				struct dw_module **ret)
{
	elf_version(EV_CURRENT);
	struct dw_module *mod = calloc(1, sizeof(*mod));
	if (!mod)
		return &cs_error_nomem;
	mod->fd = mod->debug_fd = -1;
	mod->path = strdup(path);
	if (!mod->path) {
		free(mod);
		return &cs_error_nomem;
	}
	struct cs_error *err = open_elf(path, &mod->fd, &mod->elf);
	if (err) {
		dw_module_close(mod);
		return err;
	}
	GElf_Ehdr ehdr;
	if (!gelf_getehdr(mod->elf, &ehdr)) {
		dw_module_close(mod);
		return cs_error_create(CS_ERR_FORMAT, "%s: bad ELF header",
				       path);
	}
	if (ehdr.e_type == ET_CORE) {
		dw_module_close(mod);
		return cs_error_create(CS_ERR_FORMAT,
				       "%s: is a core dump, not an executable "
				       "or library (swapped arguments?)",
				       path);
	}
	mod->is_pie_or_dso = ehdr.e_type == ET_DYN;
	size_t phnum;
	if (elf_getphdrnum(mod->elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr phdr;
			if (gelf_getphdr(mod->elf, (int)i, &phdr) &&
			    phdr.p_type == PT_LOAD) {
				mod->first_vaddr = phdr.p_vaddr &
						   ~(uint64_t)0xfff;
				break;
			}
		}
	}
	mod->build_id_len = read_build_id(mod->elf, mod->build_id);

	size_t ndirs = 0;
	const char *const *dirs = debug_dirs ? debug_dirs : default_debug_dirs;
	while (dirs[ndirs])
		ndirs++;
	mod->debug_dirs = calloc(ndirs + 1, sizeof(char *));
	if (!mod->debug_dirs) {
		dw_module_close(mod);
		return &cs_error_nomem;
	}
	for (size_t i = 0; i < ndirs; i++)
		if (!(mod->debug_dirs[i] = strdup(dirs[i]))) {
			dw_module_close(mod);
			return &cs_error_nomem;
		}

	if (has_debug_info(mod->elf)) {
		mod->debug_elf = mod->elf;
		mod->debug_path = strdup(path);
		if (!mod->debug_path) {
			dw_module_close(mod);
			return &cs_error_nomem;
		}
	} else if (!find_by_build_id(mod) && !find_in_debug_dirs(mod) &&
		   !find_by_debuglink(mod)) {
		find_by_debuginfod(mod);
	}
	*ret = mod;
	return NULL;
}

void dw_module_close(struct dw_module *mod)
{
	if (!mod)
		return;
	if (mod->dwarf)
		dwarf_end(mod->dwarf);
	if (mod->lean_elf)
		elf_end(mod->lean_elf);
	if (mod->lean_image)
		munmap(mod->lean_image, mod->lean_size);
	if (mod->debug_elf && mod->debug_elf != mod->elf)
		elf_end(mod->debug_elf);
	if (mod->debug_fd >= 0)
		close(mod->debug_fd);
	if (mod->elf)
		elf_end(mod->elf);
	if (mod->fd >= 0)
		close(mod->fd);
	if (mod->debug_dirs)
		for (char **d = mod->debug_dirs; *d; d++)
			free(*d);
	free(mod->debug_dirs);
	free(mod->debug_path);
	free(mod->path);
	free(mod);
}

void dw_module_build_id_hex(const struct dw_module *mod, char *buf)
{
	cs_hex(mod->build_id, mod->build_id_len, buf);
}

/* The debug sections the layout resolver reads. libdw inflates every debug
 * section it recognizes when it opens a file, and .debug_line, .debug_loclists
 * and .debug_rnglists together are larger than .debug_info; so libdw is
 * handed an in-memory ELF image holding only these (still compressed). */
static const char *const lean_sections[] = {
	".debug_info",        ".debug_abbrev", ".debug_str",  ".debug_line_str",
	".debug_str_offsets", ".debug_macro",  ".debug_addr", NULL,
};

static int is_lean_section(const char *name)
{
	for (const char *const *n = lean_sections; *n; n++)
		if (strcmp(name, *n) == 0)
			return 1;
	return 0;
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* The largest section inflated here; beyond it (or past zlib's greatest
 * ratio, 1032:1) the section is handed to libdw still compressed. */
#define MAX_INFLATED ((size_t)1 << 30)

/* What one kept section becomes in the lean image. */
struct lean_part {
	const char *name;
	const uint8_t *in; /* compressed stream, or the bytes themselves */
	size_t in_size;
	size_t size; /* in the image */
	uint64_t flags;
	int inflate; /* zlib stream of size bytes, inflated into the image */
	const Elf_Data *raw; /* the section as stored (compressed) */
};

/* A zlib section's stream and inflated size, from its ELF compression
 * header; 0 if it is not zlib or the sizes are out of bounds. */
static int zlib_section(Elf_Scn *scn, const Elf_Data *raw, struct lean_part *p)
{
	GElf_Chdr ch;
	if (raw->d_size <= sizeof(Elf64_Chdr) || !gelf_getchdr(scn, &ch) ||
	    ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size == 0 ||
	    ch.ch_size > MAX_INFLATED)
		return 0;
	p->in = (const uint8_t *)raw->d_buf + sizeof(Elf64_Chdr);
	p->in_size = raw->d_size - sizeof(Elf64_Chdr);
	if (p->in_size > UINT_MAX || ch.ch_size / 1032 > p->in_size)
		return 0;
	p->size = ch.ch_size;
	p->inflate = 1;
	return 1;
}

/* Inflate a whole zlib stream (its checksum checked) into exactly size
 * bytes at out. */
static int inflate_exact(const struct lean_part *p, uint8_t *out)
{
	z_stream s;
	memset(&s, 0, sizeof(s));
	if (inflateInit(&s) != Z_OK)
		return 0;
	s.next_in = (Bytef *)p->in;
	s.avail_in = (uInt)p->in_size;
	s.next_out = out;
	s.avail_out = (uInt)p->size;
	int r = inflate(&s, Z_FINISH);
	int ok = r == Z_STREAM_END && s.avail_out == 0;
	inflateEnd(&s);
	return ok;
}

/* Memory for the lean image. It is written once, front to back, and is
 * mostly inflated sections (megabytes): in transparent huge pages where
 * the kernel gives them, one page fault per 2 MiB instead of one per
 * 4 KiB. */
static char *image_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, size, MADV_HUGEPAGE);
#endif
	return p;
}

/* Build the lean image; NULL if the file's sections cannot be read (the
 * caller then hands libdw the whole file). Compressed (zlib) sections are
 * inflated straight into the image, so their bytes are neither copied
 * compressed nor inflated into a buffer of libelf's. A stream that does
 * not inflate to its stated size is handed to libdw as stored, which then
 * fails on it as it does on any section it cannot inflate. */
static Elf *lean_elf(struct dw_module *mod)
{
	Elf *src = mod->debug_elf;
	size_t shstrndx;
	GElf_Ehdr ehdr;
	if (!gelf_getehdr(src, &ehdr) || ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
	    elf_getshdrstrndx(src, &shstrndx) != 0)
		return NULL;
	enum { MAX = 16 };
	struct lean_part part[MAX];
	size_t n = 0, data_size = 0, names_size = 1 + sizeof(".shstrtab");
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(src, scn)) && n < MAX) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(src, shstrndx, sh.sh_name)) ||
		    !is_lean_section(name))
			continue;
		Elf_Data *raw = elf_rawdata(scn, NULL);
		if (!raw || !raw->d_buf)
			return NULL;
		struct lean_part *p = &part[n];
		memset(p, 0, sizeof(*p));
		p->name = name;
		if (!(sh.sh_flags & SHF_COMPRESSED) ||
		    !zlib_section(scn, raw, p)) {
			/* as it is: uncompressed, or for libdw to inflate */
			p->in = raw->d_buf;
			p->in_size = p->size = raw->d_size;
			p->flags = sh.sh_flags & SHF_COMPRESSED;
		}
		p->raw = raw;
		if (data_size > MAX * MAX_INFLATED)
			return NULL;
		/* room for the section as stored too: a stream that does not
		 * inflate is handed over compressed */
		data_size +=
			align8(p->size > raw->d_size ? p->size : raw->d_size);
		names_size += strlen(name) + 1;
		n++;
	}
	size_t shnum = n + 2; /* null section, kept sections, .shstrtab */
	size_t names_off = sizeof(Elf64_Ehdr);
	size_t data_off = align8(names_off + names_size);
	size_t sh_off = data_off + data_size;
	size_t total = sh_off + shnum * sizeof(Elf64_Shdr);
	char *image = image_alloc(total); /* zeroed */
	if (!image)
		return NULL;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)image;
	memcpy(eh->e_ident, ehdr.e_ident, EI_NIDENT);
	eh->e_type = ehdr.e_type;
	eh->e_machine = ehdr.e_machine;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_shoff = sh_off;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = (Elf64_Half)shnum;
	eh->e_shstrndx = (Elf64_Half)(shnum - 1);
	Elf64_Shdr *sh = (Elf64_Shdr *)(image + sh_off);
	char *names = image + names_off;
	size_t name_pos = 1, pos = data_off;
	for (size_t i = 0; i < n; i++) {
		const struct lean_part *p = &part[i];
		Elf64_Shdr *out = &sh[i + 1];
		out->sh_name = (Elf64_Word)name_pos;
		out->sh_type = SHT_PROGBITS;
		out->sh_flags = p->flags;
		out->sh_offset = pos;
		out->sh_size = p->size;
		out->sh_addralign = 8;
		if (!p->inflate) {
			memcpy(image + pos, p->in, p->size);
		} else if (!inflate_exact(p, (uint8_t *)image + pos)) {
			memcpy(image + pos, p->raw->d_buf, p->raw->d_size);
			out->sh_size = p->raw->d_size;
			out->sh_flags = SHF_COMPRESSED;
		}
		pos += align8(p->size > p->raw->d_size ? p->size
						       : p->raw->d_size);
		strcpy(names + name_pos, p->name);
		name_pos += strlen(p->name) + 1;
	}
	Elf64_Shdr *str = &sh[shnum - 1];
	str->sh_name = (Elf64_Word)name_pos;
	strcpy(names + name_pos, ".shstrtab");
	str->sh_type = SHT_STRTAB;
	str->sh_offset = names_off;
	str->sh_size = names_size;
	str->sh_addralign = 1;
	Elf *lean = elf_memory(image, total);
	if (!lean) {
		munmap(image, total);
		return NULL;
	}
	mod->lean_image = image;
	mod->lean_size = total;
	return lean;
}

struct cs_error *dw_module_dwarf(struct dw_module *mod, Dwarf **ret)
{
	if (!mod->dwarf && mod->debug_elf) {
		mod->lean_elf = lean_elf(mod);
		mod->dwarf = dwarf_begin_elf(mod->lean_elf ? mod->lean_elf
							   : mod->debug_elf,
					     DWARF_C_READ, NULL);
	}
	if (!mod->dwarf) {
		char hex[2 * DW_BUILD_ID_MAX + 1];
		dw_module_build_id_hex(mod, hex);
		const char *urls = getenv("DEBUGINFOD_URLS");
		if (urls && !*urls)
			urls = NULL;
		/* NULL when the servers were asked, or none are set */
		const char *why = urls ? mod->debuginfod_why : NULL;
		const char *asked = !urls ? "; DEBUGINFOD_URLS is unset"
				    : why ? ", not at debuginfod "
					  : ", at debuginfod ";
		/* every debug directory, as each was looked in */
		char dirs[1024] = "";
		size_t used = 0;
		for (char **d = mod->debug_dirs; *d && used < sizeof(dirs);
		     d++) {
			int n = snprintf(dirs + used, sizeof(dirs) - used,
					 "%s%s", used ? ", " : "", *d);
			if (n < 0)
				break;
			used += (size_t)n;
		}
		return cs_error_create(
			CS_ERR_NO_DEBUG,
			"%s: no DWARF debug info (build-id %s; looked in the "
			"file, in the debug directories %s (under .build-id/, "
			"and for a file of this build-id), by .gnu_debuglink "
			"(next to the file, in .debug/, under the debug "
			"directories)%s%s%s%s); install the distribution's "
			"debug package (e.g. the -dbgsym package), %s, %s, "
			"or build Ruby with -g",
			mod->path, hex[0] ? hex : "none",
			dirs[0] ? dirs : "(none)", asked, urls ? urls : "",
			why ? ": " : "", why ? why : "",
			why ? "install elfutils' libdebuginfod"
			    : "point DEBUGINFOD_URLS at a debuginfod server",
			mod->debug_dir_advice
				? mod->debug_dir_advice
				: "add a directory of debug files");
	}
	*ret = mod->dwarf;
	return NULL;
}

/* Calls visit(ctx, sym, name) on each defined symbol of elf's symbol
 * tables of type type (SHT_SYMTAB, SHT_DYNSYM), of symbol type stt only
 * unless it is -1 (the name is looked up only for those), until visit
 * returns nonzero; that value, or 0. */
static int each_symbol(Elf *elf, Elf64_Word type, int stt,
		       int (*visit)(void *ctx, const GElf_Sym *sym,
				    const char *name),
		       void *ctx)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != type ||
		    shdr.sh_entsize == 0)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n = data ? shdr.sh_size / shdr.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *s;
			int r;
			if (gelf_getsym(data, (int)i, &sym) &&
			    sym.st_shndx != SHN_UNDEF &&
			    (stt < 0 || GELF_ST_TYPE(sym.st_info) == stt) &&
			    (s = elf_strptr(elf, shdr.sh_link, sym.st_name)) &&
			    (r = visit(ctx, &sym, s)) != 0)
				return r;
		}
	}
	return 0;
}

/* Whether elf has a symbol table of type type. */
static bool has_symbols(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == type &&
		    shdr.sh_size)
			return true;
	return false;
}

struct named_symbol {
	const char *name;
	uint64_t *addr, *size;
};

static int is_named_symbol(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct named_symbol *want = ctx;
	if (strcmp(name, want->name) != 0)
		return 0;
	*want->addr = sym->st_value;
	if (want->size)
		*want->size = sym->st_size;
	return 1;
}

static int lookup_in_symtab(Elf *elf, Elf64_Word type, const char *name,
			    int objects_only, uint64_t *addr, uint64_t *size)
{
	struct named_symbol want = {name, addr, size};
	return each_symbol(elf, type, objects_only ? STT_OBJECT : -1,
			   is_named_symbol, &want);
}

static struct cs_error *symbol(struct dw_module *mod, const char *name,
			       int objects_only, uint64_t *addr, uint64_t *size)
{
	if (lookup_in_symtab(mod->elf, SHT_SYMTAB, name, objects_only, addr,
			     size) ||
	    (mod->debug_elf && mod->debug_elf != mod->elf &&
	     lookup_in_symtab(mod->debug_elf, SHT_SYMTAB, name, objects_only,
			      addr, size)) ||
	    lookup_in_symtab(mod->elf, SHT_DYNSYM, name, objects_only, addr,
			     size))
		return NULL;
	return cs_error_create(CS_ERR_LOOKUP, "%s: no symbol '%s'", mod->path,
			       name);
}

struct cs_error *dw_module_symbol(struct dw_module *mod, const char *name,
				  uint64_t *addr, uint64_t *size)
{
	return symbol(mod, name, 0, addr, size);
}

struct cs_error *dw_module_object_symbol(struct dw_module *mod,
					 const char *name, uint64_t *addr)
{
	return symbol(mod, name, 1, addr, NULL);
}

/* The functions named among names, as each_symbol finds them. */
struct function_ranges {
	const char *const *names;
	size_t nnames;
	size_t longest;
	struct dw_range *ranges;
	size_t n, cap;
};

/* Whether sym, up to its first '.', is one of f's names. */
static bool named_among(const struct function_ranges *f, const char *sym)
{
	size_t len = strcspn(sym, ".");
	if (len > f->longest)
		return false;
	for (size_t i = 0; i < f->nnames; i++)
		if (sym[0] == f->names[i][0] &&
		    strncmp(sym, f->names[i], len) == 0 &&
		    f->names[i][len] == '\0')
			return true;
	return false;
}

/* -1: out of memory. */
static int add_named_function(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct function_ranges *f = ctx;
	if (sym->st_size == 0 || !named_among(f, name))
		return 0;
	if (f->n == f->cap) {
		size_t c = f->cap ? f->cap * 2 : 16;
		struct dw_range *r = realloc(f->ranges, c * sizeof(*r));
		if (!r)
			return -1;
		f->ranges = r;
		f->cap = c;
	}
	f->ranges[f->n++] =
		(struct dw_range){sym->st_value, sym->st_value + sym->st_size};
	return 0;
}

struct cs_error *dw_module_function_ranges(struct dw_module *mod,
					   const char *const *names,
					   size_t nnames, bool exported_only,
					   struct dw_range **ret, size_t *nret)
{
	struct function_ranges f = {.names = names, .nnames = nnames};
	for (size_t i = 0; i < nnames; i++)
		if (strlen(names[i]) > f.longest)
			f.longest = strlen(names[i]);
	Elf *debug = mod->debug_elf && mod->debug_elf != mod->elf
			     ? mod->debug_elf
			     : NULL;
	/* .dynsym holds a subset of .symtab: read only without one */
	bool dynsym = exported_only ||
		      !(has_symbols(mod->elf, SHT_SYMTAB) ||
			(debug && has_symbols(debug, SHT_SYMTAB)));
	bool ok = (dynsym || each_symbol(mod->elf, SHT_SYMTAB, STT_FUNC,
					 add_named_function, &f) == 0) &&
		  (dynsym || !debug ||
		   each_symbol(debug, SHT_SYMTAB, STT_FUNC, add_named_function,
			       &f) == 0) &&
		  (!dynsym || each_symbol(mod->elf, SHT_DYNSYM, STT_FUNC,
					  add_named_function, &f) == 0);
	*ret = ok ? f.ranges : NULL;
	*nret = ok ? f.n : 0;
	if (!ok) {
		free(f.ranges);
		return &cs_error_nomem;
	}
	return NULL;
}

int dw_module_has_string(struct dw_module *mod, const char *text)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(mod->elf, &shstrndx) != 0)
		return 0;
	size_t len = strlen(text) + 1; /* with its NUL */
	while ((scn = elf_nextscn(mod->elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(mod->elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".rodata") != 0)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return 0;
		/* with its NUL: the end of a string (linkers store a string
		 * that ends another only once) */
		return memmem(d->d_buf, d->d_size, text, len) != NULL;
	}
	return 0;
}
