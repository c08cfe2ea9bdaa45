#include "json.h"

#include <string.h>

#include "utf8.h"

static void indent(struct json *j)
{
	fputc('\n', j->out);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->out);
}

static void write_escaped(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', out);
	while (*p) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc(c, out);
			p++;
		} else if (c < 0x20) {
			fprintf(out, "\\u%04x", c);
			p++;
		} else if (c < 0x80) {
			fputc(c, out);
			p++;
		} else {
			/* Copy a well-formed UTF-8 sequence, else U+FFFD. */
			size_t n = utf8_sequence_length(p);
			if (n) {
				fwrite(p, 1, n, out);
				p += n;
			} else {
				fputs("\\ufffd", out);
				p++;
			}
		}
	}
	fputc('"', out);
}

static void key_prefix(struct json *j, const char *key)
{
	if (j->need_comma)
		fputc(',', j->out);
	if (j->depth > 0)
		indent(j);
	if (key) {
		write_escaped(j->out, key);
		fputs(": ", j->out);
	}
	j->need_comma = true;
}

void json_begin_object(struct json *j, const char *key)
{
	key_prefix(j, key);
	fputc('{', j->out);
	j->depth++;
	j->need_comma = false;
}

void json_end_object(struct json *j)
{
	j->depth--;
	if (j->need_comma)
		indent(j);
	fputc('}', j->out);
	j->need_comma = true;
	if (j->depth == 0)
		fputc('\n', j->out);
}

void json_begin_array(struct json *j, const char *key)
{
	key_prefix(j, key);
	fputc('[', j->out);
	j->depth++;
	j->need_comma = false;
}

void json_end_array(struct json *j)
{
	j->depth--;
	if (j->need_comma)
		indent(j);
	fputc(']', j->out);
	j->need_comma = true;
}

void json_string(struct json *j, const char *key, const char *value)
{
	key_prefix(j, key);
	if (value)
		write_escaped(j->out, value);
	else
		fputs("null", j->out);
}

void json_int(struct json *j, const char *key, int64_t value)
{
	key_prefix(j, key);
	fprintf(j->out, "%lld", (long long)value);
}

void json_bool(struct json *j, const char *key, bool value)
{
	key_prefix(j, key);
	fputs(value ? "true" : "false", j->out);
}

void json_null(struct json *j, const char *key)
{
	key_prefix(j, key);
	fputs("null", j->out);
}
