/* Who holds what: the owner of the mutex a thread or a fiber waits on,
 * the mutexes each thread holds, the thread a join waits for; then the
 * wait-for graph (wait_graph.c) finds the deadlocks.
 *
 * A Mutex is a T_DATA of mutex_data_type; its rb_mutex_t names the thread
 * holding it (2.7, 4.0+) or the fiber (3.0 to 3.4), whose saved execution
 * context names the thread; 4.0+ names the fiber by its execution
 * context's serial (ec_serial), matched with the fibers' once they are
 * read. A thread keeps the mutexes it holds on th->keeping_mutexes,
 * linked by next_mutex, the last locked first. A thread in Thread#join is
 * on the joined thread's join_list until the join returns. Every list is
 * bounded: a cycle or a list longer than MAX_LIST stops the walk with a
 * reason, never a guess. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/u64map.h"
#include "session.h"

#define MAX_LIST 4096

static void set_locks_error(struct rv_thread *t, const char *what,
			    uint64_t addr)
{
	if (t->locks_error)
		return;
	if (asprintf(&t->locks_error, "%s at 0x%llx", what,
		     (unsigned long long)addr) < 0)
		t->locks_error = NULL;
}

static uint64_t mutex_data(struct rv_session *s, uint64_t obj)
{
	return rv_typed_data_of(s, obj, RVL_mutex_data_type);
}

/* The self (cfp->self) of frame i of t, 0 when unreadable. */
static uint64_t self_of_frame(struct rv_session *s, const struct rv_thread *t,
			      size_t i)
{
	uint64_t self;
	return i < t->nframes && t->frames[i].cfp &&
			       rv_try_member(s, t->frames[i].cfp, RVL_cfp_self,
					     &self)
		       ? self
		       : 0;
}

/* The thread whose fiber (rb_fiber_t) fiber is: the thread of its saved
 * execution context; false when unreadable. */
static bool fiber_thread(struct rv_session *s, uint64_t fiber, uint64_t *th)
{
	return RV_HAS(s, fiber_saved_ec) && RV_HAS(s, ec_thread_ptr) &&
	       rv_try_member(s, fiber + (uint64_t)RV_VAL(s, fiber_saved_ec),
			     RVL_ec_thread_ptr, th);
}

/* The fiber that locked the mutex at data, by the member the mutex has:
 * the fiber itself (3.0 to 3.4) or its execution context's serial (4.0+,
 * matched with the fibers' in rv_locks_resolve); 0 for none known. */
static void mutex_fiber(struct rv_session *s, uint64_t data, uint64_t *fiber,
			uint64_t *serial)
{
	*fiber = *serial = 0;
	if (RV_HAS(s, mutex_fiber))
		rv_try_member(s, data, RVL_mutex_fiber, fiber);
	else if (RV_HAS(s, mutex_ec_serial))
		rv_try_member(s, data, RVL_mutex_ec_serial, serial);
}

/* The thread (and fiber, or its serial) holding the mutex at data; false
 * when unreadable. An unlocked mutex gives true with all 0. */
static bool mutex_owner(struct rv_session *s, uint64_t data, uint64_t *th,
			uint64_t *fiber, uint64_t *serial)
{
	*th = *fiber = *serial = 0;
	if (RV_HAS(s, mutex_th)) {
		if (!rv_try_member(s, data, RVL_mutex_th, th))
			return false;
		if (*th)
			mutex_fiber(s, data, fiber, serial);
		return true;
	}
	if (!RV_HAS(s, mutex_fiber) ||
	    !rv_try_member(s, data, RVL_mutex_fiber, fiber))
		return false;
	return !*fiber || fiber_thread(s, *fiber, th);
}

static void read_held(struct rv_session *s, const struct rv_view *th,
		      struct rv_thread *t)
{
	uint64_t m;
	if (!RV_HAS(s, th_keeping_mutexes) || !RV_HAS(s, mutex_next) ||
	    !rv_view_try(s, th, RVL_th_keeping_mutexes, &m))
		return;
	size_t cap = 0;
	while (m) {
		if (t->nheld == MAX_LIST) {
			set_locks_error(
				t, "held mutexes: list longer than 4096", m);
			return;
		}
		for (size_t i = 0; i < t->nheld; i++)
			if (t->held[i].data == m) {
				set_locks_error(t, "held mutexes: a cycle", m);
				return;
			}
		if (t->nheld == cap) {
			size_t ncap = cap ? 2 * cap : 4;
			void *p = realloc(t->held, ncap * sizeof(*t->held));
			if (!p) {
				set_locks_error(
					t, "held mutexes: out of memory", m);
				return;
			}
			t->held = p;
			cap = ncap;
		}
		struct rv_held_mutex *h = &t->held[t->nheld++];
		*h = (struct rv_held_mutex){.data = m};
		mutex_fiber(s, m, &h->fiber, &h->serial);
		if (!rv_try_member(s, m, RVL_mutex_next, &m)) {
			set_locks_error(t, "held mutexes: unreadable mutex",
					t->held[t->nheld - 1].data);
			return;
		}
	}
}

