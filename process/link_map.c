/* The file mappings of a core without NT_FILE. See link_map.h. */
#include "link_map.h"

#include <elf.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/u64map.h"
#include "build_id.h"

/* Bounds for untrusted lists: far past any real process. */
#define MAX_MODULES 65536   /* link_map entries walked */
#define MAX_MAPS (1u << 18) /* mappings rebuilt */
#define MAX_DYN 4096        /* entries of the executable's dynamic section */
#define MAX_AUX_PHNUM 1024  /* AT_PHNUM */
#define PAGE 0x1000ull      /* the loader maps whole pages */

struct recover {
	struct cs_core *core;
	struct cs_memory mem; /* the core's own bytes */
	struct cs_link_map *lm;
	size_t cap_maps, cap_modules;
	struct u64map seen; /* load bias of each module added */
	int nomem;
};

static struct cs_error *dumped_read(void *priv, uint64_t addr, void *buf,
				    size_t len)
{
	return cs_core_read_dumped(priv, addr, buf, len);
}

/* Keeps the first reason only: one line for the user. */
static void incomplete(struct recover *r, const char *fmt, ...)
{
	if (r->lm->incomplete)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&r->lm->incomplete, fmt, ap) < 0)
		r->lm->incomplete = NULL;
	va_end(ap);
}

static const Elf64_Phdr *first_load(const Elf64_Phdr *ph, size_t phnum)
{
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_LOAD)
			return &ph[i];
	return NULL;
}

static const Elf64_Phdr *find_phdr(const Elf64_Phdr *ph, size_t phnum,
				   uint32_t type)
{
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == type)
			return &ph[i];
	return NULL;
}

/* The mappings the loader made for a module's PT_LOAD segments, as NT_FILE
 * would list them: each segment's file-backed pages, at its file offset. */
static void add_module(struct recover *r, const char *name, uint64_t bias,
		       const Elf64_Phdr *ph, size_t phnum)
{
	int found; /* key 0 is reserved: bias 0 is a non-PIE executable */
	if (r->nomem || bias == UINT64_MAX ||
	    (u64map_get(&r->seen, bias + 1, &found), found))
		return;
	if (!u64map_put(&r->seen, bias + 1, NULL))
		goto nomem;
	struct cs_link_map *lm = r->lm;
	if (lm->nmodules == r->cap_modules) {
		size_t cap = r->cap_modules ? 2 * r->cap_modules : 16;
		struct cs_link_map_module *p =
			reallocarray(lm->modules, cap, sizeof(*p));
		if (!p)
			goto nomem;
		lm->modules = p;
		r->cap_modules = cap;
	}
	struct cs_link_map_module *mod = &lm->modules[lm->nmodules];
	memset(mod, 0, sizeof(*mod));
	char *copy = mod->name = strdup(name);
	if (!copy)
		goto nomem;
	lm->nmodules++;
	if (!u64map_put(&lm->by_name, (uintptr_t)copy,
			(void *)(uintptr_t)lm->nmodules))
		goto nomem;
	/* What proves a file on disk is this module; without it the file
	 * is taken by name and checked later, as for NT_FILE. */
	const Elf64_Phdr *load = first_load(ph, phnum);
	struct cs_error *err = cs_build_id_read(
		&r->mem, cs_core_path(r->core),
		bias + (load ? load->p_vaddr & ~(PAGE - 1) : 0), mod->build_id,
		sizeof(mod->build_id), &mod->build_id_len);
	if (err == &cs_error_nomem)
		goto nomem;
	cs_error_destroy(err);
	for (size_t i = 0; i < phnum; i++) {
		const Elf64_Phdr *p = &ph[i];
		uint64_t vaddr, vend, end;
		if (p->p_type != PT_LOAD || p->p_filesz == 0 ||
		    (p->p_vaddr - p->p_offset) % PAGE != 0 ||
		    __builtin_add_overflow(bias, p->p_vaddr, &vaddr) ||
		    __builtin_add_overflow(vaddr, p->p_filesz, &vend) ||
		    __builtin_add_overflow(vend, PAGE - 1, &end))
			continue; /* no loader would map it: not a real module */
		if (lm->nmaps == MAX_MAPS) {
			incomplete(r, "more than %u mappings", MAX_MAPS);
			return;
		}
		if (lm->nmaps == r->cap_maps) {
			size_t cap = r->cap_maps ? 2 * r->cap_maps : 64;
			struct cs_mapping *m =
				reallocarray(lm->maps, cap, sizeof(*m));
			if (!m)
				goto nomem;
			lm->maps = m;
			r->cap_maps = cap;
		}
		lm->maps[lm->nmaps++] = (struct cs_mapping){
			.start = vaddr & ~(PAGE - 1),
			.end = end & ~(PAGE - 1),
			.file_offset = p->p_offset & ~(PAGE - 1),
			.path = copy,
		};
	}
	return;
nomem:
	r->nomem = 1;
}

