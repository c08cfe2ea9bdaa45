/* UTF-8 checks for text read from target memory: a label or path that is
 * not valid UTF-8 is a sign of corrupt memory, and must not reach JSON. */
#ifndef CS_UTIL_UTF8_H
#define CS_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at p, 0 if none (RFC 3629: no
 * overlongs, no surrogates, nothing past U+10FFFF). */
size_t utf8_sequence_length(const unsigned char *p);

/* Replace every byte that does not start a valid, shortest-form UTF-8
 * sequence (and every control character but tab) with '?'. Returns true
 * when the text was already clean. */
bool utf8_scrub(char *text);

#endif
