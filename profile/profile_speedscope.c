/* speedscope's file format (https://www.speedscope.app): one sampled
 * profile per thread label, the frames' names shared; each collapsed line
 * is one sample weighted by its count. */
#include <stdint.h>
#include <stdlib.h>

#include "../util/json.h"
#include "profile_format.h"

/* The place of name in a list kept in the order of first sight. */
static size_t place_of(size_t *at, size_t **list, size_t *n, size_t name)
{
	if (at[name] != SIZE_MAX)
		return at[name];
	size_t *grown = realloc(*list, (*n + 1) * sizeof(*grown));
	if (!grown)
		return SIZE_MAX;
	*list = grown;
	grown[*n] = name;
	return at[name] = (*n)++;
}

static void samples_of(struct json *j, const struct cs_profile *p, size_t label,
		       const size_t *frame_at)
{
	size_t total = 0;
	json_begin_array(j, "samples");
	for (size_t i = 0; i < p->nline_slots; i++) {
		const struct cs_profile_line *l = &p->lines[i];
		if (!l->count || p->threads[l->thread].label != label)
			continue;
		const struct cs_profile_stack *s = &p->stacks[l->stack];
		json_begin_array(j, NULL);
		for (size_t k = 0; k < s->nframes; k++)
			json_int(j, NULL,
				 (int64_t)frame_at[cs_profile_frame_name(
					 p, s->frames[k])]);
		json_end_array(j);
		total += l->count;
	}
	json_end_array(j);
	json_begin_array(j, "weights");
	for (size_t i = 0; i < p->nline_slots; i++) {
		const struct cs_profile_line *l = &p->lines[i];
		if (l->count && p->threads[l->thread].label == label)
			json_int(j, NULL, (int64_t)l->count);
	}
	json_end_array(j);
	json_int(j, "endValue", (int64_t)total);
}

void cs_profile_write_speedscope(FILE *out, const struct cs_profile *p,
				 const struct cs_profile_run *run)
{
	(void)run;
	size_t nnames = p->names.count + 1;
	size_t *frame_at = malloc(nnames * sizeof(*frame_at));
	size_t *thread_at = malloc(nnames * sizeof(*thread_at));
	size_t *frames = NULL, *threads = NULL, nframes = 0, nthreads = 0;
	for (size_t i = 0; frame_at && thread_at && i < nnames; i++)
		frame_at[i] = thread_at[i] = SIZE_MAX;
	/* Frame and thread tables first: speedscope wants indexes. */
	for (size_t i = 0; frame_at && thread_at && i < p->nline_slots; i++) {
		const struct cs_profile_line *l = &p->lines[i];
		if (!l->count)
			continue;
		place_of(thread_at, &threads, &nthreads,
			 p->threads[l->thread].label);
		const struct cs_profile_stack *s = &p->stacks[l->stack];
		for (size_t k = 0; k < s->nframes; k++)
			place_of(frame_at, &frames, &nframes,
				 cs_profile_frame_name(p, s->frames[k]));
	}
	struct json j = {.out = out};
	json_begin_object(&j, NULL);
	json_string(&j, "$schema",
		    "https://www.speedscope.app/file-format-schema.json");
	json_string(&j, "exporter", "corestack record");
	json_begin_object(&j, "shared");
	json_begin_array(&j, "frames");
	for (size_t i = 0; i < nframes; i++) {
		json_begin_object(&j, NULL);
		json_string(&j, "name", cs_profile_display(p, frames[i]));
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	json_begin_array(&j, "profiles");
	for (size_t t = 0; t < nthreads; t++) {
		json_begin_object(&j, NULL);
		json_string(&j, "type", "sampled");
		json_string(&j, "name", cs_profile_display(p, threads[t]));
		json_string(&j, "unit", "none");
		json_int(&j, "startValue", 0);
		samples_of(&j, p, threads[t], frame_at);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	free(frame_at);
	free(thread_at);
	free(frames);
	free(threads);
}
