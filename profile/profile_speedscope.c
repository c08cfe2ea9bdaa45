/* speedscope's file format (https://www.speedscope.app): one sampled
 * profile per thread, the frames shared: each a function at a line, with
 * its name, its Ruby file and the line, as Ruby's backtraces give them. A thread's samples are listed in
 * the order they were taken, each weighted by the nanoseconds it covers:
 * from its first snapshot to the thread's next sample when that one came
 * in the snapshot right after its last, else one sampling period on from
 * its last. The time in between (before the thread was first seen, states
 * not kept, samples lost) is a sample with no frames. So speedscope's
 * time order is the recording's, each thread's from the recording's
 * start, and its totals are times. */
#include <stdint.h>
#include <stdlib.h>

#include "../util/json.h"
#include "profile_format.h"

/* One entry of a profile's samples: a stack (SIZE_MAX: none) and its
 * weight. */
struct span {
	size_t stack;
	uint64_t ns;
};

/* The place of a frame in a list kept in the order of first sight. */
static size_t place_of(size_t *at, size_t **list, size_t *n, size_t frame)
{
	if (at[frame] != SIZE_MAX)
		return at[frame];
	size_t *grown = realloc(*list, (*n + 1) * sizeof(*grown));
	if (!grown)
		return SIZE_MAX;
	*list = grown;
	grown[*n] = frame;
	return at[frame] = (*n)++;
}

/* When sample i (ids[i] of n, one thread's) stops counting. */
static uint64_t end_of(const struct cs_profile *p, const size_t *ids, size_t n,
		       size_t i, uint64_t period_ns)
{
	const struct cs_profile_sample *s = &p->samples[ids[i]];
	uint64_t end = s->last_ns + period_ns;
	if (i + 1 < n) {
		const struct cs_profile_sample *next = &p->samples[ids[i + 1]];
		if (next->snapshot == s->snapshot + s->weight ||
		    next->time_ns < end)
			end = next->time_ns;
	}
	return end;
}

/* One thread's spans from time start; their count, or SIZE_MAX on
 * allocation failure. */
static size_t spans_of(const struct cs_profile *p, const size_t *ids, size_t n,
		       uint64_t start, uint64_t period_ns, struct span **out)
{
	struct span *sp = malloc((2 * n + 1) * sizeof(*sp));
	if (!sp)
		return SIZE_MAX;
	size_t k = 0;
	uint64_t at = start;
	for (size_t i = 0; i < n; i++) {
		const struct cs_profile_sample *s = &p->samples[ids[i]];
		if (s->time_ns > at) {
			sp[k++] = (struct span){SIZE_MAX, s->time_ns - at};
			at = s->time_ns;
		}
		uint64_t end = end_of(p, ids, n, i, period_ns);
		/* speedscope drops a sample weighing nothing */
		if (end <= at)
			end = at + 1;
		sp[k++] = (struct span){s->stack, end - at};
		at = end;
	}
	*out = sp;
	return k;
}

static void write_samples(struct json *j, const struct cs_profile *p,
			  const struct span *sp, size_t n,
			  const size_t *frame_at)
{
	uint64_t total = 0;
	json_begin_array(j, "samples");
	for (size_t i = 0; i < n; i++) {
		json_begin_array(j, NULL);
		const struct cs_profile_stack *s =
			sp[i].stack == SIZE_MAX ? NULL
						: &p->stacks[sp[i].stack];
		for (size_t k = 0; s && k < s->nframes; k++)
			json_int(j, NULL, (int64_t)frame_at[s->frames[k]]);
		json_end_array(j);
	}
	json_end_array(j);
	json_begin_array(j, "weights");
	for (size_t i = 0; i < n; i++) {
		json_int(j, NULL, (int64_t)sp[i].ns);
		total += sp[i].ns;
	}
	json_end_array(j);
	json_int(j, "endValue", (int64_t)total);
}

void cs_profile_write_speedscope(FILE *out, const struct cs_profile *p,
				 const struct cs_profile_run *run)
{
	size_t nat = p->nframes + 1;
	size_t *frame_at = malloc(nat * sizeof(*frame_at));
	size_t *frames = NULL, nframes = 0, *ids = NULL, *first = NULL;
	bool ok = frame_at && cs_profile_by_thread(p, &ids, &first);
	uint64_t period_ns = run->rate > 0 ? (uint64_t)(1e9 / run->rate) : 0;
	uint64_t start = p->nsamples ? p->samples[0].time_ns : 0;
	for (size_t i = 0; ok && i < nat; i++)
		frame_at[i] = SIZE_MAX;
	/* The frame table first: speedscope wants indexes. */
	for (size_t i = 0; ok && i < p->nsamples; i++) {
		const struct cs_profile_stack *s =
			&p->stacks[p->samples[ids[i]].stack];
		for (size_t k = 0; ok && k < s->nframes; k++)
			ok = place_of(frame_at, &frames, &nframes,
				      s->frames[k]) != SIZE_MAX;
	}
	struct json j = {.out = out};
	json_begin_object(&j, NULL);
	json_string(&j, "$schema",
		    "https://www.speedscope.app/file-format-schema.json");
	json_string(&j, "exporter", "corestack record");
	json_begin_object(&j, "shared");
	json_begin_array(&j, "frames");
	for (size_t i = 0; ok && i < nframes; i++) {
		const struct cs_profile_frame *f = &p->frames[frames[i]];
		const struct cs_profile_function *fn =
			&p->functions[f->function];
		json_begin_object(&j, NULL);
		json_string(&j, "name", cs_profile_display(p, fn->display));
		if (fn->file)
			json_string(&j, "file", fn->file);
		if (f->line > 0)
			json_int(&j, "line", f->line);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	json_begin_array(&j, "profiles");
	for (size_t t = 0; ok && t < p->nthreads; t++) {
		size_t n = first[t + 1] - first[t];
		struct span *sp = NULL;
		size_t nspans = n ? spans_of(p, ids + first[t], n, start,
					     period_ns, &sp)
				  : 0;
		ok = nspans != SIZE_MAX;
		if (!ok || !nspans) {
			free(sp);
			continue;
		}
		json_begin_object(&j, NULL);
		json_string(&j, "type", "sampled");
		json_string(&j, "name",
			    cs_profile_display(p, p->threads[t].label));
		json_string(&j, "unit", "nanoseconds");
		json_int(&j, "startValue", 0);
		write_samples(&j, p, sp, nspans, frame_at);
		json_end_object(&j);
		free(sp);
	}
	json_end_array(&j);
	json_end_object(&j);
	if (!ok)
		fputs("corestack: could not write the speedscope profile\n",
		      stderr);
	free(frame_at);
	free(frames);
	free(ids);
	free(first);
}
