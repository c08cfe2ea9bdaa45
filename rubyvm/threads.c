/* Every thread of every ractor, and the snapshot of the whole process.
 *
 * 2.7 keeps threads on vm->living_threads; 3.x keeps ractors on
 * vm->ractor.set and each ractor's threads on r->threads.set. Which walk
 * applies follows the members the DWARF has. Lists are ccan lists (renamed
 * in 3.2, same shape): iterate from head.n.next until back at &head.n. */
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"
#include "lists.h"
#include "session.h"

const char *rv_thread_status_name(enum rv_thread_status st)
{
	switch (st) {
	case RV_STATUS_RUN:
		return "run";
	case RV_STATUS_SLEEP:
		return "sleep";
	case RV_STATUS_ABORTING:
		return "aborting";
	case RV_STATUS_DEAD:
		return "dead";
	default:
		return "unknown";
	}
}

/* All rb_thread_t addresses, in Thread.list order. */
static void add_gvl_owner(struct rv_session *s, uint64_t base,
			  enum rv_item_id id, uint64_t **owners, size_t *n)
{
	uint64_t th;
	if (s->layout.items[id].source == RV_MISSING ||
	    !rv_try_member(s, base, id, &th) || !th)
		return;
	uint64_t *grown = realloc(*owners, (*n + 1) * sizeof(*grown));
	if (grown) {
		*owners = grown;
		grown[(*n)++] = th;
	}
}

static struct cs_error *thread_list(struct rv_session *s, uint64_t vm,
				    struct rv_list *threads,
				    uint64_t **gvl_owners, size_t *nowners)
{
	struct cs_error *err;
	size_t max = s->opts.max_threads;
	add_gvl_owner(s, vm, RVL_vm_gvl_owner, gvl_owners, nowners);
	if (RV_HAS(s, vm_living_threads) && RV_HAS(s, th_vmlt_node)) {
		err = rv_list_walk(s,
				   vm + (uint64_t)RV_VAL(s, vm_living_threads),
				   (uint64_t)RV_VAL(s, th_vmlt_node), max,
				   threads);
		return err ? err
			   : rv_list_check_count(s, vm,
						 RVL_vm_living_thread_num,
						 threads->count,
						 "vm->living_threads");
	}
	if (!RV_HAS(s, vm_ractor_set) || !RV_HAS(s, ractor_vmlr_node) ||
	    !RV_HAS(s, ractor_threads_set) || !RV_HAS(s, th_lt_node))
		return cs_error_create(CS_ERR_LOOKUP,
				       "neither vm->living_threads nor "
				       "ractor thread sets in the debug info");
	struct rv_list ractors = {0};
	err = rv_list_walk(s, vm + (uint64_t)RV_VAL(s, vm_ractor_set),
			   (uint64_t)RV_VAL(s, ractor_vmlr_node), max,
			   &ractors);
	if (!err)
		err = rv_list_check_count(s, vm, RVL_vm_ractor_cnt,
					  ractors.count, "vm->ractor.set");
	/* A ractor list cut short still leads to the threads it reached. */
	for (size_t i = 0; i < ractors.count; i++) {
		uint64_t r = ractors.items[i];
		size_t before = threads->count;
		struct cs_error *e = rv_list_walk(
			s, r + (uint64_t)RV_VAL(s, ractor_threads_set),
			(uint64_t)RV_VAL(s, th_lt_node),
			max - (before < max ? before : max), threads);
		if (!e)
			e = rv_list_check_count(s, r, RVL_ractor_threads_cnt,
						threads->count - before,
						"a ractor's threads.set");
		if (e && !err)
			err = e;
		else
			cs_error_destroy(e);
		add_gvl_owner(s, r, RVL_ractor_gvl_owner, gvl_owners, nowners);
		add_gvl_owner(s, r, RVL_ractor_sched_running, gvl_owners,
			      nowners);
	}
	rv_list_free(&ractors);
	return err;
}

static enum rv_thread_status thread_status(struct rv_session *s,
					   const struct rv_view *th)
{
	uint64_t st, to_kill = 0;
	if (!rv_view_try(s, th, RVL_th_status, &st))
		return RV_STATUS_UNKNOWN;
	/* As thread_status_name in thread.c: "aborting" is a runnable thread
	 * being killed (running its ensure clauses); a killed one is dead. */
	if (st == (uint64_t)RV_VAL(s, thread_runnable)) {
		if (RV_HAS(s, th_to_kill))
			rv_view_try(s, th, RVL_th_to_kill, &to_kill);
		return to_kill ? RV_STATUS_ABORTING : RV_STATUS_RUN;
	}
	if (st == (uint64_t)RV_VAL(s, thread_stopped) ||
	    st == (uint64_t)RV_VAL(s, thread_stopped_forever))
		return RV_STATUS_SLEEP;
	if (st == (uint64_t)RV_VAL(s, thread_killed))
		return RV_STATUS_DEAD;
	return RV_STATUS_UNKNOWN;
}

