/* A thread's state with Ruby's own distinctions, and what it waits on.
 *
 * Thread#status prints "sleep" for both THREAD_STOPPED (sleep with a
 * deadline, a blocking region such as read(2)) and THREAD_STOPPED_FOREVER
 * (sleep without one: Queue#pop, Mutex#lock, Thread#join, Thread.stop);
 * the state keeps them apart. What a sleeping thread waits on comes from
 * the methods at the top of its stack, the C methods and <internal:...>
 * builtins above its innermost frame of user code (ConditionVariable#wait
 * sleeps in Mutex#sleep: the outermost method of that run that says
 * something wins), and from rb_thread_t.locking_mutex, which Mutex#lock
 * sets while it waits for the mutex. A thread in a blocking region (I/O,
 * waitpid, a C extension's call without the GVL) is flagged as such: Ruby's
 * own sleeps (Queue, Mutex, sleep, join) do not release the GVL that way.
 *
 * A non-blocking fiber under a fiber scheduler (3.0+) does not sleep: the
 * blocking method calls the scheduler's hook (io_wait, kernel_sleep,
 * block, ...), written in Ruby, which switches to another fiber. Such a
 * suspended fiber waits on what the method that called the hook waits on. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

const char *rv_thread_state_name(enum rv_thread_state st)
{
	switch (st) {
	case RV_STATE_RUNNABLE:
		return "runnable";
	case RV_STATE_SLEEPING:
		return "sleeping";
	case RV_STATE_SLEEPING_FOREVER:
		return "sleeping_forever";
	case RV_STATE_ABORTING:
		return "aborting";
	case RV_STATE_DEAD:
		return "dead";
	default:
		return "unknown";
	}
}

const char *rv_wait_kind_name(enum rv_wait_kind k)
{
	switch (k) {
	case RV_WAIT_MUTEX:
		return "mutex";
	case RV_WAIT_QUEUE:
		return "queue";
	case RV_WAIT_SIZED_QUEUE:
		return "sized_queue";
	case RV_WAIT_CONDITION_VARIABLE:
		return "condition_variable";
	case RV_WAIT_SLEEP:
		return "sleep";
	case RV_WAIT_THREAD_JOIN:
		return "thread_join";
	case RV_WAIT_THREAD_STOP:
		return "thread_stop";
	case RV_WAIT_IO:
		return "io";
	case RV_WAIT_PROCESS:
		return "process_wait";
	case RV_WAIT_RACTOR:
		return "ractor";
	default:
		return NULL;
	}
}

uint64_t rv_wait_thread(const struct rv_wait *w)
{
	return w->owner_thread ? w->owner_thread
	       : w->joined     ? w->joined
			       : w->ractor_main;
}

/* Methods that block, by their qualified name (the owner that defines
 * them, the same on 2.7 to 3.4; Ractor's from 3.0). A frame matches by
 * its own qualified name or by its method's definition's
 * (method_definition.c): an alias still runs the method it copies. */
