/* What the files of the core unit test share (test_core.c has main,
 * tests/unit/core/ the rest): the check lines, byte buffers, the synthetic
 * core and its files, and the tests main runs. */
#ifndef CS_TESTS_CORE_TEST_H
#define CS_TESTS_CORE_TEST_H

#include "process/core.h"

#include <stddef.h>
#include <stdint.h>

extern int passed, failed;
extern char tmpdir[64]; /* short: mkdtemp under /tmp */

/* One line per check; why is the first thing that went wrong, or NULL. */
void report(const char *name, const char *why);
/* First failure wins, later ones are ignored: keeps checks short. */
void fail(char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define FAIL(...) fail(why, sizeof(why), __VA_ARGS__)
/* Consumes err; FAIL if it is not NULL. */
#define NO_ERROR(err, what)                                \
	do {                                               \
		struct cs_error *e_ = (err);               \
		if (e_)                                    \
			FAIL("%s: %s", what, e_->message); \
		cs_error_destroy(e_);                      \
	} while (0)

struct buf {
	uint8_t *p;
	size_t len, cap;
};

void put(struct buf *b, const void *d, size_t n);
void put64(struct buf *b, uint64_t v);
void set64(uint8_t *p, uint64_t v);
void note(struct buf *b, const char *name, uint32_t type, const void *desc,
	  size_t descsz);
void ehdr(struct buf *b, uint8_t cls, uint16_t type, uint16_t machine,
	  uint16_t phnum);
void phdr(struct buf *b, uint32_t type, uint64_t off, uint64_t vaddr,
	  uint64_t filesz, uint64_t memsz, uint64_t align);
char *tmp_path(const char *name);
void write_file(const char *path, const void *data, size_t len);

/* ---- the synthetic core ----
 *
 *   A 0x10000-0x12000  in the core (the "executable"; AT_EXECFN string)
 *   B 0x12000-0x13000  in the core, right after A
 *   C 0x20000-0x23000  first page in the core (a module's ELF header with
 *                      a build-id), the rest only in /fake/lib/libfake.so.1
 *   D 0x30000-0x34000  NT_FILE only, no PT_LOAD (as gcore leaves text out);
 *                      the file ends at 0x33000
 *   E 0x40000-0x41000  PT_LOAD with p_filesz 0 and no NT_FILE mapping
 */
#define LIB_PATH "/fake/lib/libfake.so.1"
#define EXE_PATH "/fake/bin/ruby"
#define EXECFN "/usr/local/bin/ruby-from-execfn"
#define EXECFN_ADDR 0x11f00

struct synth {
	int nt_file;              /* write NT_FILE */
	uint32_t bad_file_descsz; /* if set, the NT_FILE note lies about its size */
};

struct layout {
	size_t notes_off, a_off, c_off, end;
};

extern const uint8_t build_id[20];
extern char *core_path, *lib_host_path; /* the synthetic core, its library */
extern struct layout lay;
extern struct buf good;

uint8_t pat_f(uint64_t off);
void lib_file(uint8_t *data, size_t size);
struct buf synth_core(const struct synth *o, struct layout *lay);
void check_range(struct cs_core *core, uint64_t addr, size_t len, char *why,
		 size_t whysize);
void check_fault(struct cs_core *core, uint64_t addr, size_t len,
		 const char *want, char *why, size_t whysize);
struct cs_core *open_good(char *why, size_t whysize);

int exercise(const char *path, struct cs_core **keep);

/* The tests, in the order main runs them. */
void test_reads(void);
void test_notes(void);
void test_files(void);
void test_sysroot_confined(void);
void test_bad_files(void);
void test_truncated(void);
void test_fuzz(void);
void test_gcore(void);
void test_kernel_core(void);
void test_tables(void);

#endif