static void thread_ids(struct rv_session *s, const struct rv_view *th,
		       struct rv_thread *t)
{
	uint64_t v, nt;
	t->tid = -1;
	if (RV_HAS(s, th_tid) && rv_view_try(s, th, RVL_th_tid, &v) && v)
		t->tid = (int64_t)v;
	if (RV_HAS(s, th_thread_id) && rv_view_try(s, th, RVL_th_thread_id, &v))
		t->pthread_id = v;
	if (RV_HAS(s, th_nt) && rv_view_try(s, th, RVL_th_nt, &nt) && !nt)
		t->off_native = true;
	if (RV_HAS(s, th_nt) && rv_view_try(s, th, RVL_th_nt, &nt) && nt) {
		if (RV_HAS(s, nt_tid) && rv_try_member(s, nt, RVL_nt_tid, &v) &&
		    v)
			t->tid = (int64_t)v;
		if (RV_HAS(s, nt_thread_id) &&
		    rv_try_member(s, nt, RVL_nt_thread_id, &v))
			t->pthread_id = v;
	}
}

static void set_thread_error(struct rv_thread *t, struct cs_error *err)
{
	if (!t->error)
		t->error = strdup(err->message);
	cs_error_destroy(err);
}

/* The members of rb_thread_t a thread's snapshot takes, read at once. */
static const enum rv_item_id thread_members[] = {
	RVL_th_status,
	RVL_th_to_kill,
	RVL_th_tid,
	RVL_th_thread_id,
	RVL_th_nt,
	RVL_th_name,
	RVL_th_ec,
	RVL_th_ractor,
	RVL_th_blocking_region,
	RVL_th_locking_mutex,
	RVL_th_keeping_mutexes,
};

static void read_thread(struct rv_session *s, uint64_t th, uint64_t main_th,
			const uint64_t *gvl_owners, size_t nowners,
			struct rv_thread *t)
{
	memset(t, 0, sizeof(*t));
	t->addr = th;
	t->is_main = th == main_th;
	struct rv_view thv, ecv;
	rv_view_read(s, th, thread_members,
		     sizeof(thread_members) / sizeof(*thread_members), &thv);
	t->status = thread_status(s, &thv);
	thread_ids(s, &thv, t);
	uint64_t name, ec;
	if (RV_HAS(s, th_name) && rv_view_try(s, &thv, RVL_th_name, &name) &&
	    !rv_special_const(s, name)) {
		struct cs_error *err = rv_string(s, name, &t->name);
		if (err)
			set_thread_error(t, err);
	}
	struct cs_error *err = rv_view_member(s, &thv, RVL_th_ec, &ec);
	if (err) {
		set_thread_error(t, err);
		return;
	}
	for (size_t i = 0; i < nowners; i++)
		if (gvl_owners[i] == th)
			t->holds_gvl = true;
	rv_thread_ractor_read(s, &thv, t);
	if (ec)
		rv_ec_view_read(s, ec, &ecv);
	if (ec && RV_HAS(s, ec_machine_stack_start) &&
	    RV_HAS(s, ec_machine_stack_maxsize) &&
	    !(rv_view_try(s, &ecv, RVL_ec_machine_stack_start,
			  &t->machine_stack_start) &&
	      rv_view_try(s, &ecv, RVL_ec_machine_stack_maxsize,
			  &t->machine_stack_size)))
		t->machine_stack_start = t->machine_stack_size = 0;
	/* a finished thread has no EC */
	if (ec && (err = rv_walk_ec(s, &ecv, t)))
		set_thread_error(t, cs_error_wrap(err, "thread 0x%llx",
						  (unsigned long long)th));
	if (ec)
		rv_thread_exception_read(s, &ecv, t);
	rv_thread_state_read(s, &thv, t);
	rv_thread_wait_targets_read(s, &thv, t);
	rv_thread_locks_read(s, &thv, t);
}

