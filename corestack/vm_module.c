#include "vm_module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where the file whose first mapping has offset 0 is loaded. */
static const struct cs_core_mapping *module_base(struct cs_core *core,
						 const char *path)
{
	const struct cs_core_mapping *best = NULL;
	for (size_t i = 0; i < cs_core_mapping_count(core); i++) {
		const struct cs_core_mapping *m = cs_core_mapping_at(core, i);
		if (strcmp(m->path, path) == 0 && m->file_offset == 0 &&
		    (!best || m->start < best->start))
			best = m;
	}
	return best;
}

/* Refuse a file whose build-id differs from the one in the core. When the
 * core lacks those bytes, say so in a warning and go on. */
static struct cs_error *check_build_id(struct cs_core *core,
				       struct cs_vm_module *m,
				       struct dw_module *mod, uint64_t start)
{
	uint8_t id[DW_BUILD_ID_MAX];
	size_t len = 0;
	struct cs_error *err =
		cs_core_module_build_id(core, start, id, sizeof(id), &len);
	if (err) {
		if (m->nwarnings < 4 &&
		    asprintf(&m->warnings[m->nwarnings], "%s: cannot check "
				     "its build-id against the core (%s)",
			     mod->path, err->message) >= 0)
			m->nwarnings++;
		cs_error_destroy(err);
		return NULL;
	}
	if (len == mod->build_id_len && memcmp(id, mod->build_id, len) == 0)
		return NULL;
	char want[2 * DW_BUILD_ID_MAX + 1], have[2 * DW_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < len; i++)
		sprintf(want + 2 * i, "%02x", id[i]);
	want[2 * len] = '\0';
	dw_module_build_id_hex(mod, have);
	return cs_error_create(CS_ERR_MISMATCH,
			       "%s does not match the core %s (build-id %s in "
			       "the core, %s in the file): pass the exact "
			       "binary the process ran",
			       mod->path, cs_core_path(core), want,
			       have[0] ? have : "none");
}

static uint64_t bias_of(struct dw_module *mod, uint64_t start)
{
	return mod->is_pie_or_dso ? start - mod->first_vaddr : 0;
}

struct cs_error *cs_vm_module_open(struct cs_core *core, const char *exe_path,
				   const char *const *debug_dirs,
				   struct cs_vm_module *m)
{
	memset(m, 0, sizeof(*m));
	const char *core_exe = cs_core_executable(core);
	if (!exe_path)
		exe_path = core_exe;
	if (!exe_path)
		return cs_error_create(CS_ERR_FORMAT,
				       "%s: the core does not name its "
				       "executable; pass it: corestack CORE "
				       "EXECUTABLE",
				       cs_core_path(core));
	if (access(exe_path, R_OK) != 0)
		return cs_error_create(CS_ERR_OS,
				       "%s: cannot read the executable %s "
				       "named in the core; pass its path: "
				       "corestack CORE EXECUTABLE",
				       cs_core_path(core), exe_path);
	struct cs_error *err = dw_module_open(exe_path, debug_dirs, &m->exe);
	if (err)
		return err;
	const struct cs_core_mapping *exe_map =
		core_exe ? module_base(core, core_exe) : NULL;
	if (exe_map && (err = check_build_id(core, m, m->exe, exe_map->start)))
		goto fail;

	const struct cs_core_mapping *lib =
		cs_core_find_mapping(core, "libruby.so");
	if (lib) {
		if ((err = dw_module_open(lib->path, debug_dirs, &m->vm)))
			goto fail;
		const struct cs_core_mapping *base = module_base(core, lib->path);
		uint64_t start = base ? base->start : lib->start;
		if ((err = check_build_id(core, m, m->vm, start)))
			goto fail;
		m->load_bias = bias_of(m->vm, start);
	} else {
		uint64_t addr;
		err = dw_module_symbol(m->exe, "ruby_current_vm_ptr", &addr,
				       NULL);
		if (err) {
			cs_error_destroy(err);
			const struct cs_core_process *p = cs_core_process(core);
			err = cs_error_create(
				CS_ERR_NOT_RUBY,
				"%s: not a Ruby process: '%s' maps no "
				"libruby.so and has no Ruby VM",
				cs_core_path(core),
				p->present ? p->fname : exe_path);
			goto fail;
		}
		m->vm = m->exe;
		m->load_bias = exe_map ? bias_of(m->exe, exe_map->start) : 0;
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
