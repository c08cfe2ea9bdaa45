/* corestack bundle: one file holding a core and every file its analysis
 * reads (process/bundle.h, docs/bundle.md), and the other way, a bundle
 * given in place of a core, unpacked for the analysis. */
#include "bundle.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../engine/bundle_files.h"
#include "../util/cli_args.h"

#define PROG "corestack bundle"

enum { EXIT_OK = 0, EXIT_PARTIAL = 1, EXIT_UNUSABLE = 2, EXIT_USAGE = 64 };

static void usage(FILE *out)
{
	fputs("usage: corestack bundle [options] -o FILE CORE [EXECUTABLE]\n"
	      "       corestack bundle --extract -o DIR FILE\n"
	      "\n"
	      "Write one compressed file holding CORE and every file its\n"
	      "analysis reads (the executable, libruby and the other\n"
	      "libraries the core maps, their debug files), matched by\n"
	      "build-id. `corestack FILE` then reads it on any machine.\n"
	      "\n"
	      "With --extract, lay the bundle FILE out in DIR (new, or\n"
	      "empty) as on the machine that wrote it: DIR/core, each\n"
	      "executable and library at its path under DIR, the debug\n"
	      "files under DIR/" CS_BUNDLE_DEBUG_DIR
	      "/.build-id; then print the\n"
	      "gdb, lldb and corestack command lines that open it.\n"
	      "\n"
	      "  -o, --output FILE  the bundle to write (with --extract: DIR)\n"
	      "  --extract          extract the bundle FILE into DIR\n"
	      "  --force            overwrite FILE if it exists\n"
	      "  --sysroot DIR      find the files the core names under DIR\n"
	      "  --lib-search-path DIRS  colon-separated directories to find\n"
	      "                     the core's files in, by file name\n"
	      "  --debug-dir DIR    look for debug files under DIR too\n"
	      "                     (repeatable)\n"
	      "  -h, --help         this help\n"
	      "\n"
	      "Exit status: 0 written, 1 written without some file (each\n"
	      "named on stderr), 2 not written (the core cannot be read, or\n"
	      "FILE cannot be written), 64 usage. With --extract: 0\n"
	      "extracted, 2 not (the bundle is unusable, DIR is not empty or\n"
	      "cannot be written; nothing is left in it), 64 usage.\n",
	      out);
}

struct bundle_options {
	const char *out;
	int force;
	int extract; /* --extract: out is a directory, core the bundle */
	const char *core, *executable;
	struct input_args in; /* the target's files */
};

static int parse(int argc, char **argv, struct bundle_options *o)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"extract", no_argument, NULL, 'x'},
		INPUT_ARGS_FILE_OPTIONS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		enum input_arg taken = input_args_take(&o->in, PROG, c, optarg);
		if (taken == INPUT_ARG_BAD)
			return EXIT_USAGE;
		if (taken == INPUT_ARG_TAKEN)
			continue;
		switch (c) {
		case 'o':
			o->out = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 'x':
			o->extract = 1;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		default:
			cli_unknown_option(PROG, c, argv);
			return EXIT_USAGE;
		}
	}
	int rest = argc - optind;
	if (o->extract) {
		if (o->force || o->in.sysroot || o->in.lib_search_path ||
		    o->in.ndebug_dirs) {
			fputs(PROG ": --extract takes no --force, --sysroot, "
				   "--lib-search-path or --debug-dir: they "
				   "go with writing a bundle\n",
			      stderr);
			return EXIT_USAGE;
		}
		if (!o->out || rest != 1) {
			fputs(PROG ": --extract takes one bundle FILE and "
				   "-o DIR (see corestack bundle --help)\n",
			      stderr);
			return EXIT_USAGE;
		}
		o->core = argv[optind];
		return 0;
	}
	input_args_finish(&o->in);
	if (!o->out || rest < 1 || rest > 2) {
		fputs(PROG
		      ": name the bundle with -o FILE, one CORE and at "
		      "most one EXECUTABLE (see corestack bundle --help)\n",
		      stderr);
		return EXIT_USAGE;
	}
	o->core = argv[optind];
	o->executable = rest == 2 ? argv[optind + 1] : NULL;
	return 0;
}

int cs_bundle_main(int argc, char **argv)
{
	struct bundle_options o = {0};
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	if (o.extract)
		return cs_bundle_extract_main(o.core, o.out);
	if (!o.force && access(o.out, F_OK) == 0) {
		fprintf(stderr,
			PROG ": %s: exists; pass --force to overwrite it\n",
			o.out);
		return EXIT_UNUSABLE;
	}
	if (cs_bundle_is(o.core)) {
		fprintf(stderr, PROG ": %s: is a bundle already\n", o.core);
		return EXIT_UNUSABLE;
	}
	struct cs_target_request target = {
		.core = o.core,
		.executable = o.executable,
		.sysroot = o.in.sysroot,
		.lib_search_path = o.in.lib_search_path,
	};
	struct cs_bundle_files files;
	struct cs_error *err =
		cs_bundle_files_find(&target, o.in.debug_dirs, &files);
	if (err) {
		fprintf(stderr, PROG ": %s\n", err->message);
		cs_error_destroy(err);
		return EXIT_UNUSABLE;
	}
	for (size_t i = 0; i < files.nmissing; i++)
		fprintf(stderr, PROG ": warning: not bundled: %s\n",
			files.missing[i]);
	err = cs_bundle_write(o.out, o.force, files.entries, files.n);
	if (err) {
		fprintf(stderr, PROG ": %s\n", err->message);
		cs_error_destroy(err);
		cs_bundle_files_free(&files);
		return EXIT_UNUSABLE;
	}
	size_t count[CS_BUNDLE_DEBUG + 1] = {0};
	uint64_t bytes = 0;
	for (size_t i = 0; i < files.n; i++) {
		count[files.entries[i].kind]++;
		bytes += files.entries[i].size;
	}
	struct stat st;
	uint64_t written = stat(o.out, &st) == 0 ? (uint64_t)st.st_size : 0;
	fprintf(stderr,
		PROG ": wrote %s: the core, %zu executable, %zu libraries, "
		     "%zu debug files (%llu MiB, %llu MiB compressed)%s\n",
		o.out, count[CS_BUNDLE_EXE], count[CS_BUNDLE_LIB],
		count[CS_BUNDLE_DEBUG], (unsigned long long)(bytes >> 20),
		(unsigned long long)(written >> 20),
		files.nmissing ? "; some files are missing (above)" : "");
	rc = files.nmissing ? EXIT_PARTIAL : EXIT_OK;
	cs_bundle_files_free(&files);
	return rc;
}

