/* corestack top's table (corestack/top_table.c) and its text for the
 * terminal (corestack/term.c): self and total per function, a recursive
 * function counted once per stack, each function at its line sampled most,
 * the shares since the last refresh, one thread's label alone; and names
 * drawn without the control characters that would drive a terminal. */
#include "corestack/term.h"
#include "corestack/top_table.h"
#include "tests/unit/check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 4

struct thread_fixture {
	struct rv_frame frames[MAX_DEPTH];
	struct rv_thread thread;
};

/* names innermost first, each frame in t.rb at its line */
static void stack(struct thread_fixture *t, const char *name, int64_t tid,
		  size_t n, const char *const *names, const int *lines)
{
	memset(t->frames, 0, sizeof(t->frames));
	for (size_t i = 0; i < n; i++) {
		t->frames[i].kind = RV_FRAME_RUBY;
		t->frames[i].label = (char *)names[i];
		t->frames[i].path = (char *)"t.rb";
		t->frames[i].lineno = lines[i];
	}
	t->thread = (struct rv_thread){.addr = 0x1000 + (uint64_t)tid,
				       .tid = tid,
				       .name = (char *)name,
				       .frames = t->frames,
				       .nframes = n};
}

static uint64_t clock_ns;

static void add(struct cs_profile *p, struct thread_fixture *threads, size_t n)
{
	struct rv_thread list[2];
	for (size_t i = 0; i < n; i++)
		list[i] = threads[i].thread;
	struct rv_process proc = {.threads = list, .nthreads = n};
	clock_ns += 10000000;
	CHECK(cs_profile_add(p, &proc, 0, clock_ns), "add");
}

static const struct cs_top_row *
row(const struct cs_profile *p, const struct cs_top_table *t, const char *name)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (!strcmp(p->functions[t->rows[i].function].name, name))
			return &t->rows[i];
	return NULL;
}

static const char *first(const struct cs_profile *p,
			 const struct cs_top_table *t)
{
	return t->nrows ? p->functions[t->rows[0].function].name : "";
}

