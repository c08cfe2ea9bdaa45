/* JIT code regions from the addresses the VM holds. See jit_regions.h. */
#include "jit_regions.h"

#include <stdlib.h>

/* Regions followed on either side of a code address, at most. */
#define MAX_STEPS 4096

static bool anonymous(const struct cs_target *t, const struct cs_region *r)
{
	return !cs_target_mapping_of(t, r->start);
}

struct cs_error *cs_jit_regions(const struct cs_target *t,
				const struct rv_jit *j,
				struct cs_jit_region **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	if (!j->name || !j->ncode)
		return NULL;
	struct cs_jit_region *out = calloc(j->ncode, sizeof(*out));
	if (!out)
		return &cs_error_nomem;
	size_t k = 0;
	for (size_t i = 0; i < j->ncode; i++) {
		uint64_t a = j->code[i];
		struct cs_region r, next;
		bool known = false;
		for (size_t m = 0; m < k; m++)
			known |= a >= out[m].start && a < out[m].end;
		if (known || !cs_target_region_of(t, a, &r) || !r.exec ||
		    !anonymous(t, &r))
			continue;
		uint64_t start = r.start, end = r.end;
		for (int s = 0; s < MAX_STEPS && start &&
				cs_target_region_of(t, start - 1, &next) &&
				next.end == start && next.start < start &&
				anonymous(t, &next);
		     s++)
			start = next.start;
		for (int s = 0;
		     s < MAX_STEPS && cs_target_region_of(t, end, &next) &&
		     next.start == end && next.end > end && anonymous(t, &next);
		     s++)
			end = next.end;
		out[k++] = (struct cs_jit_region){
			.start = start, .end = end, .jit = j->name};
	}
	if (!k) {
		free(out);
		out = NULL;
	}
	*ret = out;
	*n = k;
	return NULL;
}
