/* A Bignum's value in decimal, as Integer#inspect writes it.
 *
 * The digits (BDIGITs of the size DWARF gives, least significant first)
 * are in the object when BIGNUM_EMBED_FLAG is set, their count in the
 * flags, else len of them behind as.heap.digits; BIGNUM_SIGN_BIT is set
 * when the number is positive. An embedded count must fit the object's
 * slot (or as.ary where the slot size is unknown), and at most
 * RV_MAX_BIGNUM_BYTES of digits are read. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

#define CHUNK 1000000000u /* base-10^9 limbs while converting */

static bool have_facts(struct rv_session *s)
{
	return RV_HAS(s, rbignum_len) && RV_HAS(s, rbignum_digits) &&
	       RV_HAS(s, rbignum_digit) && RV_HAS(s, rbignum_ary) &&
	       RV_HAS(s, bignum_sign_bit) && RV_HAS(s, bignum_embed_flag) &&
	       RV_HAS(s, bignum_embed_len_mask) &&
	       RV_HAS(s, bignum_embed_len_shift);
}

/* Where the digits are and how many bytes they take. */
static struct cs_error *digits_place(struct rv_session *s, uint64_t v,
				     uint64_t flags, uint64_t slot_size,
				     uint64_t *ptr, uint64_t *bytes)
{
	uint64_t bsz = RV_ITEM(s, rbignum_digit)->size, len;
	uint64_t ary = (uint64_t)RV_VAL(s, rbignum_ary);
	if (bsz == 0 || bsz > 8 || (bsz & (bsz - 1)))
		return cs_error_create(CS_ERR_CORRUPT,
				       "implausible BDIGIT size %" PRIu64, bsz);
	if (flags & (uint64_t)RV_VAL(s, bignum_embed_flag)) {
		len = rv_shr(flags & (uint64_t)RV_VAL(s, bignum_embed_len_mask),
			     RV_VAL(s, bignum_embed_len_shift));
		uint64_t room = slot_size > ary ? slot_size - ary
						: RV_ITEM(s, rbignum_ary)->size;
		if (len * bsz > room)
			return cs_error_create(CS_ERR_CORRUPT,
					       "Bignum 0x%" PRIx64
					       " claims %" PRIu64
					       " embedded digits",
					       v, len);
		*ptr = v + ary;
	} else {
		struct cs_error *err;
		if ((err = rv_read_member(s, v, RVL_rbignum_len, &len)) ||
		    (err = rv_read_member(s, v, RVL_rbignum_digits, ptr)))
			return err;
		if (len > RV_MAX_BIGNUM_BYTES / bsz)
			return cs_error_create(CS_ERR_LIMIT,
					       "a Bignum of %" PRIu64
					       " bits, too long to show",
					       len * bsz * 8);
	}
	*bytes = len * bsz;
	return NULL;
}

/* n little-endian bytes in decimal, into text (room for 10 per 4 bytes
 * and a NUL). */
static void to_decimal(const uint8_t *b, size_t n, char *text)
{
	size_t nw = (n + 3) / 4, nc = 0;
	uint32_t *w = calloc(nw ? nw : 1, sizeof(*w));
	uint32_t *chunks = calloc(nw * 2 + 1, sizeof(*chunks));
	if (!w || !chunks) {
		free(w);
		free(chunks);
		strcpy(text, "?");
		return;
	}
	for (size_t i = 0; i < n; i++)
		w[i / 4] |= (uint32_t)b[i] << (8 * (i % 4));
	while (nw && !w[nw - 1])
		nw--;
	/* Divide by 10^9 until nothing is left, the remainders the number's
	 * base-10^9 digits from the least significant. */
	while (nw) {
		uint64_t rem = 0;
		for (size_t i = nw; i-- > 0;) {
			uint64_t cur = rem << 32 | w[i];
			w[i] = (uint32_t)(cur / CHUNK);
			rem = cur % CHUNK;
		}
		chunks[nc++] = (uint32_t)rem;
		while (nw && !w[nw - 1])
			nw--;
	}
	char *p = text;
	if (!nc)
		*p++ = '0';
	for (size_t i = nc; i-- > 0;)
		p += sprintf(p, i == nc - 1 ? "%" PRIu32 : "%09" PRIu32,
			     chunks[i]);
	*p = '\0';
	free(w);
	free(chunks);
}

struct cs_error *rv_bignum_decimal(struct rv_session *s, uint64_t v,
				   uint64_t flags, uint64_t slot_size,
				   char **ret)
{
	*ret = NULL;
	if (!have_facts(s))
		return cs_error_create(CS_ERR_LOOKUP,
				       "the debug info lacks RBignum's layout");
	uint64_t ptr = 0, bytes = 0;
	struct cs_error *err =
		digits_place(s, v, flags, slot_size, &ptr, &bytes);
	if (err)
		return err;
	uint8_t *b = malloc(bytes ? bytes : 1);
	/* a sign, 10 decimal digits per 4 bytes, a NUL */
	char *text = malloc(2 + (bytes + 3) / 4 * 10 + 1);
	if (!b || !text) {
		free(b);
		free(text);
		return &cs_error_nomem;
	}
	if (bytes && (err = rv_read(s, ptr, b, bytes))) {
		free(b);
		free(text);
		return err;
	}
	bool negative = !(flags & (uint64_t)RV_VAL(s, bignum_sign_bit));
	text[0] = '-';
	to_decimal(b, bytes, text + negative);
	free(b);
	*ret = text;
	return NULL;
}
