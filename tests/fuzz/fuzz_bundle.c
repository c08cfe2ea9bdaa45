/* libFuzzer harness for the bundle reader (process/bundle.c).
 *
 * Each input is written to a memfd and unpacked through /proc/self/fd/N
 * into a fresh private directory, as the CLI unpacks a bundle given in
 * place of a core, then extracted for a debugger (cs_bundle_extract,
 * each file at its stored path) into another; each time what it made is
 * then removed. A refused input must carry a message; an accepted one
 * must hold one core and name an unpacked file for each entry; in both
 * cases the directory must be gone afterwards and nothing else made
 * beside it (nothing of a bundle is left on disk, nothing is written
 * outside the directory).
 *
 * Build: see tests/fuzz/Makefile.inc (make fuzz-build). */
#include "process/bundle.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int memfd = -1;
static char path[64], base[64];

static void cleanup(void)
{
	rmdir(base);
}

static void setup(void)
{
	memfd = memfd_create("fuzz_bundle", MFD_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	snprintf(base, sizeof(base), "/tmp/fuzz_bundle.XXXXXX");
	if (memfd < 0 || !mkdtemp(base))
		abort();
	atexit(cleanup);
}

/* Whether base holds nothing (dir is made in it and removed). */
static bool base_clean(void)
{
	DIR *d = opendir(base);
	bool clean = d != NULL;
	struct dirent *ent;
	while (clean && (ent = readdir(d)))
		clean = strcmp(ent->d_name, ".") == 0 ||
			strcmp(ent->d_name, "..") == 0;
	if (d)
		closedir(d);
	return clean;
}

static void one(bool extract)
{
	char dir[96];
	snprintf(dir, sizeof(dir), "%s/u", base);
	if (mkdir(dir, 0700) != 0)
		abort();
	struct cs_bundle b;
	struct cs_error *err = extract ? cs_bundle_extract(path, dir, false, &b)
				       : cs_bundle_unpack(path, dir, &b);
	if (err) {
		if (!err->message)
			abort();
		cs_error_destroy(err);
	} else {
		if (!cs_bundle_core(&b))
			abort();
		for (size_t i = 0; i < b.n; i++) {
			struct stat st;
			if (!b.entries[i].file ||
			    strncmp(b.entries[i].file, dir, strlen(dir)) != 0 ||
			    lstat(b.entries[i].file, &st) != 0 ||
			    (uint64_t)st.st_size != b.entries[i].size)
				abort();
			(void)cs_bundle_path_of(&b, b.entries[i].file);
		}
	}
	cs_bundle_remove_files(&b);
	cs_bundle_free(&b);
	/* something was left behind, or made beside dir */
	if (!base_clean())
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (memfd < 0)
		setup();
	if (ftruncate(memfd, 0) != 0 || ftruncate(memfd, (off_t)size) != 0 ||
	    (size && pwrite(memfd, data, size, 0) != (ssize_t)size))
		abort();
	for (int extract = 0; extract < 2; extract++)
		one(extract);
	return 0;
}
