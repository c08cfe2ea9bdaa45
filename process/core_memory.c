/* The core reader: memory (the dumped segments, else the mapped files),
 * the accessors, build-ids from the dumped bytes, and truncation. */
#include "core_internal.h"
#include "crash_signal.h"

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

static struct cs_error *cs_core_read_impl(struct cs_core *core, uint64_t addr,
					  uint8_t *out, size_t len,
					  int use_files)
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
		uint64_t limit = UINT64_MAX; /* where this piece must stop */
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
			const struct cs_mapping *m =
				use_files ? cs_tables_mapping_of(&core->tables,
								 at)
					  : NULL;
			if (!m) {
				return cs_core_fault(core, addr, len, at,
						     "not in the core");
			}
			if (m->end < limit)
				limit = m->end;
			uint64_t avail = limit - at;
			n = avail < left ? (size_t)avail : left;
			struct cs_error *err = cs_core_read_file(
				core, m, at, out, n, addr, len);
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

const struct cs_target_tables *cs_core_tables(const struct cs_core *core)
{
	return &core->tables;
}

const struct cs_core_process *cs_core_process(const struct cs_core *core)
{
	return &core->process;
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

/* The mapping containing AT_PHDR (or AT_ENTRY), else the AT_EXECFN
 * string from memory. */
static const char *cs_core_find_executable(struct cs_core *core)
{
	static const uint64_t types[] = {AT_PHDR, AT_ENTRY};
	for (size_t i = 0; i < 2; i++) {
		uint64_t v = cs_tables_auxv(&core->tables, types[i]);
		const struct cs_mapping *m =
			v ? cs_tables_mapping_of(&core->tables, v) : NULL;
		if (m)
			return m->path;
	}
	uint64_t fn = cs_tables_auxv(&core->tables, AT_EXECFN);
	if (fn) {
		core->exe_buf = cs_core_read_string(core, fn, PATH_MAX);
		if (core->exe_buf && core->exe_buf[0])
			return core->exe_buf;
	}
	return NULL;
}

struct cs_error *cs_core_fill_tables(struct cs_core *core)
{
	struct cs_target_tables *tt = &core->tables;
	tt->regions = calloc(core->nsegs + 1, sizeof(*tt->regions));
	if (!tt->regions)
		return &cs_error_nomem;
	for (size_t i = 0; i < core->nsegs; i++) {
		const struct cs_core_segment *s = &core->segs[i];
		tt->regions[i] = (struct cs_region){.start = s->start,
						    .end = s->end,
						    .write = s->write,
						    .exec = s->exec};
	}
	tt->nregions = core->nsegs;
	tt->knows_regions = true;
	tt->has_registers = true;
	tt->executable = cs_core_find_executable(core);
	tt->pid = core->process.present ? core->process.pid : -1;
	tt->command = core->process.present ? core->process.psargs : NULL;
	tt->cwd = NULL;
	tt->siginfo = &core->siginfo;
	tt->crash_tid = cs_tables_crash_tid(tt);
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

void cs_core_describes(struct cs_core *core, uint64_t offset, uint64_t size)
{
	uint64_t end;
	if (__builtin_add_overflow(offset, size, &end))
		end = UINT64_MAX;
	if (end > core->described)
		core->described = end;
}

struct cs_error *cs_core_cut(const struct cs_core *core, uint64_t described,
			     bool at_least, const char *missing)
{
	return cs_error_create(
		CS_ERR_FORMAT,
		"%s: truncated core: the file has %zu bytes but its headers "
		"describe %s%llu, so %s missing; a core is cut short by its "
		"size limit (ulimit -c), a full disk, or systemd-coredump's "
		"limits (ProcessSizeMax, ExternalSizeMax in coredump.conf): "
		"raise the limit or free space and dump it again",
		core->path, core->image_size, at_least ? "at least " : "",
		(unsigned long long)described, missing);
}

struct cs_error *cs_core_truncation(const struct cs_core *core)
{
	if (!core->missing_bytes && !core->notes_truncated)
		return NULL;
	char segs[48] = "";
	if (core->missing_bytes) {
		double pct = 100.0 * (double)core->missing_bytes /
			     (double)core->load_bytes;
		if (pct < 1)
			snprintf(segs, sizeof(segs), "less than 1%%");
		else
			snprintf(segs, sizeof(segs), "%.0f%%", pct);
	}
	char missing[160];
	snprintf(missing, sizeof(missing), "%s%s%s%s are",
		 core->notes_truncated ? "the notes (threads, registers, "
					 "mapped files)"
				       : "",
		 core->notes_truncated && core->missing_bytes ? " and " : "",
		 segs, core->missing_bytes ? " of the memory segments" : "");
	return cs_core_cut(core, core->described, false, missing);
}
