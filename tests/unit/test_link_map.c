/* Unit test for process/link_map.c: the mappings rebuilt for a core
 * without NT_FILE against the NT_FILE note of the same core.
 *
 * gcore dumps a running `sleep`; a copy of the core gets its NT_FILE note
 * retyped, so the reader must rebuild the mappings from the ELF headers
 * and the link map. Every rebuilt mapping must lie inside an NT_FILE
 * mapping of the same file (by real path) at the same file offset, every
 * ELF module NT_FILE lists must start a rebuilt mapping, and bytes the core
 * left out must read the same through both. Skipped without gcore. */
#include "process/core.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char why[1024];

#define FAIL(...)                                                \
	do {                                                     \
		if (!why[0])                                     \
			snprintf(why, sizeof(why), __VA_ARGS__); \
	} while (0)

static int same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* Retype the core's NT_FILE note in place; 0 when there is none. */
static int hide_nt_file(uint8_t *core, size_t size)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)core;
	if (size < sizeof(*eh) || eh->e_phoff > size ||
	    (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return 0;
	Elf64_Phdr *ph = (Elf64_Phdr *)(core + eh->e_phoff);
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_NOTE || ph[i].p_offset > size ||
		    ph[i].p_filesz > size - ph[i].p_offset)
			continue;
		uint8_t *n = core + ph[i].p_offset, *end = n + ph[i].p_filesz;
		while (end - n >= 12) {
			uint32_t *h = (uint32_t *)n;
			if (h[2] == NT_FILE) {
				h[2] = 0x4e4f4e45;
				return 1;
			}
			n += 12 + ((h[0] + 3) & ~3u) + ((h[1] + 3) & ~3u);
		}
	}
	return 0;
}

/* `sleep` running (past its exec), or -1. */
static pid_t start_sleep(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		execlp("sleep", "sleep", "100", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 400; i++) {
		char link[64], exe[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);
		if (n > 0 && (exe[n] = '\0', strstr(exe, "sleep")))
			return pid;
		nanosleep(&(struct timespec){0, 25 * 1000 * 1000}, NULL);
	}
	return -1;
}

static void compare(struct cs_core *nt, struct cs_core *re)
{
	if (cs_core_mapping_gap(re))
		FAIL("rebuilt mappings incomplete: %s",
		     cs_core_mapping_gap(re));
	if (cs_core_mapping_gap(nt))
		FAIL("NT_FILE's mappings said incomplete");
	const char *exe = cs_core_tables(re)->executable;
	if (!exe || !same_file(exe, cs_core_tables(nt)->executable))
		FAIL("executable %s, NT_FILE's %s", exe ? exe : "(none)",
		     cs_core_tables(nt)->executable);
	for (size_t i = 0; i < cs_core_tables(re)->nmaps; i++) {
		const struct cs_mapping *r =
			cs_tables_mapping_at(cs_core_tables(re), i);
		const struct cs_mapping *a =
			cs_tables_mapping_of(cs_core_tables(nt), r->start);
		const struct cs_mapping *b =
			cs_tables_mapping_of(cs_core_tables(nt), r->end - 1);
		if (!a || !b || !same_file(a->path, r->path) ||
		    !same_file(b->path, r->path) ||
		    a->file_offset + (r->start - a->start) != r->file_offset ||
		    b->file_offset + (r->end - 1 - b->start) !=
			    r->file_offset + (r->end - 1 - r->start))
			FAIL("rebuilt 0x%llx-0x%llx of %s at 0x%llx is not in "
			     "NT_FILE's mappings",
			     (unsigned long long)r->start,
			     (unsigned long long)r->end, r->path,
			     (unsigned long long)r->file_offset);
	}
	size_t modules = 0;
	for (size_t i = 0; i < cs_core_tables(nt)->nmaps; i++) {
		const struct cs_mapping *m =
			cs_tables_mapping_at(cs_core_tables(nt), i);
		uint8_t magic[4];
		struct cs_error *err =
			cs_core_read_dumped(nt, m->start, magic, 4);
		int elf = !err && m->file_offset == 0 &&
			  memcmp(magic, ELFMAG, SELFMAG) == 0;
		cs_error_destroy(err);
		if (!elf)
			continue;
		modules++;
		const struct cs_mapping *r =
			cs_tables_mapping_of(cs_core_tables(re), m->start);
		if (!r || r->start != m->start || !same_file(r->path, m->path))
			FAIL("the module %s at 0x%llx was not rebuilt", m->path,
			     (unsigned long long)m->start);
		/* its first page past the header: text the core left out */
		uint8_t x[64], y[64];
		struct cs_error *e1 = cs_core_read(nt, m->start + 4096, x, 64);
		struct cs_error *e2 = cs_core_read(re, m->start + 4096, y, 64);
		if (!e1 && (e2 || memcmp(x, y, 64) != 0))
			FAIL("0x%llx of %s reads otherwise without NT_FILE",
			     (unsigned long long)m->start + 4096, m->path);
		cs_error_destroy(e1);
		cs_error_destroy(e2);
	}
	if (modules < 3) /* sleep, libc, ld.so */
		FAIL("only %zu ELF modules in NT_FILE", modules);
	printf("     (%zu ELF modules, %zu rebuilt mappings of %zu)\n", modules,
	       cs_core_tables(re)->nmaps, cs_core_tables(nt)->nmaps);
}

