/* The core reader: notes (NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV,
 * NT_FILE), every size in them checked against the note itself. */
#include "core_internal.h"
#include "crash_signal.h"

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
	struct cs_target_tables *tt = &core->tables;
	if ((tt->nthreads & (tt->nthreads - 1)) == 0) {
		size_t cap = tt->nthreads ? tt->nthreads * 2 : 4;
		void *p = reallocarray(tt->threads, cap, sizeof(*tt->threads));
		if (!p)
			return &cs_error_nomem;
		tt->threads = p;
	}
	struct cs_thread *t = &tt->threads[tt->nthreads++];
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
	cs_siginfo_set(&core->siginfo, (int)cs_core_le32(n->desc),
		       (int)cs_core_le32(n->desc + 4),
		       (int)cs_core_le32(n->desc + 8),
		       cs_core_le64(n->desc + 16));
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
	struct cs_target_tables *tt = &core->tables;
	tt->maps = calloc(count, sizeof(*tt->maps));
	if (!tt->maps)
		return &cs_error_nomem;
	const uint8_t *name = d + 16 + count * 24;
	const uint8_t *end = d + size;
	for (uint64_t i = 0; i < count; i++) {
		const uint8_t *nul = memchr(name, 0, (size_t)(end - name));
		if (!nul)
			return cs_core_nt_file_error(core,
						     "file names missing");
		const uint8_t *e = d + 16 + i * 24;
		uint64_t start = cs_core_le64(e);
		uint64_t stop = cs_core_le64(e + 8);
		uint64_t off;
		/* Odd entries are skipped, not fatal: the rest still help. */
		if (start < stop &&
		    !__builtin_mul_overflow(cs_core_le64(e + 16), page, &off)) {
			struct cs_mapping *m = &tt->maps[tt->nmaps++];
			m->start = start;
			m->end = stop;
			m->file_offset = off;
			m->path = (const char *)name;
		}
		name = nul + 1;
	}
	return NULL;
}

/* The first NT_AUXV, in host order. */
static struct cs_error *cs_core_set_auxv(struct cs_core *core,
					 const struct cs_core_note *n)
{
	if (core->auxv)
		return NULL;
	size_t count = n->descsz / 16;
	core->auxv = calloc(2 * count + 2, sizeof(*core->auxv));
	if (!core->auxv)
		return &cs_error_nomem;
	for (size_t i = 0; i < 2 * count; i++)
		core->auxv[i] = cs_core_le64(n->desc + 8 * i);
	core->tables.auxv = core->auxv;
	core->tables.nauxv = count;
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
		return cs_core_set_auxv(core, n);
	case NT_FILE:
		return cs_core_set_mappings(core, n);
	default:
		return NULL;
	}
}

/* Parse one PT_NOTE. A note that runs past the segment is corruption and
 * refused; one that is inside the segment but past the end of the file is
 * truncation: keep the notes before it. */
struct cs_error *cs_core_parse_notes(struct cs_core *core, const GElf_Phdr *ph,
				     size_t index)
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
				return NULL; /* padding at the end */
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
			return NULL; /* cut off with the file: noted above */
		}
		struct cs_error *err = cs_core_take_note(core, &n);
		if (err)
			return err;
	}
}