char *rv_ruby_version(struct rv_session *s)
{
	char buf[32] = {0};
	if (!RV_HAS(s, ruby_version) ||
	    !rv_try_read(s, s->load_bias + (uint64_t)RV_VAL(s, ruby_version),
			 buf, sizeof(buf) - 1))
		return NULL;
	return strndup(buf, sizeof(buf) - 1);
}

struct cs_error *rv_snapshot(struct rv_session *s, struct rv_process **ret)
{
	uint64_t vm;
	struct cs_error *err =
		rv_read_u64(s, s->load_bias + (uint64_t)RV_VAL(s, vm_ptr), &vm);
	if (err)
		return cs_error_wrap(err, "reading ruby_current_vm_ptr");
	if (!vm)
		return cs_error_create(
			CS_ERR_NOT_RUBY,
			"ruby_current_vm_ptr is NULL: the Ruby VM "
			"was not started (or already torn down)");
	struct rv_process *p = calloc(1, sizeof(*p));
	if (!p)
		return &cs_error_nomem;
	rv_frame_cache_begin_snapshot(s);
	rv_frame_names_clear(s);
	rv_jit_frames_begin(s);
	s->output_left = s->opts.max_output_bytes;
	p->backtick_quotes = s->rules.backtick_quotes;
	p->ruby_version = rv_ruby_version(s);
	uint64_t progname;
	char *name = NULL;
	if (RV_HAS(s, vm_progname) &&
	    rv_try_member(s, vm, RVL_vm_progname, &progname) &&
	    !rv_failed(rv_string(s, progname, &name)))
		utf8_scrub(name); /* it reaches text and JSON */
	p->progname = name;
	struct rv_gc_state gc;
	rv_gc_state_read(s, vm, &gc);
	p->gc = gc;
	uint64_t main_th = 0;
	if (RV_HAS(s, vm_main_thread))
		rv_try_member(s, vm, RVL_vm_main_thread, &main_th);
	else if (RV_HAS(s, vm_ractor_main_thread))
		rv_try_member(s, vm, RVL_vm_ractor_main_thread, &main_th);

	struct rv_list threads = {0};
	uint64_t *gvl_owners = NULL;
	size_t nowners = 0;
	err = thread_list(s, vm, &threads, &gvl_owners, &nowners);
	if (err) {
		p->error = strdup(err->message);
		p->has_error_address = err->has_address;
		p->error_address = err->address;
		cs_error_destroy(err);
	}
	size_t count = threads.count;
	p->threads = calloc(count ? count : 1, sizeof(*p->threads));
	if (!p->threads) {
		rv_list_free(&threads);
		free(gvl_owners);
		rv_process_destroy(p);
		return &cs_error_nomem;
	}
	for (size_t i = 0; i < count; i++)
		read_thread(s, threads.items[i], main_th, gvl_owners, nowners,
			    &p->threads[p->nthreads++]);
	rv_list_free(&threads);
	free(gvl_owners);
	if ((err = rv_locks_resolve(s, p))) {
		rv_process_destroy(p);
		return err;
	}
	*ret = p;
	return NULL;
}

bool rv_process_complete(const struct rv_process *p)
{
	if (p->error || p->fibers_error ||
	    !rv_fibers_complete(p->orphan_fibers, p->norphan_fibers))
		return false;
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rv_thread *t = &p->threads[i];
		if (t->error || t->truncated || t->locks_error ||
		    !rv_fibers_complete(t->fibers, t->nfibers))
			return false;
		for (size_t j = 0; j < t->nframes; j++)
			if (t->frames[j].error)
				return false;
	}
	return true;
}

void rv_process_destroy(struct rv_process *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct rv_thread *t = &p->threads[i];
		for (size_t j = 0; j < t->nframes; j++)
			rv_frame_free(&t->frames[j]);
		free(t->frames);
		free(t->name);
		free(t->error);
		rv_fibers_free(t->fibers, t->nfibers);
		free(t->ractor.name);
		free(t->exception_class);
		free(t->exception_message);
		free(t->exception_message_error);
		free(t->wait.io_path);
		free(t->wait.ractor.name);
		free(t->held);
		free(t->locks_error);
	}
	rv_deadlocks_free(p);
	rv_fibers_free(p->orphan_fibers, p->norphan_fibers);
	free(p->fibers_error);
	free(p->threads);
	free(p->ruby_version);
	free(p->progname);
	free(p->gc.error);
	free(p->gc.library);
	free(p->fibers_note);
	free(p->error);
	free(p);
}
