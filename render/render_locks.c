/* Who holds what, in text and JSON: whom a thread or a fiber waits for,
 * the mutexes it holds, whether it is in a deadlock or stuck behind a
 * thread or fiber that waits for ever, and the deadlocks at the top of
 * the report. Formatting only: rubyvm/locks.c and wait_graph.c find them. */
#include <stdio.h>

#include "../util/json.h"
#include "../engine/report.h"

/* thread N "name" */
static void thread_ref(FILE *out, const struct rv_process *p, long i)
{
	fprintf(out, "thread %ld", i + 1);
	if (p->threads[i].name)
		fprintf(out, " \"%s\"", p->threads[i].name);
}

/* The address a fiber is shown by: its Fiber object, else its rb_fiber_t. */
static uint64_t fiber_shown(const struct rv_fiber *f)
{
	return f->object ? f->object : f->addr;
}

/* fiber (1 + its index in thread i's fibers) of thread i, or thread i:
 * "fiber 0x... of thread 3 "a"", "thread 3 "a"" */
static void node_ref(FILE *out, const struct rv_process *p, long i,
		     size_t fiber)
{
	if (fiber)
		fprintf(out, "fiber 0x%llx of ",
			(unsigned long long)fiber_shown(
				&p->threads[i].fibers[fiber - 1]));
	thread_ref(out, p, i);
}

/* The fiber holding the mutex when it is not what its thread runs. */
static uint64_t side_fiber(const struct rv_process *p, const struct rv_wait *w)
{
	if (!w->owner_fiber || w->waits_for < 0)
		return 0;
	const struct rv_thread *h = &p->threads[w->waits_for];
	for (size_t k = 0; k < h->nfibers; k++)
		if (h->fibers[k].addr == w->owner_fiber)
			return h->fibers[k].is_current
				       ? 0
				       : fiber_shown(&h->fibers[k]);
	return 0;
}

/* " held by thread 3 "a"", " of thread 5", ", whose main thread is thread 7" */
void cs_render_waits_for_text(FILE *out, const struct rv_process *p,
			      const struct rv_wait *w)
{
	if (w->kind == RV_WAIT_MUTEX && w->mutex && !w->owner_thread &&
	    !w->owner_fiber) {
		fputs(" (unlocked)", out);
		return;
	}
	uint64_t th = rv_wait_thread(w);
	if (!th)
		return;
	fputs(w->owner_thread ? " held by "
	      : w->joined     ? " of "
			      : ", whose main thread is ",
	      out);
	uint64_t fiber = side_fiber(p, w);
	if (fiber)
		fprintf(out, "fiber 0x%llx of ", (unsigned long long)fiber);
	if (w->waits_for >= 0)
		thread_ref(out, p, w->waits_for);
	else
		fprintf(out, "thread 0x%llx (not listed)",
			(unsigned long long)th);
}

/* Does the held mutex h belong to fiber (an rb_fiber_t; 0: to the whole
 * thread, every mutex it holds)? */
static bool held_by(const struct rv_held_mutex *h, uint64_t fiber)
{
	return !fiber || h->fiber == fiber;
}

static size_t held_count(const struct rv_thread *t, uint64_t fiber)
{
	size_t n = 0;
	for (size_t j = 0; j < t->nheld; j++)
		n += held_by(&t->held[j], fiber);
	return n;
}

/* "mutex 0x..." or "mutexes 0x..., (rb_mutex_t 0x...)": those of fiber,
 * or all of t's for 0 */
static void held_list(FILE *out, const struct rv_thread *t, uint64_t fiber)
{
	bool first = true;
	fputs(held_count(t, fiber) > 1 ? "mutexes " : "mutex ", out);
	for (size_t j = 0; j < t->nheld; j++) {
		if (!held_by(&t->held[j], fiber))
			continue;
		fputs(first ? "" : ", ", out);
		first = false;
		if (t->held[j].object)
			fprintf(out, "0x%llx",
				(unsigned long long)t->held[j].object);
		else
			fprintf(out, "(rb_mutex_t 0x%llx)",
				(unsigned long long)t->held[j].data);
	}
}

