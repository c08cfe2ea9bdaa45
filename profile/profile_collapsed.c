/* Collapsed stacks: "label;outermost;...;innermost COUNT", one line each,
 * the input of flamegraph.pl, inferno and speedscope. */
#include "profile_format.h"

void cs_profile_write_collapsed(FILE *out, const struct cs_profile *p,
				const struct cs_profile_run *run)
{
	(void)run;
	for (size_t i = 0; i < p->nline_slots; i++) {
		const struct cs_profile_line *l = &p->lines[i];
		if (!l->count)
			continue;
		fputs(cs_profile_display(p, p->threads[l->thread].label), out);
		const struct cs_profile_stack *s = &p->stacks[l->stack];
		for (size_t j = 0; j < s->nframes; j++) {
			putc(';', out);
			fputs(cs_profile_frame_text(p, s->frames[j]), out);
		}
		fprintf(out, " %zu\n", l->count);
	}
}
