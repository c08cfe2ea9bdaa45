/* The core reader: opening a core (ELF and program headers, PT_LOAD
 * segments, the mappings NT_FILE or the link map gives) and closing it.
 *
 * libelf opens and mmaps the core and decodes the ELF and program headers;
 * notes and memory are then served straight from the mapped image with our
 * own bounds checks, since every size in a core is untrusted (truncated
 * writes, disk corruption, files that are not cores at all). */
#include "core_internal.h"
#include "../util/open_regular.h"

/* ---- segments and mappings ---- */

static int cs_core_segment_cmp(const void *a, const void *b)
{
	const struct cs_core_segment *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

static void cs_core_add_segment(struct cs_core *core, const GElf_Phdr *ph)
{
	if (ph->p_memsz == 0)
		return;
	struct cs_core_segment *s = &core->segs[core->nsegs++];
	s->start = ph->p_vaddr;
	s->exec = (ph->p_flags & PF_X) != 0;
	s->write = (ph->p_flags & PF_W) != 0;
	/* Clip a wrapping segment rather than reject the core. */
	if (__builtin_add_overflow(ph->p_vaddr, ph->p_memsz, &s->end))
		s->end = UINT64_MAX;
	uint64_t filesz = ph->p_filesz < s->end - s->start ? ph->p_filesz
							   : s->end - s->start;
	uint64_t avail = 0;
	if (ph->p_offset < core->image_size) {
		avail = core->image_size - ph->p_offset;
		if (avail > filesz)
			avail = filesz;
	}
	core->load_bytes += filesz;
	core->missing_bytes += filesz - avail;
	s->data_end = s->start + avail;
	s->promised_end = s->start + filesz;
	s->data = avail ? core->image + ph->p_offset : NULL;
}

/* Sort and make disjoint, so a binary search finds the one segment holding
 * an address. Overlaps only occur in corrupt cores; the later start wins. */
static void cs_core_sort_segments(struct cs_core *core)
{
	qsort(core->segs, core->nsegs, sizeof(*core->segs),
	      cs_core_segment_cmp);
	size_t out = 0;
	for (size_t i = 0; i < core->nsegs; i++) {
		struct cs_core_segment s = core->segs[i];
		if (i + 1 < core->nsegs && s.end > core->segs[i + 1].start) {
			s.end = core->segs[i + 1].start;
			if (s.data_end > s.end)
				s.data_end = s.end;
			if (s.promised_end > s.end)
				s.promised_end = s.end;
		}
		if (s.start < s.end)
			core->segs[out++] = s;
	}
	core->nsegs = out;
}

static int cs_core_map_cmp(const void *a, const void *b)
{
	const struct cs_mapping *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static int cs_core_map_path_cmp(const void *a, const void *b)
{
	const struct cs_mapping *const *x = a, *const *y = b;
	return strcmp((*x)->path, (*y)->path);
}

/* One cs_core_file per distinct path, so a library's several mappings
 * share one descriptor. */
static struct cs_error *cs_core_index_files(struct cs_core *core)
{
	struct cs_target_tables *tt = &core->tables;
	if (tt->nmaps == 0)
		return NULL;
	qsort(tt->maps, tt->nmaps, sizeof(*tt->maps), cs_core_map_cmp);
	struct cs_mapping **by_path = calloc(tt->nmaps, sizeof(*by_path));
	core->files = calloc(tt->nmaps, sizeof(*core->files));
	core->map_file = calloc(tt->nmaps, sizeof(*core->map_file));
	if (!by_path || !core->files || !core->map_file) {
		free(by_path);
		return &cs_error_nomem;
	}
	for (size_t i = 0; i < tt->nmaps; i++)
		by_path[i] = &tt->maps[i];
	qsort(by_path, tt->nmaps, sizeof(*by_path), cs_core_map_path_cmp);
	for (size_t i = 0; i < tt->nmaps; i++) {
		if (i == 0 ||
		    strcmp(by_path[i]->path, by_path[i - 1]->path) != 0) {
			struct cs_core_file *f = &core->files[core->nfiles++];
			f->path = by_path[i]->path;
			f->fd = -1;
		}
		core->map_file[by_path[i] - tt->maps] = core->nfiles - 1;
	}
	free(by_path);
	return NULL;
}

/* Without NT_FILE (too large for the kernel to write), the mappings of
 * the modules the loader lists, rebuilt from their headers in the core. */
static struct cs_error *cs_core_recover_mappings(struct cs_core *core)
{
	struct cs_link_map *lm = &core->recovered;
	struct cs_error *err = cs_link_map_read(core, lm);
	if (err || !lm->nmaps)
		return err;
	struct cs_target_tables *tt = &core->tables;
	tt->maps = calloc(lm->nmaps, sizeof(*tt->maps));
	if (!tt->maps)
		return &cs_error_nomem;
	memcpy(tt->maps, lm->maps, lm->nmaps * sizeof(*tt->maps));
	tt->nmaps = lm->nmaps;
	return NULL;
}

/* ---- opening ---- */

static const char *cs_core_type_name(unsigned type)
{
	switch (type) {
	case ET_NONE:
		return "NONE";
	case ET_REL:
		return "REL (an object file)";
	case ET_EXEC:
		return "EXEC";
	case ET_DYN:
		return "DYN (a shared library or PIE executable)";
	default:
		return NULL;
	}
}

static struct cs_error *cs_core_check_header(struct cs_core *core,
					     GElf_Ehdr *eh)
{
	const uint8_t *p = core->image;
	size_t size = core->image_size;
	if (size < SELFMAG || memcmp(p, ELFMAG, SELFMAG) != 0) {
		const char *z = cs_compression_of(p, size);
		if (z) {
			return cs_error_create(
				CS_ERR_FORMAT,
				"%s: not an ELF file: it is %s-compressed "
				"(decompress it first, e.g. with `%s -d` or "
				"`coredumpctl dump`)",
				core->path, z, z);
		}
		return cs_core_format(core,
				      "not an ELF file (is this a core dump?)");
	}
	if (size > EI_CLASS && p[EI_CLASS] != ELFCLASS64) {
		return cs_core_format(core,
				      "not a 64-bit ELF file (only x86-64 "
				      "cores are supported)");
	}
	if (size > EI_DATA && p[EI_DATA] != ELFDATA2LSB) {
		return cs_core_format(core, "big-endian ELF file (only x86-64 "
					    "cores are supported)");
	}
	if (size < sizeof(Elf64_Ehdr) || elf_kind(core->elf) != ELF_K_ELF) {
		return cs_core_cut(core, sizeof(Elf64_Ehdr), true,
				   "the ELF header and all after it are");
	}
	if (!gelf_getehdr(core->elf, eh)) {
		return cs_error_create(CS_ERR_FORMAT,
				       "%s: unreadable ELF header: %s",
				       core->path, elf_errmsg(-1));
	}
	if (eh->e_type != ET_CORE) {
		const char *name = cs_core_type_name(eh->e_type);
		char num[16];
		if (!name) {
			snprintf(num, sizeof(num), "%u", (unsigned)eh->e_type);
			name = num;
		}
		return cs_error_create(CS_ERR_FORMAT,
				       "%s: ELF type is %s, not a core dump "
				       "(did you swap the core and the "
				       "executable?)",
				       core->path, name);
	}
	if (eh->e_machine != EM_X86_64) {
		return cs_error_create(CS_ERR_FORMAT,
				       "%s: core of machine type %u, not "
				       "x86-64 (only x86-64 cores are "
				       "supported)",
				       core->path, (unsigned)eh->e_machine);
	}
	return NULL;
}

static struct cs_error *cs_core_load_headers(struct cs_core *core)
{
	GElf_Ehdr eh;
	memset(&eh, 0, sizeof(eh));
	struct cs_error *err = cs_core_check_header(core, &eh);
	if (err)
		return err;
	size_t phnum;
	if (elf_getphdrnum(core->elf, &phnum) != 0)
		phnum = 0;
	/* libelf quietly shrinks phnum to what fits in the file, to none when
	 * nothing does; we want to say that the table the header names was
	 * cut off. */
	uint64_t named = eh.e_phnum != PN_XNUM ? eh.e_phnum : phnum;
	uint64_t table = named * sizeof(Elf64_Phdr);
	if (named && eh.e_phentsize == sizeof(Elf64_Phdr) &&
	    (eh.e_phoff >= core->image_size ||
	     core->image_size - eh.e_phoff < table)) {
		cs_core_describes(core, eh.e_phoff, table);
		return cs_core_cut(core, core->described, true,
				   "the program headers and all they describe "
				   "are");
	}
	if (phnum == 0) {
		return cs_core_format(core,
				      "no program headers (corrupt core?)");
	}
	if (eh.e_phentsize != sizeof(Elf64_Phdr)) {
		return cs_error_create(CS_ERR_FORMAT,
				       "%s: program header size is %u, not "
				       "%zu (corrupt core?)",
				       core->path, (unsigned)eh.e_phentsize,
				       sizeof(Elf64_Phdr));
	}
	cs_core_describes(core, eh.e_phoff, table);
	core->segs = calloc(phnum, sizeof(*core->segs));
	if (!core->segs)
		return &cs_error_nomem;
	size_t nnotes = 0;
	/* Notes after segments: NT_FILE must not depend on header order. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(core->elf, (int)i, &ph)) {
				return cs_error_create(
					CS_ERR_FORMAT,
					"%s: unreadable program header %zu: "
					"%s",
					core->path, i, elf_errmsg(-1));
			}
			if (pass == 0 && ph.p_filesz)
				cs_core_describes(core, ph.p_offset,
						  ph.p_filesz);
			if (pass == 0 && ph.p_type == PT_LOAD)
				cs_core_add_segment(core, &ph);
			if (pass == 1 && ph.p_type == PT_NOTE) {
				err = cs_core_parse_notes(core, &ph, nnotes++);
				if (err)
					return err;
			}
		}
	}
	cs_core_sort_segments(core);
	if (!core->tables.nmaps && (err = cs_core_recover_mappings(core)))
		return err;
	if ((err = cs_core_index_files(core)))
		return err;
	return cs_core_fill_tables(core);
}

struct cs_error *cs_core_open(const char *path, struct cs_core **ret)
{
	*ret = NULL;
	struct cs_core *core = calloc(1, sizeof(*core));
	if (!core)
		return &cs_error_nomem;
	core->fd = -1;
	core->path = strdup(path);
	if (!core->path) {
		free(core);
		return &cs_error_nomem;
	}
	struct cs_error *err = NULL;
	/* Only a regular file is read: a FIFO with no writer would block
	 * the open, a device be read without end. */
	core->fd = cs_open_regular(path);
	if (core->fd < 0 && errno == EISDIR) {
		err = cs_core_format(core, "is a directory, not a core dump");
		goto fail;
	}
	if (core->fd < 0 && errno == ENODEV) {
		err = cs_core_format(core,
				     "not a regular file (save the core to "
				     "a file first)");
		goto fail;
	}
	if (core->fd < 0) {
		err = cs_error_create(CS_ERR_OS, "%s: cannot open: %s", path,
				      strerror(errno));
		goto fail;
	}
	struct stat st;
	if (fstat(core->fd, &st) != 0) {
		err = cs_error_create(CS_ERR_OS, "%s: cannot stat: %s", path,
				      strerror(errno));
		goto fail;
	}
	struct statfs fs;
	if (fstatfs(core->fd, &fs) == 0 &&
	    (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC)) {
		/* /proc/PID/mem and friends: regular files of size 0 whose
		 * reads mean something else */
		err = cs_core_format(core,
				     "a file of /proc or /sys, not a core "
				     "dump (a running process: --pid PID; a "
				     "core of it: gcore PID)");
		goto fail;
	}
	if (st.st_size == 0) {
		err = cs_core_format(core,
				     "empty file (the core was not written: "
				     "check `ulimit -c` and "
				     "/proc/sys/kernel/core_pattern)");
		goto fail;
	}
	uint8_t head[8];
	ssize_t got = pread(core->fd, head, sizeof(head), 0);
	const char *kind = got > 0 ? cs_compression_of(head, (size_t)got)
				   : NULL;
	if (cs_compression_supported(kind)) {
		int inflated;
		err = cs_decompress_core(core->fd, path, kind, 0, &inflated);
		if (err)
			goto fail;
		close(core->fd);
		core->fd = inflated;
		core->compression = kind;
	}
	elf_version(EV_CURRENT);
	core->elf = elf_begin(core->fd, ELF_C_READ_MMAP, NULL);
	if (!core->elf && !kind && got >= SELFMAG &&
	    memcmp(head, ELFMAG, SELFMAG) == 0 &&
	    (uint64_t)st.st_size < sizeof(Elf64_Ehdr)) {
		/* libelf refuses an ELF header cut short */
		core->image_size = (size_t)st.st_size;
		err = cs_core_cut(core, sizeof(Elf64_Ehdr), true,
				  "the ELF header and all after it are");
		goto fail;
	}
	if (!core->elf) {
		err = cs_error_create(CS_ERR_FORMAT, "%s: cannot read: %s",
				      path, elf_errmsg(-1));
		goto fail;
	}
	size_t size = 0;
	core->image = (const uint8_t *)elf_rawfile(core->elf, &size);
	core->image_size = size;
	if (!core->image) {
		err = cs_error_create(CS_ERR_FORMAT, "%s: cannot map: %s", path,
				      elf_errmsg(-1));
		goto fail;
	}
	err = cs_core_load_headers(core);
	if (err)
		goto fail;
	*ret = core;
	return NULL;
fail:
	cs_core_close(core);
	return err;
}

void cs_core_close_files(struct cs_core *core)
{
	for (size_t i = 0; i < core->nfiles; i++) {
		if (core->files[i].fd >= 0)
			close(core->files[i].fd);
		core->files[i].fd = -1;
		core->files[i].open_errno = 0;
		core->files[i].checked = 0;
		core->files[i].mismatched = 0;
		core->files[i].found = NULL;
	}
	core->nopen = 0;
	for (size_t i = 0; i < core->nwarnings; i++)
		free(core->warnings[i]);
	core->nwarnings = 0;
}

void cs_core_free_lib_dirs(struct cs_core *core)
{
	for (size_t i = 0; core->lib_dirs && core->lib_dirs[i]; i++)
		free(core->lib_dirs[i]);
	free(core->lib_dirs);
	core->lib_dirs = NULL;
	cs_module_search_free(core->own_search);
	core->own_search = NULL;
}

void cs_core_close(struct cs_core *core)
{
	if (!core)
		return;
	cs_core_close_files(core);
	if (core->elf)
		elf_end(core->elf);
	if (core->fd >= 0)
		close(core->fd);
	free(core->segs);
	free(core->tables.threads);
	free(core->tables.maps);
	free(core->tables.regions);
	free(core->map_file);
	free(core->auxv);
	cs_link_map_free(&core->recovered);
	free(core->exe_host);
	free(core->files);
	free(core->sysroot);
	cs_core_free_lib_dirs(core);
	free(core->exe_buf);
	free(core->path);
	free(core);
}

const char *cs_core_path(const struct cs_core *core)
{
	return core->path;
}
