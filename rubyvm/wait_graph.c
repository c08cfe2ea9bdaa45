/* The wait-for graph of threads and fibers, its cycles (deadlocks) and who
 * is stuck behind whom, once locks.c has found whom each waits for.
 *
 * Its nodes are the threads and every fiber that is not what its thread
 * runs (a suspended fiber holds its mutexes while its thread runs
 * others). An edge goes from a node that waits for ever to the node it
 * waits for: from a thread sleeping for ever (THREAD_STOPPED_FOREVER) on
 * a mutex, on joining a thread or on joining the ractor whose main thread
 * it is; from a non-blocking fiber its scheduler blocks on a mutex with no
 * timeout. A mutex's holder is the fiber that locked it when that fiber is
 * a node, else its thread. A thread that sleeps with a deadline, polls or
 * runs, and a fiber blocked with a timeout, have no edge, so they are in
 * no cycle. Each node waits on one thing at a time, so the edges form a
 * functional graph and each cycle is found once. */
#include <stdlib.h>
#include <string.h>

#include "../util/u64map.h"
#include "session.h"

struct graph {
	size_t n;
	size_t *thread; /* node -> its thread's index */
	size_t *fiber;  /* node -> 1 + its index in the thread's fibers, or 0 */
	long *next;     /* node -> the node it waits for for ever, or -1 */
	struct u64map fibers; /* rb_fiber_t -> 1 + its node */
};

static struct rv_fiber *node_fiber(const struct rv_process *p,
				   const struct graph *g, size_t i)
{
	return g->fiber[i] ? &p->threads[g->thread[i]].fibers[g->fiber[i] - 1]
			   : NULL;
}

/* Does node i wait for ever? */
static bool forever(const struct rv_process *p, const struct graph *g, size_t i)
{
	const struct rv_fiber *f = node_fiber(p, g, i);
	return f ? f->forever
		 : p->threads[g->thread[i]].state == RV_STATE_SLEEPING_FOREVER;
}

/* The node w waits for: the fiber holding its mutex when that is a node,
 * else the thread; -1 for none. */
static long holder(const struct graph *g, const struct rv_wait *w)
{
	int found = 0;
	if (w->waits_for < 0)
		return -1;
	void *v = w->owner_thread && w->owner_fiber
			  ? u64map_get(&g->fibers, w->owner_fiber, &found)
			  : NULL;
	return found ? (long)(uintptr_t)v - 1 : w->waits_for;
}

static bool graph_build(const struct rv_process *p, struct graph *g)
{
	size_t n = p->nthreads;
	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < p->nthreads; i++)
		n += p->threads[i].nfibers;
	g->thread = calloc(n ? n : 1, sizeof(*g->thread));
	g->fiber = calloc(n ? n : 1, sizeof(*g->fiber));
	g->next = calloc(n ? n : 1, sizeof(*g->next));
	if (!g->thread || !g->fiber || !g->next)
		return false;
	for (size_t i = 0; i < p->nthreads; i++)
		g->thread[g->n++] = i;
	for (size_t i = 0; i < p->nthreads; i++)
		for (size_t k = 0; k < p->threads[i].nfibers; k++) {
			const struct rv_fiber *f = &p->threads[i].fibers[k];
			if (f->is_current)
				continue;
			g->thread[g->n] = i;
			g->fiber[g->n] = k + 1;
			if (!u64map_put(&g->fibers, f->addr,
					(void *)(uintptr_t)(g->n + 1)))
				return false;
			g->n++;
		}
	for (size_t i = 0; i < g->n; i++) {
		const struct rv_fiber *f = node_fiber(p, g, i);
		const struct rv_wait *w = f ? &f->wait
					    : &p->threads[g->thread[i]].wait;
		long j = forever(p, g, i) ? holder(g, w) : -1;
		g->next[i] = j == (long)i ? -1 : j;
	}
	return true;
}

static void graph_free(struct graph *g)
{
	free(g->thread);
	free(g->fiber);
	free(g->next);
	u64map_free(&g->fibers, NULL);
}

static struct cs_error *add_cycle(struct rv_process *p, const struct graph *g,
				  size_t start)
{
	size_t n = 1;
	for (long j = g->next[start]; (size_t)j != start; j = g->next[j])
		n++;
	/* begin at the lowest node, so that a cycle reads the same however
	 * it was entered */
	size_t first = start;
	for (long j = g->next[start]; (size_t)j != start; j = g->next[j])
		if ((size_t)j < first)
			first = (size_t)j;
	size_t *threads = calloc(n, sizeof(*threads));
	size_t *fibers = calloc(n, sizeof(*fibers));
	void *grown = realloc(p->deadlocks,
			      (p->ndeadlocks + 1) * sizeof(*p->deadlocks));
	if (grown)
		p->deadlocks = grown;
	if (!threads || !fibers || !grown) {
		free(threads);
		free(fibers);
		return &cs_error_nomem;
	}
	size_t k = 0;
	for (size_t j = first; k < n; j = (size_t)g->next[j], k++) {
		struct rv_fiber *f = node_fiber(p, g, j);
		threads[k] = g->thread[j];
		fibers[k] = g->fiber[j];
		if (f)
			f->deadlock = p->ndeadlocks + 1;
		else
			p->threads[g->thread[j]].deadlock = p->ndeadlocks + 1;
	}
	p->deadlocks[p->ndeadlocks++] = (struct rv_deadlock){
		.threads = threads, .fibers = fibers, .n = n};
	return NULL;
}

/* Every cycle once: a walk from each node not yet seen marks what it
 * passes with its start; meeting its own mark again closes a cycle. */
static struct cs_error *find_cycles(struct rv_process *p, const struct graph *g)
{
	size_t *mark = calloc(g->n ? g->n : 1, sizeof(*mark));
	if (!mark)
		return &cs_error_nomem;
	struct cs_error *err = NULL;
	for (size_t i = 0; !err && i < g->n; i++) {
		long j = (long)i;
		while (j >= 0 && !mark[j]) {
			mark[j] = i + 1;
			j = g->next[j];
		}
		if (j >= 0 && mark[j] == i + 1)
			err = add_cycle(p, g, (size_t)j);
	}
	free(mark);
	return err;
}

/* A node in no cycle that waits for ever on a node that waits for ever is
 * stuck behind it. */
static void mark_stuck(struct rv_process *p, const struct graph *g)
{
	for (size_t i = 0; i < g->n; i++) {
		struct rv_fiber *f = node_fiber(p, g, i);
		struct rv_thread *t = &p->threads[g->thread[i]];
		long j = g->next[i];
		if ((f ? f->deadlock : t->deadlock) || j < 0 ||
		    !forever(p, g, (size_t)j))
			continue;
		if (f) {
			f->stuck_behind = (long)g->thread[j];
			f->stuck_behind_fiber = g->fiber[j];
		} else {
			t->stuck_behind = (long)g->thread[j];
			t->stuck_behind_fiber = g->fiber[j];
		}
	}
}

struct cs_error *rv_wait_graph_resolve(struct rv_process *p)
{
	struct graph g;
	struct cs_error *err = &cs_error_nomem;
	if (graph_build(p, &g) && !(err = find_cycles(p, &g)))
		mark_stuck(p, &g);
	graph_free(&g);
	return err;
}

void rv_deadlocks_free(struct rv_process *p)
{
	for (size_t i = 0; i < p->ndeadlocks; i++) {
		free(p->deadlocks[i].threads);
		free(p->deadlocks[i].fibers);
	}
	free(p->deadlocks);
	p->deadlocks = NULL;
	p->ndeadlocks = 0;
}
