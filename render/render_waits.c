/* What an I/O or a process wait waits on, and the system call a thread is
 * blocked in: from the kernel's registers (the call's descriptors and
 * child, and what /proc says a descriptor is) and from Ruby's own record
 * (the IO the method was called on, the waitpid_state of a Process.wait).
 * The kernel's view wins where both tell: it is what the thread sleeps in. */
#include <stdio.h>

#include "../engine/report.h"
#include "../process/blocked_call.h"
#include "../util/json.h"

static const struct cs_blocked_call *call_of(const struct cs_report *r,
					     size_t i)
{
	return r->blocked ? r->blocked[i] : NULL;
}

/* The child a process wait waits for, as wait4 takes it; from the system
 * call ("system_call") or Ruby's record ("ruby"); false when neither. */
static bool wait_child(const struct cs_report *r, size_t i, int64_t *pid,
		       const char **from)
{
	const struct rv_wait *w = &r->ruby->threads[i].wait;
	const struct cs_blocked_call *c = call_of(r, i);
	if (c && c->waits_child) {
		*pid = c->child;
		*from = "system_call";
		return true;
	}
	if (w->has_child) {
		*pid = w->child;
		*from = "ruby";
		return true;
	}
	return false;
}

/* An I/O wait's descriptor: the system call's first, else the IO's. */
static bool wait_fd(const struct cs_report *r, size_t i, int64_t *fd,
		    const char **what)
{
	const struct rv_wait *w = &r->ruby->threads[i].wait;
	const struct cs_blocked_call *c = call_of(r, i);
	*what = NULL;
	if (c && c->nfds) {
		*fd = c->fds[0].fd;
		*what = c->fds[0].what;
		return true;
	}
	if (w->has_io_fd && w->io_fd >= 0) {
		*fd = w->io_fd;
		*what = r->io_what ? r->io_what[i] : NULL;
		return true;
	}
	return false;
}

static void child_text(FILE *out, int64_t pid)
{
	if (pid > 0)
		fprintf(out, " for child %lld", (long long)pid);
	else if (pid == -1)
		fputs(" for any child", out);
	else if (pid == 0)
		fputs(" for any child in its process group", out);
	else
		fprintf(out, " for any child in process group %lld",
			(long long)-pid);
}

/* "fd 5 (pipe:[12]), fd 7 (socket:[34])"; a descriptor /proc does not
 * name is named by the path Ruby's IO keeps, when given. */
static void fds_text(FILE *out, const struct cs_blocked_call *c,
		     const char *io_path)
{
	for (size_t k = 0; k < c->nfds; k++) {
		fprintf(out, "%sfd %d", k ? ", " : "", c->fds[k].fd);
		const char *what = c->fds[k].what ? c->fds[k].what
				   : c->nfds == 1 ? io_path
						  : NULL;
		if (what)
			fprintf(out, " (%s)", what);
	}
	if (c->fds_cut)
		fputs(", ...", out);
	if (c->fds_error)
		fprintf(out, "<%s>", c->fds_error);
}

void cs_render_wait_target_text(FILE *out, const struct cs_report *r, size_t i)
{
	const struct rv_thread *t = &r->ruby->threads[i];
	const struct cs_blocked_call *c = call_of(r, i);
	int64_t n;
	const char *from, *what;
	if (t->wait.kind == RV_WAIT_PROCESS && wait_child(r, i, &n, &from)) {
		child_text(out, n);
	} else if (t->wait.kind == RV_WAIT_RACTOR && t->wait.ractor.present) {
		fprintf(out, " #%u", (unsigned)t->wait.ractor.id);
		if (t->wait.ractor.name)
			fprintf(out, " \"%s\"", t->wait.ractor.name);
	} else if (t->wait.kind == RV_WAIT_IO && c && c->nfds) {
		fputs(" on ", out);
		fds_text(out, c, t->wait.io_path);
	} else if (t->wait.kind == RV_WAIT_IO && wait_fd(r, i, &n, &what)) {
		fprintf(out, " on fd %lld", (long long)n);
		if (what || t->wait.io_path)
			fprintf(out, " (%s)", what ? what : t->wait.io_path);
	} else if (t->wait.kind == RV_WAIT_NONE && c &&
		   (t->wait.blocking_region || t->state == RV_STATE_SLEEPING ||
		    t->state == RV_STATE_SLEEPING_FOREVER)) {
		/* nothing of Ruby's says what it waits on: the kernel does */
		if (c->name)
			fprintf(out, "; in system call %s", c->name);
		else
			fprintf(out, "; in system call %d", c->number);
		if (c->waits_child)
			child_text(out, c->child);
		else if (c->nfds || c->fds_error) {
			fputs(" on ", out);
			fds_text(out, c, NULL);
		}
	}
}

static const char *direction_name(int d)
{
	switch (d) {
	case CS_FD_READ:
		return "read";
	case CS_FD_WRITE:
		return "write";
	case CS_FD_READ | CS_FD_WRITE:
		return "read_write";
	default:
		return NULL;
	}
}

