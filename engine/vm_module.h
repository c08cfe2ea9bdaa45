/* Finding the module that holds the Ruby VM in a process image: libruby.so when the
 * process mapped one, else the executable itself (a static Ruby). Each file
 * is checked against the build-id recorded in the core's memory, so a
 * rebuilt or upgraded Ruby on disk is refused instead of misread. */
#ifndef CS_CORESTACK_VM_MODULE_H
#define CS_CORESTACK_VM_MODULE_H

#include "../dwarf/module.h"
#include "../process/target.h"

struct cs_vm_module {
	struct dw_module *exe; /* the executable */
	struct dw_module *vm;  /* libruby.so or == exe */
	uint64_t load_bias;    /* of vm */
	char *warnings[4];
	size_t nwarnings;
};

/* exe_path may be NULL (taken from the core). debug_dirs may be NULL. */
struct cs_error *cs_vm_module_open(const struct cs_target *img,
				   const char *exe_path,
				   const char *const *debug_dirs,
				   struct cs_vm_module *ret);
void cs_vm_module_close(struct cs_vm_module *m);

/* Where the ELF file elf, mapped from path (the target's name for it), is
 * loaded: the lowest offset-0 mapping of path that each of its PT_LOAD
 * segments agrees with; 0 when none does. */
uint64_t cs_image_module_start(const struct cs_target *img, Elf *elf,
			       const char *path);
/* Its load bias when loaded at start (0 for ET_EXEC). */
uint64_t cs_image_module_bias(Elf *elf, uint64_t start);
/* The build-id the target holds for the module it maps at start, against
 * a file's (file_id, file_len): 1 the same, 0 different (id, *len: the
 * target's), -1 unknown (*why: the target's error, the caller's). Every
 * check that a file on disk is the module that ran goes through here. */
int cs_image_build_id_match(const struct cs_target *img, const uint8_t *file_id,
			    size_t file_len, uint64_t start,
			    uint8_t id[DW_BUILD_ID_MAX], size_t *len,
			    struct cs_error **why);

/* Open the module the target maps from path (the target's name for the
 * file) as the one the process loaded: the file file (NULL: where
 * cs_target_host_path says path is), its segments where the target maps
 * them, and the build-id the target holds when it can tell
 * (dw_module.debug_dir_advice set to advice). *bias: its load bias. Fails
 * with dw_module_open's error, or CS_ERR_MISMATCH when the file is not
 * the one the process loaded. */
struct cs_error *cs_image_module_open(const struct cs_target *img,
				      const char *path, const char *file,
				      const char *const *debug_dirs,
				      const char *advice,
				      struct dw_module **ret, uint64_t *bias);

#endif