static const struct {
	const char *method;
	enum rv_wait_kind kind;
} blocking_methods[] = {
	{"Thread::Mutex#lock", RV_WAIT_MUTEX},
	{"Thread::Mutex#synchronize", RV_WAIT_MUTEX},
	{"Thread::Mutex#sleep", RV_WAIT_SLEEP},
	{"Thread::Queue#pop", RV_WAIT_QUEUE},
	{"Thread::Queue#shift", RV_WAIT_QUEUE},
	{"Thread::Queue#deq", RV_WAIT_QUEUE},
	{"Thread::SizedQueue#pop", RV_WAIT_SIZED_QUEUE},
	{"Thread::SizedQueue#shift", RV_WAIT_SIZED_QUEUE},
	{"Thread::SizedQueue#deq", RV_WAIT_SIZED_QUEUE},
	{"Thread::SizedQueue#push", RV_WAIT_SIZED_QUEUE},
	{"Thread::SizedQueue#<<", RV_WAIT_SIZED_QUEUE},
	{"Thread::SizedQueue#enq", RV_WAIT_SIZED_QUEUE},
	{"Thread::ConditionVariable#wait", RV_WAIT_CONDITION_VARIABLE},
	{"Kernel#sleep", RV_WAIT_SLEEP},
	{"Thread#join", RV_WAIT_THREAD_JOIN},
	{"Thread#value", RV_WAIT_THREAD_JOIN},
	{"Thread.stop", RV_WAIT_THREAD_STOP},
	{"Process.wait", RV_WAIT_PROCESS},
	{"Process.wait2", RV_WAIT_PROCESS},
	{"Process.waitpid", RV_WAIT_PROCESS},
	{"Process.waitpid2", RV_WAIT_PROCESS},
	{"Process.waitall", RV_WAIT_PROCESS},
	{"Process::Status.wait", RV_WAIT_PROCESS},
	{"Kernel#system", RV_WAIT_PROCESS},
	{"Kernel#`", RV_WAIT_PROCESS},
	{"IO#read", RV_WAIT_IO},
	{"IO#readpartial", RV_WAIT_IO},
	{"IO#sysread", RV_WAIT_IO},
	{"IO#gets", RV_WAIT_IO},
	{"IO#readline", RV_WAIT_IO},
	{"IO#readlines", RV_WAIT_IO},
	{"IO#each_line", RV_WAIT_IO},
	{"IO#getc", RV_WAIT_IO},
	{"IO#getbyte", RV_WAIT_IO},
	{"IO#readchar", RV_WAIT_IO},
	{"IO#readbyte", RV_WAIT_IO},
	{"IO#write", RV_WAIT_IO},
	{"IO#syswrite", RV_WAIT_IO},
	{"IO#wait", RV_WAIT_IO},
	{"IO#wait_readable", RV_WAIT_IO},
	{"IO#wait_writable", RV_WAIT_IO},
	{"IO.select", RV_WAIT_IO},
	{"Kernel#select", RV_WAIT_IO},
	{"Kernel#gets", RV_WAIT_IO},
	{"Kernel#readline", RV_WAIT_IO},
	/* the socket extension's own */
	{"TCPServer#accept", RV_WAIT_IO},
	{"UNIXServer#accept", RV_WAIT_IO},
	{"Socket#accept", RV_WAIT_IO},
	{"Socket#connect", RV_WAIT_IO},
	{"Socket#recvfrom", RV_WAIT_IO},
	{"BasicSocket#recv", RV_WAIT_IO},
	{"BasicSocket#recvmsg", RV_WAIT_IO},
	{"UDPSocket#recvfrom", RV_WAIT_IO},
	/* <internal:ractor>: 3.x exchanges values by take and yield; 4.0
	 * by ports, where join and value wait in a port of their own */
	{"Ractor.receive", RV_WAIT_RACTOR},
	{"Ractor#receive", RV_WAIT_RACTOR},
	{"Ractor.receive_if", RV_WAIT_RACTOR},
	{"Ractor#receive_if", RV_WAIT_RACTOR},
	{"Ractor.yield", RV_WAIT_RACTOR},
	{"Ractor.select", RV_WAIT_RACTOR},
	{"Ractor#take", RV_WAIT_RACTOR},
	{"Ractor#join", RV_WAIT_RACTOR},
	{"Ractor#value", RV_WAIT_RACTOR},
	{"Ractor::Port#receive", RV_WAIT_RACTOR},
};

static const char *INTERNAL_PATH = "<internal:";

/* A frame of the run above the user's code: a C method or a builtin (one
 * this Ruby shows as a C method, at its caller's place, included). */
static bool is_library_frame(const struct rv_frame *f)
{
	return f->kind == RV_FRAME_CFUNC || f->c_like ||
	       (f->path &&
		!strncmp(f->path, INTERNAL_PATH, strlen(INTERNAL_PATH)));
}

/* The entry of blocking_methods whose name q is, or -1. */
static long blocking_method(const char *q)
{
	for (size_t k = 0;
	     q && k < sizeof(blocking_methods) / sizeof(*blocking_methods); k++)
		if (!strcmp(q, blocking_methods[k].method))
			return (long)k;
	return -1;
}

/* The entry of blocking_methods frame f runs, or -1: by its qualified
 * name, else by its method's definition (an alias made in a subclass,
 * "Napper#sleep", runs Thread::Mutex#sleep). */
static long blocking_method_of(struct rv_session *s, const struct rv_frame *f)
{
	long k = blocking_method(f->qualified);
	char *defined = NULL;
	if (k >= 0 || rv_failed(rv_frame_definition_name(s, f, &defined)))
		return k;
	k = blocking_method(defined);
	free(defined);
	return k;
}

static void wait_from_frames(struct rv_session *s, const struct rv_thread *t,
			     struct rv_wait *w)
{
	for (size_t i = 0; i < t->nframes && is_library_frame(&t->frames[i]);
	     i++) {
		long k = blocking_method_of(s, &t->frames[i]);
		if (k >= 0) {
			w->kind = blocking_methods[k].kind;
			w->method = blocking_methods[k].method;
			w->frame = i + 1;
		}
	}
}

static enum rv_thread_state thread_state(struct rv_session *s,
					 const struct rv_view *th,
					 enum rv_thread_status status)
{
	uint64_t st;
	switch (status) {
	case RV_STATUS_RUN:
		return RV_STATE_RUNNABLE;
	case RV_STATUS_ABORTING:
		return RV_STATE_ABORTING;
	case RV_STATUS_DEAD:
		return RV_STATE_DEAD;
	case RV_STATUS_SLEEP:
		if (rv_view_try(s, th, RVL_th_status, &st) &&
		    st == (uint64_t)RV_VAL(s, thread_stopped_forever))
			return RV_STATE_SLEEPING_FOREVER;
		return RV_STATE_SLEEPING;
	default:
		return RV_STATE_UNKNOWN;
	}
}

/* The hooks of Fiber::Scheduler a blocking method calls (scheduler.c). */
static const char *const scheduler_hooks[] = {
	"io_wait",         "io_read",       "io_write",
	"io_pread",        "io_pwrite",     "io_select",
	"kernel_sleep",    "block",         "process_wait",
	"address_resolve", "timeout_after", "blocking_operation_wait",
};

