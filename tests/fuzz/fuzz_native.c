/* libFuzzer harness for --native: the native unwinder (engine/native.c
 * on libdwfl), the merge with Ruby frames (merge.c) and their rendering
 * (render_native.c through the text and JSON renderers).
 *
 * Each input is an ELF core, opened like fuzz_core does (from a memfd,
 * NT_FILE paths under a private sysroot). The sysroot holds one module,
 * tests/fuzz/native-target (built from native_target.c), at the path the
 * seeds' NT_FILE names, so a mutated core is unwound with real CFI and
 * symbolized with real DWARF: mutations land on registers, stack bytes,
 * mappings and notes. No debug directory, no debuginfod.
 *
 * Every thread's native stack is then merged with a Ruby stack made up
 * from it (a Ruby frame per interpreter loop, a C method on each nt_*
 * function), perturbed by the input's last byte so that mismatches are
 * exercised too, and the report is rendered as text and JSON.
 *
 * Seeds (tests/fuzz/corpus/native) come from make fuzz-seeds: gcore of
 * native-target, shrunk by make_native_seed.c to a few kilobytes.
 * FUZZ_NATIVE_PRINT=1 in the environment prints the rendered report.
 * Build: see tests/fuzz/Makefile.inc (make fuzz-build). */
#include "process/core.h"
#include "process/core_target.h"
#include "engine/merge.h"
#include "engine/native.h"
#include "render/render.h"
#include "tests/fuzz/core_input.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FUZZ_NATIVE_MODULE /* the Makefile gives its absolute path */
#define FUZZ_NATIVE_MODULE "tests/fuzz/native-target"
#endif
/* Where the seeds' process ran its module from (make fuzz-seeds). */
#define MODULE_DIR "/tmp/corestack-fuzz-native"
#define MODULE_PATH MODULE_DIR "/target"

static struct core_input in = {.memfd = -1};
static char module_copy[160], module_dirs[2][160];
static FILE *devnull;

static void cleanup(void)
{
	unlink(module_copy);
	rmdir(module_dirs[1]);
	rmdir(module_dirs[0]);
	rmdir(in.sysroot);
}

static void setup(void)
{
	core_input_init(&in, "fuzz_native");
	snprintf(module_dirs[0], sizeof(module_dirs[0]), "%s/tmp", in.sysroot);
	snprintf(module_dirs[1], sizeof(module_dirs[1]), "%s%s", in.sysroot,
		 MODULE_DIR);
	snprintf(module_copy, sizeof(module_copy), "%s%s", in.sysroot,
		 MODULE_PATH);
	atexit(cleanup);
	mkdir(module_dirs[0], 0755);
	mkdir(module_dirs[1], 0755);
	FILE *src = fopen(FUZZ_NATIVE_MODULE, "rb");
	FILE *dst = fopen(module_copy, "wb");
	if (!src || !dst) {
		fprintf(stderr, "fuzz_native: cannot copy %s into %s\n",
			FUZZ_NATIVE_MODULE, module_copy);
		abort();
	}
	int c;
	while ((c = fgetc(src)) != EOF)
		fputc(c, dst);
	fclose(src);
	fclose(dst);
	/* FUZZ_NATIVE_PRINT=1: show what an input renders to (triage). */
	devnull = getenv("FUZZ_NATIVE_PRINT") ? stdout
					      : fopen("/dev/null", "w");
	if (!devnull)
		abort();
	/* Only the sysroot's files: no debuginfod server. */
	unsetenv("DEBUGINFOD_URLS");
}

