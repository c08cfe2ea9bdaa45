#include "json.h"

#include <string.h>

#include "utf8.h"

/* Reports of thousands of stacks are millions of small pieces: they are
 * copied into the writer's buffer, and stdio sees a few large writes. */

static void flush(struct json *j)
{
	if (j->used)
		fwrite_unlocked(j->buf, 1, j->used, j->out);
	j->used = 0;
}

static void put(struct json *j, const void *p, size_t n)
{
	if (n > sizeof(j->buf) - j->used) {
		flush(j);
		if (n > sizeof(j->buf)) {
			fwrite_unlocked(p, 1, n, j->out);
			return;
		}
	}
	memcpy(j->buf + j->used, p, n);
	j->used += n;
}

static void put_char(struct json *j, char c)
{
	if (j->used == sizeof(j->buf))
		flush(j);
	j->buf[j->used++] = c;
}

static void put_text(struct json *j, const char *s)
{
	put(j, s, strlen(s));
}

static void indent(struct json *j)
{
	static const char spaces[] = "\n                                "
				     "                                ";
	size_t want = 2 * (size_t)(j->depth > 0 ? j->depth : 0);
	if (j->lines)
		return;
	put(j, spaces, 1);
	while (want) {
		size_t n = want < sizeof(spaces) - 2 ? want
						     : sizeof(spaces) - 2;
		put(j, spaces + 1, n);
		want -= n;
	}
}

static bool plain_ascii(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

static void write_escaped(struct json *j, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	put_char(j, '"');
	while (*p) {
		unsigned char c = *p;
		if (plain_ascii(c)) {
			/* A run of plain ASCII in one copy: labels and paths
			 * are nearly all of the output. */
			size_t n = 1;
			while (plain_ascii(p[n]))
				n++;
			put(j, p, n);
			p += n;
		} else if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			put(j, esc, 2);
			p++;
		} else if (c < 0x20) {
			char esc[6] = {'\\', 'u',         '0',
				       '0',  hex[c >> 4], hex[c & 15]};
			put(j, esc, 6);
			p++;
		} else {
			/* Copy a well-formed UTF-8 sequence, else U+FFFD. */
			size_t n = utf8_sequence_length(p);
			if (n) {
				put(j, p, n);
				p += n;
			} else {
				put_text(j, "\\ufffd");
				p++;
			}
		}
	}
	put_char(j, '"');
}

static void key_prefix(struct json *j, const char *key)
{
	if (j->need_comma)
		put_char(j, ',');
	if (j->depth > 0)
		indent(j);
	if (key) {
		write_escaped(j, key);
		put(j, ": ", j->lines ? 1 : 2);
	}
	j->need_comma = true;
}

static void close_value(struct json *j, char c)
{
	j->depth--;
	if (j->need_comma)
		indent(j);
	put_char(j, c);
	j->need_comma = true;
}

void json_begin_object(struct json *j, const char *key)
{
	key_prefix(j, key);
	put_char(j, '{');
	j->depth++;
	j->need_comma = false;
}

void json_end_object(struct json *j)
{
	close_value(j, '}');
	if (j->depth == 0) {
		put_char(j, '\n');
		if (j->lines)
			j->need_comma = false;
		else
			flush(j);
	}
}

void json_begin_array(struct json *j, const char *key)
{
	key_prefix(j, key);
	put_char(j, '[');
	j->depth++;
	j->need_comma = false;
}

void json_end_array(struct json *j)
{
	close_value(j, ']');
	if (j->depth == 0)
		flush(j);
}

void json_string(struct json *j, const char *key, const char *value)
{
	key_prefix(j, key);
	if (value)
		write_escaped(j, value);
	else
		put(j, "null", 4);
}

void json_address(struct json *j, const char *key, uint64_t value)
{
	if (value)
		json_hex_string(j, key, value);
	else
		json_null(j, key);
}

void json_hex_string(struct json *j, const char *key, uint64_t value)
{
	static const char hex[] = "0123456789abcdef";
	char text[20], *p = text + sizeof(text);
	*--p = '"';
	do {
		*--p = hex[value & 15];
		value >>= 4;
	} while (value);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	key_prefix(j, key);
	put(j, p, (size_t)(text + sizeof(text) - p));
}

/* value / 10^places, written exactly: no floating point, no locale. */
static void put_decimal(struct json *j, const char *key, int64_t value,
			unsigned places)
{
	char text[48], *p = text + sizeof(text);
	/* Negate as unsigned: INT64_MIN has no positive int64_t. */
	uint64_t u = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
	for (unsigned i = 0; i < places; i++) {
		*--p = (char)('0' + u % 10);
		u /= 10;
	}
	if (places)
		*--p = '.';
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (value < 0)
		*--p = '-';
	key_prefix(j, key);
	put(j, p, (size_t)(text + sizeof(text) - p));
}

void json_int(struct json *j, const char *key, int64_t value)
{
	put_decimal(j, key, value, 0);
}

void json_decimal(struct json *j, const char *key, int64_t value,
		  unsigned places)
{
	put_decimal(j, key, value, places > 19 ? 19 : places);
}

void json_bool(struct json *j, const char *key, bool value)
{
	key_prefix(j, key);
	if (value)
		put(j, "true", 4);
	else
		put(j, "false", 5);
}

void json_null(struct json *j, const char *key)
{
	key_prefix(j, key);
	put(j, "null", 4);
}

void json_finish(struct json *j)
{
	flush(j);
}