/* Is f a Ruby method named as a scheduler hook ("Sched#io_wait")? */
static bool is_hook(const struct rv_frame *f)
{
	if (f->kind != RV_FRAME_RUBY || !f->qualified)
		return false;
	const char *name = strrchr(f->qualified, '#');
	if (!name)
		return false;
	for (size_t k = 0;
	     k < sizeof(scheduler_hooks) / sizeof(*scheduler_hooks); k++)
		if (!strcmp(name + 1, scheduler_hooks[k]))
			return true;
	return false;
}

/* Was the scheduler's hook at frame h its block hook, called with no
 * timeout? Fiber::Scheduler#block(blocker, timeout = nil) is called with
 * both (rb_fiber_scheduler_block): the timeout is its second parameter,
 * or where the hook takes its arguments as one rest parameter
 * (def block(*args)), that Array's second element; nil is none. A hook
 * whose parameters say neither is not known to wait for ever. */
static bool block_without_timeout(struct rv_session *s,
				  const struct rv_frame *h)
{
	const struct rv_iseq_info *info;
	const char *name = h->qualified ? strrchr(h->qualified, '#') : NULL;
	uint64_t ep, params = 0, *ids = NULL, n = 0, timeout = 0, len, ptr;
	bool known = false;
	if (!name || strcmp(name, "#block") != 0 || !h->iseq || !h->cfp ||
	    !RV_HAS(s, body_param_size) ||
	    !rv_try_member(s, h->cfp, RVL_cfp_ep, &ep) ||
	    rv_failed(rv_iseq_lookup(s, h->iseq, &info)) ||
	    !rv_try_member(s, info->body, RVL_body_param_size, &params) ||
	    rv_failed(rv_scope_slots(s, h->iseq, info, ep, &ids, &n)))
		return false;
	if (params >= 2 && n >= 2) {
		timeout = ids[n + 1];
		known = true;
	} else if (params == 1 && n >= 1 &&
		   !rv_failed(rv_array_span(s, ids[n], &ptr, &len))) {
		known = len < 2 ||
			!rv_failed(rv_array_entry(s, ids[n], 1, &timeout));
		if (len < 2)
			timeout = 0;
	}
	free(ids);
	return known && (!timeout || rv_is_nil(s, timeout));
}

void rv_fiber_wait_read(struct rv_session *s, struct rv_fiber *f)
{
	memset(&f->wait, 0, sizeof(f->wait));
	f->scheduler_frame = 0;
	f->forever = false;
	if (f->status != RV_FIBER_SUSPENDED || f->blocking == 1)
		return; /* a blocking fiber never calls the scheduler */
	for (size_t i = 0; i + 1 < f->nframes; i++) {
		const struct rv_frame *caller = &f->frames[i + 1];
		long k = is_hook(&f->frames[i]) && is_library_frame(caller)
				 ? blocking_method_of(s, caller)
				 : -1;
		if (k < 0)
			continue;
		f->wait.kind = blocking_methods[k].kind;
		f->wait.method = blocking_methods[k].method;
		f->wait.frame = i + 2;
		f->scheduler_frame = i + 1;
		break;
	}
	uint64_t self;
	if (f->wait.kind == RV_WAIT_IO)
		rv_wait_io_read(s, f->frames, f->nframes, &f->wait);
	else if (f->wait.kind != RV_WAIT_NONE &&
		 f->wait.kind != RV_WAIT_SLEEP &&
		 f->frames[f->wait.frame - 1].cfp &&
		 rv_try_member(s, f->frames[f->wait.frame - 1].cfp,
			       RVL_cfp_self, &self) &&
		 !rv_special_const(s, self))
		f->wait.object = self; /* the Mutex, Queue, ... it blocks on */
	f->forever =
		f->scheduler_frame &&
		block_without_timeout(s, &f->frames[f->scheduler_frame - 1]);
}

void rv_thread_state_read(struct rv_session *s, const struct rv_view *th,
			  struct rv_thread *t)
{
	t->state = thread_state(s, th, t->status);
	memset(&t->wait, 0, sizeof(t->wait));
	if (t->state != RV_STATE_SLEEPING &&
	    t->state != RV_STATE_SLEEPING_FOREVER)
		return; /* a running thread waits on nothing */
	wait_from_frames(s, t, &t->wait);
	uint64_t mutex, region;
	t->wait.blocking_region =
		RV_HAS(s, th_blocking_region) &&
		rv_view_try(s, th, RVL_th_blocking_region, &region) && region;
	if (RV_HAS(s, th_locking_mutex) &&
	    rv_view_try(s, th, RVL_th_locking_mutex, &mutex) &&
	    !rv_special_const(s, mutex)) {
		/* Mutex#lock, or Mutex#sleep taking its mutex back. */
		if (t->wait.kind != RV_WAIT_MUTEX) {
			t->wait.method = NULL;
			t->wait.frame = 0;
		}
		t->wait.kind = RV_WAIT_MUTEX;
		t->wait.object = mutex;
	}
}