int main(void)
{
	char dir[] = "/tmp/test_link_map.XXXXXX";
	if (system("command -v gcore >/dev/null 2>&1") != 0 || !mkdtemp(dir)) {
		printf("skip link_map: no gcore\nlink_map: 0 passed, 0 failed\n");
		return 0;
	}
	pid_t pid = start_sleep();
	char cmd[256], core[128], hidden[128];
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 gcore -o %s/core %d "
		 ">/dev/null 2>&1",
		 dir, (int)pid);
	int rc = pid > 0 ? system(cmd) : -1;
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	snprintf(core, sizeof(core), "%s/core.%d", dir, (int)pid);
	snprintf(hidden, sizeof(hidden), "%s/nofile", dir);
	FILE *f = fopen(core, "rb");
	if (rc != 0 || !f) {
		printf("skip link_map: gcore failed (ptrace not permitted?)\n"
		       "link_map: 0 passed, 0 failed\n");
		if (f)
			fclose(f);
		return 0;
	}
	struct stat st;
	uint8_t *buf = fstat(fileno(f), &st) == 0 ? malloc(st.st_size) : NULL;
	if (!buf || fread(buf, 1, st.st_size, f) != (size_t)st.st_size)
		FAIL("cannot read %s", core);
	fclose(f);
	if (buf && !hide_nt_file(buf, st.st_size))
		FAIL("no NT_FILE note in %s", core);
	if (!why[0] && (!(f = fopen(hidden, "wb")) ||
			fwrite(buf, 1, st.st_size, f) != (size_t)st.st_size))
		FAIL("cannot write %s", hidden);
	if (f)
		fclose(f);
	free(buf);
	struct cs_core *nt = NULL, *re = NULL;
	struct cs_error *err = why[0] ? NULL : cs_core_open(core, &nt);
	if (!err && !why[0])
		err = cs_core_open(hidden, &re);
	if (err)
		FAIL("open: %s", err->message);
	cs_error_destroy(err);
	if (nt && re)
		compare(nt, re);
	cs_core_close(nt);
	cs_core_close(re);
	unlink(core);
	unlink(hidden);
	rmdir(dir);
	printf("%s mappings rebuilt without NT_FILE are NT_FILE's%s%s\n",
	       why[0] ? "FAIL" : "ok  ", why[0] ? ": " : "", why);
	printf("link_map: %d passed, %d failed\n", !why[0], !!why[0]);
	return why[0] ? 1 : 0;
}
