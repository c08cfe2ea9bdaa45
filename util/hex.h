/* Bytes as lowercase hex (build-ids in messages and cache file names). */
#ifndef CS_UTIL_HEX_H
#define CS_UTIL_HEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* out holds 2 * len + 1 bytes; it is NUL-terminated. */
static inline void cs_hex(const uint8_t *bytes, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", bytes[i]);
	out[2 * len] = '\0';
}

#endif
