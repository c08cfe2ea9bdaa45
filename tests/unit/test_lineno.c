/* The succinct index table's block rank, checked against hand-counted bits:
 * rank(i) = block rank + rank of the 64-bit word + set bits at or below i. */
#include "../../rubyvm/session.h"
#include "check.h"

int main(void)
{
	uint64_t bits[8] = {0};
	bits[0] = 0xb;               /* positions 0, 1, 3 */
	bits[1] = 0x1;               /* position 64 */
	bits[7] = (uint64_t)1 << 63; /* position 511 */
	/* word ranks: 9 bits each, word 1 at bits 0-8, word 7 at bits 54-62 */
	uint64_t small = 5 | ((uint64_t)100 << 54);
	struct {
		uint64_t i, want;
	} cases[] = {
		{0, 11},  {1, 12},  {2, 12},    {3, 13},    {63, 13},
		{64, 16}, {65, 16}, {510, 110}, {511, 111},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t got = rv_succ_block_rank(10, small, bits, cases[k].i);
		CHECK(got == cases[k].want, "rank(%llu) = %llu, want %llu",
		      (unsigned long long)cases[k].i, (unsigned long long)got,
		      (unsigned long long)cases[k].want);
	}
	return check_summary("lineno");
}
