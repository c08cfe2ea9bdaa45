#include "source_list.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../process/live.h"

/* gdb's "target:" prefix reads files from where the target runs, which
 * for a local target is the root. */
static const char *sysroot_dir(const char *sysroot)
{
	if (!sysroot)
		return "";
	if (strncmp(sysroot, "target:", 7) == 0)
		sysroot += 7;
	return strcmp(sysroot, "/") == 0 ? "" : sysroot;
}

/* The first instant of the wall clock after which process pid had surely
 * started (false: unknown). /proc gives its start in clock ticks since
 * boot, rounded down; the boot time is what the wall clock reads less the
 * time since boot (as /proc/stat's btime, which drops its fraction). */
static bool process_started_by(int pid, struct timespec *ret)
{
	char buf[1024];
	const char *p = cs_proc_stat_fields(pid, buf, sizeof(buf));
	unsigned long long start = 0;
	/* field 22 (starttime) is the 20th after the command: p is at the
	 * space before field 3 */
	for (int field = 3; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	struct timespec real, boot;
	long hz = sysconf(_SC_CLK_TCK);
	if (!p || sscanf(p, " %llu", &start) != 1 || hz <= 0 ||
	    clock_gettime(CLOCK_REALTIME, &real) != 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
		return false;
	const long long ns = 1000000000LL;
	long long at = (real.tv_sec - boot.tv_sec) * ns +
		       (real.tv_nsec - boot.tv_nsec) +
		       (long long)((start + 1) * (ns / hz));
	ret->tv_sec = at / ns;
	ret->tv_nsec = at % ns;
	return true;
}

static bool later(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec
				      : a->tv_nsec > b->tv_nsec;
}

/* "note: ... newer than ..." when the file changed after the reference
 * time, else nothing. */
static void newer_note(FILE *out, const char *file, const struct stat *st,
		       const struct gx_list_request *req)
{
	struct stat core;
	struct timespec ref;
	const char *what = NULL;
	/* to the nanosecond: a file written within the second before is not
	 * newer */
	if (req->core_path && stat(req->core_path, &core) == 0) {
		ref = core.st_mtim;
		what = "the core was written";
	} else if (req->pid > 0 && process_started_by(req->pid, &ref)) {
		what = "the process started";
	}
	if (!what || !later(&st->st_mtim, &ref))
		return;
	char when[32] = "?";
	struct tm tm;
	if (localtime_r(&st->st_mtime, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(out,
		"note: %s was modified (%s) after %s: the lines may not be "
		"those that ran\n",
		file, when, what);
}

static struct cs_error *file_of(const struct gx_list_request *req, char **ret)
{
	const char *path = req->path;
	*ret = NULL;
	if (!path || !*path)
		return cs_error_create(CS_ERR_LOOKUP,
				       "the frame names no source file");
	if (path[0] == '<')
		return cs_error_create(CS_ERR_LOOKUP,
				       "%s is Ruby's own code, compiled into "
				       "Ruby: no file on disk",
				       path);
	int rc =
		path[0] == '/'
			? asprintf(ret, "%s%s", sysroot_dir(req->sysroot), path)
			: asprintf(ret, "%s%s%s", req->cwd ? req->cwd : "",
				   req->cwd ? "/" : "", path);
	if (rc < 0) {
		*ret = NULL;
		return &cs_error_nomem;
	}
	return NULL;
}

struct cs_error *gx_list_source(const struct gx_list_request *req, char **out,
				int *last_shown)
{
	*out = NULL;
	*last_shown = 0;
	char *file, *line = NULL, *text = NULL;
	size_t cap = 0, size = 0;
	struct cs_error *err = file_of(req, &file);
	if (err)
		return err;
	FILE *src = fopen(file, "r");
	struct stat st;
	if (!src || fstat(fileno(src), &st) != 0) {
		err = cs_error_create(CS_ERR_OS, "cannot open %s: %s%s", file,
				      strerror(errno),
				      req->path[0] != '/' && !req->cwd
					      ? " (a relative path, taken "
						"from the debugger's "
						"directory)"
					      : "");
		goto done;
	}
	FILE *f = open_memstream(&text, &size);
	if (!f) {
		err = &cs_error_nomem;
		goto done;
	}
	newer_note(f, file, &st, req);
	int n = 0, first = req->first < 1 ? 1 : req->first;
	while (getline(&line, &cap, src) >= 0 && ++n <= req->last) {
		if (n < first)
			continue;
		line[strcspn(line, "\n")] = '\0';
		fprintf(f, "%s%5d  %s\n", n == req->line ? "->" : "  ", n,
			line);
		*last_shown = n;
	}
	if (fclose(f) != 0) {
		err = &cs_error_nomem;
		goto done;
	}
	if (!*last_shown)
		err = cs_error_create(CS_ERR_LOOKUP,
				      "line %d out of range; \"%s\" has %d "
				      "lines",
				      first, file, n);
done:
	if (src)
		fclose(src);
	free(line);
	free(file);
	if (err)
		free(text);
	else
		*out = text;
	return err;
}
