/* CRuby's intrusive lists (ccan list: a head holding a node n, nodes
 * holding next and prev; renamed from list_* to ccan_list_* in 3.2, same
 * shape), walked so that corrupt memory cannot pass for a list:
 *
 * - every node's prev must name the node the walk came from, and the
 *   head's prev the last node: a rewired next pointer (a list cut short,
 *   or one that jumps into another list) breaks this at once;
 * - a node met twice is a cycle, found by a set of the nodes seen, not by
 *   the length bound (which a one-node loop would take 100,000 steps to
 *   reach);
 * - the walk stops at max nodes, and the node array grows geometrically.
 *
 * What the walk found before it stopped is kept: the caller shows it and
 * says the list is incomplete. */
#include <stdlib.h>

#include "lists.h"
#include "session.h"

void rv_list_free(struct rv_list *l)
{
	free(l->items);
	*l = (struct rv_list){0};
}

bool rv_list_push(struct rv_list *l, uint64_t item)
{
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		uint64_t *grown = realloc(l->items, cap * sizeof(*grown));
		if (!grown)
			return false;
		l->items = grown;
		l->cap = cap;
	}
	l->items[l->count++] = item;
	return true;
}

/* Offsets of head.n, node.next and node.prev under either name; prev is
 * -1 when the debug info lacks it (then only cycles are checked). */
static bool list_offsets(struct rv_session *s, uint64_t *head_n, uint64_t *next,
			 int64_t *prev)
{
	if (RV_HAS(s, ccan_list_head_n) && RV_HAS(s, ccan_list_node_next)) {
		*head_n = (uint64_t)RV_VAL(s, ccan_list_head_n);
		*next = (uint64_t)RV_VAL(s, ccan_list_node_next);
		*prev = RV_HAS(s, ccan_list_node_prev)
				? RV_VAL(s, ccan_list_node_prev)
				: -1;
		return true;
	}
	if (RV_HAS(s, list_head_n) && RV_HAS(s, list_node_next)) {
		*head_n = (uint64_t)RV_VAL(s, list_head_n);
		*next = (uint64_t)RV_VAL(s, list_node_next);
		*prev = RV_HAS(s, list_node_prev) ? RV_VAL(s, list_node_prev)
						  : -1;
		return true;
	}
	return false;
}

static struct cs_error *check_prev(struct rv_session *s, int64_t prev_off,
				   uint64_t node, uint64_t expected,
				   uint64_t head)
{
	uint64_t prev;
	struct cs_error *err;
	if (prev_off < 0)
		return NULL;
	if ((err = rv_read_u64(s, node + (uint64_t)prev_off, &prev)))
		return err;
	if (prev == expected)
		return NULL;
	return cs_error_create(CS_ERR_CORRUPT,
			       "list at 0x%llx is corrupt: node 0x%llx links "
			       "back to 0x%llx, not to 0x%llx it was reached "
			       "from",
			       (unsigned long long)head,
			       (unsigned long long)node,
			       (unsigned long long)prev,
			       (unsigned long long)expected);
}

struct cs_error *rv_list_walk(struct rv_session *s, uint64_t head,
			      uint64_t node_offset, size_t max,
			      struct rv_list *out)
{
	uint64_t head_n, next_off;
	int64_t prev_off;
	if (!list_offsets(s, &head_n, &next_off, &prev_off))
		return cs_error_create(CS_ERR_LOOKUP,
				       "no list_head/list_node (or ccan_) "
				       "layout in the debug info");
	uint64_t first = head + head_n, from = first, node;
	struct u64map seen = {0};
	struct cs_error *err = rv_read_u64(s, first + next_off, &node);
	size_t walked = 0;
	while (!err && node != first) {
		if (!node) {
			err = cs_error_create(CS_ERR_CORRUPT,
					      "list at 0x%llx is corrupt: a "
					      "NULL link after %zu nodes",
					      (unsigned long long)head, walked);
			break;
		}
		int found = 0;
		u64map_get(&seen, node, &found);
		if (found) {
			err = cs_error_create(CS_ERR_CORRUPT,
					      "list at 0x%llx is corrupt: it "
					      "comes back to node 0x%llx after "
					      "%zu nodes (a cycle)",
					      (unsigned long long)head,
					      (unsigned long long)node, walked);
			break;
		}
		if (walked >= max) {
			err = cs_error_create(CS_ERR_LIMIT,
					      "list at 0x%llx is longer than "
					      "%zu nodes: stopped there",
					      (unsigned long long)head, max);
			break;
		}
		if ((err = check_prev(s, prev_off, node, from, head)))
			break;
		if (!u64map_put(&seen, node, NULL) ||
		    !rv_list_push(out, node - node_offset)) {
			err = &cs_error_nomem;
			break;
		}
		walked++;
		from = node;
		err = rv_read_u64(s, node + next_off, &node);
	}
	/* back at the head: its prev must be the last node */
	if (!err)
		err = check_prev(s, prev_off, first, from, head);
	u64map_free(&seen, NULL);
	return err;
}

struct cs_error *rv_list_check_count(struct rv_session *s, uint64_t base,
				     enum rv_item_id count_id, size_t walked,
				     const char *what)
{
	uint64_t count;
	if (s->layout.items[count_id].source == RV_MISSING ||
	    !rv_try_member(s, base, count_id, &count) || count == walked)
		return NULL;
	return cs_error_create(CS_ERR_CORRUPT,
			       "%s: the list holds %zu, Ruby counts %llu: "
			       "the list or the count is corrupt",
			       what, walked, (unsigned long long)count);
}
