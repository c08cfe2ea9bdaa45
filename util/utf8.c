#include "utf8.h"

#include <stddef.h>
#include <stdint.h>

size_t utf8_sequence_length(const unsigned char *p)
{
	unsigned char c = p[0];
	if (c < 0x80)
		return 1;
	size_t n;
	uint32_t cp, min;
	if ((c & 0xE0) == 0xC0) {
		n = 2, cp = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		n = 3, cp = c & 0x0F, min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		n = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

bool utf8_scrub(char *text)
{
	bool clean = true;
	unsigned char *p = (unsigned char *)text;
	while (*p) {
		size_t n = utf8_sequence_length(p);
		if (n == 1 && (*p >= 0x20 || *p == '\t') && *p != 0x7F) {
			p++;
		} else if (n > 1) {
			p += n;
		} else {
			*p++ = '?';
			clean = false;
		}
	}
	return clean;
}
