/* The local variables of Ruby frames, as binding.local_variables sees them.
 *
 * An iseq's local table names its locals (IDs; the first param.size are
 * its parameters), and the frame's environment holds their values: local
 * i of n at ep[VM_ENV_INDEX_LAST_LVAR - (n - 1 - i)], whether the env is
 * still on the VM stack or escaped to the heap (cfp->ep then points into
 * the heap copy, laid out alike). A block also sees the locals of the
 * scopes around it: its env's previous env (ep[VM_ENV_DATA_INDEX_SPECVAL]
 * without its tag bits) with its iseq's parent's local table, up to the
 * env flagged VM_ENV_FLAG_LOCAL. Only IDs of local scope are locals: the
 * VM's hidden ones ($! in a rescue clause, anonymous parameters) are not. */
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"
#include "session.h"

#define MAX_LOCALS 4096 /* per scope */
#define MAX_SCOPES 64   /* scopes a block's env chain climbs */

struct local_list {
	struct rv_local *items;
	size_t n, cap;
};

static bool is_local_id(struct rv_session *s, uint64_t id)
{
	if (RV_HAS(s, tlast_op_id) && id <= (uint64_t)RV_VAL(s, tlast_op_id))
		return false;
	return (id & (uint64_t)RV_VAL(s, id_scope_mask)) ==
	       (uint64_t)RV_VAL(s, id_local);
}

/* v: the local's value, or the block handler of an unread block parameter
 * (handler) */
static struct cs_error *add_local(struct rv_session *s, struct local_list *l,
				  char *name, uint64_t v, bool argument,
				  int outer, bool handler)
{
	struct rv_local loc = {.name = name,
			       .object = handler ? 0 : v,
			       .argument = argument,
			       .outer = outer};
	struct cs_error *err =
		handler ? rv_block_param_show(s, v, &loc.value, &loc.class_name)
			: rv_value_show(s, v, &loc.value, &loc.class_name);
	if (!err && l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct rv_local *items =
			realloc(l->items, cap * sizeof(*items));
		if (items) {
			l->items = items;
			l->cap = cap;
		} else {
			err = &cs_error_nomem;
		}
	}
	if (err) {
		free(loc.value);
		free(loc.class_name);
		free(name);
		return err;
	}
	l->items[l->n++] = loc;
	if (!rv_charge(s,
		       sizeof(loc) + strlen(name) + strlen(loc.value) +
			       (loc.class_name ? strlen(loc.class_name) : 0)))
		return cs_error_create(CS_ERR_LIMIT,
				       "the snapshot's output budget is spent");
	return NULL;
}

struct cs_error *rv_ep_slot(struct rv_session *s, uint64_t ep, int64_t index,
			    uint64_t *ret)
{
	return rv_read_u64(s, ep + (uint64_t)(index * RV_VAL(s, value_size)),
			   ret);
}

/* A rescue or ensure clause runs in an env of its own, but its locals are
 * those of the scope it is written in: no scope of its own. */
static bool clause_iseq(struct rv_session *s, const struct rv_iseq_info *info)
{
	return (RV_HAS(s, iseq_type_rescue) &&
		info->type == RV_VAL(s, iseq_type_rescue)) ||
	       (RV_HAS(s, iseq_type_ensure) &&
		info->type == RV_VAL(s, iseq_type_ensure));
}

struct cs_error *rv_scope_slots(struct rv_session *s, uint64_t iseq,
				const struct rv_iseq_info *info, uint64_t ep,
				uint64_t **ids, uint64_t *n)
{
	*ids = NULL;
	struct cs_error *err;
	uint64_t table, count = 0;
	*n = 0;
	if ((err = rv_read_member(s, info->body, RVL_body_local_table_size,
				  &count)) ||
	    (err = rv_read_member(s, info->body, RVL_body_local_table, &table)))
		return err;
	if (count == 0)
		return NULL;
	if (count > MAX_LOCALS)
		return cs_error_create(CS_ERR_CORRUPT,
				       "iseq 0x%llx claims %llu locals",
				       (unsigned long long)iseq,
				       (unsigned long long)count);
	int64_t vs = RV_VAL(s, value_size);
	if (vs != (int64_t)sizeof(**ids))
		return cs_error_create(CS_ERR_CORRUPT, "VALUE of %lld bytes",
				       (long long)vs);
	uint64_t *both = calloc(2 * count, sizeof(*both));
	if (!both)
		return &cs_error_nomem;
	uint64_t first = ep + (uint64_t)((RV_VAL(s, env_index_last_lvar) -
					  (int64_t)(count - 1)) *
					 vs);
	if ((err = rv_read(s, table, both, count * sizeof(*both))) ||
	    (err = rv_read(s, first, both + count, count * sizeof(*both)))) {
		free(both);
		return err;
	}
	*ids = both;
	*n = count;
	return NULL;
}

/* The locals of one scope: iseq's local table, values from the env at ep,
 * whose flags are env_flags. *parent is the iseq of the scope around it
 * (0 if none); *clause: iseq is a rescue or ensure clause's. */
