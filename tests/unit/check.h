/* A tiny check helper for the unit test programs: each prints one line per
 * failed check and ends with "NAME: N passed, N failed". A program of
 * several files defines CHECK_SHARED in each, and the counters once in the
 * file with main. */
#ifndef CS_TESTS_CHECK_H
#define CS_TESTS_CHECK_H

#include <stdio.h>

#ifdef CHECK_SHARED
extern int check_passed, check_failed;
#else
static int check_passed, check_failed;
#endif

#define CHECK(cond, ...)                                            \
	do {                                                        \
		if (cond) {                                         \
			check_passed++;                             \
		} else {                                            \
			check_failed++;                             \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                        \
			putchar('\n');                              \
		}                                                   \
	} while (0)

static inline int check_summary(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
