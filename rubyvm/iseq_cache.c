/* Decoded iseqs and pc -> line, kept for the session's life.
 *
 * A stack names the same iseqs again and again (recursion, and every
 * sample of a profile). An iseq entry is reused only while the iseq still
 * points at the same body, and a line only for the same iseq, so an iseq
 * freed and another allocated at its address is decoded afresh. Each map
 * is emptied when it grows past a bound. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

#define MAX_ENTRIES 65536

struct cached_line {
	uint64_t iseq;
	int line;
};

static void free_info(void *p)
{
	rv_iseq_info_free(p);
	free(p);
}

void rv_iseq_cache_destroy(struct rv_session *s)
{
	u64map_free(&s->iseqs, free_info);
	u64map_free(&s->lines, free);
}

struct cs_error *rv_iseq_lookup(struct rv_session *s, uint64_t iseq,
				const struct rv_iseq_info **ret)
{
	uint64_t body;
	struct cs_error *err = rv_read_member(s, iseq, RVL_iseq_body, &body);
	if (err)
		return err;
	int found;
	struct rv_iseq_info *info = u64map_get(&s->iseqs, iseq, &found);
	if (found && info->body == body) {
		*ret = info;
		return NULL;
	}
	struct rv_iseq_info *fresh = malloc(sizeof(*fresh));
	if (!fresh)
		return &cs_error_nomem;
	if ((err = rv_iseq_info(s, iseq, fresh))) {
		free(fresh);
		return err;
	}
	if (s->iseqs.count >= MAX_ENTRIES)
		u64map_free(&s->iseqs, free_info);
	else if (found)
		free_info(info);
	if (!u64map_put(&s->iseqs, iseq, fresh)) {
		free_info(fresh);
		return &cs_error_nomem;
	}
	*ret = fresh;
	return NULL;
}

const struct rv_iseq_info *rv_iseq_known(struct rv_session *s, uint64_t iseq)
{
	int found;
	const struct rv_iseq_info *info = u64map_get(&s->iseqs, iseq, &found);
	return found ? info : NULL;
}

struct cs_error *rv_line_lookup(struct rv_session *s, uint64_t iseq,
				const struct rv_iseq_info *info, uint64_t pc,
				int *ret)
{
	int found;
	struct cached_line *c = u64map_get(&s->lines, pc, &found);
	if (found && c->iseq == iseq) {
		*ret = c->line;
		return NULL;
	}
	struct cs_error *err = rv_iseq_lineno(s, info, pc, ret);
	if (err || !pc)
		return err;
	if (!found) {
		if (s->lines.count >= MAX_ENTRIES)
			u64map_free(&s->lines, free);
		if (!(c = malloc(sizeof(*c))) ||
		    !u64map_put(&s->lines, pc, c)) {
			free(c);
			return NULL; /* the line is right; only caching failed */
		}
	}
	c->iseq = iseq;
	c->line = *ret;
	return NULL;
}
