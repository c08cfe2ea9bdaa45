/* A live process as a target: its tables are the live reader's, and each
 * operation is the reader's own. Its files are on this machine at their
 * paths (the default host_path). */
#include "live_target.h"
#include "open.h"
#include "socket_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct cs_error *live_read(void *p, uint64_t addr, void *buf, size_t len)
{
	return cs_live_read(p, addr, buf, len);
}

static struct cs_error *live_build_id(void *p, uint64_t start, uint8_t *buf,
				      size_t bufsize, size_t *len)
{
	return cs_live_module_build_id(p, start, buf, bufsize, len);
}

static bool live_update_regions(void *p)
{
	return cs_live_update_regions(p);
}

/* /proc/PID/fd/FD's link: what the kernel says the descriptor is; for a
 * socket, also its protocol, addresses and state (socket_names.h). */
static char *live_describe_fd(void *p, int fd)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", cs_live_pid(p), fd);
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	unsigned long inode;
	char end;
	char *name, *s;
	if (sscanf(buf, "socket:[%lu%c", &inode, &end) == 2 && end == ']' &&
	    (name = cs_socket_name(cs_live_pid(p), inode))) {
		/* what /proc says, then what the socket is */
		int k = asprintf(&s, "%s %s", buf, name);
		free(name);
		return k < 0 ? NULL : s;
	}
	return strdup(buf);
}

/* /proc/PID/task/TID/syscall: "NR ARG1 ... ARG6 SP PC" in hex while the
 * thread sleeps in a call, "-1 SP PC" outside one, "running" when it
 * runs. */
static bool live_thread_blocked(void *p, int tid, uint64_t *mask)
{
	return cs_live_thread_blocked(p, tid, mask);
}

static bool live_thread_syscall(void *p, int tid, uint64_t nr_args[7],
				uint64_t *pc)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", cs_live_pid(p),
		 tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	long long nr;
	unsigned long long a[8];
	if (sscanf(buf,
		   "%lld 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx "
		   "0x%llx 0x%llx",
		   &nr, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6],
		   &a[7]) != 9 ||
	    nr < 0)
		return false;
	nr_args[0] = (uint64_t)nr;
	for (int k = 0; k < 6; k++)
		nr_args[k + 1] = a[k];
	*pc = a[7];
	return true;
}

static void live_release(void *p)
{
	cs_live_detach(p);
}

static void live_close(void *p)
{
	cs_live_close(p);
}

/* Every operation but close: a view leaves the attachment open. */
#define LIVE_OPS                                             \
	.read = live_read, .module_build_id = live_build_id, \
	.update_regions = live_update_regions,               \
	.thread_syscall = live_thread_syscall,               \
	.thread_blocked = live_thread_blocked,               \
	.describe_fd = live_describe_fd, .release = live_release

static const struct cs_target_ops live_view_ops = {LIVE_OPS};
static const struct cs_target_ops live_owned_ops = {LIVE_OPS,
						    .close = live_close};

static struct cs_target live_target(struct cs_live *live,
				    const struct cs_target_ops *ops)
{
	struct cs_target t = {
		.ops = ops,
		.priv = live,
		.tables = cs_live_tables(live),
		.name = cs_live_name(live),
		.comm = "",
		.what = "process",
	};
	return t;
}

struct cs_target cs_target_of_live(struct cs_live *live)
{
	return live_target(live, &live_view_ops);
}

static bool wanted(const struct cs_target_request *req)
{
	return req->pid > 0;
}

static struct cs_error *open_target(const struct cs_target_request *req,
				    struct cs_target **ret)
{
	*ret = NULL;
	struct cs_live *live;
	struct cs_error *err = cs_live_attach(req->pid, req->pause, &live);
	if (err)
		return err;
	if (!req->pause && req->stopped && req->stop_signal)
		cs_live_set_stopped(live, req->stopped, req->stop_signal);
	else if (!req->pause && req->threads)
		cs_live_set_registers(live, req->threads, req->nthreads);
	if (!(*ret = malloc(sizeof(**ret)))) {
		cs_live_close(live);
		return &cs_error_nomem;
	}
	**ret = live_target(live, &live_owned_ops);
	return NULL;
}

/* Listed in process/open.c. */
extern const struct cs_target_kind cs_live_target_kind;
const struct cs_target_kind cs_live_target_kind = {
	.name = "process",
	.wanted = wanted,
	.open = open_target,
};
