/* See crash_scan.h. */
#include "crash_scan.h"

#include <stdlib.h>
#include <string.h>

#include "../dwarf/module.h"
#include "../process/crash_signal.h"
#include "../process/signal_frame.h"
#include "../util/u64map.h"
#include "bug_reporters.h"

/* The code of the x86-64 signal trampoline every Linux C library
 * installs as sa_restorer: mov $15 (rt_sigreturn), %rax; syscall. The
 * kernel's ABI, as debuggers recognise it. */
static const unsigned char trampoline_code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
						0x00, 0x00, 0x0f, 0x05};

/* Stop remembering the verdicts on code addresses past this many. */
#define MAX_REMEMBERED 4096

struct cs_crash_scan {
	const struct cs_target *target;
	struct dw_range *reporters; /* in the process's addresses */
	size_t nreporters;
	struct dw_range reporters_span; /* from the lowest to the highest */
	/* the C library's code, where its sa_restorer lies */
	struct dw_range libc_code[8];
	size_t nlibc_code;
	/* code address -> whether it is the trampoline (values: (void *)1
	 * or (void *)2) */
	struct u64map verdicts;
	unsigned char *window;
};

/* Whether a mapped file is the C library (glibc's or musl's). */
static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "libc.so", 7) == 0 ||
	       strncmp(base, "libc-", 5) == 0 ||
	       strncmp(base, "libc.musl", 9) == 0 ||
	       strncmp(base, "ld-musl", 7) == 0;
}

/* s->libc_code: the mappings of the C library but those the target
 * knows are not executable (a core gcore wrote has no segment for code
 * at all: its file mappings alone say where libc lies). */
static void find_libc_code(struct cs_crash_scan *s)
{
	size_t n = cs_target_mapping_count(s->target);
	for (size_t i = 0; i < n && s->nlibc_code < 8; i++) {
		const struct cs_mapping *m = cs_target_mapping_at(s->target, i);
		struct cs_region r;
		if (m && m->path && is_libc(m->path) &&
		    !(cs_target_region_of(s->target, m->start, &r) && !r.exec))
			s->libc_code[s->nlibc_code++] =
				(struct dw_range){m->start, m->end};
	}
}

struct cs_crash_scan *cs_crash_scan_new(const struct cs_target *t,
					const struct cs_vm_module *vm)
{
	struct cs_crash_scan *s = calloc(1, sizeof(*s));
	if (!s || !(s->window = malloc(CS_CRASH_SCAN_BYTES))) {
		free(s);
		return NULL;
	}
	s->target = t;
	/* Every bug report passes through an exported reporter (rb_bug,
	 * rb_assert_failure...; a fatal signal's report runs in a handler,
	 * whose trampoline is seen): the few thousand exported symbols are
	 * enough, unless the binary exports none of them. A binary without
	 * the symbols leaves only the trampoline to see. */
	struct cs_error *err = NULL;
	for (int exported = 1;
	     vm && vm->vm && !err && exported >= 0 && !s->nreporters;
	     exported--)
		err = dw_module_function_ranges(vm->vm, cs_bug_reporters,
						cs_nbug_reporters, exported,
						&s->reporters, &s->nreporters);
	if (err) {
		cs_error_destroy(err);
		cs_crash_scan_free(s);
		return NULL;
	}
	s->reporters_span = (struct dw_range){UINT64_MAX, 0};
	for (size_t i = 0; i < s->nreporters; i++) {
		struct dw_range *r = &s->reporters[i];
		r->start += vm->load_bias;
		r->end += vm->load_bias;
		if (r->start < s->reporters_span.start)
			s->reporters_span.start = r->start;
		if (r->end > s->reporters_span.end)
			s->reporters_span.end = r->end;
	}
	find_libc_code(s);
	return s;
}

void cs_crash_scan_free(struct cs_crash_scan *s)
{
	if (!s)
		return;
	free(s->reporters);
	u64map_free(&s->verdicts, NULL);
	free(s->window);
	free(s);
}

/* A return address into a bug reporter: past its first instruction, and
 * at most at its end (a call that never returns ends a function). */
static bool in_reporter(const struct cs_crash_scan *s, uint64_t word)
{
	if (word <= s->reporters_span.start || word > s->reporters_span.end)
		return false;
	for (size_t i = 0; i < s->nreporters; i++)
		if (word > s->reporters[i].start && word <= s->reporters[i].end)
			return true;
	return false;
}

/* Whether the code at addr is the trampoline: in the C library's code,
 * and its bytes (each address read once). */
static bool trampoline(struct cs_crash_scan *s, const struct cs_memory *mem,
		       uint64_t addr)
{
	bool in_libc = false;
	for (size_t i = 0; i < s->nlibc_code && !in_libc; i++)
		in_libc = addr >= s->libc_code[i].start &&
			  addr < s->libc_code[i].end;
	if (!in_libc)
		return false;
	int found;
	void *v = u64map_get(&s->verdicts, addr, &found);
	if (found)
		return v == (void *)1;
	unsigned char code[sizeof(trampoline_code)];
	struct cs_error *err = cs_memory_read(mem, addr, code, sizeof(code));
	bool yes = !err && memcmp(code, trampoline_code, sizeof(code)) == 0;
	cs_error_destroy(err);
	if (s->verdicts.count < MAX_REMEMBERED) /* a failed put: read again */
		(void)u64map_put(&s->verdicts, addr,
				 yes ? (void *)1 : (void *)2);
	return yes;
}

/* Whether the signal frame the trampoline returns to at sp holds a
 * signal whose handler running means a crash: a handler of another
 * signal (Ruby's timer, SIGCHLD), or a frame left on the stack by one
 * that returned long ago, is none. */
static bool crash_signal_frame(const struct cs_memory *mem, uint64_t sp)
{
	struct cs_signal_frame f;
	struct cs_error *err = cs_signal_frame_read(mem, sp, &f);
	bool yes = !err && cs_crash_handler_signal(f.si.signo);
	cs_error_destroy(err);
	return yes;
}

/* How many bytes from sp were read into s->window: the rest of its
 * region, up to CS_CRASH_SCAN_BYTES, in one read. A target that does not
 * know its regions (a debugger's inferior) lists no threads either. */
static size_t read_window(struct cs_crash_scan *s, const struct cs_memory *mem,
			  uint64_t sp)
{
	struct cs_region r;
	if (!cs_target_region_of(s->target, sp, &r) || !r.write)
		return 0;
	uint64_t len = r.end - sp < CS_CRASH_SCAN_BYTES ? r.end - sp
							: CS_CRASH_SCAN_BYTES;
	struct cs_error *err = cs_memory_read(mem, sp, s->window, (size_t)len);
	bool ok = !err;
	cs_error_destroy(err);
	return ok ? (size_t)len : 0;
}

bool cs_crash_scan_thread(struct cs_crash_scan *s, const struct cs_memory *mem,
			  const struct cs_thread *kt)
{
	uint64_t sp = kt->regs[CS_REG_RSP];
	if (!sp || (sp & 7))
		return false;
	size_t len = read_window(s, mem, sp);
	for (size_t off = 0; off + 8 <= len; off += 8) {
		uint64_t word;
		memcpy(&word, s->window + off, 8);
		if (in_reporter(s, word) ||
		    (trampoline(s, mem, word) &&
		     crash_signal_frame(mem, sp + off + 8)))
			return true;
	}
	return false;
}
