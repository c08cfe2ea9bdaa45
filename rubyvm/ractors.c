/* The ractor a thread belongs to (Ruby 3.x): its id, as Ractor#inspect
 * shows it (1 for the main ractor), and its name.
 *
 * th->ractor points at the rb_ractor_t; the id is r->pub.id (3.0 kept it
 * as r->id), the name a String or nil in r->name. 2.7 has no ractors: the
 * members are missing and the thread carries none. */
#include <string.h>

#include "session.h"

bool rv_ractor_read(struct rv_session *s, uint64_t r, struct rv_ractor *out)
{
	uint64_t id, name;
	enum rv_item_id id_item = RV_HAS(s, ractor_pub_id) ? RVL_ractor_pub_id
							   : RVL_ractor_id;
	memset(out, 0, sizeof(*out));
	if (!r || s->layout.items[id_item].source == RV_MISSING ||
	    !rv_try_member(s, r, id_item, &id))
		return false;
	out->present = true;
	out->addr = r;
	out->id = (uint32_t)id;
	if (RV_HAS(s, ractor_name) &&
	    rv_try_member(s, r, RVL_ractor_name, &name) &&
	    !rv_special_const(s, name) &&
	    rv_failed(rv_string(s, name, &out->name)))
		out->name = NULL;
	return true;
}

void rv_thread_ractor_read(struct rv_session *s, const struct rv_view *th,
			   struct rv_thread *t)
{
	uint64_t r;
	memset(&t->ractor, 0, sizeof(t->ractor));
	if (RV_HAS(s, th_ractor) && rv_view_try(s, th, RVL_th_ractor, &r))
		rv_ractor_read(s, r, &t->ractor);
}
