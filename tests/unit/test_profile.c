/* The profile (corestack/profile.c): stacks counted by their collapsed
 * line, and a thread whose frames carry the names_id of its last sample's
 * counted again without its line being built. The counts must be those of
 * building every line: a changed frame, thread name or tid, or a frame
 * without a names_id, is a new look at the strings. */
#include "corestack/profile.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>

#define DEPTH 3

struct fixture {
	struct rv_frame frames[DEPTH];
	struct rv_thread thread;
	struct rv_process proc;
};

static void make(struct fixture *f, const char *const names[DEPTH],
		 const uint64_t ids[DEPTH], const char *thread_name)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < DEPTH; i++) {
		f->frames[i].kind = RV_FRAME_RUBY;
		f->frames[i].label = (char *)names[i];
		f->frames[i].names_id = ids[i];
	}
	f->thread.addr = 0x1000;
	f->thread.tid = 42;
	f->thread.name = (char *)thread_name;
	f->thread.frames = f->frames;
	f->thread.nframes = DEPTH;
	f->proc.threads = &f->thread;
	f->proc.nthreads = 1;
}

/* The count of the collapsed line, 0 if absent. */
static size_t count_of(const struct cs_profile *p, const char *line)
{
	for (size_t i = 0; i < p->nslots; i++)
		if (p->keys[i] && strcmp(p->keys[i], line) == 0)
			return p->counts[i];
	return 0;
}

int main(void)
{
	static const char *const abc[DEPTH] = {"c", "b", "a"};
	static const char *const abd[DEPTH] = {"d", "b", "a"};
	/* ids promise names: 3 is always "c", 4 "d", 5 "c" again */
	const uint64_t ids[DEPTH] = {3, 2, 1}, moved[DEPTH] = {4, 2, 1},
		       again[DEPTH] = {5, 2, 1}, none[DEPTH] = {0, 2, 1};
	struct cs_profile p;
	struct fixture f;
	cs_profile_init(&p);

	make(&f, abc, ids, "w");
	for (int i = 0; i < 3; i++)
		CHECK(cs_profile_add(&p, &f.proc, 0), "add %d", i);
	CHECK(count_of(&p, "w;a;b;c") == 3, "the same stack 3 times: %zu",
	      count_of(&p, "w;a;b;c"));

	/* A new id for the innermost frame, with other names: its own line. */
	make(&f, abd, moved, "w");
	cs_profile_add(&p, &f.proc, 0);
	CHECK(count_of(&p, "w;a;b;d") == 1 && count_of(&p, "w;a;b;c") == 3,
	      "a changed frame counts apart");

	/* The same names under other ids (decoded again): the same line. */
	make(&f, abc, again, "w");
	cs_profile_add(&p, &f.proc, 0);
	CHECK(count_of(&p, "w;a;b;c") == 4, "same names, new ids: %zu",
	      count_of(&p, "w;a;b;c"));

	/* Frames without an id are never matched by id: their strings say. */
	make(&f, abd, none, "w");
	cs_profile_add(&p, &f.proc, 0);
	cs_profile_add(&p, &f.proc, 0);
	CHECK(count_of(&p, "w;a;b;d") == 3, "no ids: %zu",
	      count_of(&p, "w;a;b;d"));

	/* The thread renamed, with the same frames and ids: a new line. */
	make(&f, abc, ids, "w");
	cs_profile_add(&p, &f.proc, 0);
	make(&f, abc, ids, "renamed");
	cs_profile_add(&p, &f.proc, 0);
	CHECK(count_of(&p, "renamed;a;b;c") == 1, "renamed thread");
	f.thread.name = NULL;
	cs_profile_add(&p, &f.proc, 0);
	CHECK(count_of(&p, "thread 42;a;b;c") == 1, "thread without a name");
	f.thread.tid = 43;
	cs_profile_add(&p, &f.proc, 0);
	CHECK(count_of(&p, "thread 43;a;b;c") == 1, "another tid");

	/* Many distinct stacks make the table grow: a remembered slot must
	 * not be used after it moved. */
	static char names[600][16];
	make(&f, abc, ids, "w");
	cs_profile_add(&p, &f.proc, 0);
	for (int i = 0; i < 600; i++) {
		struct fixture g;
		snprintf(names[i], sizeof(names[i]), "m%d", i);
		const char *const n[DEPTH] = {names[i], "b", "a"};
		const uint64_t gid[DEPTH] = {100 + (uint64_t)i, 2, 1};
		make(&g, n, gid, "other");
		g.thread.addr = 0x2000;
		cs_profile_add(&p, &g.proc, 0);
	}
	cs_profile_add(&p, &f.proc, 0);
	CHECK(count_of(&p, "w;a;b;c") == 7, "after the table grew: %zu",
	      count_of(&p, "w;a;b;c"));
	CHECK(p.samples == 613, "samples %zu", p.samples);

	/* Threads come and go: memos of gone ones do not pile up, and the
	 * counts stay right. */
	for (int i = 0; i < 300; i++) {
		make(&f, abc, ids, "w");
		f.thread.addr = 0x10000 + (uint64_t)i * 0x100;
		cs_profile_add(&p, &f.proc, 0);
		cs_profile_add(&p, &f.proc, 0);
	}
	CHECK(p.nmemos <= 66, "%zu memos for one live thread", p.nmemos);
	CHECK(count_of(&p, "w;a;b;c") == 607, "after 300 threads: %zu",
	      count_of(&p, "w;a;b;c"));
	cs_profile_free(&p);
	return check_summary("test_profile");
}
