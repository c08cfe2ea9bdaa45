/* A minimal streaming JSON writer (objects, arrays, strings, numbers),
 * pretty-printed with two-space indentation. Strings are escaped; bytes that
 * are not valid UTF-8 are written as U+FFFD so the output always parses. */
#ifndef CS_UTIL_JSON_H
#define CS_UTIL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct json {
	FILE *out;
	int depth;
	bool need_comma;
};

void json_begin_object(struct json *j, const char *key);
void json_end_object(struct json *j);
void json_begin_array(struct json *j, const char *key);
void json_end_array(struct json *j);
/* key may be NULL inside arrays. value NULL writes null. */
void json_string(struct json *j, const char *key, const char *value);
void json_int(struct json *j, const char *key, int64_t value);
void json_bool(struct json *j, const char *key, bool value);
void json_null(struct json *j, const char *key);

#endif
