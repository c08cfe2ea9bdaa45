/* corestack: the Ruby stack of every thread of a Ruby process, from a core
 * or from the running process.
 *
 * Exit codes (README "Exit codes"): 0 complete, 1 partial (some thread or
 * frame could not be decoded; the output says which), 2 unusable input (one
 * line on stderr says which file and what to do), 64 usage; a directory of
 * cores (or --format markdown/junit) as core_dir.h says, 3 for crashes. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../util/cli_args.h"
#include "../rubyvm/layout.h"
#include "../rubyvm/model.h"
#include "../render/render.h"
#include "../engine/report.h"
#include "../engine/engine.h"
#include "bundle.h"
#include "core_dir.h"
#include "input_args.h"

#define CS_VERSION "0.1.0"

int cs_record_main(int argc, char **argv); /* record.c */
int cs_top_main(int argc, char **argv);    /* top.c */
int cs_heap_main(int argc, char **argv);   /* heap.c */

enum {
	EXIT_COMPLETE = CS_EXIT_COMPLETE,
	EXIT_PARTIAL = CS_EXIT_PARTIAL,
	EXIT_UNUSABLE = CS_EXIT_UNUSABLE,
	EXIT_USAGE = CS_EXIT_USAGE
};

/* How a user of the CLI names a debug directory. */
#define DEBUG_DIR_ADVICE "pass --debug-dir"

struct options {
	const char *core, *executable;
	int pid;         /* --pid: a live process instead of a core */
	int nonblocking; /* --nonblocking: read it without pausing it */
	const struct cs_renderer *renderer; /* NULL: text; --json: json */
	enum cs_format format;              /* --format (--json: json) */
	int no_fibers;      /* --no-fibers: skip the GC heap walk */
	const char *layout; /* --layout MODULE: print the resolved layout */
	size_t max_frames;
	size_t max_output;    /* --max-output; 0: tied to the core's size */
	struct input_args in; /* the target's files, the layout cache */
	int native;           /* --native: native frames merged with Ruby's */
	int native_all;       /* --native-all: and threads that run no Ruby */
	int locals;           /* --locals: each Ruby frame's local variables */
	uint64_t max_scan;    /* --max-scan; 0: the model's default */
	/* --fibers-by-scan (a diagnostic, not in --help): the memory scan
	 * in place of the heap walk */
	int fibers_by_scan;
};

/* Native frames unwound per thread at most. */
#define NATIVE_MAX_FRAMES 1024

