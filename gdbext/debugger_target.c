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
		const struct cs_mapping *m =
			cs_tables_mapping_of(&d->tables, addr + done);
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

/* No threads: the debugger lists them only when asked (backtrace.c). No
 * regions. Its files are this machine's (the default host_path). */
static const struct cs_target_ops ops = {
	.read = read_with_files,
	.module_build_id = build_id,
};

struct cs_target gx_inferior_target(struct gx_inferior *d)
{
	d->tables = (struct cs_target_tables){
		.maps = d->maps,
		.nmaps = d->nmaps,
		.has_registers = true,
		.auxv = &d->auxv[0][0],
		.nauxv = d->nauxv,
		.executable = d->executable,
		.pid = d->pid,
		.command = d->command,
		.siginfo = d->siginfo.present ? &d->siginfo : NULL,
		.crash_tid = d->crash_tid,
	};
	struct cs_target t = {
		.ops = &ops,
		.priv = d,
		.tables = &d->tables,
		.name = d->name,
		.comm = "",
		.what = "process",
		.dump = d->is_core,
	};
	return t;
}
