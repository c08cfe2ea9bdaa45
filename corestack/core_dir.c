/* corestack DIR: every core of a directory, then the crash groups
 * (core_dir.h). */
#include "core_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/json.h"
#include "../process/open.h"
#include "../render/crash_groups.h"
#include "../render/render.h"
#include "bundle.h"

size_t cs_output_budget(size_t max_output, const char *core)
{
	struct stat st;
	const size_t floor = (size_t)64 << 20;
	if (max_output)
		return max_output;
	if (!core || stat(core, &st) != 0 || st.st_size < 0)
		return 0; /* the model's default */
	uint64_t size = (uint64_t)st.st_size;
	return size > (SIZE_MAX - floor) / 4 ? SIZE_MAX
					     : floor + 4 * (size_t)size;
}

/* What a directory entry is, by what it holds. */
enum entry_kind { ENTRY_CORE, ENTRY_BUNDLE, ENTRY_SKIPPED, ENTRY_UNREADABLE };

/* Regular files only (a FIFO would block, a device be read forever),
 * symlinks followed (a loop is no file); then the first bytes say
 * whether it may be a core. *why: strerror of a file that cannot be
 * opened. */
static enum entry_kind entry_kind(int dir, const char *name, const char **why)
{
	struct stat st;
	if (fstatat(dir, name, &st, 0) != 0 || !S_ISREG(st.st_mode))
		return ENTRY_SKIPPED;
	int fd = openat(dir, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		*why = strerror(errno);
		return ENTRY_UNREADABLE;
	}
	uint8_t head[64];
	ssize_t got = pread(fd, head, sizeof(head), 0);
	int saved = errno;
	close(fd);
	if (got < 0) {
		*why = strerror(saved);
		return ENTRY_UNREADABLE;
	}
	if (got >= (ssize_t)strlen(CS_BUNDLE_MAGIC) &&
	    !memcmp(head, CS_BUNDLE_MAGIC, strlen(CS_BUNDLE_MAGIC)))
		return ENTRY_BUNDLE; /* corestack bundle's output */
	return cs_looks_like_core(head, (size_t)got) ? ENTRY_CORE
						     : ENTRY_SKIPPED;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's entry names, sorted (bytewise: the same order on every
 * machine); NULL with errno set when it cannot be read. */
static char **list_dir(DIR *d, size_t *n)
{
	char **names = NULL;
	size_t cap = 0;
	struct dirent *e;
	*n = 0;
	errno = 0;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			char **grown = realloc(names, cap * sizeof(*names));
			if (!grown)
				goto fail;
			names = grown;
		}
		if (!(names[*n] = strdup(e->d_name)))
			goto fail;
		++*n;
		errno = 0;
	}
	if (errno)
		goto fail;
	if (*n > 1)
		qsort(names, *n, sizeof(*names), name_cmp);
	return names ? names : calloc(1, sizeof(*names));
fail:
	for (size_t i = 0; i < *n; i++)
		free(names[i]);
	free(names);
	if (!errno)
		errno = ENOMEM;
	return NULL;
}

struct out {
	const struct cs_core_run *run;
	struct cs_core_set set;
	struct json json; /* CS_FORMAT_JSON: the document being written */
};

/* A core that cannot be read: its entry in "cores" (JSON), its line. */
static void broken(struct out *o, const char *name, const char *reason)
{
	if (o->run->format == CS_FORMAT_JSON) {
		json_begin_object(&o->json, NULL);
		json_string(&o->json, "file", name);
		json_string(&o->json, "status", "broken");
		json_string(&o->json, "error", reason);
		json_null(&o->json, "report");
		json_end_object(&o->json);
	} else if (o->run->format == CS_FORMAT_TEXT) {
		printf("broken: %s\n\n", reason);
	}
	cs_core_set_add_broken(&o->set, name, reason);
}

/* One core (or a bundle: the core inside, with its files), read by its
 * own engine and released, the bundle's files removed, before the next. */
static void read_core(struct out *o, const char *path, const char *name,
		      bool bundled)
{
	struct cs_engine_request req = o->run->req;
	req.target.core = path;
	if (o->run->format == CS_FORMAT_TEXT)
		printf("== %s\n", name);
	struct cs_bundle_input in = {0};
	bool is = false;
	struct cs_error *err =
		bundled ? cs_bundle_input_open(path, &req, &in, &is) : NULL;
	req.model.max_output_bytes =
		cs_output_budget(o->run->max_output, req.target.core);
	struct cs_engine *engine = NULL;
	struct cs_snapshot snap = {0};
	if (!err)
		err = cs_engine_open(&req, &engine);
	if (!err)
		err = cs_engine_snapshot(engine, &o->run->snap, &snap);
	if (err) {
		broken(o, name, err->message);
		cs_error_destroy(err);
	} else if (o->run->format == CS_FORMAT_JSON) {
		json_begin_object(&o->json, NULL);
		json_string(&o->json, "file", name);
		json_string(&o->json, "status",
			    snap.report.crash ? "crash" : "no_crash");
		json_null(&o->json, "error");
		cs_render_json_report(&o->json, "report", &snap.report, NULL);
		json_end_object(&o->json);
		cs_core_set_add(&o->set, name, &snap.report);
	} else {
		if (o->run->format == CS_FORMAT_TEXT) {
			cs_render_text(stdout, &snap.report, NULL);
			putchar('\n');
		}
		cs_core_set_add(&o->set, name, &snap.report);
	}
	cs_snapshot_free(&snap);
	cs_engine_close(engine);
	if (is)
		cs_bundle_input_close(&in);
}

