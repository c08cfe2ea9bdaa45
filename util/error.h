/* Error objects: every fallible call returns NULL on success or one of these.
 *
 * An error carries a code (what kind of failure, which decides exit codes and
 * whether a walk may go on) and a message with context: which file, which
 * struct, which address. Errors are values: callers may keep them, attach
 * them to a frame or thread, or print them. */
#ifndef CS_UTIL_ERROR_H
#define CS_UTIL_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

enum cs_error_code {
	CS_ERR_NOMEM = 1, /* allocation failed */
	CS_ERR_OS,        /* a system call failed (open, read, mmap…) */
	CS_ERR_FORMAT, /* input is not what it claims: bad ELF, truncated core */
	CS_ERR_FAULT,  /* target memory at an address cannot be read */
	CS_ERR_LOOKUP, /* a name (struct, member, symbol, enumerator) is absent */
	CS_ERR_NO_DEBUG,  /* a module has no usable DWARF */
	CS_ERR_MISMATCH,  /* a file does not belong to the core (build-id) */
	CS_ERR_NOT_RUBY,  /* the process has no Ruby VM */
	CS_ERR_CORRUPT,   /* target data failed a sanity check */
	CS_ERR_LIMIT,     /* a bound was hit (frame count, list length) */
	CS_ERR_USAGE,     /* bad command-line use */
	CS_ERR_NO_THREAD, /* a thread asked for runs no Ruby thread */
};

struct cs_error {
	enum cs_error_code code;
	char *message;
	/* CS_ERR_FAULT from a read: the first address that could not be read */
	bool has_address;
	uint64_t address;
};

/* Never NULL: on allocation failure, returns the static out-of-memory error. */
struct cs_error *cs_error_create(enum cs_error_code code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
struct cs_error *cs_error_vcreate(enum cs_error_code code, const char *fmt,
				  va_list ap);
/* A CS_ERR_FAULT that keeps the address, for callers that act on it. */
struct cs_error *cs_error_fault(uint64_t address, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prefix the message of err with more context ("reading thread 3: …");
 * returns err (or a replacement). Consumes err. */
struct cs_error *cs_error_wrap(struct cs_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The code as a word for machines ("not_ruby", "format"), "unknown" for a
 * code not in the enum. */
const char *cs_error_code_name(enum cs_error_code code);
/* Safe on NULL and on the static errors. */
void cs_error_destroy(struct cs_error *err);

extern struct cs_error cs_error_nomem;

#endif