static int starts_with(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A Ruby stack that fits nt (outermost first, then reversed): one Ruby
 * frame per interpreter loop, the first of each vm_exec() flagged
 * VM_FRAME_FLAG_FINISH, a C method on each nt_* function. mutate's bits
 * break it: a stray C method, a lost flag, a truncated stack, no cfunc. */
static void ruby_stack_of(const struct cs_native_thread *nt, unsigned mutate,
			  struct rv_thread *rt, struct rv_frame *frames,
			  size_t cap)
{
	size_t n = 0;
	for (size_t i = nt ? nt->nframes : 0; i-- > 0 && n + 1 < cap;) {
		const struct cs_native_frame *f = &nt->frames[i];
		if (f->inlined)
			continue;
		if (strcmp(f->function ? f->function : "", "vm_exec_core") ==
		    0) {
			frames[n] = (struct rv_frame){
				.kind = RV_FRAME_RUBY,
				.label = "block",
				.path = "native.rb",
				.lineno = (int)n + 1,
				.vm_finish = !(mutate & 1) || n > 0};
			n++;
		} else if (starts_with(f->function, "nt_")) {
			frames[n] = (struct rv_frame){
				.kind = RV_FRAME_CFUNC,
				.label = f->function,
				.path = "native.rb",
				.lineno = (int)n,
				.cfunc = mutate & 2 ? 0 : f->func_start};
			n++;
		}
	}
	if (mutate & 4 && n < cap)
		frames[n++] = (struct rv_frame){.kind = RV_FRAME_CFUNC,
						.label = "stray",
						.cfunc = 0x401000};
	for (size_t a = 0, b = n; a + 1 < b; a++, b--) {
		struct rv_frame t = frames[a];
		frames[a] = frames[b - 1];
		frames[b - 1] = t;
	}
	rt->frames = frames;
	rt->nframes = n;
	rt->truncated = mutate & 8;
	rt->tid = nt ? nt->tid : -1;
	rt->status = RV_STATUS_RUN;
}

#define MAX_THREADS 8
#define MAX_RUBY_FRAMES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (in.memfd < 0)
		setup();
	struct cs_core *core = core_input_open(&in, data, size);
	if (!core)
		return 0;

	const struct cs_thread *threads[MAX_THREADS];
	size_t nt = cs_core_tables(core)->nthreads;
	if (nt > MAX_THREADS)
		nt = MAX_THREADS;
	for (size_t i = 0; i < nt; i++)
		threads[i] = cs_tables_thread_at(cs_core_tables(core), i);
	struct cs_target img = cs_target_of_core(core);
	struct cs_memory mem = cs_core_memory(core);
	const char *const no_dirs[] = {NULL};
	struct cs_native_stacks *native = NULL;
	/* a module whose file is missing is looked for, in no directory */
	struct cs_module_search *search = cs_module_search_new(NULL, NULL);
	if (!search)
		abort();
	struct cs_error *err = cs_native_unwind(
		&img, &mem, threads, nt, no_dirs, 48, NULL, 0, search, &native);
	cs_module_search_free(search);
	if (err) {
		if (!err->message)
			abort();
		cs_error_destroy(err);
		cs_core_close(core);
		return 0;
	}
	if (native->nthreads != nt)
		abort();

	/* A Ruby thread per native one, merged and rendered. */
	static struct rv_frame frames[MAX_THREADS][MAX_RUBY_FRAMES];
	struct rv_thread rts[MAX_THREADS];
	struct cs_merged_stack merged[MAX_THREADS];
	int64_t tids[MAX_THREADS];
	unsigned mutate = size ? data[size - 1] : 0;
	memset(rts, 0, sizeof(rts));
	for (size_t i = 0; i < nt; i++) {
		const struct cs_native_thread *t = &native->threads[i];
		if (t->nframes > 48)
			abort(); /* more than max_frames */
		ruby_stack_of(t, mutate >> (i % 4), &rts[i], frames[i],
			      MAX_RUBY_FRAMES);
		tids[i] = rts[i].tid;
		/* As main.c does: by tid (a mutated core may repeat one). */
		const struct cs_native_thread *by_tid =
			cs_native_thread_of(native, t->tid);
		/* bit 6: as if the unwind had stopped at the frame limit */
		struct cs_native_thread cut = *by_tid;
		cut.truncated |= (mutate & 64) != 0;
		if (cs_merge_stacks(&rts[i], &cut, &merged[i]))
			abort(); /* only allocation failure is an error */
		if (!merged[i].error &&
		    merged[i].nframes > by_tid->nframes + rts[i].nframes)
			abort();
		if (merged[i].cut && merged[i].cut_at > merged[i].nframes)
			abort();
	}
	/* The last thread runs no Ruby when bit 5 says so (--native-all). */
	size_t nruby = nt && (mutate & 32) ? nt - 1 : nt;
	struct rv_process proc = {
		.ruby_version = "3.3.8", .threads = rts, .nthreads = nruby};
	struct cs_report report = {
		.core_path = "core",
		.executable = cs_core_tables(core)->executable,
		.vm_module = MODULE_PATH,
		.pid = nt ? threads[0]->tid : -1,
		.siginfo = cs_core_tables(core)->siginfo,
		.ruby = &proc,
		.tids = tids,
		.complete = 1,
		.crash_tid = nt ? threads[mutate % nt]->tid : -1,
		.native = native,
		.merged = merged,
		.native_all = mutate & 16,
	};
	cs_render_text(devnull, &report, NULL);
	cs_render_json(devnull, &report, NULL);
	for (size_t i = 0; i < nt; i++)
		cs_merged_stack_free(&merged[i]);
	cs_native_destroy(native);
	cs_core_close(core);
	return 0;
}
