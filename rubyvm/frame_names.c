/* The names of Ruby frames, built once per snapshot for each iseq and
 * method entry.
 *
 * A Ruby frame's label, qualified and stable names follow from its iseq
 * (and the iseqs it is nested in) and its method entry (and the owner and
 * definition found through it), nothing else: the frames of a snapshot
 * share them by the thousand (threads parked in the same methods, a
 * recursion). Building them reads the method's owner, its class path and
 * each parent iseq, and joins strings three times over; a frame whose pair
 * was seen before in this snapshot copies them from here instead. Within
 * one snapshot of a core or a stopped process the memory does not change,
 * so the names are those it would build again; the memo is emptied when
 * the next snapshot begins, since by then a freed iseq or method entry may
 * be another at the same address. Only names built without an error are
 * kept (a frame whose names failed says why, each time), as they were
 * built: each frame's copies are checked as text of its own. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* Bounds the memo where every frame is a new pair (a corrupt stack):
 * past it, names are built as if there were none. */
#define MAX_NAMES 65536

struct frame_names {
	struct frame_names *next; /* same iseq, another method entry */
	uint64_t me;
	char *label, *qualified, *stable;
};

static void free_names(void *p)
{
	for (struct frame_names *n = p, *next; n; n = next) {
		next = n->next;
		free(n->label);
		free(n->qualified);
		free(n->stable);
		free(n);
	}
}

void rv_frame_names_clear(struct rv_session *s)
{
	u64map_free(&s->frame_names, free_names);
	s->nframe_names = 0;
}

bool rv_frame_names_get(struct rv_session *s, uint64_t iseq, uint64_t me,
			struct rv_frame *f)
{
	int found;
	struct frame_names *n = u64map_get(&s->frame_names, iseq, &found);
	while (n && n->me != me)
		n = n->next;
	if (!n)
		return false;
	bool failed = false;
	char *label = rv_dup_or_null(n->label, &failed);
	char *qualified = rv_dup_or_null(n->qualified, &failed);
	char *stable = rv_dup_or_null(n->stable, &failed);
	if (failed) { /* out of memory: build them, which may still work */
		free(label);
		free(qualified);
		free(stable);
		return false;
	}
	f->label = label;
	f->qualified = qualified;
	f->stable = stable;
	return true;
}

void rv_frame_names_put(struct rv_session *s, uint64_t iseq, uint64_t me,
			const struct rv_frame *f)
{
	if (!iseq || s->nframe_names >= MAX_NAMES)
		return;
	int found;
	struct frame_names *head = u64map_get(&s->frame_names, iseq, &found);
	struct frame_names *n = calloc(1, sizeof(*n));
	bool failed = !n;
	if (n) {
		n->me = me;
		n->label = rv_dup_or_null(f->label, &failed);
		n->qualified = rv_dup_or_null(f->qualified, &failed);
		n->stable = rv_dup_or_null(f->stable, &failed);
		n->next = head;
	}
	if (failed || !u64map_put(&s->frame_names, iseq, n)) {
		if (n)
			n->next = NULL;
		free_names(n);
		return;
	}
	s->nframe_names++;
}
