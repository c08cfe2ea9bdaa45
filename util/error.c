#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cs_error cs_error_nomem = {.code = CS_ERR_NOMEM,
				  .message = (char *)"out of memory"};

const char *cs_error_code_name(enum cs_error_code code)
{
	static const char *const names[] = {
		[CS_ERR_NOMEM] = "nomem",       [CS_ERR_OS] = "os",
		[CS_ERR_FORMAT] = "format",     [CS_ERR_FAULT] = "fault",
		[CS_ERR_LOOKUP] = "lookup",     [CS_ERR_NO_DEBUG] = "no_debug",
		[CS_ERR_MISMATCH] = "mismatch", [CS_ERR_NOT_RUBY] = "not_ruby",
		[CS_ERR_CORRUPT] = "corrupt",   [CS_ERR_LIMIT] = "limit",
		[CS_ERR_USAGE] = "usage",
	};
	if ((unsigned)code < sizeof(names) / sizeof(*names) && names[code])
		return names[code];
	return "unknown";
}

struct cs_error *cs_error_vcreate(enum cs_error_code code, const char *fmt,
				  va_list ap)
{
	struct cs_error *err = malloc(sizeof(*err));
	if (!err)
		return &cs_error_nomem;
	if (vasprintf(&err->message, fmt, ap) < 0) {
		free(err);
		return &cs_error_nomem;
	}
	err->code = code;
	err->has_address = false;
	err->address = 0;
	return err;
}

struct cs_error *cs_error_create(enum cs_error_code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct cs_error *err = cs_error_vcreate(code, fmt, ap);
	va_end(ap);
	return err;
}

struct cs_error *cs_error_fault(uint64_t address, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct cs_error *err = cs_error_vcreate(CS_ERR_FAULT, fmt, ap);
	va_end(ap);
	if (err != &cs_error_nomem) {
		err->has_address = true;
		err->address = address;
	}
	return err;
}

struct cs_error *cs_error_wrap(struct cs_error *err, const char *fmt, ...)
{
	if (!err || err == &cs_error_nomem)
		return err;
	char *prefix;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&prefix, fmt, ap);
	va_end(ap);
	if (n < 0)
		return err;
	char *joined;
	if (asprintf(&joined, "%s: %s", prefix, err->message) >= 0) {
		free(err->message);
		err->message = joined;
	}
	free(prefix);
	return err;
}

void cs_error_destroy(struct cs_error *err)
{
	if (!err || err == &cs_error_nomem)
		return;
	free(err->message);
	free(err);
}
