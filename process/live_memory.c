/* The live reader: memory (process_vm_readv, else /proc/PID/mem), the
 * accessors, and build-ids from memory. */
#include "live_internal.h"

int cs_live_pid(const struct cs_live *live)
{
	return live->pid;
}

const char *cs_live_name(const struct cs_live *live)
{
	return live->name;
}

int cs_live_paused(const struct cs_live *live)
{
	return live->pause && live->attached && !live->running;
}

static struct cs_error *cs_live_fault(const struct cs_live *live, uint64_t addr,
				      size_t len, uint64_t at, const char *why)
{
	if (at == addr) {
		return cs_error_fault(
			at,
			"pid %d: cannot read %zu bytes at 0x%" PRIx64 ": %s",
			live->pid, len, addr, why);
	}
	return cs_error_fault(at,
			      "pid %d: cannot read %zu bytes at 0x%" PRIx64
			      ": 0x%" PRIx64 ": %s",
			      live->pid, len, addr, at, why);
}

static struct cs_error *cs_live_open_mem(struct cs_live *live, uint64_t addr,
					 size_t len)
{
	if (live->memfd >= 0)
		return NULL;
	char path[64];
	snprintf(path, sizeof(path), "%s/mem", live->procdir);
	live->memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (live->memfd >= 0)
		return NULL;
	int e = errno;
	if (e == EACCES || e == EPERM)
		return cs_live_denied(live->pid, 0);
	return cs_live_fault(live, addr, len, addr,
			     e == ENOENT || e == ESRCH
				     ? "the process has exited"
				     : strerror(e));
}

size_t cs_live_read_ranges(struct cs_live *live, const uint64_t *addrs,
			   void *const *bufs, const size_t *lens, size_t n)
{
	enum { BATCH = 64 }; /* well under IOV_MAX */
	struct iovec local[BATCH], remote[BATCH];
	if (live->no_vm_readv || n == 0)
		return 0;
	if (n > BATCH)
		n = BATCH;
	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){bufs[i], lens[i]};
		remote[i] =
			(struct iovec){(void *)(uintptr_t)addrs[i], lens[i]};
	}
	ssize_t r = process_vm_readv(live->mem_tid, local, (unsigned long)n,
				     remote, (unsigned long)n, 0);
	/* A short read stops at the first range it could not finish. */
	size_t whole = 0, bytes = r > 0 ? (size_t)r : 0;
	while (whole < n && lens[whole] <= bytes)
		bytes -= lens[whole++];
	return whole;
}

struct cs_error *cs_live_read(struct cs_live *live, uint64_t addr, void *buf,
			      size_t len)
{
	uint8_t *out = buf;
	size_t done = 0;
	unsigned eintr = 0;
	uint64_t last;
	if (len && __builtin_add_overflow(addr, len - 1, &last))
		return cs_live_fault(live, addr, len, addr,
				     "past the end of "
				     "the address space");
	/* Each pass reads something or returns, except that the fallback to
	 * /proc/PID/mem switches once and EINTR repeats a bounded number. */
	while (done < len) {
		uint64_t at = addr + done;
		size_t want = len - done;
		ssize_t r;
		int e = 0;
		if (!live->no_vm_readv) {
			struct iovec local = {out + done, want};
			struct iovec remote = {(void *)(uintptr_t)at, want};
			r = process_vm_readv(live->mem_tid, &local, 1, &remote,
					     1, 0);
			if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
				/* Not built in, or filtered (seccomp):
				 * /proc/PID/mem may still do. */
				live->no_vm_readv = 1;
				continue;
			}
		} else {
			struct cs_error *err =
				cs_live_open_mem(live, addr, len);
			if (err)
				return err;
			if (at > (uint64_t)INT64_MAX)
				return cs_live_fault(live, addr, len, at,
						     "not a user address");
			r = pread(live->memfd, out + done, want, (off_t)at);
		}
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		e = r < 0 ? errno : 0;
		if (e == EINTR && ++eintr < 100)
			continue;
		if (e == ESRCH || (r == 0 && live->no_vm_readv &&
				   kill(live->pid, 0) != 0 && errno == ESRCH))
			return cs_live_fault(live, addr, len, at,
					     "the process has exited");
		if (e == EACCES || e == EPERM)
			return cs_live_denied(live->pid, 0);
		return cs_live_fault(live, addr, len, at,
				     r == 0 || e == EFAULT || e == EIO
					     ? "not mapped or not readable"
					     : strerror(e));
	}
	return NULL;
}

struct cs_error *cs_live_unreadable(void *live, uint64_t addr, size_t len)
{
	return cs_live_fault(live, addr, len, addr,
			     "not mapped or not readable");
}

static struct cs_error *cs_live_target_read(void *priv, uint64_t addr,
					    void *buf, size_t len)
{
	return cs_live_read(priv, addr, buf, len);
}

struct cs_memory cs_live_memory(struct cs_live *live)
{
	struct cs_memory t = {cs_live_target_read, live};
	return t;
}

const struct cs_target_tables *cs_live_tables(const struct cs_live *live)
{
	return &live->tables;
}

/* ---- build-id ---- */

struct cs_error *cs_live_module_build_id(struct cs_live *live, uint64_t start,
					 uint8_t *buf, size_t bufsize,
					 size_t *len)
{
	struct cs_memory mem = cs_live_memory(live);
	return cs_build_id_read(&mem, live->name, start, buf, bufsize, len);
}
