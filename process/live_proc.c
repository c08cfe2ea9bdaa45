/* The live reader: /proc/PID files (status, stat, task list, maps, auxv,
 * cmdline, exe), each read whole with a bound on its size. */
#include "live_internal.h"

/* ---- small helpers ---- */

int64_t cs_live_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cs_live_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sleep a little, a little longer each time (10 µs up to 5 ms). */
void cs_live_nap(long *us)
{
	struct timespec ts = {0, *us * 1000};
	nanosleep(&ts, NULL);
	if (*us < 5000)
		*us *= 2;
}

/* The whole of a /proc file, NUL-terminated (the NUL not counted). Returns
 * 0 or an errno value; EFBIG beyond max unless truncate. */
int cs_live_slurp(const char *path, size_t max, int truncate, char **ret,
		  size_t *retlen)
{
	*ret = NULL;
	*retlen = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return e ? e : EIO;
	}
	size_t cap = 4096 < max ? 4096 : max, n = 0;
	char *buf = malloc(cap + 1);
	int err = buf ? 0 : ENOMEM;
	unsigned eintr = 0;
	while (!err) {
		if (n == cap) {
			if (cap >= max) {
				if (!truncate)
					err = EFBIG;
				break;
			}
			size_t ncap = cap * 2 < max ? cap * 2 : max;
			char *nbuf = realloc(buf, ncap + 1);
			if (!nbuf) {
				err = ENOMEM;
				break;
			}
			buf = nbuf;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			int e = errno;
			if (e == EINTR && ++eintr < 100)
				continue;
			err = e ? e : EIO;
		} else if (r == 0) {
			break;
		} else {
			n += (size_t)r;
		}
	}
	close(fd);
	if (err || !buf) {
		free(buf);
		return err ? err : ENOMEM;
	}
	buf[n] = 0;
	*ret = buf;
	*retlen = n;
	return 0;
}

/* What /proc/PID[/task/TID]/status says. */

int cs_live_read_status(int pid, int tid, struct cs_live_status *st)
{
	char path[64];
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid,
			 tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	char *text;
	size_t len;
	int e = cs_live_slurp(path, 64 << 10, 1, &text, &len);
	if (e)
		return e;
	memset(st, 0, sizeof(*st));
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strncmp(line, "Name:", 5) == 0) {
			const char *v = line + 5 + strspn(line + 5, " \t");
			snprintf(st->name, sizeof(st->name), "%s", v);
		} else if (strncmp(line, "State:", 6) == 0) {
			st->state = line[6 + strspn(line + 6, " \t")];
		} else {
			sscanf(line, "Tgid: %d", &st->tgid);
			sscanf(line, "PPid: %d", &st->ppid);
			sscanf(line, "TracerPid: %d", &st->tracer);
			sscanf(line, "Uid: %u", &st->uid);
			sscanf(line, "Threads: %d", &st->threads);
		}
		line = next;
	}
	free(text);
	return 0;
}

/* State letter of one thread from its stat, 0 if it is gone; *flags
 * (if flags) its task flags. */
char cs_live_stat(int pid, int tid, unsigned long *flags)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	char *text;
	size_t len;
	if (cs_live_slurp(path, 4096, 1, &text, &len) != 0)
		return 0;
	/* comm may hold ')' and spaces: the state follows the last ')' */
	char *paren = strrchr(text, ')');
	char state = paren && paren[1] == ' ' ? paren[2] : 0;
	/* ") S ppid pgrp session tty_nr tpgid flags" */
	if (flags && (!state ||
		      sscanf(paren + 3, "%*d %*d %*d %*d %*d %lu", flags) != 1))
		*flags = 0;
	free(text);
	return state;
}

char cs_live_thread_state(int pid, int tid)
{
	return cs_live_stat(pid, tid, NULL);
}

const char *cs_proc_stat_fields(int pid, char *buf, size_t size)
{
	char path[32];
	if (size < 2)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	const char *paren = strrchr(buf, ')');
	return paren ? paren + 1 : NULL;
}

/* How many threads the kernel counts in process pid (num_threads in its
 * stat, read without allocating: a sampler asks at every pause); -1 if
 * unreadable. */