/* The Queue or SizedQueue the method that told waits on: its counts. */
static void read_queue(struct rv_session *s, const struct rv_thread *t,
		       struct rv_wait *w)
{
	uint64_t self = self_of_frame(s, t, w->frame - 1), q, v, que, ptr;
	uint64_t data = rv_typed_data_of(s, self, RVL_szqueue_data_type);
	bool sized = data && RV_HAS(s, szqueue_q);
	if (!sized)
		data = rv_typed_data_of(s, self, RVL_queue_data_type);
	if (!data)
		return;
	q = sized ? data + (uint64_t)RV_VAL(s, szqueue_q) : data;
	if (RV_HAS(s, queue_que)) {
		if (!rv_try_member(s, q, RVL_queue_que, &que) ||
		    rv_failed(rv_array_span(s, que, &ptr, &v)))
			return;
	} else if (!RV_HAS(s, queue_len) ||
		   !rv_try_member(s, q, RVL_queue_len, &v)) {
		return;
	}
	w->queue_items = (int64_t)v;
	w->queue_max = w->queue_pushers = -1;
	w->queue_poppers = rv_try_member(s, q, RVL_queue_num_waiting, &v)
				   ? (int64_t)(uint32_t)v
				   : -1;
	if (sized && rv_try_member(s, data, RVL_szqueue_max, &v))
		w->queue_max = (int64_t)v;
	if (sized && rv_try_member(s, data, RVL_szqueue_num_waiting_push, &v))
		w->queue_pushers = (int64_t)(uint32_t)v;
	w->queue = self;
}

/* The Mutex a Ruby frame's method has as its parameter named "mutex"
 * (ConditionVariable#wait(mutex, timeout = nil) written in Ruby, 4.0+),
 * else its first local that is a Mutex; 0 if none. */
static uint64_t mutex_local(struct rv_session *s, const struct rv_frame *f)
{
	const struct rv_iseq_info *info;
	uint64_t ep, *ids = NULL, n = 0, first = 0, named = 0;
	if (f->kind != RV_FRAME_RUBY || !f->iseq || !f->cfp ||
	    !rv_try_member(s, f->cfp, RVL_cfp_ep, &ep) ||
	    rv_failed(rv_iseq_lookup(s, f->iseq, &info)) ||
	    rv_failed(rv_scope_slots(s, f->iseq, info, ep, &ids, &n)))
		return 0;
	for (uint64_t k = 0; !named && k < n; k++) {
		uint64_t v = ids[n + k];
		char *name = NULL;
		if (!mutex_data(s, v))
			continue;
		if (!first)
			first = v;
		if (!rv_failed(rv_id_name(s, ids[k], &name)) &&
		    strcmp(name, "mutex") == 0)
			named = v;
		free(name);
	}
	free(ids);
	return named ? named : first;
}

/* The Mutex a ConditionVariable#wait takes back: the self of the
 * Mutex#sleep it sleeps in, or where it sleeps without calling that
 * method (4.0+, written in Ruby), its mutex parameter (mutex_local). */
static void read_retake(struct rv_session *s, const struct rv_thread *t,
			struct rv_wait *w)
{
	uint64_t mutex = 0, fiber, serial;
	for (size_t i = 0; !mutex && i < t->nframes && i < w->frame; i++) {
		const char *q = t->frames[i].qualified;
		if (q && !strcmp(q, "Thread::Mutex#sleep"))
			mutex = self_of_frame(s, t, i);
	}
	if (!mutex)
		mutex = mutex_local(s, &t->frames[w->frame - 1]);
	uint64_t data = mutex ? mutex_data(s, mutex) : 0;
	if (data && mutex_owner(s, data, &w->retake_owner, &fiber, &serial)) {
		w->retake = mutex;
		w->retake_mutex = data;
	}
}

