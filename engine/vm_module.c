#include "vm_module.h"

#include "../rubyvm/layout.h"
#include "../util/hex.h"
#include "../process/build_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <unistd.h>

/* The first PT_LOAD's page-aligned p_vaddr, and whether elf is ET_DYN. */
static uint64_t first_vaddr_of(Elf *elf, int *is_dyn)
{
	GElf_Ehdr eh;
	*is_dyn = gelf_getehdr(elf, &eh) && eh.e_type == ET_DYN;
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			return ph.p_vaddr & ~(uint64_t)0xfff;
	}
	return 0;
}

/* Does the mapping of path at start look like elf loaded there: each
 * PT_LOAD segment starting a mapping of the right file offset at
 * start - first_vaddr + p_vaddr? An offset-0 mapping alone is not enough:
 * Ruby's own crash reporter mmaps libruby.so and the executable whole to
 * read their DWARF, and those mappings are in the core too. */
static int loaded_at(const struct cs_target *img, Elf *elf, const char *path,
		     uint64_t start)
{
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	int is_dyn;
	uint64_t first = first_vaddr_of(elf, &is_dyn);
	uint64_t bias = is_dyn ? start - first : 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    ph.p_filesz == 0)
			continue;
		uint64_t page = ph.p_align > 1 ? ph.p_align : 0x1000;
		if (page > 0x10000)
			page = 0x1000; /* mappings are page-aligned, not p_align */
		uint64_t at = (bias + ph.p_vaddr) & ~(page - 1);
		uint64_t off = ph.p_offset & ~(page - 1);
		const struct cs_mapping *m = cs_target_mapping_of(img, at);
		/* The loader maps each segment on its own (they differ in
		 * protection), so each starts a mapping. */
		if (!m || strcmp(m->path, path) != 0 || m->start != at ||
		    m->file_offset != off)
			return 0;
	}
	return 1;
}

uint64_t cs_image_module_start(const struct cs_target *img, Elf *elf,
			       const char *path)
{
	for (size_t i = 0; i < cs_target_mapping_count(img); i++) {
		const struct cs_mapping *m = cs_target_mapping_at(img, i);
		if (m->file_offset == 0 && strcmp(m->path, path) == 0 &&
		    loaded_at(img, elf, path, m->start))
			return m->start;
	}
	return 0;
}

uint64_t cs_image_module_bias(Elf *elf, uint64_t start)
{
	int is_dyn;
	uint64_t first = first_vaddr_of(elf, &is_dyn);
	return is_dyn ? start - first : 0;
}

static uint64_t module_base(const struct cs_target *img, struct dw_module *mod,
			    const char *path)
{
	return cs_image_module_start(img, mod->elf, path);
}

int cs_image_build_id_match(const struct cs_target *img, const uint8_t *file_id,
			    size_t file_len, uint64_t start,
			    uint8_t id[DW_BUILD_ID_MAX], size_t *len,
			    struct cs_error **why)
{
	*len = 0;
	*why = cs_target_module_build_id(img, start, id, DW_BUILD_ID_MAX, len);
	if (*why)
		return -1;
	return cs_build_id_same(id, *len, file_id, file_len);
}

struct cs_error *cs_image_module_open(const struct cs_target *img,
				      const char *path, const char *file,
				      const char *const *debug_dirs,
				      const char *advice,
				      struct dw_module **ret, uint64_t *bias)
{
	*ret = NULL;
	*bias = 0;
	char *host = file ? strdup(file) : cs_target_host_path(img, path);
	if (!host)
		return &cs_error_nomem;
	struct dw_module *mod = NULL;
	struct cs_error *err = dw_module_open(host, debug_dirs, &mod);
	free(host);
	if (err)
		return err;
	mod->debug_dir_advice = advice;
	uint8_t id[DW_BUILD_ID_MAX];
	size_t len;
	struct cs_error *why = NULL;
	uint64_t start = cs_image_module_start(img, mod->elf, path);
	if (!start ||
	    cs_image_build_id_match(img, mod->build_id, mod->build_id_len,
				    start, id, &len, &why) == 0) {
		cs_error_destroy(why);
		dw_module_close(mod);
		return cs_error_create(CS_ERR_MISMATCH,
				       "%s: not the file the process loaded",
				       path);
	}
	cs_error_destroy(why);
	*bias = cs_image_module_bias(mod->elf, start);
	*ret = mod;
	return NULL;
}

/* Refuse a file whose build-id differs from the one in the core. When the
 * core lacks those bytes, say so in a warning and go on. */
static struct cs_error *check_build_id(const struct cs_target *img,
				       struct cs_vm_module *m,
				       struct dw_module *mod, uint64_t start)
{
	uint8_t id[DW_BUILD_ID_MAX];
	size_t len;
	struct cs_error *err;
	int same = cs_image_build_id_match(
		img, mod->build_id, mod->build_id_len, start, id, &len, &err);
	if (same < 0) {
		if (m->nwarnings < 4 &&
		    asprintf(&m->warnings[m->nwarnings],
			     "%s: cannot check "
			     "its build-id against the %s (%s)",
			     mod->path, img->what, err->message) >= 0)
			m->nwarnings++;
		cs_error_destroy(err);
		return NULL;
	}
	if (same)
		return NULL;
	char want[2 * DW_BUILD_ID_MAX + 1], have[2 * DW_BUILD_ID_MAX + 1];
	cs_hex(id, len, want);
	dw_module_build_id_hex(mod, have);
	return cs_error_create(CS_ERR_MISMATCH,
			       "%s does not match the %s %s (build-id %s in "
			       "the %s, %s in the file): pass the exact "
			       "binary the process ran",
			       mod->path, img->what, img->name, want, img->what,
			       have[0] ? have : "none");
}

