/* FNV-1a, 32 bits: the hash of the small in-memory tables (DWARF names,
 * units, macros) and of a flame graph's colours. */
#ifndef CS_UTIL_FNV_H
#define CS_UTIL_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A32_BASIS 2166136261u

/* n bytes at s, onto h (FNV1A32_BASIS to begin). */
static inline uint32_t fnv1a32_bytes(uint32_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

/* The string s, onto h. */
static inline uint32_t fnv1a32_string(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

#endif
