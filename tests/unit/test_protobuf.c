/* The protocol buffers encoder (util/protobuf.c) against bytes worked out
 * by hand from the wire format's specification. */
#include "util/protobuf.h"
#include "tests/unit/check.h"

#include <string.h>

static int same(const struct pb_buf *b, const unsigned char *want, size_t n)
{
	return !b->failed && b->len == n && memcmp(b->data, want, n) == 0;
}

int main(void)
{
	struct pb_buf b = {0};

	/* field 1, varint 150: the specification's own example */
	pb_varint(&b, 1, 150);
	CHECK(same(&b, (const unsigned char[]){0x08, 0x96, 0x01}, 3),
	      "varint 150");

	/* zero is written; a field number above 15 takes two key bytes */
	pb_reset(&b);
	pb_varint(&b, 16, 0);
	CHECK(same(&b, (const unsigned char[]){0x80, 0x01, 0x00}, 3),
	      "field 16, 0");

	/* -1 as int64: ten bytes */
	pb_reset(&b);
	pb_varint(&b, 3, (uint64_t)-1);
	CHECK(same(&b,
		   (const unsigned char[]){0x18, 0xff, 0xff, 0xff, 0xff, 0xff,
					   0xff, 0xff, 0xff, 0xff, 0x01},
		   11),
	      "varint -1");

	/* field 2, "testing" */
	pb_reset(&b);
	pb_string(&b, 2, "testing");
	CHECK(same(&b,
		   (const unsigned char[]){0x12, 0x07, 't', 'e', 's', 't', 'i',
					   'n', 'g'},
		   9),
	      "string");

	/* a nested message: its length first */
	struct pb_buf m = {0};
	pb_varint(&m, 1, 150);
	pb_reset(&b);
	pb_message(&b, 3, &m);
	CHECK(same(&b, (const unsigned char[]){0x1a, 0x03, 0x08, 0x96, 0x01},
		   5),
	      "message");

	/* packed 3, 270, 86942: the specification's example */
	pb_reset(&b);
	uint64_t packed[] = {3, 270, 86942};
	pb_packed(&b, 4, packed, 3);
	CHECK(same(&b,
		   (const unsigned char[]){0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e,
					   0xa7, 0x05},
		   8),
	      "packed");

	/* growth past the first allocation keeps every byte */
	pb_reset(&b);
	for (int i = 0; i < 1000; i++)
		pb_varint(&b, 1, 150);
	int all = !b.failed && b.len == 3000;
	for (size_t i = 0; all && i < b.len; i += 3)
		all = b.data[i] == 0x08 && b.data[i + 1] == 0x96 &&
		      b.data[i + 2] == 0x01;
	CHECK(all, "1000 fields");

	pb_free(&m);
	pb_free(&b);
	return check_summary("test_protobuf");
}