int cs_live_kernel_thread_count(int pid)
{
	char text[1024];
	/* " S ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice num_threads" */
	const char *fields = cs_proc_stat_fields(pid, text, sizeof(text));
	int count;
	if (!fields || sscanf(fields,
			      " %*c %*d %*d %*d %*d %*d %*u %*u "
			      "%*u %*u %*u %*u %*u %*d %*d %*d %*d %d",
			      &count) != 1)
		return -1;
	return count;
}

static int cs_live_cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Tids in /proc/PID/task, sorted. Returns 0 or errno (E2BIG: too many). */
int cs_live_list_tasks(int pid, int **ret, size_t *count)
{
	*ret = NULL;
	*count = 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *dir = opendir(path);
	if (!dir)
		return errno;
	size_t n = 0, cap = 16;
	int *tids = malloc(cap * sizeof(*tids));
	int err = tids ? 0 : ENOMEM;
	struct dirent *de;
	while (!err && (de = readdir(dir)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		if (*end || tid <= 0 || tid > INT_MAX)
			continue; /* "." and ".." */
		if (n == CS_LIVE_MAX_THREADS) {
			err = E2BIG;
			break;
		}
		if (n == cap) {
			cap *= 2;
			int *nt = realloc(tids, cap * sizeof(*tids));
			if (!nt) {
				err = ENOMEM;
				break;
			}
			tids = nt;
		}
		tids[n++] = (int)tid;
	}
	closedir(dir);
	if (err) {
		free(tids);
		return err;
	}
	qsort(tids, n, sizeof(*tids), cs_live_cmp_int);
	/* a listing made while threads exit may repeat one */
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || tids[u - 1] != tids[i])
			tids[u++] = tids[i];
	n = u;
	*ret = tids;
	*count = n;
	return 0;
}

struct cs_error *cs_live_errno(int pid, int e, const char *what)
{
	if (e == ENOMEM)
		return &cs_error_nomem;
	if (e == E2BIG) {
		return cs_error_create(CS_ERR_LIMIT,
				       "pid %d has more than %d threads", pid,
				       CS_LIVE_MAX_THREADS);
	}
	if (e == EACCES || e == EPERM)
		return cs_live_denied(pid, 0);
	return cs_error_create(CS_ERR_OS, "pid %d: %s: %s", pid, what,
			       strerror(e));
}

/* ---- /proc files ---- */