void cs_render_wait_target_json(struct json *j, const struct cs_report *r,
				size_t i)
{
	const struct rv_wait *w = &r->ruby->threads[i].wait;
	int64_t n;
	const char *from, *what;
	if (w->kind == RV_WAIT_PROCESS && wait_child(r, i, &n, &from)) {
		json_begin_object(j, "child");
		json_int(j, "pid", n);
		json_string(j, "from", from);
		json_end_object(j);
	} else {
		json_null(j, "child");
	}
	if (w->kind == RV_WAIT_RACTOR && w->ractor.present) {
		json_begin_object(j, "ractor");
		json_address(j, "address", w->ractor.addr);
		json_int(j, "id", w->ractor.id);
		json_string(j, "name", w->ractor.name);
		json_end_object(j);
	} else {
		json_null(j, "ractor");
	}
	if (w->kind != RV_WAIT_IO || (!w->io && !wait_fd(r, i, &n, &what))) {
		json_null(j, "io");
		return;
	}
	json_begin_object(j, "io");
	json_address(j, "object", w->io);
	if (wait_fd(r, i, &n, &what))
		json_int(j, "fd", n);
	else
		json_null(j, "fd");
	json_string(j, "what", what);
	json_string(j, "path", w->io_path);
	json_end_object(j);
}

void cs_render_system_call_json(struct json *j, const struct cs_report *r,
				size_t i)
{
	const struct cs_blocked_call *c = call_of(r, i);
	if (!c) {
		json_null(j, "system_call");
		return;
	}
	json_begin_object(j, "system_call");
	json_int(j, "number", c->number);
	json_string(j, "name", c->name);
	json_begin_array(j, "fds");
	for (size_t k = 0; k < c->nfds; k++) {
		json_begin_object(j, NULL);
		json_int(j, "fd", c->fds[k].fd);
		json_string(j, "direction",
			    direction_name(c->fds[k].direction));
		json_string(j, "what", c->fds[k].what);
		json_end_object(j);
	}
	json_end_array(j);
	json_bool(j, "fds_cut", c->fds_cut);
	json_string(j, "fds_error", c->fds_error);
	if (c->waits_child)
		json_int(j, "child", c->child);
	else
		json_null(j, "child");
	json_end_object(j);
}

/* ", waiting on io (IO#read) on fd 5 through the scheduler
 * (Sched#io_wait)": a fiber blocked through its thread's fiber scheduler */
void cs_render_wait_head_text(FILE *out, const struct rv_wait *w)
{
	if (w->kind == RV_WAIT_NONE)
		return;
	fputs(", waiting on ", out);
	for (const char *c = rv_wait_kind_name(w->kind); *c; c++)
		fputc(*c == '_' ? ' ' : *c, out);
	if (w->method)
		fprintf(out, " (%s)", w->method);
	if (w->object)
		fprintf(out, " 0x%llx", (unsigned long long)w->object);
}

void cs_render_wait_head_json(struct json *j, const struct rv_wait *w)
{
	json_string(j, "kind", rv_wait_kind_name(w->kind));
	json_string(j, "method", w->method);
	json_address(j, "object", w->object);
}

void cs_render_fiber_wait_text(FILE *out, const struct rv_process *p,
			       const struct rv_fiber *f)
{
	const struct rv_wait *w = &f->wait;
	if (w->kind == RV_WAIT_NONE)
		return;
	cs_render_wait_head_text(out, w);
	if (w->has_io_fd && w->io_fd >= 0) {
		fprintf(out, " on fd %lld", (long long)w->io_fd);
		if (w->io_path)
			fprintf(out, " (%s)", w->io_path);
	}
	if (w->kind == RV_WAIT_MUTEX)
		cs_render_waits_for_text(out, p, w);
	const struct rv_frame *hook =
		f->scheduler_frame ? &f->frames[f->scheduler_frame - 1] : NULL;
	if (hook && hook->qualified)
		fprintf(out, " through the scheduler (%s)", hook->qualified);
}

void cs_render_fiber_wait_json(struct json *j, const struct rv_fiber *f)
{
	const struct rv_wait *w = &f->wait;
	if (w->kind == RV_WAIT_NONE) {
		json_null(j, "waiting_on");
		return;
	}
	json_begin_object(j, "waiting_on");
	cs_render_wait_head_json(j, w);
	if (w->kind == RV_WAIT_IO) {
		json_begin_object(j, "io");
		json_address(j, "object", w->io);
		if (w->has_io_fd && w->io_fd >= 0)
			json_int(j, "fd", w->io_fd);
		else
			json_null(j, "fd");
		json_null(j, "what");
		json_string(j, "path", w->io_path);
		json_end_object(j);
	} else {
		json_null(j, "io");
	}
	const struct rv_frame *hook =
		f->scheduler_frame ? &f->frames[f->scheduler_frame - 1] : NULL;
	json_string(j, "scheduler", hook ? hook->qualified : NULL);
	json_bool(j, "forever", f->forever);
	cs_render_waits_for_json(j, w);
	json_end_object(j);
}
