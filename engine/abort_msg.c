/* See abort_msg.h. glibc's record is struct abort_msg_s: its size, then
 * the text (member "msg"), in a mapping of its own; __abort_msg, a
 * variable of libc (an ELF symbol of every glibc since 2.15), points to
 * it, NULL until a message is kept. Where "msg" lies comes from libc's
 * DWARF, as every layout this project reads.
 *
 * Without libc's DWARF (no libc6-dbg: the common case) the text is found
 * in the record's own bytes, and believed only when they are what glibc
 * writes there: glibc maps the record fresh (zeroed pages, at a page
 * boundary), stores its size in bytes, the text and its NUL, and nothing
 * else. So the record must start at a page; the text is the run of
 * non-NUL bytes before the first NUL after the size word, which is the
 * bytes before it up to their first zero byte read back to back; the
 * word's value, read little-endian, must be a whole number of pages that
 * holds the word, the text and its NUL with less than a page to spare
 * (glibc rounds the text's length up to a page), and every byte after
 * the NUL to the end of the record must be zero. No offset or size is
 * assumed: the text's place is where the bytes put it, and any record
 * that does not fit is not read. */
#include "abort_msg.h"

#include <elf.h>
#include <stdbool.h>
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

/* The most of a record read without DWARF: a few pages. */
#define RECORD_MAX (64 * 1024)

/* The text of the record at addr read from its own bytes, as the comment
 * at the top says, or NULL and *why (malloc'd) what does not fit. */
static char *record_text(const struct cs_target *img,
			 const struct cs_memory *mem, uint64_t addr, char **why)
{
	uint64_t page = cs_target_auxv(img, AT_PAGESZ);
	const char *wrong = NULL;
	char *text = NULL;
	uint8_t *buf = NULL;
	size_t have = 0; /* bytes read from addr */
	size_t start = 0, len = 0;
	if (!page || page & (page - 1) || page > RECORD_MAX)
		wrong = "the page size is unknown";
	else if (addr & (page - 1))
		wrong = "it does not start at a page";
	else if (!(buf = calloc(1, RECORD_MAX)))
		return NULL;
	/* the size word, then the text: read a page at a time until a NUL
	 * ends the text */
	bool ended = false;
	while (!wrong && !ended && have < RECORD_MAX) {
		struct cs_error *err =
			cs_memory_read(mem, addr + have, buf + have, page);
		if (err) {
			cs_error_destroy(err);
			wrong = "its memory is not in the core";
			break;
		}
		have += page;
		/* the word runs to its first zero byte after a non-zero one
		 * (a size below 2^24 has one), then the text to its NUL */
		size_t i = 0;
		while (i < have && !buf[i])
			i++;
		while (i < have && buf[i])
			i++;
		while (i < have && !buf[i])
			i++;
		start = i;
		while (i < have && buf[i])
			i++;
		ended = i < have && start < have;
		len = i - start;
	}
	uint64_t size = 0;
	if (!wrong && !ended)
		wrong = "it holds no text ended by a NUL";
	if (!wrong && (start == 0 || start > sizeof(size) || len == 0))
		wrong = "no size word and text";
	for (size_t i = start; !wrong && i-- > 0;)
		size = size << 8 | buf[i];
	if (!wrong &&
	    (size % page || size > RECORD_MAX || size < start + len + 1 ||
	     size - page >= start + len + 1))
		wrong = "its size word is not the size glibc gives the text";
	while (!wrong && have < size) {
		struct cs_error *err =
			cs_memory_read(mem, addr + have, buf + have, page);
		cs_error_destroy(err);
		if (err)
			wrong = "its memory is not in the core";
		else
			have += page;
	}
	for (size_t i = start + len; !wrong && i < size; i++)
		if (buf[i])
			wrong = "bytes follow the text";
	if (!wrong && (text = malloc(len + 1))) {
		memcpy(text, buf + start, len);
		text[len] = 0;
	}
	if (wrong && asprintf(why, "%s", wrong) < 0)
		*why = NULL;
	free(buf);
	return text;
}

/* text as shown: at most ABORT_MSG_MAX bytes, without its final
 * newlines, scrubbed. */
static char *tidy(char *text)
{
	size_t len = strnlen(text, ABORT_MSG_MAX);
	text[len] = 0;
	while (len && text[len - 1] == '\n')
		text[--len] = 0;
	utf8_scrub(text);
	return text;
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
	char *no_layout = NULL;
	long off = !err && record ? msg_offset(mod, &no_layout) : -1;
	cs_error_destroy(err);
	dw_module_close(mod);
	if (off < 0 && !no_layout)
		return NULL; /* no glibc, or no message kept */
	if (off < 0) {
		char *wrong = NULL;
		char *text = record_text(img, mem, record, &wrong);
		if (!text &&
		    asprintf(why,
			     "glibc kept one at 0x%llx, but libc's debug "
			     "info is not found (%s) and the record does not "
			     "read as glibc's without it (%s); install libc's "
			     "debug info (Debian, Ubuntu: libc6-dbg; Fedora: "
			     "dnf debuginfo-install glibc)",
			     (unsigned long long)record, no_layout,
			     wrong ? wrong : "out of memory") < 0)
			*why = NULL;
		free(no_layout);
		free(wrong);
		return text ? tidy(text) : NULL;
	}
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
	return tidy(text);
}
