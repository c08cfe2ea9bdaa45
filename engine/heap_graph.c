/* The roots on stacks need a snapshot with every fiber and every frame's
 * locals, and each thread's kernel thread's registers for its machine
 * stack; the model then walks the heap from them. */
#include <stdlib.h>
#include <string.h>

#include "heap_graph.h"
#include "thread_tids.h"

/* The registers the GC's setjmp would spill: the general-purpose ones. */
static const struct {
	enum cs_reg reg;
	const char *name;
} gp_regs[] = {
	{CS_REG_RAX, "rax"}, {CS_REG_RBX, "rbx"}, {CS_REG_RCX, "rcx"},
	{CS_REG_RDX, "rdx"}, {CS_REG_RSI, "rsi"}, {CS_REG_RDI, "rdi"},
	{CS_REG_RBP, "rbp"}, {CS_REG_R8, "r8"},   {CS_REG_R9, "r9"},
	{CS_REG_R10, "r10"}, {CS_REG_R11, "r11"}, {CS_REG_R12, "r12"},
	{CS_REG_R13, "r13"}, {CS_REG_R14, "r14"}, {CS_REG_R15, "r15"},
};

struct stacks {
	struct rv_process *p;
	struct rv_root_stacks roots;
	struct rv_native_stack *machine;
	size_t machine_unread; /* threads with a native one not read */
};

/* Each Ruby thread's kernel thread (its tid, cross-checked as a report's
 * are; or the one that runs its code on its stack, borrowed_stack.h), its
 * stack pointer and registers: where the target has them. */
static struct cs_error *machine_stacks(struct cs_engine *e, struct stacks *st)
{
	const struct rv_process *p = st->p;
	size_t n = cs_target_thread_count(e->target);
	bool regs = cs_target_has_registers(e->target);
	for (size_t i = 0; i < p->nthreads; i++)
		if (!p->threads[i].off_native)
			st->machine_unread++;
	if (!regs || !n || !p->nthreads)
		return NULL;
	const struct cs_thread **natives = cs_target_threads(e->target);
	st->machine = calloc(p->nthreads, sizeof(*st->machine));
	if (!natives || !st->machine) {
		free(natives);
		return &cs_error_nomem;
	}
	struct cs_thread_tids tids = {0};
	struct cs_error *err = cs_thread_tids_find(
		p, natives, n, cs_target_pid(e->target), NULL, -1, &tids);
	for (size_t i = 0; !err && i < p->nthreads; i++) {
		if (p->threads[i].off_native || tids.tids[i] < 0 ||
		    (tids.errors && tids.errors[i]))
			continue;
		for (size_t k = 0; k < n; k++) {
			const struct cs_thread *t = natives[k];
			if (t->tid != tids.native_tids[i])
				continue;
			struct rv_native_stack *m =
				&st->machine[st->roots.nmachine++];
			m->thread_index = i;
			m->sp = t->rsp;
			for (size_t r = 0;
			     r < sizeof(gp_regs) / sizeof(*gp_regs); r++)
				m->regs[m->nregs++] = (struct rv_register){
					gp_regs[r].name,
					t->regs[gp_regs[r].reg]};
			st->machine_unread--;
			break;
		}
	}
	if (!err)
		cs_thread_tids_free(&tids, p->nthreads);
	free(natives);
	st->roots.machine = st->machine;
	return err;
}

static struct cs_error *stacks(struct cs_engine *e, struct stacks *st)
{
	struct rv_session *s = e->ruby.session;
	memset(st, 0, sizeof(*st));
	struct cs_error *err = rv_snapshot(s, &st->p);
	if (!err)
		err = rv_snapshot_fibers(s, st->p);
	if (!err)
		err = rv_snapshot_locals(s, st->p);
	if (!err)
		err = machine_stacks(e, st);
	st->roots.process = st->p;
	return err;
}

static void stacks_free(struct stacks *st)
{
	rv_process_destroy(st->p);
	free(st->machine);
}

struct cs_error *cs_engine_retainers(struct cs_engine *e,
				     const struct rv_retention_request *req,
				     struct rv_retention *ret)
{
	struct rv_session *s = e->ruby.session;
	struct stacks st;
	struct rv_retention_request with = *req;
	memset(ret, 0, sizeof(*ret));
	struct cs_error *err = stacks(e, &st);
	with.stacks = st.roots;
	with.machine_unread = st.machine_unread;
	if (!err)
		err = rv_heap_retainers(s, &with, ret);
	stacks_free(&st);
	return err;
}

struct cs_error *cs_engine_dump(struct cs_engine *e,
				const struct rv_dump_callbacks *cb,
				struct rv_dump_stats *st)
{
	struct rv_session *s = e->ruby.session;
	struct stacks sk;
	memset(st, 0, sizeof(*st));
	struct cs_error *err = stacks(e, &sk);
	if (!err)
		err = rv_heap_dump(s, &sk.roots, cb, st);
	stacks_free(&sk);
	return err;
}
