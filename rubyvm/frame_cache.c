/* Decoded control frames, kept for the session's life, by frame address.
 *
 * A profiler reads the same deep stack hundreds of times a second and only
 * its top changes. A frame is reused only when everything its decoding
 * depends on reads the same again: the control frame's iseq, pc and ep,
 * and at ep the frame's flags, the method-entry/cref slot and the link to
 * the previous environment (which lead to the method entry, hence the
 * qualified name).
 *
 * A frame served from here borrows the cache's strings (rv_frame.borrowed)
 * instead of copying them: copying and freeing four strings per frame per
 * sample was a third of a sample's cost. So an entry must outlive every
 * snapshot that may have handed it out: entries replaced or dropped are
 * retired, and freed only when the next snapshot begins. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

#define MAX_ENTRIES 65536

struct cached_frame {
	struct cached_frame *next_retired;
	struct rv_frame_key key;
	bool shown; /* false: a frame Ruby's backtraces skip */
	struct rv_frame frame;
	size_t text_bytes; /* the frame's strings, with their NULs */
};

static void free_entry(void *p)
{
	struct cached_frame *c = p;
	rv_frame_free(&c->frame);
	free(c);
}

static void free_retired(struct rv_session *s)
{
	while (s->retired_frames) {
		struct cached_frame *c = s->retired_frames;
		s->retired_frames = c->next_retired;
		free_entry(c);
	}
}

void rv_frame_cache_destroy(struct rv_session *s)
{
	free_retired(s);
	u64map_free(&s->frames, free_entry);
}

void rv_frame_cache_begin_snapshot(struct rv_session *s)
{
	free_retired(s);
	if (s->frames.count >= MAX_ENTRIES)
		u64map_free(&s->frames, free_entry);
}

char *rv_dup_or_null(const char *t, bool *failed)
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
	dst->label = rv_dup_or_null(src->label, &failed);
	dst->path = rv_dup_or_null(src->path, &failed);
	dst->realpath = rv_dup_or_null(src->realpath, &failed);
	dst->qualified = rv_dup_or_null(src->qualified, &failed);
	dst->stable = rv_dup_or_null(src->stable, &failed);
	dst->error = rv_dup_or_null(src->error, &failed);
	if (failed)
		rv_frame_free(dst);
	return !failed;
}

bool rv_frame_own_strings(struct rv_frame *f)
{
	if (!f->borrowed)
		return true;
	struct rv_frame shared = *f;
	shared.borrowed = false;
	if (copy_frame(f, &shared))
		return true;
	memset(f, 0, sizeof(*f)); /* copy_frame freed what it made */
	return false;
}

static void lend(const struct cached_frame *c, struct rv_frame *f,
		 size_t *text_bytes)
{
	*f = c->frame;
	f->borrowed = true;
	*text_bytes = c->text_bytes;
}

bool rv_frame_cache_get(struct rv_session *s, uint64_t cfp,
			const struct rv_frame_key *key, struct rv_frame *f,
			bool *shown, size_t *text_bytes)
{
	int found;
	const struct cached_frame *c = u64map_get(&s->frames, cfp, &found);
	if (!found || memcmp(&c->key, key, sizeof(*key)) != 0)
		return false;
	*shown = c->shown;
	*text_bytes = 0;
	if (c->shown)
		lend(c, f, text_bytes);
	return true;
}

struct cached_frame *rv_frame_cache_moved(struct rv_session *s, uint64_t cfp,
					  const struct rv_frame_key *key)
{
	int found;
	struct cached_frame *c = u64map_get(&s->frames, cfp, &found);
	if (!found || !c->shown || c->frame.kind != RV_FRAME_RUBY ||
	    c->frame.error)
		return NULL;
	struct rv_frame_key moved = c->key;
	moved.pc = key->pc;
	moved.innermost = key->innermost;
	return memcmp(&moved, key, sizeof(*key)) == 0 ? c : NULL;
}

void rv_frame_cache_move(struct cached_frame *c, const struct rv_frame_key *key,
			 int lineno, bool pc_stale, struct rv_frame *f,
			 size_t *text_bytes)
{
	/* Frames this snapshot already took copied pc and line: only the
	 * strings are shared, and they stay. */
	c->key = *key;
	c->frame.pc = key->pc;
	c->frame.lineno = lineno;
	c->frame.pc_stale = pc_stale;
	lend(c, f, text_bytes);
}

uint64_t rv_frame_cache_put(struct rv_session *s, uint64_t cfp,
			    const struct rv_frame_key *key,
			    const struct rv_frame *f, bool shown,
			    size_t text_bytes)
{
	int found;
	struct cached_frame *old = u64map_get(&s->frames, cfp, &found);
	if (!found && s->frames.count >= MAX_ENTRIES)
		return 0; /* full until the next snapshot begins */
	struct cached_frame *c = calloc(1, sizeof(*c));
	if (!c)
		return 0; /* only caching failed */
	c->key = *key;
	c->shown = shown;
	c->text_bytes = text_bytes;
	if (shown && !copy_frame(&c->frame, f)) {
		free(c);
		return 0;
	}
	if (!u64map_put(&s->frames, cfp, c)) {
		free_entry(c);
		return 0;
	}
	c->frame.names_id = ++s->last_names_id;
	if (found) { /* this snapshot may have handed it out already */
		old->next_retired = s->retired_frames;
		s->retired_frames = old;
	}
	return c->frame.names_id;
}