/* The thread a Monitor's owner object is: a Thread (its rb_thread_t) or a
 * Fiber (the thread of its execution context), as its data type says.
 * False when it is neither, or unreadable; nil gives true and 0. */
static bool owner_thread(struct rv_session *s, uint64_t owner, uint64_t *th)
{
	uint64_t fiber;
	*th = 0;
	if (rv_special_const(s, owner)) /* nil: none */
		return true;
	if ((*th = rv_typed_data_of(s, owner, RVL_thread_data_type)))
		return true;
	fiber = rv_typed_data_of(s, owner, RVL_fiber_data_type);
	if (!fiber)
		fiber = rv_typed_data_of(s, owner, RVL_rb_fiber_data_type);
	return fiber && fiber_thread(s, fiber, th);
}

/* The Monitor t waits to enter: the self of the innermost Monitor#enter or
 * Monitor#synchronize (Thread::Monitor where libruby defines it), when it
 * is a T_DATA of monitor_data_type (libruby's or monitor.so's) whose
 * rb_monitor locks the mutex t waits on: its entries, and its owner by
 * the serial of the execution context that entered it (ec_serial, matched
 * with the threads' in rv_locks_resolve) or by the Thread or Fiber object
 * that did (owner). */
static void read_monitor(struct rv_session *s, struct rv_thread *t,
			 struct rv_wait *w)
{
	uint64_t self = 0, data = 0, mutex, count, serial = 0, owner = 0,
		 th = 0;
	for (size_t i = 0; !self && i < t->nframes; i++) {
		const char *q = t->frames[i].qualified;
		const char *m = q && !strncmp(q, "Thread::", 8) ? q + 8 : q;
		if (m && (!strcmp(m, "Monitor#enter") ||
			  !strcmp(m, "Monitor#synchronize")))
			self = self_of_frame(s, t, i);
	}
	if (self)
		data = rv_typed_data_of(s, self, RVL_monitor_data_type);
	if (!data || !RV_HAS(s, monitor_mutex) ||
	    !rv_try_member(s, data, RVL_monitor_mutex, &mutex) ||
	    mutex != w->object)
		return;
	/* a Monitor whose struct says who owns it, one way or the other */
	bool by_serial = RV_HAS(s, monitor_ec_serial);
	if (!by_serial && !RV_HAS(s, monitor_owner))
		return;
	if (!rv_try_member(s, data, RVL_monitor_count, &count) ||
	    !rv_try_member(s, data,
			   by_serial ? RVL_monitor_ec_serial
				     : RVL_monitor_owner,
			   by_serial ? &serial : &owner)) {
		set_locks_error(t, "monitor unreadable", data);
		return;
	}
	/* an owner not told apart says so only where both types are known */
	if (!by_serial && !owner_thread(s, owner, &th) &&
	    RV_HAS(s, thread_data_type) &&
	    (RV_HAS(s, fiber_data_type) || RV_HAS(s, rb_fiber_data_type)))
		set_locks_error(t, "monitor owner neither a Thread nor a Fiber",
				owner);
	w->monitor = self;
	w->monitor_count = (int64_t)count;
	w->monitor_serial = serial;
	w->monitor_owner_thread = th;
}

void rv_thread_locks_read(struct rv_session *s, const struct rv_view *th,
			  struct rv_thread *t)
{
	t->wait.monitor_owner = -1;
	t->wait.waits_for = -1;
	t->wait.retake_holder = -1;
	t->stuck_behind = -1;
	if (s->opts.no_locks)
		return;
	read_held(s, th, t);
	if ((t->wait.kind == RV_WAIT_QUEUE ||
	     t->wait.kind == RV_WAIT_SIZED_QUEUE) &&
	    t->wait.frame)
		read_queue(s, t, &t->wait);
	if (t->wait.kind == RV_WAIT_CONDITION_VARIABLE && t->wait.frame)
		read_retake(s, t, &t->wait);
	if (t->wait.kind != RV_WAIT_MUTEX || !t->wait.object)
		return;
	t->wait.mutex = mutex_data(s, t->wait.object);
	if (!t->wait.mutex) {
		/* without the data type in the debug info nothing is shown */
		if (RV_HAS(s, mutex_data_type))
			set_locks_error(t, "not a Mutex", t->wait.object);
		return;
	}
	if (!mutex_owner(s, t->wait.mutex, &t->wait.owner_thread,
			 &t->wait.owner_fiber, &t->wait.owner_serial))
		set_locks_error(t, "mutex owner unreadable", t->wait.mutex);
	if (RV_HAS(s, monitor_data_type))
		read_monitor(s, t, &t->wait);
}