/* The executable: its program headers are at AT_PHDR; its load bias from
 * PT_PHDR, else from its ELF header on the page that holds them. */
static struct cs_error *read_executable(struct recover *r, uint64_t *bias,
					Elf64_Phdr **ph, size_t *phnum)
{
	uint64_t at = cs_tables_auxv(cs_core_tables(r->core), AT_PHDR);
	uint64_t n = cs_tables_auxv(cs_core_tables(r->core), AT_PHNUM);
	const char *who = cs_core_path(r->core);
	*ph = NULL;
	if (!at || n == 0 || n > MAX_AUX_PHNUM ||
	    cs_tables_auxv(cs_core_tables(r->core), AT_PHENT) !=
		    sizeof(Elf64_Phdr))
		return cs_error_create(CS_ERR_FORMAT,
				       "no usable AT_PHDR, AT_PHNUM in the "
				       "auxiliary vector");
	Elf64_Phdr *p = calloc(n, sizeof(*p));
	if (!p)
		return &cs_error_nomem;
	struct cs_error *err = cs_memory_read(&r->mem, at, p, n * sizeof(*p));
	if (err) {
		free(p);
		return cs_error_wrap(err, "the executable's program headers");
	}
	const Elf64_Phdr *self = find_phdr(p, n, PT_PHDR);
	const Elf64_Phdr *load = first_load(p, n);
	if (self) {
		*bias = at - self->p_vaddr;
	} else if (load) {
		Elf64_Ehdr eh;
		Elf64_Phdr *dup;
		size_t k;
		uint64_t start = at & ~(PAGE - 1);
		if ((err = cs_module_headers_read(&r->mem, who, start, &eh,
						  &dup, &k))) {
			free(p);
			return cs_error_wrap(err,
					     "the executable's ELF header");
		}
		free(dup);
		if (start + eh.e_phoff != at) {
			free(p);
			return cs_error_create(CS_ERR_CORRUPT,
					       "no ELF header for the "
					       "executable's program headers");
		}
		*bias = start - (load->p_vaddr & ~(PAGE - 1));
	} else {
		free(p);
		return cs_error_create(CS_ERR_CORRUPT,
				       "the executable has no PT_LOAD");
	}
	*ph = p;
	*phnum = n;
	return NULL;
}

/* The r_debug the loader keeps (DT_DEBUG in the dynamic section), 0 when
 * there is none. */
static uint64_t r_debug_of(struct recover *r, uint64_t dyn, uint64_t size)
{
	uint64_t n = size / sizeof(Elf64_Dyn);
	for (uint64_t i = 0; i < n && i < MAX_DYN; i++) {
		Elf64_Dyn d;
		struct cs_error *err = cs_memory_read(
			&r->mem, dyn + i * sizeof(d), &d, sizeof(d));
		if (err) {
			incomplete(r,
				   "the executable's dynamic section is not "
				   "in the core (%s)",
				   err->message);
			cs_error_destroy(err);
			return 0;
		}
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_DEBUG) {
			if (!d.d_un.d_ptr)
				incomplete(r, "DT_DEBUG in the executable's "
					      "dynamic section is not set");
			return d.d_un.d_ptr;
		}
	}
	incomplete(r, "the executable's dynamic section has no DT_DEBUG");
	return 0;
}

/* One library of the link_map list: its ELF header is at its load bias
 * (the first PT_LOAD of a shared object maps offset 0 at vaddr 0), and its
 * dynamic section must be where the list says. */
static void add_library(struct recover *r, const struct link_map *e,
			const char *name)
{
	uint64_t bias = (uint64_t)e->l_addr;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph;
	size_t phnum;
	struct cs_error *err = cs_module_headers_read(
		&r->mem, cs_core_path(r->core), bias, &eh, &ph, &phnum);
	if (err) {
		if (err == &cs_error_nomem)
			r->nomem = 1;
		else
			incomplete(r, "%s: %s", name, err->message);
		cs_error_destroy(err);
		return;
	}
	const Elf64_Phdr *load = first_load(ph, phnum);
	const Elf64_Phdr *dyn = find_phdr(ph, phnum, PT_DYNAMIC);
	if (!load || load->p_vaddr >= PAGE ||
	    (dyn && bias + dyn->p_vaddr != (uint64_t)(uintptr_t)e->l_ld))
		incomplete(r,
			   "%s: the ELF header at 0x%" PRIx64 " does not "
			   "match its link_map entry",
			   name, bias);
	else
		add_module(r, name, bias, ph, phnum);
	free(ph);
}

/* The dynamic linker's list of loaded objects, from r_debug.r_map. The
 * executable (its dynamic section is exe_dyn) and the vDSO, which no file
 * backs, are left out. */
