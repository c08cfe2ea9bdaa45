/* CRuby's succinct index table (iseq.c, unchanged from 2.7 to master).
 *
 * It answers "how many instruction-info entries start at or before
 * position x". Positions below IMMEDIATE_TABLE_SIZE are answered from
 * imm_part: 9 ranks of 7 bits packed in each 64-bit word. Higher positions
 * live in blocks of 512 bits (bits[8] words of 64): a block's rank, plus the
 * rank of the 64-bit word inside it (small_block_ranks, 9 bits per word),
 * plus a popcount of the bits up to x. The array sizes come from DWARF; the
 * 9/7-bit packing is the table's encoding, fixed by its algorithm. */
#include "session.h"

uint64_t rv_succ_block_rank(uint64_t rank, uint64_t small_block_ranks,
			    const uint64_t *bits, uint64_t i)
{
	uint64_t word = i / 64;
	uint64_t small =
		word == 0 ? 0 : (small_block_ranks >> (9 * (word - 1))) & 0x1ff;
	uint64_t upto = bits[word] << (63 - i % 64);
	return rank + small + (uint64_t)__builtin_popcountll(upto);
}

struct cs_error *rv_succ_lookup(struct rv_session *s, uint64_t table,
				uint64_t pos, uint64_t *ret)
{
	if (!table)
		return cs_error_create(CS_ERR_CORRUPT, "no line table");
	if (!RV_HAS(s, succ_imm_part) || !RV_HAS(s, succ_succ_part) ||
	    !RV_HAS(s, succ_block_size) || !RV_HAS(s, succ_block_bits))
		return rv_missing(RVL_succ_succ_part);
	uint64_t imm_words = RV_ITEM(s, succ_imm_part)->size / 8;
	uint64_t imm_size = RV_HAS(s, immediate_table_size)
				    ? (uint64_t)RV_VAL(s, immediate_table_size)
				    : imm_words * 9;
	struct cs_error *err;
	if (pos < imm_size) {
		uint64_t w;
		if (pos / 9 >= imm_words)
			return cs_error_create(CS_ERR_CORRUPT,
					       "succinct table geometry");
		err = rv_read_u64(s,
				  table + (uint64_t)RV_VAL(s, succ_imm_part) +
					  pos / 9 * 8,
				  &w);
		if (err)
			return err;
		*ret = (w >> (7 * (pos % 9))) & 0x7f;
		return NULL;
	}
	uint64_t nbits_words = RV_ITEM(s, succ_block_bits)->size / 8;
	uint64_t block_bits = nbits_words * 64;
	if (nbits_words == 0 || nbits_words > 8)
		return cs_error_create(CS_ERR_CORRUPT,
				       "succinct block geometry");
	uint64_t x = pos - imm_size;
	uint64_t block = table + (uint64_t)RV_VAL(s, succ_succ_part) +
			 x / block_bits * (uint64_t)RV_VAL(s, succ_block_size);
	uint64_t rank, small, bits[8];
	if ((err = rv_read_member(s, block, RVL_succ_block_rank, &rank)) ||
	    (err = rv_read_member(s, block, RVL_succ_block_small_ranks,
				  &small)) ||
	    (err = rv_read(s, block + (uint64_t)RV_VAL(s, succ_block_bits),
			   bits, nbits_words * 8)))
		return err;
	*ret = rv_succ_block_rank(rank, small, bits, x % block_bits);
	return NULL;
}
