/* corestack heap: the census of a Ruby process's GC heap, from a core or
 * a live process (stopped while its heap is read, then resumed).
 *
 *   corestack heap [--json] [--top N] CORE [EXECUTABLE]
 *   corestack heap [--json] [--top N] --pid PID
 *   corestack heap --retainers ADDRESS|CLASS [--top N] [--json] ...
 *   corestack heap --dump FILE [--json] ...
 *
 * Exit codes (docs/usage.md): 0 complete, 1 partial (pages or objects
 * skipped, each counted in the output), 2 unusable input or a heap that
 * cannot be walked (one line on stderr says why), 64 usage. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cli_args.h"
#include "../engine/engine.h"
#include "../render/render.h"
#include "../render/render_heap.h"
#include "../rubyvm/heap_census.h"
#include "../engine/heap_graph.h"
#include "input_args.h"

enum { EXIT_OK = 0, EXIT_PARTIAL = 1, EXIT_UNUSABLE = 2, EXIT_USAGE = 64 };

#define PROG "corestack heap"
#define DEFAULT_TOP 30
#define DEFAULT_RETAINER_TOP 3

struct heap_options {
	const char *core, *executable;
	int pid;
	int json;
	uint64_t top;
	bool top_given;
	/* --retainers: an object's address, or a class's name */
	const char *retainers;
	uint64_t address;
	const char *dump; /* --dump: the file ("-": stdout) */
	struct input_args in;
};

static void heap_usage(FILE *out)
{
	fputs("usage: corestack heap [options] CORE [EXECUTABLE]\n"
	      "       corestack heap [options] --pid PID\n"
	      "\n"
	      "Count the objects of the Ruby process's GC heap by type and by\n"
	      "class, with the bytes they hold (docs/heap.md). A live process\n"
	      "is stopped while its heap is read.\n"
	      "\n"
	      "  --pid PID          a live process instead of a core\n"
	      "  --top N            class rows shown (default 30); with\n"
	      "                     --retainers CLASS, instances (default 3)\n"
	      "  --retainers ADDRESS|CLASS\n"
	      "                     what keeps the object at ADDRESS (0x...)\n"
	      "                     alive, or the largest instances of CLASS:\n"
	      "                     the shortest path from a root to each\n"
	      "  --dump FILE        every object, in ObjectSpace.dump_all's\n"
	      "                     JSON lines, to FILE (- for stdout)\n"
	      "  --json             JSON output (docs/json-schema.md)\n"
	      "  --debug-dir DIR    look for debug files under DIR too\n"
	      "  --sysroot DIR      find the files the core names under DIR\n"
	      "  --lib-search-path DIRS  directories to find the core's\n"
	      "                     executable and libraries in\n"
	      "  --cache-dir DIR    layout cache; --no-cache to bypass it\n"
	      "  -h, --help         this help\n"
	      "\n"
	      "Exit status: 0 complete, 1 partial (skips counted in the\n"
	      "output), 2 unusable input or a heap that cannot be walked,\n"
	      "64 usage.\n",
	      out);
}

static int parse(int argc, char **argv, struct heap_options *o)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"top", required_argument, NULL, 't'},
		{"retainers", required_argument, NULL, 'r'},
		{"dump", required_argument, NULL, 'u'},
		{"json", no_argument, NULL, 'j'},
		INPUT_ARGS_FILE_OPTIONS,
		INPUT_ARGS_CACHE_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	uint64_t n;
	o->top = DEFAULT_TOP;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		enum input_arg taken = input_args_take(&o->in, PROG, c, optarg);
		if (taken == INPUT_ARG_BAD)
			return EXIT_USAGE;
		if (taken == INPUT_ARG_TAKEN)
			continue;
		switch (c) {
		case 'p':
			if (!cli_integer(PROG, "--pid", optarg, 1, CLI_PID_MAX,
					 &n))
				return EXIT_USAGE;
			o->pid = (int)n;
			break;
		case 't':
			if (!cli_integer(PROG, "--top", optarg, 1, 1000000000,
					 &o->top))
				return EXIT_USAGE;
			o->top_given = true;
			break;
		case 'r':
			o->retainers = optarg;
			if (!strncmp(optarg, "0x", 2) &&
			    !cli_hex_address(optarg, &o->address)) {
				fprintf(stderr,
					PROG ": --retainers takes an address "
					     "in hex (0x7f0012345678) or a "
					     "class name, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			if (!optarg[0]) {
				fputs(PROG ": --retainers takes an address "
					   "(0x...) or a class name\n",
				      stderr);
				return EXIT_USAGE;
			}
			break;
		case 'j':
			o->json = 1;
			break;
		case 'u':
			o->dump = optarg;
			break;
		case 'h':
			heap_usage(stdout);
			exit(EXIT_OK);
		default:
			cli_unknown_option(PROG, c, argv);
			return EXIT_USAGE;
		}
	}
	input_args_finish(&o->in);
	if (o->retainers && o->dump) {
		fputs(PROG ": --dump and --retainers are two runs\n", stderr);
		return EXIT_USAGE;
	}
	if (o->retainers && !o->top_given)
		o->top = DEFAULT_RETAINER_TOP;
	int rest = argc - optind;
	if (o->pid) {
		if (rest) {
			fputs(PROG ": --pid takes no CORE argument\n", stderr);
			return EXIT_USAGE;
		}
		if (!input_args_fit_pid(&o->in, PROG))
			return EXIT_USAGE;
		return 0;
	}
	if (rest < 1 || rest > 2) {
		fputs(PROG ": name one CORE (and its EXECUTABLE if the core "
			   "cannot), or --pid PID (see " PROG " --help)\n",
		      stderr);
		return EXIT_USAGE;
	}
	o->core = argv[optind];
	o->executable = rest == 2 ? argv[optind + 1] : NULL;
	return 0;
}

