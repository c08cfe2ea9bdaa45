/* What keeps an object alive: the shortest path from a root to it through
 * the references heap_refs.c decodes (rubyvm/heap_retainers.c;
 * docs/heap.md "What keeps an object alive"). */
#ifndef CS_RUBYVM_HEAP_RETAINERS_H
#define CS_RUBYVM_HEAP_RETAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"
#include "heap_refs.h"
#include "heap_roots.h"

struct rv_session;
struct rv_process;

/* One object on a path: how the object before it holds it (via.kind
 * NULL for the first, which the root holds), and its class. */
struct rv_retain_hop {
	uint64_t object;
	char *class_name; /* stable name; "(T_IMEMO)" and such for others */
	char *name;       /* a class's or module's own stable name, or NULL */
	struct rv_ref_label via;
};

struct rv_retainer_path {
	uint64_t target;
	char *class_name;
	uint64_t bytes; /* as the census counts them */
	bool found;     /* a path from a root was found */
	struct rv_root root;
	struct rv_retain_hop *hops; /* root's object first, target last */
	size_t nhops;
	char *error; /* a hop that could not be described, or NULL */
};

struct rv_retention_request {
	/* The object, or else every instance of the class whose stable
	 * name is class_name (Object#class, docs/names.md), the top
	 * largest first. */
	uint64_t address;
	const char *class_name;
	size_t top;
	/* The stacks the roots come from (heap_roots.h) */
	struct rv_root_stacks stacks;
	/* Ruby threads with a native thread whose machine stack is not
	 * among stacks.machine (no registers): where a target has no path
	 * found, an unread root may hold it */
	size_t machine_unread;
};

struct rv_retention {
	struct rv_retainer_path *paths;
	size_t npaths;
	uint64_t instances; /* of class_name in the heap */
	uint64_t roots, reached;
	/* objects reached whose references were not followed: of a type
	 * heap_refs.c does not decode, or unreadable (counted, the first
	 * reason in error) */
	uint64_t not_decoded, unreadable;
	size_t machine_unread; /* as the request said */
	char *error;           /* the first problem, NULL if none */
	char *bad_input;       /* the request cannot be answered (not an object,
			  * no such class): why; nothing else is set */
};

/* Find the paths. Fails only when out of memory; c->bad_input says when
 * the request names no live object or class, c->error when something
 * was not read. */
struct cs_error *rv_heap_retainers(struct rv_session *s,
				   const struct rv_retention_request *req,
				   struct rv_retention *ret);
/* Whether something was not read (the answer may miss a path). */
bool rv_retention_partial(const struct rv_retention *r);
void rv_retention_free(struct rv_retention *r);

#endif