static struct cs_error *scope_locals(struct rv_session *s, uint64_t iseq,
				     uint64_t ep, uint64_t env_flags, int outer,
				     struct local_list *l, uint64_t *parent,
				     bool *clause)
{
	const struct rv_iseq_info *info;
	struct cs_error *err = rv_iseq_lookup(s, iseq, &info);
	if (err)
		return err;
	*parent = info->parent_iseq;
	*clause = clause_iseq(s, info);
	uint64_t params = 0;
	if (RV_HAS(s, body_param_size))
		rv_try_member(s, info->body, RVL_body_param_size, &params);
	uint64_t block_param = 0;
	bool unread =
		rv_block_param_unread(s, iseq, info, env_flags, &block_param);
	uint64_t *ids, n;
	if ((err = rv_scope_slots(s, iseq, info, ep, &ids, &n)) || !ids)
		return err;
	const uint64_t *vals = ids + n;
	for (uint64_t i = 0; !err && i < n; i++) {
		char *name = NULL;
		if (!is_local_id(s, ids[i]) ||
		    rv_failed(rv_id_name(s, ids[i], &name)))
			continue;
		utf8_scrub(name); /* names reach text and JSON */
		uint64_t v = vals[i];
		bool handler = unread && i == block_param;
		if (handler &&
		    (err = rv_ep_slot(s, ep, RV_VAL(s, env_index_specval), &v)))
			free(name);
		else
			err = add_local(s, l, name, v, i < params, outer,
					handler);
	}
	free(ids);
	return err;
}

/* The frame's self (cfp->self, what self is in a block too), shown as a
 * local's value is, in f->self_value and f->self_class. */
static struct cs_error *show_frame_self(struct rv_session *s,
					struct rv_frame *f)
{
	uint64_t self = 0;
	struct cs_error *err = rv_read_member(s, f->cfp, RVL_cfp_self, &self);
	if (err)
		return err;
	if ((err = rv_value_show(s, self, &f->self_value, &f->self_class)))
		return err;
	f->self = self;
	if (!rv_charge(s, strlen(f->self_value) +
				  (f->self_class ? strlen(f->self_class) : 0)))
		return cs_error_create(CS_ERR_LIMIT,
				       "the snapshot's output budget is spent");
	return NULL;
}

/* Fails only when memory runs out; other errors go to f->locals_error. */
static struct cs_error *frame_locals(struct rv_session *s, struct rv_frame *f)
{
	struct local_list l = {0};
	uint64_t ep = 0, iseq = f->iseq, flags, prev;
	int outer = 0; /* scopes out from the frame's own */
	struct cs_error *err = show_frame_self(s, f);
	if (!err)
		err = rv_read_member(s, f->cfp, RVL_cfp_ep, &ep);
	for (int scope = 0; !err && iseq && scope < MAX_SCOPES; scope++) {
		uint64_t parent = 0;
		bool clause = false;
		if ((err = rv_ep_slot(s, ep, RV_VAL(s, env_index_flags),
				      &flags)) ||
		    (err = scope_locals(s, iseq, ep, flags, outer, &l, &parent,
					&clause)))
			break;
		if (!clause)
			outer++;
		/* the method's (or top's) env ends the chain */
		if (flags & (uint64_t)RV_VAL(s, env_flag_local) || !parent)
			break;
		if ((err = rv_ep_slot(s, ep, RV_VAL(s, env_index_specval),
				      &prev)))
			break;
		ep = prev & (uint64_t)RV_VAL(s, guarded_ptr_mask);
		iseq = parent;
		if (!ep)
			break;
	}
	f->locals = l.items;
	f->nlocals = l.n;
	if (!err || err == &cs_error_nomem)
		return err;
	f->locals_error = strdup(err->message);
	cs_error_destroy(err);
	return f->locals_error ? NULL : &cs_error_nomem;
}

static struct cs_error *stack_locals(struct rv_session *s,
				     struct rv_frame *frames, size_t n)
{
	struct cs_error *err = NULL;
	for (size_t i = 0; !err && i < n; i++) {
		struct rv_frame *f = &frames[i];
		if (f->kind != RV_FRAME_RUBY || !f->cfp || !f->iseq ||
		    f->opaque || f->locals_read)
			continue;
		f->locals_read = true;
		err = frame_locals(s, f);
	}
	return err;
}

struct cs_error *rv_snapshot_locals(struct rv_session *s, struct rv_process *p)
{
	if (!RV_HAS(s, body_local_table) || !RV_HAS(s, body_local_table_size))
		return NULL;
	struct cs_error *err = NULL;
	for (size_t i = 0; !err && i < p->nthreads; i++) {
		struct rv_thread *t = &p->threads[i];
		err = stack_locals(s, t->frames, t->nframes);
		for (size_t j = 0; !err && j < t->nfibers; j++)
			err = stack_locals(s, t->fibers[j].frames,
					   t->fibers[j].nframes);
	}
	for (size_t j = 0; !err && j < p->norphan_fibers; j++)
		err = stack_locals(s, p->orphan_fibers[j].frames,
				   p->orphan_fibers[j].nframes);
	return err;
}
