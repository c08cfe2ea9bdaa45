/* Finding the module that holds the Ruby VM in a process image: libruby.so when the
 * process mapped one, else the executable itself (a static Ruby). Each file
 * is checked against the build-id recorded in the core's memory, so a
 * rebuilt or upgraded Ruby on disk is refused instead of misread. */
#ifndef CS_CORESTACK_VM_MODULE_H
#define CS_CORESTACK_VM_MODULE_H

#include "../dwarf/module.h"
#include "image.h"

struct cs_vm_module {
	struct dw_module *exe;    /* the executable */
	struct dw_module *vm;     /* libruby.so or == exe */
	uint64_t load_bias;       /* of vm */
	char *warnings[4];
	size_t nwarnings;
};

/* exe_path may be NULL (taken from the core). debug_dirs may be NULL. */
struct cs_error *cs_vm_module_open(const struct cs_image *img,
				   const char *exe_path,
				   const char *const *debug_dirs,
				   struct cs_vm_module *ret);
void cs_vm_module_close(struct cs_vm_module *m);

#endif
