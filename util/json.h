/* A minimal streaming JSON writer (objects, arrays, strings, numbers),
 * pretty-printed with two-space indentation. Strings are escaped; bytes that
 * are not valid UTF-8 are written as U+FFFD so the output always parses.
 *
 * Output collects in the writer's own buffer and goes to out in large
 * writes: when the buffer fills, and when the outermost value is closed
 * (the stream then holds the whole document). */
#ifndef CS_UTIL_JSON_H
#define CS_UTIL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_BUFFER_SIZE 16384

struct json {
	FILE *out;
	/* JSON lines: each top-level value on one line, without spaces; the
	 * buffer goes to out when full and at json_finish */
	bool lines;
	int depth;
	bool need_comma;
	size_t used; /* bytes of buf not yet written to out */
	char buf[JSON_BUFFER_SIZE];
};

void json_begin_object(struct json *j, const char *key);
void json_end_object(struct json *j);
void json_begin_array(struct json *j, const char *key);
void json_end_array(struct json *j);
/* key may be NULL inside arrays. value NULL writes null. */
void json_string(struct json *j, const char *key, const char *value);
/* value as a string "0x..." in lower-case hex (64-bit addresses do not fit
 * JSON numbers). */
void json_hex_string(struct json *j, const char *key, uint64_t value);
/* An address: json_hex_string, or null for 0 (none). */
void json_address(struct json *j, const char *key, uint64_t value);
void json_int(struct json *j, const char *key, int64_t value);
/* value / 10^places (at most 19) as a decimal number: json_decimal(j, k,
 * 1500, 3) writes 1.500. */
void json_decimal(struct json *j, const char *key, int64_t value,
		  unsigned places);
void json_bool(struct json *j, const char *key, bool value);
void json_null(struct json *j, const char *key);
/* What is left in the buffer, to out (a JSON lines writer's end). */
void json_finish(struct json *j);

#endif
