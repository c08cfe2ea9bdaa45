/* A Ruby frame's names kept once per snapshot (rv_frame_names_*,
 * rubyvm/frame_names.c): each (iseq, method entry) pair gives back the
 * names put for it and no other pair's, as copies the frame owns; the
 * memo forgets everything when cleared (a new snapshot); it keeps no
 * names for iseq 0, and stops growing at its bound rather than failing. */
#include <stdlib.h>
#include <string.h>

#include "../../rubyvm/session.h"
#include "check.h"

static struct rv_frame names(const char *label, const char *qualified,
			     const char *stable)
{
	return (struct rv_frame){.label = (char *)label,
				 .qualified = (char *)qualified,
				 .stable = (char *)stable};
}

static bool got(struct rv_session *s, uint64_t iseq, uint64_t me,
		const char *label, const char *qualified, const char *stable)
{
	struct rv_frame f = {0};
	if (!rv_frame_names_get(s, iseq, me, &f))
		return false;
	bool same = strcmp(f.label, label) == 0 &&
		    strcmp(f.qualified, qualified) == 0 &&
		    strcmp(f.stable, stable) == 0;
	free(f.label);
	free(f.qualified);
	free(f.stable);
	return same;
}

/* Whether the memo knows the pair (the copies freed). */
static bool known(struct rv_session *s, uint64_t iseq, uint64_t me)
{
	struct rv_frame f = {0};
	bool k = rv_frame_names_get(s, iseq, me, &f);
	free(f.label);
	free(f.qualified);
	free(f.stable);
	return k;
}

int main(void)
{
	struct rv_session s;
	memset(&s, 0, sizeof(s));
	struct rv_frame a1 = names("run", "Worker#run", "Worker#run");
	struct rv_frame a2 = names("run", "Other#run", "Other#run");
	struct rv_frame b1 = names("block in run", "block in Worker#run",
				   "block in Worker#run");
	rv_frame_names_put(&s, 0x1000, 0x10, &a1);
	rv_frame_names_put(&s, 0x1000, 0x20, &a2);
	rv_frame_names_put(&s, 0x2000, 0x10, &b1);
	rv_frame_names_put(&s, 0x3000, 0, &a1); /* no method entry: a key */
	CHECK(got(&s, 0x1000, 0x10, "run", "Worker#run", "Worker#run"),
	      "the first method entry of an iseq");
	CHECK(got(&s, 0x1000, 0x20, "run", "Other#run", "Other#run"),
	      "another method entry of the same iseq: its own names");
	CHECK(got(&s, 0x2000, 0x10, "block in run", "block in Worker#run",
		  "block in Worker#run"),
	      "another iseq of the same method entry: its own names");
	CHECK(got(&s, 0x3000, 0, "run", "Worker#run", "Worker#run"),
	      "method entry 0");
	CHECK(!known(&s, 0x1000, 0x30), "a pair never put is not known");
	CHECK(!known(&s, 0x4000, 0x10), "an iseq never put is not known");
	/* the copies are the frame's: the memo's own survive their free */
	CHECK(got(&s, 0x1000, 0x10, "run", "Worker#run", "Worker#run"),
	      "a pair read twice");
	rv_frame_names_put(&s, 0, 0x10, &a1);
	CHECK(!known(&s, 0, 0x10), "iseq 0 is kept for none");

	rv_frame_names_clear(&s);
	CHECK(!known(&s, 0x1000, 0x10) && s.nframe_names == 0,
	      "a new snapshot: nothing known");
	rv_frame_names_put(&s, 0x1000, 0x10, &a2);
	CHECK(got(&s, 0x1000, 0x10, "run", "Other#run", "Other#run"),
	      "after a clear, the same pair holds what this snapshot put");

	/* a corrupt stack of distinct pairs: bounded, and still answering */
	size_t before = s.nframe_names;
	for (uint64_t i = 1; i <= 70000; i++)
		rv_frame_names_put(&s, 0x100000 + i * 8, i, &b1);
	CHECK(s.nframe_names == 65536 && s.nframe_names > before,
	      "the memo stops at its bound (%zu)", s.nframe_names);
	CHECK(got(&s, 0x100000 + 8, 1, "block in run", "block in Worker#run",
		  "block in Worker#run"),
	      "pairs put before the bound are kept");
	CHECK(!known(&s, 0x100000 + 70000 * 8, 70000),
	      "pairs past the bound are not");
	rv_frame_names_clear(&s);
	return check_summary("frame_names");
}
