/* What an I/O wait and a process wait wait on, where Ruby's own
 * structures say it (model.h, struct rv_wait).
 *
 * An I/O wait's blocking method (IO#read, IO#wait_readable, ...) was
 * called on the IO: the self of that frame, a T_FILE whose rb_io_t holds
 * the descriptor and the path IO#path gives. A Kernel#select or IO.select
 * names no one IO: none is read for them.
 *
 * A Process.wait that sleeps until SIGCHLD wakes it (Rubies whose VM has
 * waiting_pids, 2.7 to 3.2) puts a waitpid_state on the VM's waiting_pids
 * (a pid) or waiting_grps (any child, a group), naming its execution
 * context: the thread's ec finds it. Where the VM has no such list, the
 * thread waits in wait4(2) itself, and the system call it is blocked in
 * names the child (process/blocked_call.h). Every list is bounded.
 *
 * A Ractor wait's method tells which ractor: the self of Ractor#take,
 * #join and #value is the Ractor waited for; Ractor.receive and
 * Ractor.yield wait on the thread's own ractor (for a message, for a
 * taker); Ractor::Port#receive on the ractor the port belongs to.
 * Ractor.select waits on several: none is named. */
#include <stdlib.h>
#include <string.h>

#include "lists.h"
#include "session.h"

/* Waiters on one list looked at, at most: one per thread. */
#define MAX_WAITERS 4096

/* An int member read zero-extended, as the int it is. */
static int64_t as_int(struct rv_session *s, enum rv_item_id id, uint64_t v)
{
	switch (s->layout.items[id].size) {
	case 4:
		return (int32_t)v;
	case 2:
		return (int16_t)v;
	default:
		return (int64_t)v;
	}
}

void rv_wait_io_read(struct rv_session *s, const struct rv_frame *frames,
		     size_t nframes, struct rv_wait *w)
{
	uint64_t self, type, fptr, fd, pathv;
	if (!w->frame || w->frame > nframes || !frames[w->frame - 1].cfp ||
	    !RV_HAS(s, t_file) || !RV_HAS(s, rfile_fptr) ||
	    !rv_try_member(s, frames[w->frame - 1].cfp, RVL_cfp_self, &self) ||
	    rv_failed(rv_builtin_type(s, self, &type, NULL)) ||
	    type != (uint64_t)RV_VAL(s, t_file))
		return;
	w->io = self;
	if (!rv_try_member(s, self, RVL_rfile_fptr, &fptr) || !fptr)
		return; /* a closed IO has no rb_io_t */
	if (RV_HAS(s, io_fd) && rv_try_member(s, fptr, RVL_io_fd, &fd)) {
		w->has_io_fd = true;
		w->io_fd = as_int(s, RVL_io_fd, fd);
	}
	if (RV_HAS(s, io_pathv) &&
	    rv_try_member(s, fptr, RVL_io_pathv, &pathv) &&
	    !rv_is_nil(s, pathv))
		rv_failed(rv_string(s, pathv, &w->io_path));
}

/* The waitpid_state of ec on the list at head, if any: its pid. */
static bool waiter_on(struct rv_session *s, uint64_t head, uint64_t ec,
		      int64_t *pid)
{
	struct rv_list l = {0};
	bool found = false;
	rv_failed(rv_list_walk(s, head, (uint64_t)RV_VAL(s, waitpid_wnode),
			       MAX_WAITERS, &l));
	for (size_t i = 0; i < l.count && !found; i++) {
		uint64_t its_ec, p;
		if (rv_try_member(s, l.items[i], RVL_waitpid_ec, &its_ec) &&
		    its_ec == ec &&
		    rv_try_member(s, l.items[i], RVL_waitpid_pid, &p)) {
			*pid = as_int(s, RVL_waitpid_pid, p);
			found = true;
		}
	}
	rv_list_free(&l);
	return found;
}

static void child_of_thread(struct rv_session *s, const struct rv_view *th,
			    struct rv_wait *w)
{
	uint64_t vm = 0, ec;
	if (!RV_HAS(s, vm_waiting_pids) || !RV_HAS(s, waitpid_wnode) ||
	    !RV_HAS(s, waitpid_ec) || !RV_HAS(s, waitpid_pid) ||
	    !RV_HAS(s, vm_ptr) ||
	    rv_failed(rv_read_u64(s, s->load_bias + (uint64_t)RV_VAL(s, vm_ptr),
				  &vm)) ||
	    !vm || !rv_view_try(s, th, RVL_th_ec, &ec) || !ec)
		return;
	const enum rv_item_id lists[] = {RVL_vm_waiting_pids,
					 RVL_vm_waiting_grps};
	for (size_t k = 0; k < 2 && !w->has_child; k++)
		if (s->layout.items[lists[k]].source != RV_MISSING)
			w->has_child = waiter_on(
				s,
				vm + (uint64_t)s->layout.items[lists[k]].value,
				ec, &w->child);
}

/* The ractor of a Ractor wait whose method frame is f, on a thread of
 * the ractor own. */
static void ractor_of_wait(struct rv_session *s, const struct rv_frame *f,
			   const struct rv_ractor *own, struct rv_wait *w)
{
	uint64_t self = 0, r = 0, port;
	const char *m = w->method;
	if (!strcmp(m, "Ractor#take") || !strcmp(m, "Ractor#join") ||
	    !strcmp(m, "Ractor#value")) {
		if (f->cfp && rv_try_member(s, f->cfp, RVL_cfp_self, &self))
			r = rv_typed_data_of(s, self, RVL_ractor_data_type);
	} else if (!strcmp(m, "Ractor::Port#receive")) {
		if (f->cfp && RV_HAS(s, ractor_port_r) &&
		    rv_try_member(s, f->cfp, RVL_cfp_self, &self) &&
		    (port = rv_typed_data_of(s, self,
					     RVL_ractor_port_data_type)) &&
		    !rv_try_member(s, port, RVL_ractor_port_r, &r))
			r = 0;
	} else if (strcmp(m, "Ractor.select") != 0 && own->present) {
		r = own->addr;
	}
	if (r)
		rv_ractor_read(s, r, &w->ractor);
	/* a join or value waits for the ractor's end: its main thread's (a
	 * take may be answered by any of its threads: no one thread) */
	if (r && (!strcmp(m, "Ractor#join") || !strcmp(m, "Ractor#value")) &&
	    RV_HAS(s, ractor_threads_main) &&
	    !rv_try_member(s, r, RVL_ractor_threads_main, &w->ractor_main))
		w->ractor_main = 0;
}

void rv_thread_wait_targets_read(struct rv_session *s, const struct rv_view *th,
				 struct rv_thread *t)
{
	if (t->wait.kind == RV_WAIT_IO)
		rv_wait_io_read(s, t->frames, t->nframes, &t->wait);
	else if (t->wait.kind == RV_WAIT_PROCESS)
		child_of_thread(s, th, &t->wait);
	else if (t->wait.kind == RV_WAIT_RACTOR && t->wait.method &&
		 t->wait.frame && t->wait.frame <= t->nframes)
		ractor_of_wait(s, &t->frames[t->wait.frame - 1], &t->ractor,
			       &t->wait);
}