static uint64_t bias_of(struct dw_module *mod, uint64_t start)
{
	return mod->is_pie_or_dso ? start - mod->first_vaddr : 0;
}

struct cs_error *cs_vm_module_open(const struct cs_target *img,
				   const char *exe_path,
				   const char *const *debug_dirs,
				   struct cs_vm_module *m)
{
	memset(m, 0, sizeof(*m));
	const char *gap = cs_target_mapping_gap(img);
	if (cs_target_mapping_count(img) == 0)
		return cs_error_create(
			CS_ERR_FORMAT,
			"%s: the %s lists no mapped files (no "
			"NT_FILE note) and its modules cannot be "
			"found from their ELF headers either "
			"(%s), so libruby cannot be found",
			img->name, img->what, gap ? gap : "none found");
	const char *core_exe = cs_target_executable(img);
	if (!exe_path && !core_exe)
		return cs_error_create(CS_ERR_FORMAT,
				       "%s: the %s does not name its "
				       "executable; pass it: corestack CORE "
				       "EXECUTABLE",
				       img->name, img->what);
	/* The path the core names is the other machine's: look it up
	 * under --sysroot / --lib-search-path. */
	char *host_exe = exe_path ? strdup(exe_path)
				  : cs_target_host_path(img, core_exe);
	if (!host_exe)
		return &cs_error_nomem;
	struct cs_error *err = NULL;
	if (access(host_exe, R_OK) != 0)
		err = cs_error_create(CS_ERR_OS,
				      "%s: cannot read the executable %s "
				      "named in the %s; pass its path: "
				      "corestack CORE EXECUTABLE, or the "
				      "root it was copied to: --sysroot DIR",
				      img->name, host_exe, img->what);
	else
		err = dw_module_open(host_exe, debug_dirs, &m->exe);
	free(host_exe);
	if (err)
		return err;
	/* The executable's load address from the auxiliary vector (its
	 * program headers are in its first mapping): this holds even when
	 * the file given is not the one that ran, which is what the build-id
	 * check below must catch. */
	const struct cs_mapping *phdr_map =
		cs_target_mapping_of(img, cs_target_auxv(img, AT_PHDR));
	uint64_t exe_start = phdr_map && phdr_map->file_offset == 0
				     ? phdr_map->start
			     : core_exe ? module_base(img, m->exe, core_exe)
					: 0;
	if (exe_start && (err = check_build_id(img, m, m->exe, exe_start)))
		goto fail;

	const struct cs_mapping *lib =
		cs_target_find_mapping(img, "libruby.so");
	if (lib) {
		char *host_lib = cs_target_host_path(img, lib->path);
		if (!host_lib) {
			err = &cs_error_nomem;
			goto fail;
		}
		if (access(host_lib, R_OK) != 0)
			err = cs_error_create(
				CS_ERR_OS,
				"%s: cannot read the library %s named in the "
				"%s; pass its directory: --lib-search-path DIR, "
				"or the root it was copied to: --sysroot DIR",
				img->name, host_lib, img->what);
		else
			err = dw_module_open(host_lib, debug_dirs, &m->vm);
		free(host_lib);
		if (err)
			goto fail;
		uint64_t start = module_base(img, m->vm, lib->path);
		/* A file of another build rarely has the same segments:
		 * say so by its build-id where the core has it. */
		if (!start && lib->file_offset == 0 &&
		    (err = check_build_id(img, m, m->vm, lib->start)))
			goto fail;
		if (!start) {
			err = cs_error_create(
				CS_ERR_MISMATCH,
				"%s: %s is mapped but its segments do not match "
				"the file on disk (a different build?)",
				img->name, lib->path);
			goto fail;
		}
		if ((err = check_build_id(img, m, m->vm, start)))
			goto fail;
		m->load_bias = bias_of(m->vm, start);
	} else {
		uint64_t addr;
		/* the VM's root, named once in layout.def */
		err = dw_module_symbol(m->exe,
				       rv_layout_item_subject(RVL_vm_ptr),
				       &addr, NULL);
		if (err && gap) {
			cs_error_destroy(err);
			err = cs_error_create(
				CS_ERR_FORMAT,
				"%s: no libruby.so among the modules found "
				"without an NT_FILE note, and '%s' has no Ruby "
				"VM; the list may be incomplete: %s",
				img->name, m->exe->path, gap);
			goto fail;
		}
		if (err) {
			cs_error_destroy(err);
			err = cs_error_create(
				CS_ERR_NOT_RUBY,
				"%s: not a Ruby process: '%s' maps no "
				"libruby.so and has no Ruby VM",
				img->name,
				img->comm[0] ? img->comm : m->exe->path);
			goto fail;
		}
		m->vm = m->exe;
		m->load_bias = exe_start ? bias_of(m->exe, exe_start) : 0;
	}
	return NULL;
fail:
	cs_vm_module_close(m);
	return err;
}

void cs_vm_module_close(struct cs_vm_module *m)
{
	if (m->vm != m->exe)
		dw_module_close(m->vm);
	dw_module_close(m->exe);
	for (size_t i = 0; i < m->nwarnings; i++)
		free(m->warnings[i]);
	memset(m, 0, sizeof(*m));
}