/* The deadlock a thread or fiber stuck behind others waits on, 0 for
 * none: the chain of what each is stuck behind, from thread i (its fiber
 * 1 + fiber), bounded. */
static size_t deadlock_behind(const struct rv_process *p, long i, size_t fiber)
{
	for (size_t n = 0; i >= 0 && n <= (size_t)1 << 20; n++) {
		const struct rv_thread *t = &p->threads[i];
		const struct rv_fiber *f = fiber ? &t->fibers[fiber - 1] : NULL;
		if (f ? f->deadlock : t->deadlock)
			return f ? f->deadlock : t->deadlock;
		i = f ? f->stuck_behind : t->stuck_behind;
		fiber = f ? f->stuck_behind_fiber : t->stuck_behind_fiber;
	}
	return 0;
}

/* "; deadlock 1" or "; stuck behind fiber 0x... of thread 3 (deadlock 1)" */
static void deadlock_text(FILE *out, const struct rv_process *p,
			  size_t deadlock, long behind, size_t behind_fiber)
{
	if (deadlock) {
		fprintf(out, "; deadlock %zu", deadlock);
	} else if (behind >= 0) {
		fputs("; stuck behind ", out);
		node_ref(out, p, behind, behind_fiber);
		size_t d = deadlock_behind(p, behind, behind_fiber);
		if (d)
			fprintf(out, " (deadlock %zu)", d);
	}
}

/* " 0x... (1 item of max 1, 2 waiting to push)" */
static void queue_text(FILE *out, const struct rv_wait *w)
{
	fprintf(out, " 0x%llx (%lld item%s", (unsigned long long)w->queue,
		(long long)w->queue_items, w->queue_items == 1 ? "" : "s");
	if (w->queue_max >= 0)
		fprintf(out, " of max %lld", (long long)w->queue_max);
	if (w->queue_poppers >= 0)
		fprintf(out, ", %lld waiting to pop",
			(long long)w->queue_poppers);
	if (w->queue_pushers >= 0)
		fprintf(out, ", %lld waiting to push",
			(long long)w->queue_pushers);
	fputc(')', out);
}

/* ", to take back mutex 0x... held by thread 3 "a"" */
static void retake_text(FILE *out, const struct rv_process *p,
			const struct rv_wait *w)
{
	fprintf(out, ", to take back mutex 0x%llx",
		(unsigned long long)w->retake);
	if (w->retake_holder >= 0) {
		fputs(" held by ", out);
		thread_ref(out, p, w->retake_holder);
	} else if (w->retake_owner) {
		fprintf(out, " held by thread 0x%llx (not listed)",
			(unsigned long long)w->retake_owner);
	} else {
		fputs(" (unlocked)", out);
	}
}

/* ", entering monitor 0x... (entered 2 times by thread 3 "a")" */
static void monitor_text(FILE *out, const struct rv_process *p,
			 const struct rv_wait *w)
{
	fprintf(out, ", entering monitor 0x%llx (entered %lld time%s",
		(unsigned long long)w->monitor, (long long)w->monitor_count,
		w->monitor_count == 1 ? "" : "s");
	if (w->monitor_owner >= 0) {
		fputs(" by ", out);
		thread_ref(out, p, w->monitor_owner);
	} else if (w->monitor_owner_thread) {
		fprintf(out, " by thread 0x%llx (not listed)",
			(unsigned long long)w->monitor_owner_thread);
	} else if (w->monitor_count) {
		fputs(" by no listed thread's running fiber", out);
	}
	fputc(')', out);
}

void cs_render_locks_text(FILE *out, const struct rv_process *p, size_t i)
{
	const struct rv_thread *t = &p->threads[i];
	if (t->wait.kind != RV_WAIT_NONE)
		cs_render_waits_for_text(out, p, &t->wait);
	if (t->wait.monitor)
		monitor_text(out, p, &t->wait);
	if (t->wait.queue)
		queue_text(out, &t->wait);
	if (t->wait.retake)
		retake_text(out, p, &t->wait);
	if (t->nheld) {
		fputs("; holds ", out);
		held_list(out, t, 0);
	}
	if (t->locks_error)
		fprintf(out, "; <locks unreadable: %s>", t->locks_error);
	deadlock_text(out, p, t->deadlock, t->stuck_behind,
		      t->stuck_behind_fiber);
}

