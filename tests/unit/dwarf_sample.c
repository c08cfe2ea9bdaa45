/* Compiled with -g3 -gz into a shared object for test_dwarf.c. */
#include "dwarf_sample.h"

static const int sample_unit = 512;
struct sample_outer sample_global;
static sample_typedef_t sample_static;
int sample_anon_value = SAMPLE_ANON_A;
enum sample_signed sample_enum_value = SAMPLE_NEG;
enum imemo_type sample_imemo_value = imemo_added_later;

int sample_use(int i)
{
	sample_static.last_id = i * sample_unit + SAMPLE_ANON_B;
	return sample_static.last_id + sample_global.status + SAMPLE_INDEX;
}