static void walk_link_map(struct recover *r, uint64_t rdebug, uint64_t exe_dyn)
{
	struct r_debug rd;
	struct cs_error *err = cs_memory_read(&r->mem, rdebug, &rd, sizeof(rd));
	if (err) {
		incomplete(r,
			   "the dynamic linker's r_debug is not in the core "
			   "(%s)",
			   err->message);
		cs_error_destroy(err);
		return;
	}
	uint64_t vdso =
		cs_tables_auxv(cs_core_tables(r->core), AT_SYSINFO_EHDR);
	uint64_t at = (uint64_t)(uintptr_t)rd.r_map;
	size_t count = 0;
	for (; at && !r->nomem; count++) {
		if (count == MAX_MODULES) {
			incomplete(r,
				   "the link_map list is longer than %d "
				   "entries (a cycle?)",
				   MAX_MODULES);
			return;
		}
		struct link_map e;
		if ((err = cs_memory_read(&r->mem, at, &e, sizeof(e)))) {
			incomplete(r,
				   "a link_map entry is not in the core (%s)",
				   err->message);
			cs_error_destroy(err);
			return;
		}
		uint64_t ld = (uint64_t)(uintptr_t)e.l_ld;
		char *name = e.l_name ? cs_core_read_string(
						r->core,
						(uint64_t)(uintptr_t)e.l_name,
						PATH_MAX)
				      : NULL;
		if (ld != exe_dyn && (uint64_t)e.l_addr != vdso && name &&
		    name[0])
			add_library(r, &e, name);
		else if (!name && ld != exe_dyn && e.l_name)
			incomplete(r,
				   "the name of the module at 0x%" PRIx64
				   " is not in the core",
				   (uint64_t)e.l_addr);
		free(name);
		at = (uint64_t)(uintptr_t)e.l_next;
	}
}

static int mapping_cmp(const void *a, const void *b)
{
	const struct cs_mapping *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorted and disjoint, as NT_FILE's: only a corrupt core overlaps. */
static void sort_maps(struct cs_link_map *lm)
{
	if (!lm->nmaps)
		return;
	qsort(lm->maps, lm->nmaps, sizeof(*lm->maps), mapping_cmp);
	size_t out = 0;
	for (size_t i = 0; i < lm->nmaps; i++) {
		struct cs_mapping m = lm->maps[i];
		if (out && m.start < lm->maps[out - 1].end)
			lm->maps[out - 1].end = m.start;
		if (out && lm->maps[out - 1].start == lm->maps[out - 1].end)
			out--;
		lm->maps[out++] = m;
	}
	lm->nmaps = out;
}

struct cs_error *cs_link_map_read(struct cs_core *core, struct cs_link_map *lm)
{
	memset(lm, 0, sizeof(*lm));
	struct recover r = {.core = core, .mem = {dumped_read, core}, .lm = lm};
	uint64_t bias = 0;
	Elf64_Phdr *ph;
	size_t phnum = 0;
	struct cs_error *err = read_executable(&r, &bias, &ph, &phnum);
	if (err == &cs_error_nomem)
		return err;
	if (err) {
		incomplete(&r, "%s", err->message);
		cs_error_destroy(err);
		return NULL;
	}
	/* The path given to execve, else the process name: both are looked
	 * up like NT_FILE's paths (the EXECUTABLE argument wins). */
	uint64_t execfn = cs_tables_auxv(cs_core_tables(core), AT_EXECFN);
	char *name = execfn ? cs_core_read_string(core, execfn, PATH_MAX)
			    : NULL;
	const struct cs_core_process *ps = cs_core_process(core);
	const char *exe = name && name[0]               ? name
			  : ps->present && ps->fname[0] ? ps->fname
							: NULL;
	if (exe)
		add_module(&r, exe, bias, ph, phnum);
	else
		incomplete(&r, "the core does not name its executable");
	free(name);
	const Elf64_Phdr *dyn = find_phdr(ph, phnum, PT_DYNAMIC);
	uint64_t exe_dyn = dyn ? bias + dyn->p_vaddr : 0;
	/* A static executable has no dynamic section and loads nothing. */
	uint64_t rdebug = dyn ? r_debug_of(&r, exe_dyn, dyn->p_memsz) : 0;
	free(ph);
	if (rdebug)
		walk_link_map(&r, rdebug, exe_dyn);
	u64map_free(&r.seen, NULL);
	if (r.nomem) {
		cs_link_map_free(lm);
		return &cs_error_nomem;
	}
	sort_maps(lm);
	return NULL;
}

struct cs_link_map_module *cs_link_map_module_of(const struct cs_link_map *lm,
						 const char *path)
{
	int found;
	void *v = u64map_get(&lm->by_name, (uintptr_t)path, &found);
	return found ? &lm->modules[(uintptr_t)v - 1] : NULL;
}

void cs_link_map_free(struct cs_link_map *lm)
{
	for (size_t i = 0; i < lm->nmodules; i++)
		free(lm->modules[i].name);
	free(lm->modules);
	u64map_free(&lm->by_name, NULL);
	free(lm->maps);
	free(lm->incomplete);
	memset(lm, 0, sizeof(*lm));
}