void cs_render_fiber_locks_text(FILE *out, const struct rv_process *p,
				const struct rv_thread *t,
				const struct rv_fiber *f)
{
	/* the current fiber's are on its thread's line */
	if (t && f->addr && !f->is_current && held_count(t, f->addr)) {
		fputs("; holds ", out);
		held_list(out, t, f->addr);
	}
	deadlock_text(out, p, f->deadlock, f->stuck_behind,
		      f->stuck_behind_fiber);
}

/* "2 threads", "1 thread and 2 fibers" */
static void members_text(FILE *out, const struct rv_deadlock *dl)
{
	size_t fibers = 0;
	for (size_t k = 0; k < dl->n; k++)
		fibers += dl->fibers[k] != 0;
	size_t threads = dl->n - fibers;
	if (threads)
		fprintf(out, "%zu thread%s", threads, threads == 1 ? "" : "s");
	if (threads && fibers)
		fputs(" and ", out);
	if (fibers)
		fprintf(out, "%zu fiber%s", fibers, fibers == 1 ? "" : "s");
}

void cs_render_deadlocks_text(FILE *out, const struct rv_process *p)
{
	for (size_t d = 0; d < p->ndeadlocks; d++) {
		const struct rv_deadlock *dl = &p->deadlocks[d];
		fprintf(out, "\nDeadlock %zu: ", d + 1);
		members_text(out, dl);
		fputs(" wait for each other for ever\n", out);
		for (size_t k = 0; k < dl->n; k++) {
			const struct rv_thread *t = &p->threads[dl->threads[k]];
			const struct rv_fiber *f =
				dl->fibers[k] ? &t->fibers[dl->fibers[k] - 1]
					      : NULL;
			const struct rv_wait *w = f ? &f->wait : &t->wait;
			uint64_t fiber = f ? f->addr : 0;
			fputs("  ", out);
			if (f)
				fprintf(out, "Fiber 0x%llx of ",
					(unsigned long long)fiber_shown(f));
			fprintf(out, "%s %zu", f ? "thread" : "Thread",
				dl->threads[k] + 1);
			if (t->name)
				fprintf(out, " \"%s\"", t->name);
			if (held_count(t, fiber)) {
				fputs(" holds ", out);
				held_list(out, t, fiber);
				fputs(" and", out);
			}
			if (w->owner_thread) {
				fprintf(out, " waits on mutex 0x%llx",
					(unsigned long long)w->object);
				cs_render_waits_for_text(out, p, w);
			} else if (w->ractor_main && !w->joined) {
				fprintf(out, " joins ractor #%u",
					(unsigned)w->ractor.id);
				if (w->ractor.name)
					fprintf(out, " \"%s\"", w->ractor.name);
				cs_render_waits_for_text(out, p, w);
			} else {
				fputs(" joins ", out);
				thread_ref(out, p, w->waits_for);
			}
			fputc('\n', out);
		}
	}
}

static void int_or_null(struct json *j, const char *key, int64_t v)
{
	if (v >= 0)
		json_int(j, key, v);
	else
		json_null(j, key);
}

void cs_render_wait_objects_json(struct json *j, const struct rv_wait *w)
{
	if (w->queue) {
		json_begin_object(j, "queue");
		json_address(j, "object", w->queue);
		json_int(j, "items", w->queue_items);
		int_or_null(j, "max", w->queue_max);
		int_or_null(j, "waiting_to_pop", w->queue_poppers);
		int_or_null(j, "waiting_to_push", w->queue_pushers);
		json_end_object(j);
	} else {
		json_null(j, "queue");
	}
	if (w->retake) {
		json_begin_object(j, "retakes");
		json_address(j, "mutex", w->retake);
		json_address(j, "held_by", w->retake_owner);
		json_end_object(j);
	} else {
		json_null(j, "retakes");
	}
	if (w->monitor) {
		json_begin_object(j, "monitor");
		json_address(j, "object", w->monitor);
		json_int(j, "count", w->monitor_count);
		json_address(j, "owner", w->monitor_owner_thread);
		json_end_object(j);
	} else {
		json_null(j, "monitor");
	}
}