static int unusable(const struct heap_options *o, struct cs_error *err)
{
	fprintf(stderr, "corestack: %s\n", err->message);
	if (o->json)
		cs_render_error_json(stdout, err, o->core, o->pid);
	cs_error_destroy(err);
	return EXIT_UNUSABLE;
}

/* The paths, the engine closed (a live process runs again) before the
 * output. */
static int retainers(const struct heap_options *o, struct cs_engine *engine)
{
	struct rv_retention r;
	const struct rv_retention_request req = {
		.address = o->address,
		.class_name = o->address ? NULL : o->retainers,
		.top = (size_t)o->top,
	};
	struct cs_error *err = cs_engine_retainers(engine, &req, &r);
	cs_engine_close(engine);
	if (err) {
		rv_retention_free(&r);
		return unusable(o, err);
	}
	if (r.bad_input) {
		struct cs_error *bad = cs_error_create(
			CS_ERR_USAGE, "%s: %s",
			o->core ? o->core : "the process", r.bad_input);
		rv_retention_free(&r);
		return unusable(o, bad);
	}
	const struct cs_heap_source src = {o->core, o->pid, (size_t)o->top};
	if (o->json)
		cs_render_retainers_json(stdout, &r, &src);
	else
		cs_render_retainers_text(stdout, &r, &src);
	int rc = rv_retention_partial(&r) ? EXIT_PARTIAL : EXIT_OK;
	rv_retention_free(&r);
	return rc;
}

/* The dump into o->dump, then what was written: on stdout as text or
 * JSON, unless the dump went there. */
static int dump(const struct heap_options *o, struct cs_engine *engine, FILE *f)
{
	bool to_stdout = f == stdout;
	struct cs_dump_writer *w = malloc(sizeof(*w));
	struct rv_dump_stats st = {0};
	struct cs_error *err = w ? NULL : &cs_error_nomem;
	bool failed = false;
	if (w) {
		const struct rv_dump_callbacks cb = cs_dump_writer_start(w, f);
		err = cs_engine_dump(engine, &cb, &st);
		failed = !cs_dump_writer_finish(w);
	}
	cs_engine_close(engine);
	free(w);
	if (!to_stdout && fclose(f) != 0)
		failed = true;
	if (!err && (failed || st.stopped))
		err = cs_error_create(CS_ERR_OS,
				      "writing the dump to %s failed", o->dump);
	if (!err && st.not_walked)
		err = cs_error_create(CS_ERR_LOOKUP, "%s: %s",
				      o->core ? o->core : "the process",
				      st.error);
	if (err) {
		rv_dump_stats_free(&st);
		return unusable(o, err);
	}
	const struct cs_heap_source src = {o->core, o->pid, 0};
	if (!to_stdout && o->json)
		cs_render_dump_summary_json(stdout, &st, &src, o->dump);
	else if (!to_stdout)
		cs_render_dump_summary_text(stdout, &st, o->dump);
	int rc = rv_dump_partial(&st) ? EXIT_PARTIAL : EXIT_OK;
	if (to_stdout && rc == EXIT_PARTIAL)
		fprintf(stderr, "corestack: partial dump: %s\n",
			st.error ? st.error : "objects not read");
	rv_dump_stats_free(&st);
	return rc;
}

int cs_heap_main(int argc, char **argv)
{
	struct heap_options o = {0};
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	struct cs_engine_request req = {
		.target = {.core = o.core,
			   .pid = o.pid,
			   .pause = true,
			   .sysroot = o.in.sysroot,
			   .lib_search_path = o.in.lib_search_path,
			   .executable = o.executable},
		.page_cache = o.pid != 0,
		.debug_dirs = o.in.debug_dirs,
		.debug_dir_advice = "pass --debug-dir",
		.cache_dir = o.in.cache_dir,
	};
	/* the dump's file first: one that cannot be written is said before
	 * a live process is stopped */
	FILE *f = !o.dump               ? NULL
		  : strcmp(o.dump, "-") ? fopen(o.dump, "w")
					: stdout;
	if (o.dump && !f)
		return unusable(
			&o, cs_error_create(CS_ERR_OS,
					    "cannot write the dump to %s: %s",
					    o.dump, strerror(errno)));
	struct cs_engine *engine;
	struct cs_error *err = cs_engine_open(&req, &engine);
	if (err) {
		if (f && f != stdout)
			fclose(f);
		return unusable(&o, err);
	}
	if (o.retainers)
		return retainers(&o, engine);
	if (o.dump)
		return dump(&o, engine, f);
	struct rv_census census;
	err = rv_heap_census(engine->ruby.session, &census);
	cs_engine_close(engine); /* a live process runs again */
	if (err) {
		rv_census_free(&census);
		return unusable(&o, err);
	}
	const struct cs_heap_source src = {o.core, o.pid, (size_t)o.top};
	if (census.not_walked) {
		fprintf(stderr, "corestack: %s: %s\n",
			o.core ? o.core : "the process", census.error);
		if (o.json)
			cs_render_heap_json(stdout, &census, &src);
		rv_census_free(&census);
		return EXIT_UNUSABLE;
	}
	if (o.json)
		cs_render_heap_json(stdout, &census, &src);
	else
		cs_render_heap_text(stdout, &census, &src);
	rc = rv_census_partial(&census) ? EXIT_PARTIAL : EXIT_OK;
	rv_census_free(&census);
	return rc;
}
