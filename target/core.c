/* ELF core-file reader. See core.h.
 *
 * libelf opens and mmaps the core and decodes the ELF and program headers;
 * notes and memory are then served straight from the mapped image with our
 * own bounds checks, since every size in a core is untrusted (truncated
 * writes, disk corruption, files that are not cores at all). */
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

/* Bounds on what we read from target memory for a module's build-id:
 * real modules have a few dozen program headers and notes of a few KiB. */

#define CS_CORE_PRSTATUS_REG_OFFSET 112  /* offsetof(elf_prstatus, pr_reg) */
#define CS_CORE_PRSTATUS_MIN (CS_CORE_PRSTATUS_REG_OFFSET + 27 * 8)
#define CS_CORE_PRPSINFO_SIZE 136

/* One PT_LOAD. Bytes in [promised_end, end) the dumper left out because
 * they equal the mapped file (kernel: unmodified file pages; gcore leaves
 * whole mappings out), so the file may supply them. Bytes in [data_end,
 * promised_end) were dumped, perhaps because they differ from the file
 * (.data, RELRO after relocation), and then lost to truncation: the file
 * would give stale values, so they fault. */
struct cs_core_segment {
	uint64_t start, end;      /* [p_vaddr, p_vaddr + p_memsz) */
	uint64_t data_end;        /* [start, data_end) is in the file */
	uint64_t promised_end;    /* start + p_filesz */
	const uint8_t *data;      /* the byte for start */
	bool exec;                /* PF_X: the mapping could run code */
};

struct cs_core_file {             /* a file named by NT_FILE, opened lazily */
	const char *path;         /* target path, points into the note */
	int fd;                   /* -1 while not open */
	int open_errno;           /* opening failed: don't retry every read */
	int checked;              /* build-id compared with the core's */
	int mismatched;           /* ... and it differs: never read from it */
	uint64_t last_use;        /* LRU stamp from cs_core.clock */
};

struct cs_core_map {
	struct cs_mapping pub;
	size_t file;              /* index into cs_core.files */
};

struct cs_core {
	char *path;
	int fd;
	Elf *elf;
	const uint8_t *image;     /* the whole core, mmapped by libelf */
	size_t image_size;

	struct cs_core_segment *segs;  /* sorted by start, disjoint */
	size_t nsegs;
	size_t last_seg;          /* last hit: reads cluster */

	struct cs_thread *threads;
	size_t nthreads;
	struct cs_core_map *maps;  /* sorted by start */
	size_t nmaps;
	struct cs_core_file *files;
	size_t nfiles, nopen;
	uint64_t clock;
	char *sysroot;
	char **lib_dirs;          /* --lib-search-path, NULL-terminated */
	const char *compression;  /* "zstd"... when inflated from that */
	char *warnings[CS_CORE_MAX_WARNINGS];
	size_t nwarnings;

	struct cs_core_process process;
	struct cs_siginfo siginfo;
	const uint8_t *auxv;      /* into image; pairs of LE u64 */
	size_t auxv_count;
	int have_file_note;
	struct cs_link_map recovered; /* the mappings, when NT_FILE is absent */
	const char *exe_target;   /* cs_core_set_executable: the executable's */
	char *exe_host;           /* path in the target, and the file given */

	uint64_t load_bytes;      /* PT_LOAD bytes the headers promise */
	uint64_t missing_bytes;   /* of those, past the end of the file */
	int notes_truncated;

	int exe_done;
	const char *exe;
	char *exe_buf;
};

/* The image may be unaligned and the host order is not assumed. */
static uint16_t cs_core_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t cs_core_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t cs_core_le64(const uint8_t *p)
{
	return (uint64_t)cs_core_le32(p) | (uint64_t)cs_core_le32(p + 4) << 32;
}

static struct cs_error *cs_core_format(const struct cs_core *core,
				       const char *what)
{
	return cs_error_create(CS_ERR_FORMAT, "%s: %s", core->path, what);
}

/* ---- notes ---- */

struct cs_core_note {
	uint32_t type, namesz, descsz;
	const uint8_t *name, *desc;
};

enum { CS_CORE_NOTE_END, CS_CORE_NOTE_OK, CS_CORE_NOTE_SHORT };

static uint64_t cs_core_align_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) & ~(align - 1);
}

/* Next note of buf[0..size) at *pos. align is 4, or 8 for PT_NOTEs aligned
 * so (the name padding follows the descriptor's alignment, as in libelf).
 * CS_CORE_NOTE_SHORT: the note at *pos needs *need bytes of buf. */