static int cs_live_cmp_map(const void *a, const void *b)
{
	const struct cs_mapping *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* The text of /proc/PID/maps (malloc'd, NUL-terminated). */
static struct cs_error *cs_live_maps_text(struct cs_live *live, char **text,
					  size_t *len)
{
	char path[64];
	snprintf(path, sizeof(path), "%s/maps", live->procdir);
	int e = cs_live_slurp(path, CS_LIVE_MAX_MAPS_BYTES, 0, text, len);
	if (e == ENOENT || e == ESRCH)
		return cs_live_vanished(live->pid, 1);
	if (e == EFBIG) {
		return cs_error_create(CS_ERR_LIMIT,
				       "pid %d: /proc/%d/maps is over %zu MiB",
				       live->pid, live->pid,
				       CS_LIVE_MAX_MAPS_BYTES >> 20);
	}
	if (e)
		return cs_live_errno(live->pid, e, "reading /proc/PID/maps");
	return NULL;
}

/* One reading of /proc/PID/maps: every line a region (the kernel lists
 * them sorted), and, when maps is non-NULL, every line of a file
 * (inode != 0) a mapping, with its path as the kernel prints it. */
static struct cs_error *
cs_live_parse_maps(char *text, struct cs_region *regions, size_t *nregions,
		   struct cs_mapping *maps, size_t *nmaps)
{
	size_t n = 0;
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		else
			next = line + strlen(line);
		/* start-end perms offset dev inode   path */
		uint64_t start, end, offset, inode;
		char perms[8];
		int pathpos = 0;
		int got = sscanf(line,
				 "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
				 " %*s %" SCNu64 " %n",
				 &start, &end, perms, &offset, &inode,
				 &pathpos);
		if (got >= 3 && start < end && strlen(perms) >= 3 &&
		    (n == 0 || start >= regions[n - 1].end)) {
			regions[n++] =
				(struct cs_region){.start = start,
						   .end = end,
						   .write = perms[1] == 'w',
						   .exec = perms[2] == 'x'};
		}
		if (maps && got >= 5 && inode != 0 && pathpos > 0 &&
		    line[pathpos] && start < end) {
			char *p = strdup(line + pathpos);
			if (!p)
				return &cs_error_nomem;
			maps[(*nmaps)++] =
				(struct cs_mapping){.start = start,
						    .end = end,
						    .file_offset = offset,
						    .path = p};
		}
		line = next;
	}
	*nregions = n;
	return NULL;
}

/* The regions, and (at attach, want_maps) the file mappings, read anew. */
static struct cs_error *cs_live_read_maps(struct cs_live *live, bool want_maps)
{
	char *text;
	size_t len;
	struct cs_error *err = cs_live_maps_text(live, &text, &len);
	if (err)
		return err;
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	struct cs_target_tables *tt = &live->tables;
	struct cs_region *r = calloc(lines + 1, sizeof(*r));
	if (want_maps && r &&
	    !(tt->maps = calloc(lines + 1, sizeof(*tt->maps))))
		err = &cs_error_nomem;
	size_t nregions = 0;
	if (!r)
		err = &cs_error_nomem;
	if (!err)
		err = cs_live_parse_maps(text, r, &nregions,
					 want_maps ? tt->maps : NULL,
					 &tt->nmaps);
	free(text);
	if (err) {
		free(r);
		return err;
	}
	if (want_maps)
		qsort(tt->maps, tt->nmaps, sizeof(*tt->maps), cs_live_cmp_map);
	free(tt->regions);
	tt->regions = r;
	tt->nregions = nregions;
	live->regions_fresh = 1;
	return NULL;
}

bool cs_live_update_regions(struct cs_live *live)
{
	if (live->regions_fresh)
		return true;
	struct cs_error *err = cs_live_read_maps(live, false);
	cs_error_destroy(err);
	return !err;
}

/* A cmdline file with NULs as spaces (its trailing ones dropped); NULL
 * if empty or unreadable. */
static char *command_of(const char *path)
{
	char *text;
	size_t len;
	if (cs_live_slurp(path, CS_LIVE_MAX_CMDLINE_BYTES, 1, &text, &len))
		return NULL;
	while (len > 0 && text[len - 1] == 0)
		len--;
	for (size_t i = 0; i < len; i++)
		if (text[i] == 0)
			text[i] = ' ';
	text[len] = 0;
	if (len)
		return text;
	free(text);
	return NULL;
}

char *cs_live_read_command(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	return command_of(path);
}

struct cs_error *cs_live_read_proc(struct cs_live *live)
{
	struct cs_error *err = cs_live_read_maps(live, true);
	if (err)
		return err;
	char path[64];
	char *text;
	size_t len;
	snprintf(path, sizeof(path), "%s/auxv", live->procdir);
	int e = cs_live_slurp(path, CS_LIVE_MAX_AUXV_BYTES, 1, &text, &len);
	if (e == ENOENT || e == ESRCH)
		return cs_live_vanished(live->pid, 1);
	if (e)
		return cs_live_errno(live->pid, e, "reading /proc/PID/auxv");
	live->auxv = (uint64_t *)(void *)text; /* malloc'd: aligned */
	live->tables.auxv = live->auxv;
	live->tables.nauxv = len / 16;

	snprintf(path, sizeof(path), "%s/cmdline", live->procdir);
	live->cmd = command_of(path);
	live->tables.command = live->cmd;

	snprintf(path, sizeof(path), "%s/exe", live->procdir);
	char buf[PATH_MAX + 1];
	ssize_t n = readlink(path, buf, PATH_MAX);
	if (n > 0) {
		buf[n] = 0;
		live->exe = strdup(buf);
		if (!live->exe)
			return &cs_error_nomem;
	} else {
		static const uint64_t types[] = {AT_PHDR, AT_ENTRY};
		for (size_t i = 0; i < 2 && !live->exe; i++) {
			uint64_t v = cs_tables_auxv(&live->tables, types[i]);
			const struct cs_mapping *m =
				v ? cs_tables_mapping_of(&live->tables, v)
				  : NULL;
			if (m && !(live->exe = strdup(m->path)))
				return &cs_error_nomem;
		}
	}

	/* where a relative path the program ran from is */
	snprintf(path, sizeof(path), "%s/cwd", live->procdir);
	n = readlink(path, buf, PATH_MAX);
	if (n > 0) {
		buf[n] = 0;
		if (!(live->cwd = strdup(buf)))
			return &cs_error_nomem;
	}
	live->tables.executable = live->exe;
	live->tables.cwd = live->cwd;
	return NULL;
}