static void table_checks(void)
{
	static const char *const deep[] = {"leaf", "rec", "rec", "main"};
	static const char *const flat[] = {"main"};
	static const char *const other[] = {"wait"};
	const int at5[] = {5, 3, 3, 1}, at6[] = {6, 3, 3, 1}, main1[] = {1};
	struct cs_profile p;
	struct thread_fixture th[2];
	struct cs_top_base base = {0};
	struct cs_top_table t;
	cs_profile_init(&p);

	stack(&th[0], "w", 7, 4, deep, at5);
	add(&p, th, 1);
	stack(&th[0], "w", 7, 4, deep, at6);
	add(&p, th, 1);
	add(&p, th, 1);
	CHECK(cs_top_table_build(&p, SIZE_MAX, false, &base, true, &t),
	      "build");
	const struct cs_top_row *leaf = row(&p, &t, "leaf"),
				*rec = row(&p, &t, "rec");
	CHECK(t.stacks == 3 && t.new_stacks == 3, "stacks %zu %zu", t.stacks,
	      t.new_stacks);
	CHECK(leaf && leaf->self == 3 && leaf->total == 3 &&
		      leaf->new_self == 3 && leaf->line == 6,
	      "leaf: innermost 3 times, at line 6 twice of 3: %zu %zu %zu %d",
	      leaf ? leaf->self : 0, leaf ? leaf->total : 0,
	      leaf ? leaf->new_self : 0, leaf ? leaf->line : 0);
	CHECK(rec && rec->self == 0 && rec->total == 3,
	      "rec: twice on each stack, counted once: %zu",
	      rec ? rec->total : 0);
	CHECK(!strcmp(first(&p, &t), "leaf"), "leaf first: %s", first(&p, &t));
	cs_top_table_free(&t);

	/* Two snapshots in main alone: the shares are of them only. */
	stack(&th[0], "w", 7, 1, flat, main1);
	add(&p, th, 1);
	add(&p, th, 1);
	CHECK(cs_top_table_build(&p, SIZE_MAX, false, &base, false, &t),
	      "build");
	leaf = row(&p, &t, "leaf");
	const struct cs_top_row *m = row(&p, &t, "main");
	CHECK(t.stacks == 5 && t.new_stacks == 2, "stacks %zu %zu", t.stacks,
	      t.new_stacks);
	CHECK(m && m->new_self == 2 && m->new_total == 2 && m->total == 5,
	      "main: the 2 new samples");
	CHECK(leaf && leaf->new_self == 0 && leaf->self == 3,
	      "leaf: nothing new, 3 since the start");
	CHECK(!strcmp(first(&p, &t), "main"), "main first: %s", first(&p, &t));
	cs_top_table_free(&t);
	/* not advanced: the same interval again */
	CHECK(cs_top_table_build(&p, SIZE_MAX, true, &base, true, &t) &&
		      t.new_stacks == 2,
	      "not advanced: %zu", t.new_stacks);
	cs_top_table_free(&t);
	CHECK(cs_top_table_build(&p, SIZE_MAX, true, &base, false, &t) &&
		      t.new_stacks == 0,
	      "advanced: %zu", t.new_stacks);
	cs_top_table_free(&t);

	/* A second thread: one label alone, and all. */
	stack(&th[1], "x", 8, 1, other, main1);
	add(&p, th, 2);
	size_t n;
	size_t *labels = cs_top_thread_labels(&p, &n);
	CHECK(labels && n == 2 &&
		      !strcmp(cs_profile_display(&p, labels[1]), "x"),
	      "labels: %zu", n);
	if (labels && n == 2) {
		CHECK(cs_top_table_build(&p, labels[1], false, &base, false,
					 &t),
		      "build");
		CHECK(t.nrows == 1 && t.stacks == 1 && t.new_stacks == 1 &&
			      !strcmp(first(&p, &t), "wait"),
		      "x alone: %zu rows", t.nrows);
		cs_top_table_free(&t);
		CHECK(cs_top_table_build(&p, SIZE_MAX, false, &base, false, &t),
		      "build");
		CHECK(t.stacks == 7 && t.new_stacks == 7,
		      "back to all, counted afresh: %zu %zu", t.stacks,
		      t.new_stacks);
		cs_top_table_free(&t);
	}
	free(labels);
	cs_top_base_free(&base);
	cs_profile_free(&p);
}

static void put_checks(void)
{
	char line[64];
	int used = 0;
	line[0] = '\0';
	cs_term_put(line, sizeof(line), &used, 80, "a\033[2Jb\x07\x7f");
	CHECK(!strcmp(line, "a?[2Jb??") && used == 8, "C0 and DEL: %s", line);
	line[0] = '\0';
	used = 0;
	cs_term_put(line, sizeof(line), &used, 80,
		    "\xc2\x9b"
		    "1m\xff");
	CHECK(!strcmp(line, "?1m?") && used == 4, "C1 and not UTF-8: %s", line);
	line[0] = '\0';
	used = 0;
	cs_term_put(line, sizeof(line), &used, 3, "\xc3\xa9t\xc3\xa9s");
	CHECK(!strcmp(line, "\xc3\xa9t\xe2\x80\xa6") && used == 3,
	      "cut at 3 columns, UTF-8 kept whole, the cut marked: %s", line);
	line[0] = '\0';
	used = 0;
	cs_term_put(line, sizeof(line), &used, 3, "abc");
	CHECK(!strcmp(line, "abc") && used == 3, "exactly 3 columns: %s", line);
	line[0] = '\0';
	used = 0;
	cs_term_put(line, 4, &used, 80, "abcdef");
	CHECK(!strcmp(line, "abc") && used == 3, "cut at the buffer: %s", line);
}

int main(void)
{
	table_checks();
	put_checks();
	return check_summary("test_top");
}