void cs_render_waits_for_json(struct json *j, const struct rv_wait *w)
{
	if (!rv_wait_thread(w)) {
		json_null(j, "waits_for");
		return;
	}
	json_begin_object(j, "waits_for");
	json_string(j, "by",
		    w->owner_thread ? "mutex_owner"
		    : w->joined     ? "join"
				    : "ractor_main_thread");
	json_address(j, "thread", rv_wait_thread(w));
	json_address(j, "fiber", w->owner_fiber);
	json_end_object(j);
}

/* the mutexes fiber holds, all of t's for 0 */
static void held_json(struct json *j, const struct rv_thread *t, uint64_t fiber)
{
	json_begin_array(j, "holds");
	for (size_t k = 0; k < t->nheld; k++) {
		if (!held_by(&t->held[k], fiber))
			continue;
		json_begin_object(j, NULL);
		json_string(j, "kind", "mutex");
		json_address(j, "object", t->held[k].object);
		json_address(j, "data", t->held[k].data);
		json_address(j, "fiber", t->held[k].fiber);
		json_end_object(j);
	}
	json_end_array(j);
}

/* "deadlock", "stuck_behind" and "stuck_behind_fiber" */
static void deadlock_json(struct json *j, const struct rv_process *p,
			  size_t deadlock, long behind, size_t behind_fiber)
{
	if (deadlock)
		json_int(j, "deadlock", (int64_t)deadlock);
	else
		json_null(j, "deadlock");
	json_address(j, "stuck_behind",
		     behind >= 0 ? p->threads[behind].addr : 0);
	json_address(j, "stuck_behind_fiber",
		     behind >= 0 && behind_fiber
			     ? p->threads[behind].fibers[behind_fiber - 1].addr
			     : 0);
}

void cs_render_locks_json(struct json *j, const struct rv_process *p, size_t i)
{
	const struct rv_thread *t = &p->threads[i];
	held_json(j, t, 0);
	json_string(j, "locks_error", t->locks_error);
	deadlock_json(j, p, t->deadlock, t->stuck_behind,
		      t->stuck_behind_fiber);
}

void cs_render_fiber_locks_json(struct json *j, const struct rv_process *p,
				const struct rv_thread *t,
				const struct rv_fiber *f)
{
	if (t)
		held_json(j, t, f->addr);
	else
		json_null(j, "holds");
	deadlock_json(j, p, f->deadlock, f->stuck_behind,
		      f->stuck_behind_fiber);
}

void cs_render_deadlocks_json(struct json *j, const struct rv_process *p)
{
	json_begin_array(j, "deadlocks");
	for (size_t d = 0; d < p->ndeadlocks; d++) {
		const struct rv_deadlock *dl = &p->deadlocks[d];
		json_begin_object(j, NULL);
		json_int(j, "number", (int64_t)d + 1);
		json_begin_array(j, "threads");
		for (size_t k = 0; k < dl->n; k++) {
			const struct rv_thread *t = &p->threads[dl->threads[k]];
			const struct rv_fiber *f =
				dl->fibers[k] ? &t->fibers[dl->fibers[k] - 1]
					      : NULL;
			const struct rv_wait *w = f ? &f->wait : &t->wait;
			json_begin_object(j, NULL);
			json_int(j, "number", (int64_t)dl->threads[k] + 1);
			json_address(j, "thread", t->addr);
			json_string(j, "name", t->name);
			json_address(j, "fiber", f ? f->addr : 0);
			json_address(j, "fiber_object", f ? f->object : 0);
			json_string(j, "waiting_on",
				    rv_wait_kind_name(w->kind));
			json_address(j, "object", w->object);
			cs_render_waits_for_json(j, w);
			held_json(j, t, f ? f->addr : 0);
			json_end_object(j);
		}
		json_end_array(j);
		json_end_object(j);
	}
	json_end_array(j);
}