void rv_fiber_locks_read(struct rv_session *s, struct rv_fiber *f)
{
	struct rv_wait *w = &f->wait;
	w->waits_for = w->retake_holder = w->monitor_owner = -1;
	f->deadlock = 0;
	f->stuck_behind = -1;
	f->stuck_behind_fiber = 0;
	if (s->opts.no_locks || w->kind != RV_WAIT_MUTEX || !w->object)
		return;
	w->mutex = mutex_data(s, w->object);
	if (w->mutex && !mutex_owner(s, w->mutex, &w->owner_thread,
				     &w->owner_fiber, &w->owner_serial))
		w->owner_thread = w->owner_fiber = w->owner_serial = 0;
}

/* Thread addresses to 1 + their index; the data of the Mutexes threads
 * wait on or will take back to their objects; where mutexes name their
 * holder fiber by its serial (4.0+), fibers' serials to their
 * rb_fiber_t. */
struct index {
	struct u64map threads, mutexes, serials;
};

static long thread_index(const struct index *ix, uint64_t th)
{
	int found = 0;
	void *v = th ? u64map_get(&ix->threads, th, &found) : NULL;
	return found ? (long)(uintptr_t)v - 1 : -1;
}

static bool index_wait(struct index *ix, const struct rv_wait *w)
{
	return (!w->mutex || u64map_put(&ix->mutexes, w->mutex,
					(void *)(uintptr_t)w->object)) &&
	       (!w->retake_mutex || u64map_put(&ix->mutexes, w->retake_mutex,
					       (void *)(uintptr_t)w->retake));
}

static bool index_build(const struct rv_process *p, struct index *ix)
{
	memset(ix, 0, sizeof(*ix));
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rv_thread *t = &p->threads[i];
		if ((t->addr && !u64map_put(&ix->threads, t->addr,
					    (void *)(uintptr_t)(i + 1))) ||
		    !index_wait(ix, &t->wait))
			return false;
		for (size_t k = 0; k < t->nfibers; k++)
			if (!index_wait(ix, &t->fibers[k].wait))
				return false;
	}
	return true;
}

/* Each thread on a join list waits for the thread whose list it is. */
static void read_joins(struct rv_session *s, struct rv_process *p,
		       const struct index *ix)
{
	enum rv_item_id next, who;
	if (RV_HAS(s, waiting_list_next) && RV_HAS(s, waiting_list_thread)) {
		next = RVL_waiting_list_next;
		who = RVL_waiting_list_thread;
	} else if (RV_HAS(s, thread_list_next) && RV_HAS(s, thread_list_th)) {
		next = RVL_thread_list_next;
		who = RVL_thread_list_th;
	} else {
		return;
	}
	for (size_t i = 0; RV_HAS(s, th_join_list) && i < p->nthreads; i++) {
		struct rv_thread *target = &p->threads[i];
		uint64_t node, waiter;
		if (!rv_try_member(s, target->addr, RVL_th_join_list, &node))
			continue;
		for (size_t n = 0; node; n++) {
			if (n == MAX_LIST) {
				set_locks_error(target,
						"join list longer than 4096",
						node);
				break;
			}
			if (!rv_try_member(s, node, who, &waiter) ||
			    !rv_try_member(s, node, next, &node)) {
				set_locks_error(target, "join list unreadable",
						node);
				break;
			}
			long w = thread_index(ix, waiter);
			if (w >= 0 && !p->threads[w].wait.joined)
				p->threads[w].wait.joined = target->addr;
		}
	}
}

/* Name the Mutex objects of held mutexes that some thread waits on or
 * will take back. */
static void name_held(struct rv_process *p, const struct index *ix)
{
	for (size_t i = 0; i < p->nthreads; i++) {
		struct rv_thread *t = &p->threads[i];
		for (size_t j = 0; j < t->nheld; j++) {
			int found = 0;
			void *v = u64map_get(&ix->mutexes, t->held[j].data,
					     &found);
			if (found)
				t->held[j].object = (uint64_t)(uintptr_t)v;
		}
	}
}

/* The serial of the execution context thread th runs, 0 when unknown:
 * what a Monitor names its owner by. */
static uint64_t ec_serial(struct rv_session *s, uint64_t th)
{
	uint64_t ec, serial;
	return RV_HAS(s, ec_serial) && rv_try_member(s, th, RVL_th_ec, &ec) &&
			       ec &&
			       rv_try_member(s, ec, RVL_ec_serial, &serial)
		       ? serial
		       : 0;
}

