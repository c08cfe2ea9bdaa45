/* CRuby's intrusive lists, walked with every link cross-checked (lists.c). */
#ifndef CS_RUBYVM_LISTS_H
#define CS_RUBYVM_LISTS_H

#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"
#include "layout.h"

struct rv_session;

/* Container addresses, in list order. */
struct rv_list {
	uint64_t *items;
	size_t count, cap;
};

void rv_list_free(struct rv_list *l);
/* Append item; false when out of memory. */
bool rv_list_push(struct rv_list *l, uint64_t item);

/* Append to out the containers of the list whose head is at head: each node
 * address minus node_offset. At most max nodes. On error out keeps what
 * was walked before it. */
struct cs_error *rv_list_walk(struct rv_session *s, uint64_t head,
			      uint64_t node_offset, size_t max,
			      struct rv_list *out);

/* The count CRuby keeps beside a list (member count_id of base) against
 * the walked length: an error naming what when they differ; NULL when they
 * agree or the count cannot be read. */
struct cs_error *rv_list_check_count(struct rv_session *s, uint64_t base,
				     enum rv_item_id count_id, size_t walked,
				     const char *what);

#endif