static int cs_core_note_next(const uint8_t *buf, size_t size, uint64_t align,
			     size_t *pos, struct cs_core_note *n,
			     uint64_t *need)
{
	uint64_t at = *pos;
	if (at >= size)
		return CS_CORE_NOTE_END;
	if (size - at < 12) {
		*need = at + 12;
		return CS_CORE_NOTE_SHORT;
	}
	n->namesz = cs_core_le32(buf + at);
	n->descsz = cs_core_le32(buf + at + 4);
	n->type = cs_core_le32(buf + at + 8);
	/* at < size and the sizes are 32-bit: no 64-bit overflow here. */
	uint64_t desc_off = cs_core_align_up(at + 12 + n->namesz, align);
	uint64_t desc_end = desc_off + n->descsz;
	if (desc_end > size) {
		*need = desc_end;
		return CS_CORE_NOTE_SHORT;
	}
	n->name = buf + at + 12;
	n->desc = buf + desc_off;
	uint64_t next = cs_core_align_up(desc_end, align);
	*pos = next > size ? size : (size_t)next;
	return CS_CORE_NOTE_OK;
}

static int cs_core_note_named(const struct cs_core_note *n, const char *name)
{
	size_t len = strlen(name);
	if (n->namesz != len && n->namesz != len + 1)
		return 0;
	return memcmp(n->name, name, len) == 0 &&
	       (n->namesz == len || n->name[len] == '\0');
}

static struct cs_error *cs_core_add_thread(struct cs_core *core,
					   const struct cs_core_note *n)
{
	/* A different size means another architecture's prstatus (or
	 * garbage); registers read at x86-64 offsets would be nonsense. */
	if (n->descsz < CS_CORE_PRSTATUS_MIN) {
		return cs_error_create(CS_ERR_FORMAT,
				       "%s: NT_PRSTATUS note is %" PRIu32
				       " bytes, expected 336 (not an x86-64 "
				       "core, or corrupt?)",
				       core->path, n->descsz);
	}
	if ((core->nthreads & (core->nthreads - 1)) == 0) {
		size_t cap = core->nthreads ? core->nthreads * 2 : 4;
		void *p = reallocarray(core->threads, cap,
				       sizeof(*core->threads));
		if (!p)
			return &cs_error_nomem;
		core->threads = p;
	}
	struct cs_thread *t = &core->threads[core->nthreads++];
	memset(t, 0, sizeof(*t));
	t->cursig = (int16_t)cs_core_le16(n->desc + 12);
	t->tid = (int32_t)cs_core_le32(n->desc + 32);
	for (size_t i = 0; i < 27; i++) {
		t->regs[i] = cs_core_le64(n->desc +
					  CS_CORE_PRSTATUS_REG_OFFSET + 8 * i);
	}
	t->rip = t->regs[CS_REG_RIP];
	t->rsp = t->regs[CS_REG_RSP];
	t->rbp = t->regs[CS_REG_RBP];
	t->fs_base = t->regs[CS_REG_FS_BASE];
	return NULL;
}

static void cs_core_set_process(struct cs_core *core,
				const struct cs_core_note *n)
{
	/* Informational only: a short or repeated note is skipped, not an
	 * error that would stop the whole analysis. */
	if (core->process.present || n->descsz < CS_CORE_PRPSINFO_SIZE)
		return;
	struct cs_core_process *p = &core->process;
	p->present = 1;
	p->uid = (int)cs_core_le32(n->desc + 16);
	p->gid = (int)cs_core_le32(n->desc + 20);
	p->pid = (int)cs_core_le32(n->desc + 24);
	p->ppid = (int)cs_core_le32(n->desc + 28);
	memcpy(p->fname, n->desc + 40, 16);
	p->fname[16] = '\0';
	memcpy(p->psargs, n->desc + 56, 80);
	p->psargs[80] = '\0';
}

static void cs_core_set_siginfo(struct cs_core *core,
				const struct cs_core_note *n)
{
	if (core->siginfo.present || n->descsz < 24)
		return;
	struct cs_siginfo *s = &core->siginfo;
	s->present = 1;
	s->signo = (int)cs_core_le32(n->desc);
	s->err = (int)cs_core_le32(n->desc + 4);
	s->code = (int)cs_core_le32(n->desc + 8);
	/* The union holds a fault address only for these signals, and only
	 * when the kernel raised them (si_code > 0); kill(2) puts pid/uid
	 * there instead. */
	int faulting = s->signo == SIGSEGV || s->signo == SIGBUS ||
		       s->signo == SIGILL || s->signo == SIGFPE;
	if (faulting && s->code > 0)
		s->addr = cs_core_le64(n->desc + 16);
}

static struct cs_error *cs_core_nt_file_error(const struct cs_core *core,
					      const char *what)
{
	return cs_error_create(CS_ERR_FORMAT,
			       "%s: NT_FILE note is malformed: %s (corrupt "
			       "core?)",
			       core->path, what);
}