static void usage(FILE *out)
{
	fputs("usage: corestack [options] CORE [EXECUTABLE]\n"
	      "       corestack [options] DIRECTORY   (every core in it)\n"
	      "       corestack [options] --pid PID\n"
	      "       corestack record --help   (sampling profiler)\n"
	      "       corestack top --help      (live view of hot methods)\n"
	      "       corestack heap --help     (what fills the GC heap)\n"
	      "       corestack bundle --help   (a core and its files in one)\n"
	      "\n"
	      "Print the Ruby stack of every thread of the Ruby process that\n"
	      "wrote CORE, or of the running process PID. EXECUTABLE defaults\n"
	      "to the one the core names.\n"
	      "\n"
	      "  --pid PID          a live process: every thread is paused\n"
	      "                     (ptrace) while its stacks are read\n"
	      "  --nonblocking      with --pid: read without pausing (stacks\n"
	      "                     may change while they are read)\n"
	      "  --json             JSON output (schema: docs/json-schema.md)\n"
	      "  --format FORMAT    text, json, markdown (crash groups for a\n"
	      "                     CI job summary) or junit (JUnit XML, a\n"
	      "                     failing test case per crash group)\n"
	      "  --max-frames N     frames per stack at most (default 100000)\n"
	      "  --max-output BYTES memory for all frames and their text, the\n"
	      "                     bound on work too (default: 64 MiB plus\n"
	      "                     4 times the core's size; 1 GiB for --pid)\n"
	      "  --locals           each Ruby frame's local variables and\n"
	      "                     their values (shown safely, bounded)\n"
	      "  --no-fibers        do not walk the GC heap for fibers\n"
	      "  --max-scan BYTES   writable memory read at most where fibers\n"
	      "                     are found by a memory scan (a GC heap that\n"
	      "                     cannot be walked; default 16 GiB)\n"
	      "  --debug-dir DIR    look for debug files under DIR too\n"
	      "                     (a .build-id/ tree, a file of the module's\n"
	      "                     build-id in DIR, debuglinks; repeatable)\n"
	      "  --sysroot DIR      find the files the core names under DIR\n"
	      "                     (a core from another machine or container)\n"
	      "  --lib-search-path DIRS  colon-separated directories to find\n"
	      "                     the core's executable and libraries in,\n"
	      "                     by file name\n"
	      "  --native           merge each thread's native (C) frames with\n"
	      "                     its Ruby frames (a core, or --pid paused)\n"
	      "  --native-all       --native, and threads that run no Ruby\n"
	      "  --layout MODULE    print the CRuby layout read from the DWARF\n"
	      "                     of MODULE (libruby.so or a static ruby)\n"
	      "  --cache-dir DIR    layout cache (default ~/.cache/corestack/\n"
	      "                     layouts); --no-cache to bypass it\n"
	      "  -h, --help         this help\n"
	      "  --version          print the version\n"
	      "\n"
	      "Exit status: 0 complete, 1 partial, 2 unusable input, 64 usage.\n"
	      "A DIRECTORY (or markdown, junit): 3 when a core crashed, else\n"
	      "2 when a core could not be read, 1 partial, 0 (docs/usage.md).\n",
	      out);
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"format", required_argument, NULL, 'f'},
		{"max-frames", required_argument, NULL, 'm'},
		{"max-output", required_argument, NULL, 'M'},
		{"layout", required_argument, NULL, 'l'},
		{"pid", required_argument, NULL, 'p'},
		{"nonblocking", no_argument, NULL, 'b'},
		{"native", no_argument, NULL, 'N'},
		{"native-all", no_argument, NULL, 'A'},
		{"no-fibers", no_argument, NULL, 'F'},
		{"locals", no_argument, NULL, 'o'},
		{"max-scan", required_argument, NULL, 'X'},
		{"fibers-by-scan", no_argument, NULL, 'Y'},
		INPUT_ARGS_FILE_OPTIONS,
		INPUT_ARGS_CACHE_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0; /* our own one-line messages (unknown_option) */
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		enum input_arg taken =
			input_args_take(&o->in, "corestack", c, optarg);
		if (taken == INPUT_ARG_BAD)
			return EXIT_USAGE;
		if (taken == INPUT_ARG_TAKEN)
			continue;
		switch (c) {
		case 'j':
			o->renderer = cs_renderer_find("json");
			o->format = CS_FORMAT_JSON;
			break;
		case 'f': {
			static const char *const names[] = {
				[CS_FORMAT_TEXT] = "text",
				[CS_FORMAT_JSON] = "json",
				[CS_FORMAT_MARKDOWN] = "markdown",
				[CS_FORMAT_JUNIT] = "junit",
			};
			size_t k = 0;
			while (k < 4 && strcmp(optarg, names[k]) != 0)
				k++;
			if (k == 4) {
				fprintf(stderr,
					"corestack: --format takes text, json, "
					"markdown or junit, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			o->format = (enum cs_format)k;
			o->renderer = k == CS_FORMAT_JSON
					      ? cs_renderer_find("json")
					      : NULL;
			break;
		}
		case 'm':
		case 'M': {
			uint64_t n;
			bool frames = c == 'm';
			/* frames: far past any real stack; bytes: up to
			 * 1 PiB, past any core this tool can map */
			if (!cli_integer(
				    "corestack",
				    frames ? "--max-frames" : "--max-output",
				    optarg, 1,
				    frames ? 1000000000 : (uint64_t)1 << 50,
				    &n))
				return EXIT_USAGE;
			*(frames ? &o->max_frames : &o->max_output) = (size_t)n;
			break;
		}
		case 'l':
			o->layout = optarg;
			break;
		case 'p': {
			uint64_t pid;
			if (!cli_integer("corestack", "--pid", optarg, 1,
					 CLI_PID_MAX, &pid))
				return EXIT_USAGE;
			o->pid = (int)pid;
			break;
		}
		case 'b':
			o->nonblocking = 1;
			break;
		case 'A':
			o->native_all = 1;
			/* fall through */
		case 'N':
			o->native = 1;
			break;
		case 'F':
			o->no_fibers = 1;
			break;
		case 'o':
			o->locals = 1;
			break;
		case 'X':
			if (!cli_integer("corestack", "--max-scan", optarg, 1,
					 (uint64_t)1 << 50, &o->max_scan))
				return EXIT_USAGE;
			break;
		case 'Y':
			o->fibers_by_scan = 1;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_COMPLETE);
		case 'V':
			printf("corestack %s (JSON schema %d)\n", CS_VERSION,
			       CS_JSON_SCHEMA);
			exit(EXIT_COMPLETE);
		default:
			cli_unknown_option("corestack", c, argv);
			return EXIT_USAGE;
		}
	}
	int rest = argc - optind;
	input_args_finish(&o->in);
	if (o->pid && o->nonblocking && o->native) {
		fputs("corestack: --native needs the threads paused: not with "
		      "--nonblocking\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (o->pid && !input_args_fit_pid(&o->in, "corestack"))
		return EXIT_USAGE;
	if (o->pid && o->format >= CS_FORMAT_MARKDOWN) {
		fputs("corestack: --format markdown and junit summarize "
		      "cores, not a --pid\n",
		      stderr);
		return EXIT_USAGE;
	}
	if ((o->layout || o->pid) && rest == 0)
		return 0;
	if (o->pid) {
		fputs("corestack: --pid takes no CORE argument\n", stderr);
		return EXIT_USAGE;
	}
	if (o->nonblocking) {
		fputs("corestack: --nonblocking goes with --pid\n", stderr);
		return EXIT_USAGE;
	}
	if (rest < 1) {
		fputs("corestack: name a CORE (and its EXECUTABLE if the core "
		      "cannot), or --pid PID (see corestack --help)\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (rest > 2) {
		fprintf(stderr,
			"corestack: one CORE and at most one EXECUTABLE, "
			"not also '%s' (see corestack --help)\n",
			argv[optind + 2]);
		return EXIT_USAGE;
	}
	o->core = argv[optind];
	o->executable = rest == 2 ? argv[optind + 1] : NULL;
	return 0;
}

/* Fail with the one-line message of err, and with --json its document on
 * stdout too. */
static int unusable(const struct options *o, struct cs_error *err)
{
	fprintf(stderr, "corestack: %s\n", err->message);
	if (o->renderer && o->renderer == cs_renderer_find("json"))
		cs_render_error_json(stdout, err, o->core, o->pid);
	cs_error_destroy(err);
	return EXIT_UNUSABLE;
}

static int print_layout(const char *path, const struct options *o)
{
	struct rv_layout layout;
	int cached;
	struct cs_ruby_options ropts = {.debug_dirs = o->in.debug_dirs,
					.debug_dir_advice = DEBUG_DIR_ADVICE,
					.cache_dir = o->in.cache_dir};
	struct cs_error *err =
		cs_ruby_layout_of(path, &ropts, &layout, &cached);
	if (err)
		return unusable(o, err);
	if (cached)
		printf("# %s: layout from the cache\n", path);
	else
		printf("# %s: layout resolved from DWARF, indexed %zu of %zu "
		       "compile units\n",
		       path, layout.units_read, layout.units_total);
	static const char *const sources[] = {"missing", "dwarf", "macro",
					      "fallback", "elf"};
	for (int i = 0; i < RVL_COUNT; i++) {
		const struct rv_item *it = &layout.items[i];
		printf("%-28s %-8s %lld", rv_layout_item_name(i),
		       sources[it->source], (long long)it->value);
		if (it->size)
			printf(" size %u", it->size);
		if (it->bit_size)
			printf(" bits %u+%u", it->bit_pos, it->bit_size);
		putchar('\n');
	}
	for (int i = 0; i < RVE_COUNT; i++)
		for (uint32_t k = 0; k < layout.enums[i].count; k++)
			printf("%s:%s %lld\n", rv_layout_enums_name(i),
			       layout.enums[i].e[k].name,
			       (long long)layout.enums[i].e[k].value);
	return EXIT_COMPLETE;
}

/* CORESTACK_READ_STATS (tests/bench.py): what the snapshot read of the
 * target, on stderr: the floor a snapshot's cost is measured against. */
static void read_stats(struct cs_engine *e, const struct cs_report *r)
{
	struct cs_read_counts c = cs_engine_read_counts(e);
	size_t frames = 0;
	for (size_t i = 0; i < r->ruby->nthreads; i++) {
		frames += r->ruby->threads[i].nframes;
		for (size_t k = 0; k < r->ruby->threads[i].nfibers; k++)
			frames += r->ruby->threads[i].fibers[k].nframes;
	}
	fprintf(stderr,
		"corestack: read stats: %llu reads, %llu bytes, %llu reads of "
		"8 bytes or less; %zu threads, %zu Ruby frames; %llu "
		"distinct bytes in %llu pages, copied once in %llu ns\n",
		(unsigned long long)c.reads, (unsigned long long)c.bytes,
		(unsigned long long)c.small, r->ruby->nthreads, frames,
		(unsigned long long)c.distinct, (unsigned long long)c.pages,
		(unsigned long long)c.touch_ns);
	/* CORESTACK_READ_LOG=FILE: that union, "address length" a line, for
	 * the cold floor (tests/bench_fibers.py reads those bytes from the
	 * core after dropping it from the page cache) */
	const char *log = getenv("CORESTACK_READ_LOG");
	FILE *f = log ? fopen(log, "w") : NULL;
	if (!f)
		return;
	size_t n;
	const struct cs_read_range *range = cs_engine_read_ranges(e, &n);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%llx %llu\n", (unsigned long long)range[i].addr,
			(unsigned long long)range[i].len);
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "record") == 0)
		return cs_record_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "top") == 0)
		return cs_top_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "heap") == 0)
		return cs_heap_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "bundle") == 0)
		return cs_bundle_main(argc - 1, argv + 1);
	struct options o = {0};
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	if (o.layout)
		return print_layout(o.layout, &o);
	struct stat st;
	bool directory = o.core && stat(o.core, &st) == 0 &&
			 S_ISDIR(st.st_mode);
	if (directory && o.executable) {
		fprintf(stderr,
			"corestack: %s is a directory: each core's executable "
			"is found from the core, name none\n",
			o.core);
		return EXIT_USAGE;
	}

	struct cs_engine_request req = {
		.target = {.core = o.core,
			   .pid = o.pid,
			   .pause = !o.nonblocking,
			   .sysroot = o.in.sysroot,
			   .lib_search_path = o.in.lib_search_path,
			   .executable = o.executable},
		.debug_dirs = o.in.debug_dirs,
		.debug_dir_advice = DEBUG_DIR_ADVICE,
		.cache_dir = o.in.cache_dir,
		/* for the benchmarks only: no option, no effect on output */
		.count_reads = getenv("CORESTACK_READ_STATS") != NULL,
		.model = {.max_frames = o.max_frames,
			  .max_output_bytes = cs_output_budget(
				  o.max_output, o.pid ? NULL : o.core),
			  .frame_flags = o.native,
			  .fibers_by_scan = o.fibers_by_scan,
			  .max_scan_bytes = o.max_scan},
	};
	struct cs_bundle_input bundle;
	bool is_bundle = false;
	struct cs_error *err =
		o.core && !directory ? cs_bundle_input_open(o.core, &req,
							    &bundle, &is_bundle)
				     : NULL;
	if (err && err->code == CS_ERR_USAGE) {
		fprintf(stderr, "corestack: %s\n", err->message);
		cs_error_destroy(err);
		return EXIT_USAGE;
	}
	if (err)
		return unusable(&o, err);
	if (is_bundle) /* the budget of the core inside */
		req.model.max_output_bytes =
			cs_output_budget(o.max_output, req.target.core);
	struct cs_snapshot_options sopts = {
		.fibers = !o.no_fibers,
		.locals = o.locals,
		.native = o.native,
		.native_all = o.native_all,
		.max_native_frames = NATIVE_MAX_FRAMES,
		.check_files = true,
		.glibc_tids = true,
		.pid_hint = -1,
	};
	if (directory || o.format >= CS_FORMAT_MARKDOWN) {
		struct cs_core_run run = {.req = req,
					  .snap = sopts,
					  .max_output = o.max_output,
					  .format = o.format};
		rc = cs_core_dir_run(directory ? o.core : req.target.core,
				     directory, &run);
		if (is_bundle)
			cs_bundle_input_close(&bundle);
		return rc;
	}
	struct cs_engine *engine;
	if ((err = cs_engine_open(&req, &engine))) {
		rc = unusable(&o, err);
		if (is_bundle)
			cs_bundle_input_close(&bundle);
		return rc;
	}
	struct cs_snapshot snap;
	if ((err = cs_engine_snapshot(engine, &sopts, &snap))) {
		rc = unusable(&o, err);
	} else {
		/* Only this thread writes the report: stdio need not lock
		 * for each of the many small writes of thousands of
		 * stacks. */
		__fsetlocking(stdout, FSETLOCKING_BYCALLER);
		(o.renderer ? o.renderer : &cs_renderers[0])
			->render(stdout, &snap.report, NULL);
		rc = snap.report.complete ? EXIT_COMPLETE : EXIT_PARTIAL;
		if (req.count_reads)
			read_stats(engine, &snap.report);
	}
	cs_snapshot_free(&snap);
	cs_engine_close(engine);
	if (is_bundle)
		cs_bundle_input_close(&bundle);
	return rc;
}
