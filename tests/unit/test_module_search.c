/* The names a module whose file is gone is looked for by
 * (process/module_search.c): its basename without the kernel's
 * " (deleted)", then the tails after each '_' or '+', '+' read as '/'. */
#include "process/module_search.h"
#include "tests/unit/check.h"

#include <stdlib.h>
#include <string.h>

#define MAX 64

/* names(path) == want[0, n) */
static int names_are(const char *path, const char *const *want, size_t n)
{
	char *got[MAX];
	size_t k = cs_module_names(path, got, MAX);
	int same = k == n;
	for (size_t i = 0; i < k; i++) {
		if (same && strcmp(got[i], want[i]) != 0) {
			fprintf(stderr, "  %s: name %zu is %s, not %s\n", path,
				i, got[i], want[i]);
			same = 0;
		}
		free(got[i]);
	}
	if (k != n)
		fprintf(stderr, "  %s: %zu names, not %zu\n", path, k, n);
	return same;
}

int main(void)
{
	/* a plain file: its basename */
	static const char *const plain[] = {"crashtest.so"};
	CHECK(names_are("/x/ext/crashtest.so", plain, 1), "plain");
	static const char *const deleted[] = {"crashtest.so"};
	CHECK(names_are("/tmp/d1/crashtest.so (deleted)", deleted, 1),
	      "deleted");
	/* Ruby::Box's copy of json/ext/parser.so */
	static const char *const box[] = {
		"_ruby_box_p17829_3_json+ext+parser.so",
		"ruby_box_p17829_3_json/ext/parser.so",
		"box_p17829_3_json/ext/parser.so",
		"p17829_3_json/ext/parser.so",
		"3_json/ext/parser.so",
		"json/ext/parser.so",
		"ext/parser.so",
		"parser.so",
	};
	CHECK(names_are("/tmp/_ruby_box_p17829_3_json+ext+parser.so (deleted)",
			box, sizeof(box) / sizeof(box[0])),
	      "a box's copy");
	/* a copy of an absolute path: no name starts at the root */
	static const char *const abs[] = {
		"_ruby_box_p1_2_+tmp+d+crashtest.so",
		"ruby_box_p1_2_/tmp/d/crashtest.so",
		"box_p1_2_/tmp/d/crashtest.so",
		"p1_2_/tmp/d/crashtest.so",
		"2_/tmp/d/crashtest.so",
		"tmp/d/crashtest.so",
		"d/crashtest.so",
		"crashtest.so",
	};
	CHECK(names_are("/t/_ruby_box_p1_2_+tmp+d+crashtest.so (deleted)", abs,
			sizeof(abs) / sizeof(abs[0])),
	      "a box's copy of an absolute path");
	/* at most max names */
	char *few[2];
	size_t k = cs_module_names("/a_b_c_d.so", few, 2);
	CHECK(k == 2 && !strcmp(few[0], "a_b_c_d.so") &&
		      !strcmp(few[1], "b_c_d.so"),
	      "bounded: %zu", k);
	for (size_t i = 0; i < k; i++)
		free(few[i]);
	return check_summary("test_module_search");
}