static struct cs_error *cs_core_set_mappings(struct cs_core *core,
					     const struct cs_core_note *n)
{
	if (core->have_file_note)
		return NULL;
	core->have_file_note = 1;
	const uint8_t *d = n->desc;
	size_t size = n->descsz;
	if (size < 16)
		return cs_core_nt_file_error(core, "shorter than its header");
	uint64_t count = cs_core_le64(d);
	uint64_t page = cs_core_le64(d + 8);
	if (count > (size - 16) / 24)
		return cs_core_nt_file_error(core, "entry count too large");
	if (page == 0)
		return cs_core_nt_file_error(core, "page size 0");
	if (count == 0)
		return NULL;
	core->maps = calloc(count, sizeof(*core->maps));
	if (!core->maps)
		return &cs_error_nomem;
	const uint8_t *name = d + 16 + count * 24;
	const uint8_t *end = d + size;
	for (uint64_t i = 0; i < count; i++) {
		const uint8_t *nul = memchr(name, 0, (size_t)(end - name));
		if (!nul)
			return cs_core_nt_file_error(core, "file names missing");
		const uint8_t *e = d + 16 + i * 24;
		uint64_t start = cs_core_le64(e);
		uint64_t stop = cs_core_le64(e + 8);
		uint64_t off;
		/* Odd entries are skipped, not fatal: the rest still help. */
		if (start < stop &&
		    !__builtin_mul_overflow(cs_core_le64(e + 16), page, &off)) {
			struct cs_core_map *m = &core->maps[core->nmaps++];
			m->pub.start = start;
			m->pub.end = stop;
			m->pub.file_offset = off;
			m->pub.path = (const char *)name;
		}
		name = nul + 1;
	}
	return NULL;
}

static struct cs_error *cs_core_take_note(struct cs_core *core,
					  const struct cs_core_note *n)
{
	/* Everything we use is in "CORE" notes; gdb also writes "GDB" and
	 * "LINUX" ones (register sets, target description). */
	if (!cs_core_note_named(n, "CORE"))
		return NULL;
	switch (n->type) {
	case NT_PRSTATUS:
		return cs_core_add_thread(core, n);
	case NT_PRPSINFO:
		cs_core_set_process(core, n);
		return NULL;
	case NT_SIGINFO:
		cs_core_set_siginfo(core, n);
		return NULL;
	case NT_AUXV:
		if (!core->auxv) {
			core->auxv = n->desc;
			core->auxv_count = n->descsz / 16;
		}
		return NULL;
	case NT_FILE:
		return cs_core_set_mappings(core, n);
	default:
		return NULL;
	}
}

/* Parse one PT_NOTE. A note that runs past the segment is corruption and
 * refused; one that is inside the segment but past the end of the file is
 * truncation: keep the notes before it. */
static struct cs_error *cs_core_parse_notes(struct cs_core *core,
					    const GElf_Phdr *ph, size_t index)
{
	uint64_t declared = ph->p_filesz;
	uint64_t avail = 0;
	if (ph->p_offset < core->image_size) {
		avail = core->image_size - ph->p_offset;
		if (avail > declared)
			avail = declared;
	}
	if (avail < declared)
		core->notes_truncated = 1;
	if (avail == 0)
		return NULL;
	const uint8_t *buf = core->image + ph->p_offset;
	uint64_t align = ph->p_align == 8 ? 8 : 4;
	size_t pos = 0;
	for (size_t i = 0;; i++) {
		struct cs_core_note n;
		uint64_t need;
		int r = cs_core_note_next(buf, (size_t)avail, align, &pos, &n,
					  &need);
		if (r == CS_CORE_NOTE_END)
			return NULL;
		if (r == CS_CORE_NOTE_SHORT) {
			if (pos + 12 > declared)
				return NULL;  /* padding at the end */
			if (need > declared) {
				return cs_error_create(
					CS_ERR_FORMAT,
					"%s: note %zu of PT_NOTE %zu (file "
					"offset 0x%" PRIx64 ") claims %" PRIu64
					" bytes, past the end of its segment "
					"(%" PRIu64 " bytes left; corrupt "
					"core?)",
					core->path, i, index,
					ph->p_offset + pos, need - pos,
					declared - pos);
			}
			return NULL;  /* cut off with the file: noted above */
		}
		struct cs_error *err = cs_core_take_note(core, &n);
		if (err)
			return err;
	}
}

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
	/* Clip a wrapping segment rather than reject the core. */
	if (__builtin_add_overflow(ph->p_vaddr, ph->p_memsz, &s->end))
		s->end = UINT64_MAX;
	uint64_t filesz = ph->p_filesz < s->end - s->start ?
				  ph->p_filesz :
				  s->end - s->start;
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
	const struct cs_core_map *x = a, *y = b;
	if (x->pub.start != y->pub.start)
		return x->pub.start < y->pub.start ? -1 : 1;
	return 0;
}

static int cs_core_map_path_cmp(const void *a, const void *b)
{
	const struct cs_core_map *const *x = a, *const *y = b;
	return strcmp((*x)->pub.path, (*y)->pub.path);
}

/* One cs_core_file per distinct path, so a library's several mappings
 * share one descriptor. */
