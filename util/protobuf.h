/* A protocol buffers encoder: enough of the wire format to write a
 * message (varints, packed repeated varints, bytes, nested messages)
 * into a growing buffer. Nested messages are written into a buffer of
 * their own and then added as bytes: their length comes first on the
 * wire. */
#ifndef CS_UTIL_PROTOBUF_H
#define CS_UTIL_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pb_buf {
	uint8_t *data;
	size_t len, cap;
	bool failed; /* an allocation failed: the buffer is incomplete */
};

/* A field of wire type varint (int32, int64, uint64, bool, enum);
 * negative values take ten bytes, as the format says. Zero is written
 * too: the caller leaves out defaults it need not write. */
void pb_varint(struct pb_buf *b, uint32_t field, uint64_t value);
/* A field of wire type length-delimited: bytes, string, or a message
 * encoded in another pb_buf. */
void pb_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len);
void pb_string(struct pb_buf *b, uint32_t field, const char *s);
void pb_message(struct pb_buf *b, uint32_t field, const struct pb_buf *m);
/* A packed repeated varint field (repeated uint64/int64 in proto3). */
void pb_packed(struct pb_buf *b, uint32_t field, const uint64_t *values,
	       size_t n);
/* Empty it for reuse, keeping its memory. */
void pb_reset(struct pb_buf *b);
void pb_free(struct pb_buf *b);

#endif
