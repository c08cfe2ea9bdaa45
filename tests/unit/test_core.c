/* Unit test for process/core_*.c.
 *
 * Builds small synthetic cores byte by byte (so every field is known), plus
 * broken ones: empty, not ELF, not a core, truncated everywhere, lying note
 * sizes, random corruption. If gcore is installed, also checks a real core
 * of `sleep`. The tests are in tests/unit/core/, one file per concept; this
 * file runs them. Build and run: make build/test_core && build/test_core
 */
#include "tests/unit/core/core_test.h"

#include <dirent.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int passed, failed;
char tmpdir[64];

static void cleanup(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			continue;
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			cleanup(p);
		else
			unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

int main(void)
{
	elf_version(EV_CURRENT);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_core.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	good = synth_core(&(struct synth){.nt_file = 1}, &lay);
	core_path = tmp_path("core.good");
	write_file(core_path, good.p, good.len);
	lib_host_path = tmp_path(&LIB_PATH[1]);
	uint8_t lib[0x3000];
	lib_file(lib, sizeof(lib));
	write_file(lib_host_path, lib, sizeof(lib));

	test_reads();
	test_notes();
	test_files();
	test_sysroot_confined();
	test_bad_files();
	test_truncated();
	test_fuzz();
	test_gcore();
	test_kernel_core();
	test_tables();

	if (!failed)
		cleanup(tmpdir);
	else
		printf("(files kept in %s)\n", tmpdir);
	free(good.p);
	free(core_path);
	free(lib_host_path);
	printf("core: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