static struct cs_error *cs_core_index_files(struct cs_core *core)
{
	if (core->nmaps == 0)
		return NULL;
	qsort(core->maps, core->nmaps, sizeof(*core->maps), cs_core_map_cmp);
	struct cs_core_map **by_path = calloc(core->nmaps, sizeof(*by_path));
	core->files = calloc(core->nmaps, sizeof(*core->files));
	if (!by_path || !core->files) {
		free(by_path);
		return &cs_error_nomem;
	}
	for (size_t i = 0; i < core->nmaps; i++)
		by_path[i] = &core->maps[i];
	qsort(by_path, core->nmaps, sizeof(*by_path), cs_core_map_path_cmp);
	for (size_t i = 0; i < core->nmaps; i++) {
		if (i == 0 || strcmp(by_path[i]->pub.path,
				     by_path[i - 1]->pub.path) != 0) {
			struct cs_core_file *f = &core->files[core->nfiles++];
			f->path = by_path[i]->pub.path;
			f->fd = -1;
		}
		by_path[i]->file = core->nfiles - 1;
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
	core->maps = calloc(lm->nmaps, sizeof(*core->maps));
	if (!core->maps)
		return &cs_error_nomem;
	for (size_t i = 0; i < lm->nmaps; i++)
		core->maps[i].pub = lm->maps[i];
	core->nmaps = lm->nmaps;
	return NULL;
}

/* ---- opening ---- */

static const char *cs_core_type_name(unsigned type)
{
	switch (type) {
	case ET_NONE: return "NONE";
	case ET_REL: return "REL (an object file)";
	case ET_EXEC: return "EXEC";
	case ET_DYN: return "DYN (a shared library or PIE executable)";
	default: return NULL;
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
		return cs_core_format(core,
				      "big-endian ELF file (only x86-64 "
				      "cores are supported)");
	}
	if (size < sizeof(Elf64_Ehdr) || elf_kind(core->elf) != ELF_K_ELF) {
		return cs_core_format(core,
				      "truncated: the ELF header is cut off "
				      "(the core was cut off while being "
				      "written?)");
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
	if (elf_getphdrnum(core->elf, &phnum) != 0 || phnum == 0) {
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
	/* libelf quietly shrinks phnum to what fits in the file; we want to
	 * say that the table itself was cut off. */
	uint64_t table = (uint64_t)phnum * sizeof(Elf64_Phdr);
	if ((eh.e_phnum != PN_XNUM && phnum < eh.e_phnum) ||
	    eh.e_phoff > core->image_size ||
	    core->image_size - eh.e_phoff < table) {
		return cs_core_format(core,
				      "truncated: the program headers are "
				      "cut off (the core was cut off while "
				      "being written?)");
	}
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
	if (!core->nmaps && (err = cs_core_recover_mappings(core)))
		return err;
	return cs_core_index_files(core);
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
	/* Non-blocking: opening a FIFO with no writer would wait forever.
	 * Only a regular file is read further (checked below). */
	core->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
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
	if (S_ISDIR(st.st_mode)) {
		err = cs_core_format(core, "is a directory, not a core dump");
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = cs_core_format(core,
				     "not a regular file (save the core to "
				     "a file first)");
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
	const char *kind = got > 0 ? cs_compression_of(head, (size_t)got) : NULL;
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
	if (!core->elf) {
		err = cs_error_create(CS_ERR_FORMAT, "%s: cannot read: %s",
				      path, elf_errmsg(-1));
		goto fail;
	}
	size_t size = 0;
	core->image = (const uint8_t *)elf_rawfile(core->elf, &size);
	core->image_size = size;
	if (!core->image) {
		err = cs_error_create(CS_ERR_FORMAT, "%s: cannot map: %s",
				      path, elf_errmsg(-1));
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

static void cs_core_close_files(struct cs_core *core)
{
	for (size_t i = 0; i < core->nfiles; i++) {
		if (core->files[i].fd >= 0)
			close(core->files[i].fd);
		core->files[i].fd = -1;
		core->files[i].open_errno = 0;
		core->files[i].checked = 0;
		core->files[i].mismatched = 0;
	}
	core->nopen = 0;
	cs_link_map_forget_files(&core->recovered);
	for (size_t i = 0; i < core->nwarnings; i++)
		free(core->warnings[i]);
	core->nwarnings = 0;
}

static void cs_core_free_lib_dirs(struct cs_core *core)
{
	for (size_t i = 0; core->lib_dirs && core->lib_dirs[i]; i++)
		free(core->lib_dirs[i]);
	free(core->lib_dirs);
	core->lib_dirs = NULL;
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
	free(core->threads);
	free(core->maps);
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

struct cs_error *cs_core_set_sysroot(struct cs_core *core, const char *dir)
{
	char *copy = NULL;
	if (dir && *dir) {
		copy = strdup(dir);
		if (!copy)
			return &cs_error_nomem;
	}
	free(core->sysroot);
	core->sysroot = copy;
	cs_core_close_files(core);
	return NULL;
}

struct cs_error *cs_core_set_lib_search_path(struct cs_core *core,
					     const char *dirs)
{
	cs_core_free_lib_dirs(core);
	cs_core_close_files(core);
	if (!dirs || !*dirs)
		return NULL;
	size_t n = 1;
	for (const char *p = dirs; *p; p++)
		n += *p == ':';
	core->lib_dirs = calloc(n + 1, sizeof(*core->lib_dirs));
	if (!core->lib_dirs)
		return &cs_error_nomem;
	size_t k = 0;
	for (const char *p = dirs; k < n; k++) {
		size_t len = strcspn(p, ":");
		if (!(core->lib_dirs[k] = strndup(p, len))) {
			cs_core_free_lib_dirs(core);
			return &cs_error_nomem;
		}
		p += len + (p[len] == ':');
	}
	return NULL;
}

static int cs_core_is_regular(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* path under sysroot, with "." and ".." resolved by name as if sysroot
 * were /: a core naming /../../etc/passwd stays inside the sysroot. */
static char *under_sysroot(const char *sysroot, const char *path)
{
	size_t root = strlen(sysroot);
	char *out = malloc(root + strlen(path) + 2);
	if (!out)
		return NULL;
	memcpy(out, sysroot, root);
	size_t n = root;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > root && out[n - 1] != '/')
				n--;
			if (n > root)
				n--; /* the slash before the dropped name */
		} else if (len && !(len == 1 && p[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == root)
		out[n++] = '/';
	out[n] = '\0';
	return out;
}

struct cs_error *cs_core_set_executable(struct cs_core *core, const char *path)
{
	char *copy = NULL;
	if (path && !(copy = strdup(path)))
		return &cs_error_nomem;
	free(core->exe_host);
	core->exe_host = copy;
	core->exe_target = copy ? cs_core_executable(core) : NULL;
	cs_core_close_files(core);
	return NULL;
}

const char *cs_core_mapping_gap(const struct cs_core *core)
{
	if (core->nmaps && !core->recovered.nmaps)
		return NULL; /* NT_FILE's */
	if (core->recovered.incomplete)
		return core->recovered.incomplete;
	return core->nmaps ? NULL : "no module was found";
}

/* The usual places for a file the target knew as path, NULL-terminated:
 * under the sysroot (else path itself), then by basename in each
 * directory of the search path. NULL on ENOMEM. */
static char **cs_core_candidates(const struct cs_core *core, const char *path)
{
	size_t n = 1;
	while (core->lib_dirs && core->lib_dirs[n - 1])
		n++;
	char **out = calloc(n + 1, sizeof(*out));
	if (!out)
		return NULL;
	if (core->sysroot)
		out[0] = under_sysroot(core->sysroot, path);
	else
		out[0] = strdup(path);
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t k = 1;
	for (size_t i = 0; out[0] && i + 1 < n; i++)
		if (*core->lib_dirs[i] &&
		    asprintf(&out[k++], "%s/%s", core->lib_dirs[i], base) < 0)
			out[--k] = NULL;
	if (!out[0]) {
		free(out);
		return NULL;
	}
	return out;
}

char *cs_core_host_path(const struct cs_core *core, const char *path)
{
	if (core->exe_host && core->exe_target &&
	    strcmp(path, core->exe_target) == 0)
		return strdup(core->exe_host);
	char **cands = cs_core_candidates(core, path);
	if (!cands)
		return NULL;
	/* A module rebuilt without NT_FILE: the file with its build-id. */
	struct cs_link_map_module *mod =
		cs_link_map_module_of(&core->recovered, path);
	const char *match = mod ? cs_link_map_host(&core->recovered, mod,
						   (const char *const *)cands,
						   core->lib_dirs)
				: NULL;
	const char *pick = match;
	for (size_t i = 0; !pick && cands[i]; i++)
		if (cs_core_is_regular(cands[i]))
			pick = cands[i];
	if (!pick)
		pick = cands[0];
	char *out = pick ? strdup(pick) : NULL;
	for (size_t i = 0; cands[i]; i++)
		free(cands[i]);
	free(cands);
	return out;
}

size_t cs_core_warning_count(const struct cs_core *core)
{
	return core->nwarnings;
}

const char *cs_core_warning_at(const struct cs_core *core, size_t i)
{
	return i < core->nwarnings ? core->warnings[i] : NULL;
}

/* ---- memory ---- */

/* Number of segments starting at or below addr; the containing segment,
 * if any, is the one before that. */
static size_t cs_core_segment_rank(const struct cs_core *core, uint64_t addr)
{
	size_t lo = 0, hi = core->nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (core->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool cs_core_region_of(const struct cs_core *core, uint64_t addr,
		       struct cs_region *ret)
{
	size_t r = cs_core_segment_rank(core, addr);
	if (r == 0 || addr >= core->segs[r - 1].end)
		return false;
	const struct cs_core_segment *s = &core->segs[r - 1];
	*ret = (struct cs_region){.start = s->start, .end = s->end,
				  .exec = s->exec};
	return true;
}

const struct cs_mapping *cs_core_mapping_of(const struct cs_core *core,
						 uint64_t addr)
{
	size_t lo = 0, hi = core->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (core->maps[mid].pub.start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= core->maps[lo - 1].pub.end)
		return NULL;
	return &core->maps[lo - 1].pub;
}

static struct cs_error *cs_core_fault(const struct cs_core *core,
				      uint64_t addr, size_t len, uint64_t at,
				      const char *why)
{
	if (at == addr) {
		return cs_error_create(CS_ERR_FAULT,
				       "%s: cannot read %zu bytes at 0x%" PRIx64
				       ": %s",
				       core->path, len, addr, why);
	}
	/* a read that ran off the end names where it stopped */
	return cs_error_create(CS_ERR_FAULT,
			       "%s: cannot read %zu bytes at 0x%" PRIx64
			       ": 0x%" PRIx64 ": %s",
			       core->path, len, addr, at, why);
}

/* Does the file host (open as fd), found for the core's file f, differ
 * from what the process mapped? Compared by build-id: the core's from the
 * module's ELF header dumped at each offset-0 mapping of f (one match
 * will do: Ruby's crash reporter maps libruby whole a second time), the
 * file's from its notes. A module whose header the core left out, or
 * without build-id, cannot be checked and passes. A mismatch adds a
 * warning naming the file and both build-ids. */
static int cs_core_file_mismatch(struct cs_core *core, struct cs_core_file *f,
				 int fd, const char *host)
{
	uint8_t have[64], want[64];
	size_t have_len = 0, want_len = 0;
	int file_read = 0;
	for (size_t i = 0; i < core->nmaps; i++) {
		const struct cs_core_map *m = &core->maps[i];
		if (&core->files[m->file] != f || m->pub.file_offset != 0)
			continue;
		uint8_t id[64];
		size_t len;
		struct cs_error *err = cs_core_module_build_id(
			core, m->pub.start, id, sizeof(id), &len);
		if (err) {
			cs_error_destroy(err);
			continue;
		}
		memcpy(want, id, len);
		want_len = len;
		if (!file_read) {
			have_len = cs_build_id_of_fd(fd, have, sizeof(have));
			file_read = 1;
		}
		if (have_len == want_len && memcmp(have, want, have_len) == 0)
			return 0;
	}
	if (!want_len)
		return 0;
	char have_hex[2 * 64 + 1] = "none", want_hex[2 * 64 + 1];
	if (have_len)
		cs_hex(have, have_len, have_hex);
	cs_hex(want, want_len, want_hex);
	if (core->nwarnings < CS_CORE_MAX_WARNINGS &&
	    asprintf(&core->warnings[core->nwarnings],
		     "%s: build-id %s, but the %s the process mapped has %s: "
		     "a different build, not used (give the right file with "
		     "--sysroot or --lib-search-path)",
		     host, have_hex, f->path, want_hex) >= 0)
		core->nwarnings++;
	return 1;
}

static int cs_core_file_fd(struct cs_core *core, struct cs_core_file *f)
{
	f->last_use = ++core->clock;
	if (f->fd >= 0)
		return f->fd;
	if (f->open_errno)
		return -1;
	if (core->nopen >= CS_CORE_MAX_OPEN_FILES) {
		struct cs_core_file *lru = NULL;
		for (size_t i = 0; i < core->nfiles; i++) {
			struct cs_core_file *g = &core->files[i];
			if (g->fd >= 0 && (!lru || g->last_use < lru->last_use))
				lru = g;
		}
		if (lru) {
			close(lru->fd);
			lru->fd = -1;
			core->nopen--;
		}
	}
	if (f->mismatched)
		return -1;
	char *host = cs_core_host_path(core, f->path);
	if (!host) {
		f->open_errno = ENOMEM;
		return -1;
	}
	/* NT_FILE also names devices (/dev/zero, GPU drivers) and the like;
	 * opening those can block or have side effects, so only regular
	 * files, checked before opening and again after. */
	struct stat st;
	int fd = -1;
	if (stat(host, &st) != 0) {
		f->open_errno = errno;
	} else if (!S_ISREG(st.st_mode)) {
		f->open_errno = ENODEV;
	} else {
		fd = open(host, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			f->open_errno = errno;
		} else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			f->open_errno = ENODEV;
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0 && !f->checked) {
		f->checked = 1;
		if (cs_core_file_mismatch(core, f, fd, host)) {
			f->mismatched = 1;
			close(fd);
			fd = -1;
		}
	}
	free(host);
	if (fd < 0)
		return -1;
	f->fd = fd;
	core->nopen++;
	return fd;
}

void cs_core_check_files(struct cs_core *core)
{
	for (size_t i = 0; i < core->nfiles; i++)
		if (!core->files[i].checked)
			(void)cs_core_file_fd(core, &core->files[i]);
}

/* Bytes the core lacks, from the file the mapping names. */
static struct cs_error *cs_core_read_file(struct cs_core *core,
					  const struct cs_core_map *m,
					  uint64_t at, uint8_t *out, size_t n,
					  uint64_t addr, size_t len)
{
	struct cs_core_file *f = &core->files[m->file];
	int fd = cs_core_file_fd(core, f);
	if (fd < 0) {
		char why[PATH_MAX + 200];
		snprintf(why, sizeof(why),
			 "not in the core, and its file %s%s cannot be "
			 "opened: %s",
			 core->sysroot ? core->sysroot : "", f->path,
			 f->open_errno == ENODEV ? "not a regular file" :
						   strerror(f->open_errno));
		return cs_core_fault(core, addr, len, at, why);
	}
	uint64_t off;
	if (__builtin_add_overflow(m->pub.file_offset, at - m->pub.start,
				   &off) ||
	    off > (uint64_t)INT64_MAX - n) {
		return cs_core_fault(core, addr, len, at,
				     "maps to an impossible file offset");
	}
	while (n > 0) {
		ssize_t r = pread(fd, out, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			char why[PATH_MAX + 200];
			snprintf(why, sizeof(why),
				 "not in the core, and %s%s %s at offset "
				 "0x%" PRIx64 " (not the file the process "
				 "mapped?)",
				 core->sysroot ? core->sysroot : "", f->path,
				 r < 0 ? "cannot be read" : "ends", off);
			return cs_core_fault(core, addr, len, at, why);
		}
		out += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return NULL;
}

static struct cs_error *cs_core_read_impl(struct cs_core *core,
					  uint64_t addr, uint8_t *out,
					  size_t len, int use_files)
{
	if (len == 0)
		return NULL;
	if (addr + (len - 1) < addr) {
		return cs_core_fault(core, addr, len, addr,
				     "range wraps around the address space");
	}
	uint64_t at = addr;
	size_t left = len;
	while (left > 0) {
		const struct cs_core_segment *s = NULL;
		uint64_t limit = UINT64_MAX;  /* where this piece must stop */
		if (core->nsegs) {
			s = &core->segs[core->last_seg];
			if (at < s->start || at >= s->end) {
				size_t r = cs_core_segment_rank(core, at);
				s = NULL;
				if (r > 0 && at < core->segs[r - 1].end) {
					core->last_seg = r - 1;
					s = &core->segs[r - 1];
				} else if (r < core->nsegs) {
					limit = core->segs[r].start;
				}
			}
		}
		size_t n;
		if (s && at < s->data_end) {
			uint64_t avail = s->data_end - at;
			n = avail < left ? (size_t)avail : left;
			memcpy(out, s->data + (at - s->start), n);
		} else if (s && at < s->promised_end) {
			return cs_core_fault(core, addr, len, at,
					     "in a segment cut off by the "
					     "truncated core");
		} else {
			if (s)
				limit = s->end;
			const struct cs_mapping *pm =
				use_files ? cs_core_mapping_of(core, at) : NULL;
			if (!pm) {
				return cs_core_fault(core, addr, len, at,
						     "not in the core");
			}
			const struct cs_core_map *m =
				(const struct cs_core_map *)pm;
			if (m->pub.end < limit)
				limit = m->pub.end;
			uint64_t avail = limit - at;
			n = avail < left ? (size_t)avail : left;
			struct cs_error *err =
				cs_core_read_file(core, m, at, out, n, addr, len);
			if (err)
				return err;
		}
		out += n;
		left -= n;
		at += n;
	}
	return NULL;
}

struct cs_error *cs_core_read(struct cs_core *core, uint64_t addr, void *buf,
			      size_t len)
{
	return cs_core_read_impl(core, addr, buf, len, 1);
}

struct cs_error *cs_core_read_dumped(struct cs_core *core, uint64_t addr,
				     void *buf, size_t len)
{
	return cs_core_read_impl(core, addr, buf, len, 0);
}

static struct cs_error *cs_core_target_read(void *priv, uint64_t addr,
					    void *buf, size_t len)
{
	return cs_core_read(priv, addr, buf, len);
}

struct cs_memory cs_core_memory(struct cs_core *core)
{
	return (struct cs_memory){.read = cs_core_target_read, .priv = core};
}

/* The part of [addr, addr + len) that one segment stores in the core is
 * handed to the kernel to read now (MADV_WILLNEED: asynchronous, exactly
 * those pages). Without it, each first touch of a page is a page fault
 * that waits for the disk, and reads around it as much as the device's
 * read-ahead (megabytes on some disks) although a fiber needs two pages
 * of its stack. Only a hint: nothing is read here, errors are ignored. */
void cs_core_prefetch(struct cs_core *core, uint64_t addr, size_t len)
{
	size_t r = cs_core_segment_rank(core, addr);
	if (r == 0 || addr >= core->segs[r - 1].data_end)
		return;
	const struct cs_core_segment *s = &core->segs[r - 1];
	uint64_t end = s->data_end - addr < len ? s->data_end : addr + len;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = (uintptr_t)(s->data + (addr - s->start));
	uintptr_t to = (uintptr_t)(s->data + (end - s->start));
	from &= ~(page - 1);
	madvise((void *)from, to - from, MADV_WILLNEED);
}

/* ---- accessors ---- */

size_t cs_core_thread_count(const struct cs_core *core)
{
	return core->nthreads;
}

const struct cs_thread *cs_core_thread_at(const struct cs_core *core,
					       size_t i)
{
	return i < core->nthreads ? &core->threads[i] : NULL;
}

size_t cs_core_mapping_count(const struct cs_core *core)
{
	return core->nmaps;
}

const struct cs_mapping *cs_core_mapping_at(const struct cs_core *core,
						 size_t i)
{
	return i < core->nmaps ? &core->maps[i].pub : NULL;
}

const struct cs_core_process *cs_core_process(const struct cs_core *core)
{
	return &core->process;
}

const struct cs_siginfo *cs_core_siginfo(const struct cs_core *core)
{
	return &core->siginfo;
}

uint64_t cs_core_auxv(const struct cs_core *core, uint64_t type)
{
	for (size_t i = 0; i < core->auxv_count; i++) {
		uint64_t t = cs_core_le64(core->auxv + 16 * i);
		if (t == AT_NULL)
			break;
		if (t == type)
			return cs_core_le64(core->auxv + 16 * i + 8);
	}
	return 0;
}

/* Read a page at a time so that a string ending just before unreadable
 * memory still reads. */
char *cs_core_read_string(struct cs_core *core, uint64_t addr, size_t max)
{
	char *s = malloc(max + 1);
	if (!s)
		return NULL;
	size_t have = 0;
	while (have < max) {
		uint64_t at = addr + have;
		size_t n = 4096 - (size_t)(at & 4095);
		if (n > max - have)
			n = max - have;
		struct cs_error *err = cs_core_read(core, at, s + have, n);
		if (err) {
			cs_error_destroy(err);
			break;
		}
		char *nul = memchr(s + have, 0, n);
		if (nul)
			return s;
		have += n;
	}
	free(s);
	return NULL;
}

const char *cs_core_executable(struct cs_core *core)
{
	if (core->exe_done)
		return core->exe;
	core->exe_done = 1;
	static const uint64_t types[] = {AT_PHDR, AT_ENTRY};
	for (size_t i = 0; i < 2; i++) {
		uint64_t v = cs_core_auxv(core, types[i]);
		const struct cs_mapping *m =
			v ? cs_core_mapping_of(core, v) : NULL;
		if (m) {
			core->exe = m->path;
			return core->exe;
		}
	}
	uint64_t fn = cs_core_auxv(core, AT_EXECFN);
	if (fn) {
		core->exe_buf = cs_core_read_string(core, fn, PATH_MAX);
		if (core->exe_buf && core->exe_buf[0])
			core->exe = core->exe_buf;
	}
	return core->exe;
}

const struct cs_mapping *cs_core_find_mapping(const struct cs_core *core,
						   const char *basename_prefix)
{
	size_t plen = strlen(basename_prefix);
	for (size_t i = 0; i < core->nmaps; i++) {
		const char *path = core->maps[i].pub.path;
		const char *slash = strrchr(path, '/');
		const char *base = slash ? slash + 1 : path;
		if (strncmp(base, basename_prefix, plen) == 0)
			return &core->maps[i].pub;
	}
	return NULL;
}

/* ---- build-id ---- */

static struct cs_error *cs_core_dumped_read(void *priv, uint64_t addr,
					    void *buf, size_t len)
{
	return cs_core_read_dumped(priv, addr, buf, len);
}

/* Only the core's own bytes: the build-id must not come from the very file
 * it is meant to check. */
struct cs_error *cs_core_module_build_id(struct cs_core *core, uint64_t start,
					 uint8_t *buf, size_t bufsize,
					 size_t *len)
{
	struct cs_memory dumped = {cs_core_dumped_read, core};
	return cs_build_id_read(&dumped, core->path, start, buf, bufsize, len);
}

/* ---- truncation ---- */

uint64_t cs_core_truncated_bytes(const struct cs_core *core)
{
	return core->missing_bytes;
}

uint64_t cs_core_segment_bytes(const struct cs_core *core)
{
	return core->load_bytes;
}

struct cs_error *cs_core_truncation(const struct cs_core *core)
{
	if (!core->missing_bytes && !core->notes_truncated)
		return NULL;
	char segs[96] = "";
	if (core->missing_bytes) {
		double pct = 100.0 * (double)core->missing_bytes /
			     (double)core->load_bytes;
		if (pct < 1)
			snprintf(segs, sizeof(segs), "less than 1%%");
		else
			snprintf(segs, sizeof(segs), "%.0f%%", pct);
	}
	return cs_error_create(
		CS_ERR_FORMAT,
		"%s: truncated: %s%s%s%s (the core was cut off while being "
		"written?)",
		core->path,
		core->notes_truncated ? "the notes (threads, registers, "
					"mapped files) are cut off" :
					"",
		core->notes_truncated && core->missing_bytes ? " and " : "",
		segs, core->missing_bytes ? " of the memory segments are missing" :
					    "");
}