/* Every core of the directory; false (errno set) when it cannot be read. */
static bool read_dir(struct out *o, const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	size_t n;
	char **names = list_dir(d, &n);
	if (!names) {
		int saved = errno;
		closedir(d);
		errno = saved;
		return false;
	}
	size_t plen = strlen(path);
	bool slash = plen && path[plen - 1] == '/';
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;
		char *full = NULL;
		enum entry_kind kind = entry_kind(dirfd(d), names[i], &why);
		switch (kind) {
		case ENTRY_SKIPPED:
			o->set.skipped++;
			break;
		case ENTRY_UNREADABLE: {
			char *msg = NULL;
			if (o->run->format == CS_FORMAT_TEXT)
				printf("== %s\n", names[i]);
			if (asprintf(&msg,
				     "%s%s%s: cannot be read (%s): check "
				     "its permissions",
				     path, slash ? "" : "/", names[i], why) < 0)
				msg = NULL;
			broken(o, names[i], msg ? msg : "cannot be read");
			free(msg);
			break;
		}
		case ENTRY_CORE:
		case ENTRY_BUNDLE:
			if (asprintf(&full, "%s%s%s", path, slash ? "" : "/",
				     names[i]) < 0) {
				broken(o, names[i], "out of memory");
				break;
			}
			read_core(o, full, names[i], kind == ENTRY_BUNDLE);
			free(full);
			break;
		}
		free(names[i]);
	}
	free(names);
	closedir(d);
	return true;
}

static int exit_code(const struct cs_core_set *s)
{
	if (cs_core_set_crashes(s))
		return CS_EXIT_CRASHES;
	if (s->nbroken || s->oom)
		return CS_EXIT_UNUSABLE;
	return s->partial ? CS_EXIT_PARTIAL : CS_EXIT_COMPLETE;
}

int cs_core_dir_run(const char *path, bool directory,
		    const struct cs_core_run *run)
{
	struct out *o = calloc(1, sizeof(*o));
	if (!o) {
		fputs("corestack: out of memory\n", stderr);
		return CS_EXIT_UNUSABLE;
	}
	o->run = run;
	o->set.name = path;
	o->json.out = stdout;
	if (run->format == CS_FORMAT_JSON) {
		json_begin_object(&o->json, NULL);
		json_int(&o->json, "corestack_schema", CS_JSON_SCHEMA);
		json_int(&o->json, "corestack_schema_minor",
			 CS_JSON_SCHEMA_MINOR);
		json_string(&o->json, directory ? "directory" : "core", path);
		json_begin_array(&o->json, "cores");
	}
	int rc = -1;
	if (!directory) {
		read_core(o, path, path,
			  false); /* a bundle: unpacked by main */
	} else if (!read_dir(o, path)) {
		fprintf(stderr,
			"corestack: %s: cannot read the directory (%s): check "
			"its path and permissions\n",
			path, strerror(errno));
		rc = CS_EXIT_UNUSABLE;
	}
	cs_core_set_sort(&o->set);
	if (rc < 0)
		rc = exit_code(&o->set);
	size_t seen = cs_core_set_crashes(&o->set) + o->set.nno_crash +
		      o->set.nbroken;
	if (directory && seen == 0 && rc != CS_EXIT_UNUSABLE)
		fprintf(stderr,
			"corestack: %s: no core in it (%zu other files "
			"skipped)\n",
			path, o->set.skipped);
	switch (run->format) {
	case CS_FORMAT_TEXT:
		cs_core_set_text(stdout, &o->set);
		break;
	case CS_FORMAT_JSON:
		json_end_array(&o->json);
		cs_core_set_json(&o->json, &o->set);
		json_int(&o->json, "exit_code", rc);
		json_end_object(&o->json);
		break;
	case CS_FORMAT_MARKDOWN:
		cs_core_set_markdown(stdout, &o->set);
		break;
	case CS_FORMAT_JUNIT:
		cs_core_set_junit(stdout, &o->set);
		break;
	}
	cs_core_set_free(&o->set);
	free(o);
	return rc;
}
