/* See abort_msg.h. glibc's record is struct abort_msg_s: its size, then
 * the text (member "msg"), in a mapping of its own; __abort_msg, a
 * variable of libc (an ELF symbol of every glibc since 2.15), points to
 * it, NULL until a message is kept. Where "msg" lies comes from libc's
 * DWARF, as every layout this project reads. */
#include "abort_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dwarf/index.h"
#include "../dwarf/module.h"
#include "../dwarf/types.h"
#include "../util/utf8.h"
#include "vm_module.h"

/* The longest message shown; glibc's are a line or two. */
#define ABORT_MSG_MAX 4096

/* The offset of the text in struct abort_msg_s, from libc's DWARF; -1
 * when unknown (*why then says why). */
static long msg_offset(struct dw_module *mod, char **why)
{
	struct dw_index *idx = NULL;
	struct cs_error *err = dw_index_create(mod, &idx);
	static const char *const units[] = {"abort.c", "assert.c", NULL};
	Dwarf_Die die;
	struct dw_member msg;
	long off = -1;
	if (!err && dw_index_find(idx, DW_NAME_STRUCT, "abort_msg_s", units, 1,
				  &die, NULL)) {
		err = dw_type_member(&die, "msg", &msg);
		if (!err)
			off = (long)msg.offset;
	} else if (!err) {
		err = cs_error_create(
			CS_ERR_LOOKUP, "%s has no struct abort_msg_s",
			mod->debug_path ? mod->debug_path : mod->path);
	}
	if (err && asprintf(why, "%s", err->message) < 0)
		*why = NULL;
	cs_error_destroy(err);
	dw_index_destroy(idx);
	return off;
}

/* libc's module, loaded where the target maps it and the same build.
 * Its first mapping need not be where it is loaded: a program that reads
 * its own debug info (Ruby's crash report) maps the file whole. */
static struct dw_module *libc_module(const struct cs_target *img,
				     const char *const *debug_dirs,
				     uint64_t *bias)
{
	const struct cs_mapping *m = cs_target_find_mapping(img, "libc.so");
	if (!m)
		m = cs_target_find_mapping(img, "libc-");
	if (!m)
		return NULL;
	char *host = cs_target_host_path(img, m->path);
	struct dw_module *mod = NULL;
	struct cs_error *err = host ? dw_module_open(host, debug_dirs, &mod)
				    : &cs_error_nomem;
	free(host);
	uint8_t id[DW_BUILD_ID_MAX];
	size_t len;
	struct cs_error *why = NULL;
	uint64_t start = err ? 0
			     : cs_image_module_start(img, mod->elf, m->path);
	if (!err && (!start || cs_image_build_id_match(img, mod->build_id,
						       mod->build_id_len, start,
						       id, &len, &why) == 0)) {
		dw_module_close(mod);
		mod = NULL;
	}
	cs_error_destroy(why);
	cs_error_destroy(err);
	if (mod)
		*bias = cs_image_module_bias(mod->elf, start);
	return mod;
}

char *cs_abort_message(const struct cs_target *img, const struct cs_memory *mem,
		       const char *const *debug_dirs, char **why)
{
	*why = NULL;
	uint64_t bias = 0, sym = 0, record = 0;
	struct dw_module *mod = libc_module(img, debug_dirs, &bias);
	struct cs_error *err =
		mod ? dw_module_object_symbol(mod, "__abort_msg", &sym)
		    : cs_error_create(CS_ERR_LOOKUP, "no libc");
	if (mod && !err)
		err = cs_memory_read(mem, sym + bias, &record, sizeof(record));
	long off = !err && record ? msg_offset(mod, why) : -1;
	cs_error_destroy(err);
	dw_module_close(mod);
	if (off < 0)
		return NULL; /* no glibc, no message kept, or no layout */
	char *text = calloc(1, ABORT_MSG_MAX + 1);
	if (!text)
		return NULL;
	/* the record's mapping may end before ABORT_MSG_MAX: read what is
	 * there, a page at a time */
	size_t n = 0;
	uint64_t at = record + (uint64_t)off;
	while (n < ABORT_MSG_MAX && !memchr(text, 0, n)) {
		size_t chunk = 4096 - ((at + n) & 4095);
		if (chunk > ABORT_MSG_MAX - n)
			chunk = ABORT_MSG_MAX - n;
		struct cs_error *rerr =
			cs_memory_read(mem, at + n, text + n, chunk);
		if (rerr) {
			if (asprintf(why, "glibc's abort message at 0x%llx: %s",
				     (unsigned long long)at, rerr->message) < 0)
				*why = NULL;
			cs_error_destroy(rerr);
			if (n == 0) {
				free(text);
				return NULL;
			}
			break;
		}
		n += chunk;
	}
	text[n] = 0;
	size_t len = strlen(text);
	while (len && text[len - 1] == '\n')
		text[--len] = 0;
	utf8_scrub(text);
	return text;
}
