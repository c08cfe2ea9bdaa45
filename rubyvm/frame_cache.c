/* Decoded control frames, kept for the session's life, by frame address.
 *
 * A profiler reads the same deep stack hundreds of times a second and only
 * its top changes. A frame is reused only when everything its decoding
 * depends on reads the same again: the control frame's iseq, pc and ep,
 * and at ep the frame's flags, the method-entry/cref slot and the link to the previous
 * environment (which lead to the method entry, hence the qualified name).
 * The map is emptied when it grows past a bound. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

#define MAX_ENTRIES 65536

struct cached_frame {
	struct rv_frame_key key;
	bool shown; /* false: a frame Ruby's backtraces skip */
	struct rv_frame frame;
};

static void free_entry(void *p)
{
	struct cached_frame *c = p;
	rv_frame_free(&c->frame);
	free(c);
}

void rv_frame_cache_destroy(struct rv_session *s)
{
	u64map_free(&s->frames, free_entry);
}

static char *dup_or_null(const char *t, bool *failed)
{
	if (!t)
		return NULL;
	char *d = strdup(t);
	if (!d)
		*failed = true;
	return d;
}

/* A deep copy of src into dst; false when out of memory (dst freed). */
static bool copy_frame(struct rv_frame *dst, const struct rv_frame *src)
{
	bool failed = false;
	*dst = *src;
	dst->label = dup_or_null(src->label, &failed);
	dst->path = dup_or_null(src->path, &failed);
	dst->qualified = dup_or_null(src->qualified, &failed);
	dst->error = dup_or_null(src->error, &failed);
	if (failed)
		rv_frame_free(dst);
	return !failed;
}

bool rv_frame_cache_get(struct rv_session *s, uint64_t cfp,
			const struct rv_frame_key *key, struct rv_frame *f,
			bool *shown)
{
	int found;
	const struct cached_frame *c = u64map_get(&s->frames, cfp, &found);
	if (!found || memcmp(&c->key, key, sizeof(*key)) != 0)
		return false;
	*shown = c->shown;
	if (!c->shown)
		return true;
	return copy_frame(f, &c->frame);
}

void rv_frame_cache_put(struct rv_session *s, uint64_t cfp,
			const struct rv_frame_key *key,
			const struct rv_frame *f, bool shown)
{
	struct cached_frame *c = calloc(1, sizeof(*c));
	if (!c)
		return; /* only caching failed */
	c->key = *key;
	c->shown = shown;
	if (shown && !copy_frame(&c->frame, f)) {
		free(c);
		return;
	}
	int found;
	struct cached_frame *old = u64map_get(&s->frames, cfp, &found);
	if (found) {
		free_entry(old);
	} else if (s->frames.count >= MAX_ENTRIES) {
		u64map_free(&s->frames, free_entry);
	}
	if (!u64map_put(&s->frames, cfp, c))
		free_entry(c);
}
