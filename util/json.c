#include "json.h"

#include <string.h>

/* One thread writes a report: the unlocked stdio calls skip a lock per
 * character, which was a large share of writing thousands of stacks. */

#include "utf8.h"

static void indent(struct json *j)
{
	putc_unlocked('\n', j->out);
	for (int i = 0; i < j->depth; i++)
		fputs_unlocked("  ", j->out);
}

static void write_escaped(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	putc_unlocked('"', out);
	while (*p) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			putc_unlocked('\\', out);
			putc_unlocked(c, out);
			p++;
		} else if (c < 0x20) {
			fprintf(out, "\\u%04x", c);
			p++;
		} else if (c < 0x80) {
			/* A run of plain ASCII in one write: labels and paths
			 * are nearly all of the output. */
			size_t n = 1;
			while (p[n] >= 0x20 && p[n] < 0x80 && p[n] != '"' &&
			       p[n] != '\\')
				n++;
			fwrite_unlocked(p, 1, n, out);
			p += n;
		} else {
			/* Copy a well-formed UTF-8 sequence, else U+FFFD. */
			size_t n = utf8_sequence_length(p);
			if (n) {
				fwrite_unlocked(p, 1, n, out);
				p += n;
			} else {
				fputs_unlocked("\\ufffd", out);
				p++;
			}
		}
	}
	putc_unlocked('"', out);
}

static void key_prefix(struct json *j, const char *key)
{
	if (j->need_comma)
		putc_unlocked(',', j->out);
	if (j->depth > 0)
		indent(j);
	if (key) {
		write_escaped(j->out, key);
		fputs_unlocked(": ", j->out);
	}
	j->need_comma = true;
}

void json_begin_object(struct json *j, const char *key)
{
	key_prefix(j, key);
	putc_unlocked('{', j->out);
	j->depth++;
	j->need_comma = false;
}

void json_end_object(struct json *j)
{
	j->depth--;
	if (j->need_comma)
		indent(j);
	putc_unlocked('}', j->out);
	j->need_comma = true;
	if (j->depth == 0)
		putc_unlocked('\n', j->out);
}

void json_begin_array(struct json *j, const char *key)
{
	key_prefix(j, key);
	putc_unlocked('[', j->out);
	j->depth++;
	j->need_comma = false;
}

void json_end_array(struct json *j)
{
	j->depth--;
	if (j->need_comma)
		indent(j);
	putc_unlocked(']', j->out);
	j->need_comma = true;
}

void json_string(struct json *j, const char *key, const char *value)
{
	key_prefix(j, key);
	if (value)
		write_escaped(j->out, value);
	else
		fputs_unlocked("null", j->out);
}

void json_int(struct json *j, const char *key, int64_t value)
{
	key_prefix(j, key);
	fprintf(j->out, "%lld", (long long)value);
}

void json_bool(struct json *j, const char *key, bool value)
{
	key_prefix(j, key);
	fputs_unlocked(value ? "true" : "false", j->out);
}

void json_null(struct json *j, const char *key)
{
	key_prefix(j, key);
	fputs_unlocked("null", j->out);
}
