#include "debugger_target.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../process/build_id.h"

int gx_inferior_add_mapping(struct gx_inferior *d, uint64_t start, uint64_t end,
			    uint64_t offset, const char *path)
{
	struct cs_mapping *maps =
		realloc(d->maps, (d->nmaps + 1) * sizeof(*maps));
	if (!maps)
		return 0;
	d->maps = maps;
	char *copy = strdup(path);
	if (!copy)
		return 0;
	struct cs_mapping *m = &maps[d->nmaps++];
	*m = (struct cs_mapping){start, end, offset, NULL};
	m->path = copy; /* freed with d */
	return 1;
}

static int by_start(const void *a, const void *b)
{
	const struct cs_mapping *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

void gx_inferior_finish(struct gx_inferior *d)
{
	if (d->nmaps)
		qsort(d->maps, d->nmaps, sizeof(*d->maps), by_start);
}

void gx_inferior_free(struct gx_inferior *d)
{
	for (size_t i = 0; i < d->nmaps; i++)
		free((char *)d->maps[i].path);
	free(d->maps);
	free(d->executable);
	if (d->fd >= 0)
		close(d->fd);
	free(d->fd_path);
	memset(d, 0, sizeof(*d));
	d->fd = -1;
}

static size_t mapping_count(const void *p)
{
	return ((const struct gx_inferior *)p)->nmaps;
}

static const struct cs_mapping *mapping_at(const void *p, size_t i)
{
	const struct gx_inferior *d = p;
	return i < d->nmaps ? &d->maps[i] : NULL;
}

static const struct cs_mapping *mapping_of(const void *p, uint64_t addr)
{
	const struct gx_inferior *d = p;
	size_t lo = 0, hi = d->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < d->maps[mid].start)
			hi = mid;
		else if (addr >= d->maps[mid].end)
			lo = mid + 1;
		else
			return &d->maps[mid];
	}
	return NULL;
}

static const struct cs_mapping *find_mapping(const void *p, const char *prefix)
{
	const struct gx_inferior *d = p;
	for (size_t i = 0; i < d->nmaps; i++) {
		const char *slash = strrchr(d->maps[i].path, '/');
		const char *base = slash ? slash + 1 : d->maps[i].path;
		if (strncmp(base, prefix, strlen(prefix)) == 0)
			return &d->maps[i];
	}
	return NULL;
}

static uint64_t auxv(const void *p, uint64_t type)
{
	const struct gx_inferior *d = p;
	for (size_t i = 0; i < d->nauxv; i++)
		if (d->auxv[i][0] == type)
			return d->auxv[i][1];
	return 0;
}

static const char *executable(void *p)
{
	return ((struct gx_inferior *)p)->executable;
}

static struct cs_error *build_id(void *p, uint64_t start, uint8_t *buf,
				 size_t bufsize, size_t *len)
{
	struct gx_inferior *d = p;
	return cs_build_id_read(&d->mem, d->name, start, buf, bufsize, len);
}

/* The file of mapping m, opened once and kept until another is needed. */
static int mapped_file(struct gx_inferior *d, const struct cs_mapping *m)
{
	if (d->fd >= 0 && strcmp(d->fd_path, m->path) == 0)
		return d->fd;
	if (d->fd >= 0)
		close(d->fd);
	free(d->fd_path);
	d->fd_path = strdup(m->path);
	d->fd = d->fd_path ? open(m->path, O_RDONLY | O_CLOEXEC) : -1;
	return d->fd;
}

static struct cs_error *read_with_files(void *priv, uint64_t addr, void *buf,
					size_t len)
{
	struct gx_inferior *d = priv;
	struct cs_error *err = cs_memory_read(&d->mem, addr, buf, len);
	if (!err)
		return NULL;
	uint8_t *out = buf;
	for (size_t done = 0; done < len;) {
		const struct cs_mapping *m = mapping_of(d, addr + done);
		int fd = m ? mapped_file(d, m) : -1;
		if (fd < 0)
			return err;
		uint64_t at = addr + done;
		size_t n = len - done;
		if (n > m->end - at)
			n = (size_t)(m->end - at);
		ssize_t r = pread(fd, out + done, n,
				  (off_t)(m->file_offset + (at - m->start)));
		if (r <= 0)
			return err;
		done += (size_t)r;
	}
	cs_error_destroy(err);
	return NULL;
}

static int pid(const void *p)
{
	return ((const struct gx_inferior *)p)->pid;
}

static const char *command(const void *p)
{
	return ((const struct gx_inferior *)p)->command;
}

static const struct cs_siginfo *siginfo(const void *p)
{
	const struct gx_inferior *d = p;
	return d->siginfo.present ? &d->siginfo : NULL;
}

static int64_t crash_tid(const void *p)
{
	return ((const struct gx_inferior *)p)->crash_tid;
}

/* No threads: the debugger lists them only when asked (backtrace.c). Its
 * files are this machine's (the default host_path). */
static const struct cs_target_ops ops = {
	.read = read_with_files,
	.mapping_count = mapping_count,
	.mapping_at = mapping_at,
	.mapping_of = mapping_of,
	.find_mapping = find_mapping,
	.auxv = auxv,
	.executable = executable,
	.module_build_id = build_id,
	.pid = pid,
	.command = command,
	.siginfo = siginfo,
	.crash_tid = crash_tid,
};

struct cs_target gx_inferior_target(struct gx_inferior *d)
{
	struct cs_target t = {
		.ops = &ops,
		.priv = d,
		.name = d->name,
		.comm = "",
		.what = "process",
		.dump = d->is_core,
	};
	return t;
}
