/* The lookups every kind of target shares (process/target.c), on tables
 * built by hand: edges of mappings and regions, gaps between them, an
 * auxiliary vector that ends early, the crashed thread. */
#include "core_test.h"

#include <elf.h>
#include <signal.h>
#include <string.h>

#include "process/crash_signal.h"
#include "process/target.h"

static struct cs_mapping maps[] = {
	{0x1000, 0x3000, 0, "/usr/lib/libruby.so.3.4.5"},
	{0x3000, 0x4000, 0x2000, "/usr/lib/libruby.so.3.4.5"},
	{0x8000, 0x9000, 0, "/usr/bin/ruby"},
};
static struct cs_region regions[] = {
	{0x1000, 0x3000, false, true},
	{0x3000, 0x4000, true, false},
	{0x6000, 0x7000, false, false},
	{0x8000, 0x9000, true, false},
};
static const uint64_t auxv[] = {AT_PAGESZ, 4096, AT_NULL, 0, AT_ENTRY, 7};
static struct cs_thread threads[] = {{.tid = 10}, {.tid = 11}, {.tid = 12}};

static void check_mappings(const struct cs_target_tables *tt, char *why,
			   size_t size)
{
	static const struct {
		uint64_t addr;
		int index; /* -1: none */
	} at[] = {{0, -1},     {0xfff, -1}, {0x1000, 0},  {0x2fff, 0},
		  {0x3000, 1}, {0x3fff, 1}, {0x4000, -1}, {0x7fff, -1},
		  {0x8000, 2}, {0x8fff, 2}, {0x9000, -1}, {UINT64_MAX, -1}};
	for (size_t i = 0; i < sizeof(at) / sizeof(*at); i++) {
		const struct cs_mapping *m =
			cs_tables_mapping_of(tt, at[i].addr);
		const struct cs_mapping *want =
			at[i].index < 0 ? NULL : &maps[at[i].index];
		if (m != want)
			fail(why, size, "mapping of 0x%llx",
			     (unsigned long long)at[i].addr);
	}
	if (cs_tables_find_mapping(tt, "libruby.so") != &maps[0] ||
	    cs_tables_find_mapping(tt, "ruby") != &maps[2] ||
	    cs_tables_find_mapping(tt, "lib") != &maps[0] ||
	    cs_tables_find_mapping(tt, "usr") != NULL)
		fail(why, size, "mapping by basename");
	if (cs_tables_mapping_at(tt, 2) != &maps[2] ||
	    cs_tables_mapping_at(tt, 3) != NULL)
		fail(why, size, "mapping by index");
}

static void check_regions(const struct cs_target_tables *tt, char *why,
			  size_t size)
{
	struct cs_region r;
	if (!cs_tables_region_of(tt, 0x2fff, &r) || r.start != 0x1000 ||
	    !r.exec || cs_tables_region_of(tt, 0x4000, &r) ||
	    cs_tables_region_of(tt, 0xfff, &r) ||
	    !cs_tables_region_of(tt, 0x6000, &r) || r.end != 0x7000 ||
	    cs_tables_region_of(tt, 0x9000, &r))
		fail(why, size, "region of an address");
	uint64_t start = 0, end = 0;
	/* inside a writable region: that one; before one: the next */
	if (!cs_tables_writable_next(tt, 0x3800, &start, &end) ||
	    start != 0x3000 || end != 0x4000)
		fail(why, size, "writable region holding the address");
	if (!cs_tables_writable_next(tt, 0x4000, &start, &end) ||
	    start != 0x8000 || end != 0x9000)
		fail(why, size, "next writable region");
	if (cs_tables_writable_next(tt, 0x9000, &start, &end))
		fail(why, size, "writable region past the last");
}

void test_tables(void)
{
	char why[256] = "";
	struct cs_siginfo segv = {.present = 1, .signo = SIGSEGV};
	threads[1].cursig = SIGSEGV;
	struct cs_target_tables tt = {
		.maps = maps,
		.nmaps = sizeof(maps) / sizeof(*maps),
		.threads = threads,
		.nthreads = sizeof(threads) / sizeof(*threads),
		.auxv = auxv,
		.nauxv = sizeof(auxv) / sizeof(*auxv) / 2,
		.regions = regions,
		.nregions = sizeof(regions) / sizeof(*regions),
		.knows_regions = true,
		.siginfo = &segv,
	};
	check_mappings(&tt, why, sizeof(why));
	check_regions(&tt, why, sizeof(why));
	/* AT_NULL ends the vector: what follows it is not read */
	if (cs_tables_auxv(&tt, AT_PAGESZ) != 4096 ||
	    cs_tables_auxv(&tt, AT_ENTRY) != 0)
		FAIL("auxv");
	if (cs_tables_thread_at(&tt, 2)->tid != 12 ||
	    cs_tables_thread_at(&tt, 3) != NULL)
		FAIL("thread by index");
	/* the thread whose cursig is the signal, else the first */
	if (cs_tables_crash_tid(&tt) != 11)
		FAIL("crash thread: %lld", (long long)cs_tables_crash_tid(&tt));
	threads[1].cursig = 0;
	if (cs_tables_crash_tid(&tt) != 10)
		FAIL("crash thread without cursig");
	segv.signo = SIGSTOP; /* not why a process dies */
	if (cs_tables_crash_tid(&tt) != -1)
		FAIL("crash thread of SIGSTOP");
	struct cs_target_tables empty = {0};
	struct cs_region r;
	uint64_t s, e;
	if (cs_tables_mapping_of(&empty, 0x1000) ||
	    cs_tables_find_mapping(&empty, "") ||
	    cs_tables_region_of(&empty, 0, &r) ||
	    cs_tables_writable_next(&empty, 0, &s, &e) ||
	    cs_tables_auxv(&empty, AT_PAGESZ) ||
	    cs_tables_thread_at(&empty, 0) || cs_tables_crash_tid(&empty) != -1)
		FAIL("empty tables");
	report("target tables: mappings, regions, auxv, threads", why);
}
