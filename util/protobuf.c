#include "protobuf.h"

#include <stdlib.h>
#include <string.h>

enum { PB_VARINT = 0, PB_LEN = 2 };

static bool reserve(struct pb_buf *b, size_t more)
{
	if (b->failed)
		return false;
	if (b->cap - b->len >= more)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < more) {
		if (cap > SIZE_MAX / 2) {
			b->failed = true;
			return false;
		}
		cap *= 2;
	}
	uint8_t *data = realloc(b->data, cap);
	if (!data) {
		b->failed = true;
		return false;
	}
	b->data = data;
	b->cap = cap;
	return true;
}

static void raw_varint(struct pb_buf *b, uint64_t v)
{
	if (!reserve(b, 10))
		return;
	while (v >= 0x80) {
		b->data[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->data[b->len++] = (uint8_t)v;
}

static void key(struct pb_buf *b, uint32_t field, unsigned wire)
{
	raw_varint(b, (uint64_t)field << 3 | wire);
}

void pb_varint(struct pb_buf *b, uint32_t field, uint64_t value)
{
	key(b, field, PB_VARINT);
	raw_varint(b, value);
}

void pb_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len)
{
	key(b, field, PB_LEN);
	raw_varint(b, len);
	if (len && reserve(b, len)) {
		memcpy(b->data + b->len, data, len);
		b->len += len;
	}
}

void pb_string(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_message(struct pb_buf *b, uint32_t field, const struct pb_buf *m)
{
	if (m->failed)
		b->failed = true;
	pb_bytes(b, field, m->data, m->len);
}

/* Bytes of v as a varint. */
static size_t varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void pb_packed(struct pb_buf *b, uint32_t field, const uint64_t *values,
	       size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += varint_size(values[i]);
	key(b, field, PB_LEN);
	raw_varint(b, len);
	for (size_t i = 0; i < n; i++)
		raw_varint(b, values[i]);
}

void pb_reset(struct pb_buf *b)
{
	b->len = 0;
	b->failed = false;
}

void pb_free(struct pb_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}