/* The serial of the execution context of fiber (an rb_fiber_t), 0 when
 * unknown. */
static uint64_t fiber_serial(struct rv_session *s, uint64_t fiber)
{
	uint64_t serial;
	return RV_HAS(s, ec_serial) && RV_HAS(s, fiber_saved_ec) &&
			       rv_try_member(s,
					     fiber + (uint64_t)RV_VAL(
							     s, fiber_saved_ec),
					     RVL_ec_serial, &serial)
		       ? serial
		       : 0;
}

/* Index every fiber's serial, where mutexes name fibers by one. */
static bool index_serials(struct rv_session *s, const struct rv_process *p,
			  struct index *ix)
{
	for (size_t i = 0; RV_HAS(s, mutex_ec_serial) && i < p->nthreads; i++)
		for (size_t k = 0; k < p->threads[i].nfibers; k++) {
			uint64_t fiber = p->threads[i].fibers[k].addr,
				 serial = fiber_serial(s, fiber);
			if (serial && !u64map_put(&ix->serials, serial,
						  (void *)(uintptr_t)fiber))
				return false;
		}
	return true;
}

/* The fiber whose execution context has serial, 0 if none: the fiber a
 * mutex names by its serial (4.0+). */
static uint64_t fiber_of_serial(const struct index *ix, uint64_t serial)
{
	int found = 0;
	void *v = serial ? u64map_get(&ix->serials, serial, &found) : NULL;
	return found ? (uint64_t)(uintptr_t)v : 0;
}

/* Whom w waits for: its holder's (or joined thread's) index, and where
 * the mutex names its holder by a serial, the holder's fiber. */
static void resolve_wait(const struct index *ix, struct rv_wait *w)
{
	w->retake_holder = thread_index(ix, w->retake_owner);
	w->waits_for = thread_index(ix, rv_wait_thread(w));
	if (w->owner_serial && !w->owner_fiber && w->waits_for >= 0)
		w->owner_fiber = fiber_of_serial(ix, w->owner_serial);
}

struct cs_error *rv_locks_resolve(struct rv_session *s, struct rv_process *p)
{
	struct index ix;
	struct cs_error *err = NULL;
	rv_deadlocks_free(p);
	for (size_t i = 0; i < p->nthreads; i++) {
		struct rv_thread *t = &p->threads[i];
		t->stuck_behind = -1;
		t->stuck_behind_fiber = 0;
		t->deadlock = 0;
		t->wait.waits_for = -1;
		t->wait.retake_holder = -1;
		t->wait.monitor_owner = -1;
		for (size_t k = 0; k < t->nfibers; k++) {
			t->fibers[k].deadlock = 0;
			t->fibers[k].stuck_behind = -1;
			t->fibers[k].stuck_behind_fiber = 0;
			t->fibers[k].wait.waits_for = -1;
		}
	}
	if (s->opts.no_locks)
		return NULL;
	if (!index_build(p, &ix) || !index_serials(s, p, &ix)) {
		err = &cs_error_nomem;
		goto out;
	}
	read_joins(s, p, &ix);
	for (size_t i = 0; i < p->nthreads; i++) {
		struct rv_thread *t = &p->threads[i];
		struct rv_wait *w = &t->wait;
		resolve_wait(&ix, w);
		for (size_t k = 0; k < t->nfibers; k++)
			resolve_wait(&ix, &t->fibers[k].wait);
		for (size_t k = 0; k < t->nheld; k++)
			if (!t->held[k].fiber)
				t->held[k].fiber =
					fiber_of_serial(&ix, t->held[k].serial);
		/* a Monitor's owner: its thread (read_monitor), or the
		 * thread running the execution context of its serial */
		w->monitor_owner = thread_index(&ix, w->monitor_owner_thread);
		for (size_t j = 0;
		     w->monitor && w->monitor_serial && j < p->nthreads; j++)
			if (ec_serial(s, p->threads[j].addr) ==
			    w->monitor_serial) {
				w->monitor_owner = (long)j;
				w->monitor_owner_thread = p->threads[j].addr;
			}
	}
	name_held(p, &ix);
	err = rv_wait_graph_resolve(p);
out:
	u64map_free(&ix.threads, NULL);
	u64map_free(&ix.mutexes, NULL);
	u64map_free(&ix.serials, NULL);
	return err;
}