/* The bundle unpacked now, removed at exit or on a fatal signal; the one
 * being extracted, removed if the extraction does not finish. */
static struct cs_bundle_input *live_input;
static const struct cs_bundle *live_extract;

static void remove_live(void)
{
	if (live_input && live_input->dir) {
		cs_bundle_remove_files(&live_input->bundle);
		/* also while the unpacking has not yet set bundle.dir */
		(void)rmdir(live_input->dir);
	}
	if (live_extract)
		cs_bundle_remove_files(live_extract);
}

static void on_fatal_signal(int sig)
{
	remove_live();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void register_guard(void)
{
	static bool registered;
	if (!registered) {
		registered = true;
		(void)atexit(remove_live);
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT,
					   SIGPIPE};
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
			struct sigaction sa = {.sa_handler = on_fatal_signal};
			struct sigaction old;
			if (sigaction(sigs[i], NULL, &old) == 0 &&
			    old.sa_handler == SIG_DFL)
				sigaction(sigs[i], &sa, NULL);
		}
	}
}

static void guard(struct cs_bundle_input *in)
{
	live_input = in;
	register_guard();
}

void cs_bundle_guard_extract(const struct cs_bundle *b)
{
	live_extract = b;
	if (b)
		register_guard();
}

struct cs_error *cs_bundle_input_open(const char *path,
				      struct cs_engine_request *req,
				      struct cs_bundle_input *in, bool *is)
{
	memset(in, 0, sizeof(*in));
	*is = cs_bundle_is(path);
	if (!*is)
		return NULL;
	if (req->target.executable)
		return cs_error_create(CS_ERR_USAGE,
				       "%s: a bundle holds its executable: "
				       "name no EXECUTABLE with it",
				       path);
	const char *tmp = getenv("TMPDIR");
	if (asprintf(&in->dir, "%s/corestack-bundle-XXXXXX",
		     tmp && *tmp ? tmp : "/tmp") < 0) {
		in->dir = NULL;
		return &cs_error_nomem;
	}
	/* the handlers first: a signal from here on leaves nothing */
	in->bundle.dir = in->dir;
	guard(in);
	if (!mkdtemp(in->dir)) {
		struct cs_error *err = cs_error_create(
			CS_ERR_OS,
			"%s: cannot make a directory to unpack it in (%s): %s; "
			"set TMPDIR to a writable directory",
			path, in->dir, strerror(errno));
		cs_bundle_input_close(in);
		return err;
	}
	struct cs_error *err = cs_bundle_unpack(path, in->dir, &in->bundle);
	if (err) {
		cs_bundle_input_close(in);
		return err;
	}
	const char *user = req->target.lib_search_path;
	size_t k = 0;
	in->debug_dirs[k++] = in->dir;
	for (size_t i = 0; req->debug_dirs && req->debug_dirs[i] &&
			   k < CS_BUNDLE_MAX_DEBUG_DIRS;
	     i++)
		in->debug_dirs[k++] = req->debug_dirs[i];
	in->debug_dirs[k] = NULL;
	if (asprintf(&in->core, "%s/core", in->dir) < 0 ||
	    asprintf(&in->lib_path, "%s%s%s", in->dir, user ? ":" : "",
		     user ? user : "") < 0) {
		in->core = in->lib_path = NULL;
		cs_bundle_input_close(in);
		return &cs_error_nomem;
	}
	if (!req->target.sysroot) {
		if (asprintf(&in->sysroot, "%s/none", in->dir) < 0) {
			in->sysroot = NULL;
			cs_bundle_input_close(in);
			return &cs_error_nomem;
		}
		req->target.sysroot = in->sysroot;
	}
	req->target.core = in->core;
	req->target.lib_search_path = in->lib_path;
	req->target.file_map = in->bundle.file_map;
	req->debug_dirs = in->debug_dirs;
	req->bundle = &in->bundle;
	return NULL;
}

void cs_bundle_input_close(struct cs_bundle_input *in)
{
	if (in->dir)
		cs_bundle_remove_files(&in->bundle);
	if (live_input == in)
		live_input = NULL;
	cs_bundle_free(&in->bundle);
	free(in->dir);
	free(in->core);
	free(in->lib_path);
	free(in->sysroot);
	memset(in, 0, sizeof(*in));
}
