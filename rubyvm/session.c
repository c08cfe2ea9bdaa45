#include "session.h"

#include <stdlib.h>
#include <string.h>

struct cs_error *rv_read(struct rv_session *s, uint64_t addr, void *buf,
			 size_t len)
{
	if (addr == 0)
		return cs_error_fault(0, "NULL pointer read");
	return cs_memory_read(&s->target, addr, buf, len);
}

struct cs_error *rv_read_u64(struct rv_session *s, uint64_t addr, uint64_t *ret)
{
	return rv_read(s, addr, ret, sizeof(*ret));
}

struct cs_error *rv_read_cstring(struct rv_session *s, uint64_t addr, char *dst,
				 size_t max, size_t *n, bool *whole)
{
	*n = 0;
	*whole = false;
	while (*n < max) {
		uint64_t at = addr + *n;
		if (at < addr)
			return cs_error_create(CS_ERR_CORRUPT,
					       "string at 0x%llx wraps",
					       (unsigned long long)addr);
		size_t chunk = 4096 - (size_t)(at & 4095);
		if (chunk > max - *n)
			chunk = max - *n;
		struct cs_error *err = rv_read(s, at, dst + *n, chunk);
		if (err)
			return err;
		char *nul = memchr(dst + *n, 0, chunk);
		if (nul) {
			*n = (size_t)(nul - dst);
			*whole = true;
			return NULL;
		}
		*n += chunk;
	}
	return NULL;
}

struct cs_error *rv_missing(enum rv_item_id id)
{
	return cs_error_create(CS_ERR_LOOKUP,
			       "Ruby's debug info lacks '%s', which this "
			       "Ruby layout needs",
			       rv_layout_item_name(id));
}

/* Where a MEMBER item's bytes are in its struct: nbytes from offset
 * first (a bitfield's from the byte holding its first bit). */
static struct cs_error *member_place(const struct rv_item *it,
				     enum rv_item_id id, uint64_t *first,
				     size_t *nbytes)
{
	if (it->source == RV_MISSING)
		return rv_missing(id);
	if (it->bit_size) {
		*first = it->bit_pos / 8;
		*nbytes = (size_t)((it->bit_pos % 8 + it->bit_size + 7) / 8);
		if (*nbytes > 8)
			return cs_error_create(CS_ERR_CORRUPT,
					       "bitfield %s too wide",
					       rv_layout_item_name(id));
		return NULL;
	}
	*first = (uint64_t)it->value;
	*nbytes = it->size;
	if (*nbytes == 0 || *nbytes > 8)
		return cs_error_create(CS_ERR_CORRUPT,
				       "member %s is not a scalar (%zu bytes)",
				       rv_layout_item_name(id), *nbytes);
	return NULL;
}

/* The value of a member from its bytes (member_place's), zero-extended:
 * the target is little-endian. */
static uint64_t member_value(const struct rv_item *it, const uint8_t *bytes,
			     size_t nbytes)
{
	uint64_t v = 0;
	memcpy(&v, bytes, nbytes);
	if (!it->bit_size)
		return v;
	v >>= it->bit_pos % 8;
	if (it->bit_size < 64)
		v &= ((uint64_t)1 << it->bit_size) - 1;
	return v;
}

struct cs_error *rv_read_member(struct rv_session *s, uint64_t base,
				enum rv_item_id id, uint64_t *ret)
{
	const struct rv_item *it = &s->layout.items[id];
	uint64_t first = 0;
	size_t nbytes = 0;
	uint8_t bytes[8];
	struct cs_error *err = member_place(it, id, &first, &nbytes);
	if (err || (err = rv_read(s, base + first, bytes, nbytes)))
		return err;
	*ret = member_value(it, bytes, nbytes);
	return NULL;
}

void rv_view_read(struct rv_session *s, uint64_t base,
		  const enum rv_item_id *ids, size_t n, struct rv_view *v)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	v->base = base;
	v->lo = v->hi = 0;
	for (size_t i = 0; i < n; i++) {
		const struct rv_item *it = &s->layout.items[ids[i]];
		uint64_t first = 0;
		size_t nbytes = 0;
		if (it->source == RV_MISSING ||
		    rv_failed(member_place(it, ids[i], &first, &nbytes)) ||
		    first > RV_VIEW_MAX - nbytes)
			continue;
		lo = first < lo ? first : lo;
		hi = first + nbytes > hi ? first + nbytes : hi;
	}
	/* One read from the first member's first byte to the last one's
	 * last: a span that cannot be read is read member by member. */
	if (lo >= hi || hi - lo > RV_VIEW_MAX || base > UINT64_MAX - hi ||
	    !rv_try_read(s, base + lo, v->bytes, hi - lo))
		return;
	v->lo = lo;
	v->hi = hi;
}

struct cs_error *rv_view_member(struct rv_session *s, const struct rv_view *v,
				enum rv_item_id id, uint64_t *ret)
{
	const struct rv_item *it = &s->layout.items[id];
	uint64_t first = 0;
	size_t nbytes = 0;
	struct cs_error *err = member_place(it, id, &first, &nbytes);
	if (err)
		return err;
	if (first < v->lo || first >= v->hi || nbytes > v->hi - first)
		return rv_read_member(s, v->base, id, ret);
	*ret = member_value(it, v->bytes + (first - v->lo), nbytes);
	return NULL;
}

bool rv_view_try(struct rv_session *s, const struct rv_view *v,
		 enum rv_item_id id, uint64_t *ret)
{
	return !rv_failed(rv_view_member(s, v, id, ret));
}

bool rv_failed(struct cs_error *err)
{
	cs_error_destroy(err);
	return err != NULL;
}

bool rv_try_member(struct rv_session *s, uint64_t base, enum rv_item_id id,
		   uint64_t *ret)
{
	return !rv_failed(rv_read_member(s, base, id, ret));
}

bool rv_try_read(struct rv_session *s, uint64_t addr, void *buf, size_t len)
{
	return !rv_failed(rv_read(s, addr, buf, len));
}

uint64_t rv_var_address(const struct rv_session *s, enum rv_item_id id)
{
	uint64_t bias = s->load_bias;
	for (size_t i = 0; i < s->next_modules; i++)
		if (rv_layout_item_of_ext(id, s->ext_modules[i].name))
			bias = s->ext_modules[i].bias;
	return bias + (uint64_t)s->layout.items[id].value;
}

bool rv_try_var(struct rv_session *s, enum rv_item_id id, size_t size,
		uint64_t *ret)
{
	const struct rv_item *it = &s->layout.items[id];
	uint64_t v = 0;
	if (it->source == RV_MISSING || size > sizeof(v) ||
	    !rv_try_read(s, rv_var_address(s, id), &v, size))
		return false;
	*ret = v;
	return true;
}

/* A layout comes from DWARF or from a cache file on disk: either may be
 * corrupt. Values the walkers use as shifts, indexes or offsets into a
 * buffer they read must be in range, or reading them is undefined. */
static struct cs_error *check_layout(const struct rv_layout *l,
				     const char *path)
{
	const struct rv_item *it = l->items;
	int64_t cfp = it[RVL_cfp_size].value;
	const enum rv_item_id in_cfp[] = {RVL_cfp_pc, RVL_cfp_iseq, RVL_cfp_ep};
	const enum rv_item_id shifts[] = {RVL_fl_ushift, RVL_id_scope_shift,
					  RVL_rstring_embed_len_shift,
					  RVL_rarray_embed_len_shift};
	const enum rv_item_id env[] = {RVL_env_index_me_cref,
				       RVL_env_index_specval,
				       RVL_env_index_flags};
	const char *bad = NULL;
	if (cfp < 8 || cfp > 1024)
		bad = "cfp_size";
	for (size_t i = 0; !bad && i < sizeof(in_cfp) / sizeof(*in_cfp); i++)
		if (it[in_cfp[i]].value < 0 || it[in_cfp[i]].value + 8 > cfp)
			bad = rv_layout_item_name(in_cfp[i]);
	/* read from the control frame only where ZJIT's records are */
	if (!bad && it[RVL_cfp_jit_return].source != RV_MISSING &&
	    (it[RVL_cfp_jit_return].value < 0 ||
	     it[RVL_cfp_jit_return].value + 8 > cfp))
		bad = rv_layout_item_name(RVL_cfp_jit_return);
	for (size_t i = 0; !bad && i < sizeof(shifts) / sizeof(*shifts); i++)
		if (it[shifts[i]].source != RV_MISSING &&
		    (it[shifts[i]].value < 0 || it[shifts[i]].value > 63))
			bad = rv_layout_item_name(shifts[i]);
	for (size_t i = 0; !bad && i < sizeof(env) / sizeof(*env); i++)
		if (it[env[i]].value < -16 || it[env[i]].value > 16)
			bad = rv_layout_item_name(env[i]);
	for (int i = 0; !bad && i < RVL_COUNT; i++)
		if (it[i].bit_size > 64 || it[i].source > RV_FROM_ELF)
			bad = rv_layout_item_name(i);
	if (!bad)
		return NULL;
	return cs_error_create(
		CS_ERR_CORRUPT,
		"%s: the layout read for it is implausible (%s); "
		"run with --no-cache, or remove the layout cache",
		path, bad);
}

struct cs_error *rv_session_create(const struct cs_memory *target,
				   const struct rv_layout *layout,
				   const char *path, uint64_t load_bias,
				   const struct rv_options *opts,
				   struct rv_session **ret)
{
	struct rv_session *s = calloc(1, sizeof(*s));
	if (!s)
		return &cs_error_nomem;
	s->target = *target;
	s->load_bias = load_bias;
	s->opts.max_frames = opts && opts->max_frames ? opts->max_frames
						      : 100000;
	s->opts.max_threads = opts && opts->max_threads
				      ? opts->max_threads
				      : RV_DEFAULT_MAX_THREADS;
	s->opts.max_output_bytes = opts && opts->max_output_bytes
					   ? opts->max_output_bytes
					   : (size_t)1 << 30;
	s->opts.frame_flags = opts && opts->frame_flags;
	s->opts.reuse_frames = opts && opts->reuse_frames;
	s->opts.fibers_by_scan = opts && opts->fibers_by_scan;
	s->opts.max_scan_bytes = opts && opts->max_scan_bytes
					 ? opts->max_scan_bytes
					 : RV_DEFAULT_MAX_SCAN_BYTES;
	s->layout = *layout;
	struct cs_error *err;
	for (const enum rv_item_id *r = rv_layout_required; *r != RVL_COUNT;
	     r++)
		if (s->layout.items[*r].source == RV_MISSING) {
			rv_session_destroy(s);
			if (*r == RVL_vm_ptr)
				return cs_error_create(
					CS_ERR_NOT_RUBY,
					"%s: no ruby_current_vm_ptr in its "
					"debug info: not a Ruby VM (or Ruby "
					"older than 2.5)",
					path);
			return cs_error_wrap(rv_missing(*r), "%s", path);
		}
	if ((err = check_layout(&s->layout, path))) {
		rv_session_destroy(s);
		return err;
	}
	/* The reads assume a 64-bit little-endian target (x86-64 cores). */
	if (RV_VAL(s, value_size) != 8) {
		long long size = (long long)RV_VAL(s, value_size);
		rv_session_destroy(s);
		return cs_error_create(
			CS_ERR_FORMAT,
			"%s: VALUE is %lld bytes; corestack reads "
			"64-bit Rubies only",
			path, size);
	}
	/* Either the 3.x iseq member or master's _iseq. */
	if (!RV_HAS(s, cfp_iseq) && RV_HAS(s, cfp_iseq_master))
		s->layout.items[RVL_cfp_iseq] =
			s->layout.items[RVL_cfp_iseq_master];
	if (!RV_HAS(s, cfp_iseq)) {
		rv_session_destroy(s);
		return rv_missing(RVL_cfp_iseq);
	}
	rv_bt_rules_init(s);
	err = rv_names_init(s);
	if (err) {
		rv_session_destroy(s);
		return err;
	}
	*ret = s;
	return NULL;
}

void rv_session_set_target(struct rv_session *s, const struct cs_memory *t)
{
	s->target = *t;
}

const struct cs_memory *rv_session_memory(const struct rv_session *s)
{
	return &s->target;
}

void rv_session_set_regions(struct rv_session *s,
			    const struct cs_writable_regions *r)
{
	s->regions = r ? *r : (struct cs_writable_regions){0};
}

bool rv_session_gc_library(struct rv_session *s, uint64_t *entry)
{
	*entry = 0;
	if (!rv_modular_gc_loaded(s))
		return false;
	if (!RV_HAS(s, gc_functions_objspace_alloc) ||
	    !rv_try_member(s, s->load_bias + (uint64_t)RV_VAL(s, gc_functions),
			   RVL_gc_functions_objspace_alloc, entry))
		*entry = 0;
	return true;
}

struct cs_error *rv_session_set_gc_module(struct rv_session *s,
					  const struct rv_layout *layout,
					  const char *path, const char *why)
{
	free(s->gc_library);
	free(s->gc_why);
	s->gc_library = path ? strdup(path) : NULL;
	s->gc_why = why ? strdup(why) : NULL;
	if ((path && !s->gc_library) || (why && !s->gc_why))
		return &cs_error_nomem;
	s->gc_layout = layout != NULL;
	rv_heap_slots_destroy(s); /* pages found with the other layout */
	/* The built-in GC's facts do not describe the library's heap: each
	 * is the library's, or missing. */
	for (int i = 0; layout && i < RVL_COUNT; i++)
		if (rv_layout_item_is_gc(i))
			s->layout.items[i] = layout->items[i];
	return NULL;
}

bool rv_session_lacks_ext(const struct rv_session *s, const char *ext)
{
	for (int i = 0; i < RVL_COUNT; i++)
		if (rv_layout_item_of_ext(i, ext) &&
		    s->layout.items[i].source != RV_MISSING)
			return false;
	return true;
}

struct cs_error *rv_session_set_ext_module(struct rv_session *s,
					   const char *ext,
					   const struct rv_layout *layout,
					   uint64_t bias)
{
	const char *name = NULL; /* layout.def's, which outlives s */
	for (int i = 0; !name && i < RVL_COUNT; i++)
		if (rv_layout_item_of_ext(i, ext))
			name = rv_layout_item_ext(i);
	if (!name || !rv_session_lacks_ext(s, ext))
		return NULL;
	void *grown = realloc(s->ext_modules,
			      (s->next_modules + 1) * sizeof(*s->ext_modules));
	if (!grown)
		return &cs_error_nomem;
	s->ext_modules = grown;
	s->ext_modules[s->next_modules++] =
		(struct rv_ext_module){.name = name, .bias = bias};
	for (int i = 0; i < RVL_COUNT; i++)
		if (rv_layout_item_of_ext(i, ext))
			s->layout.items[i] = layout->items[i];
	return NULL;
}

struct cs_error *rv_session_note_ext_unread(struct rv_session *s,
					    const char *ext, const char *why)
{
	const char *name = NULL; /* layout.def's, which outlives s */
	for (int i = 0; !name && i < RVL_COUNT; i++)
		if (rv_layout_item_of_ext(i, ext))
			name = rv_layout_item_ext(i);
	if (!name || rv_session_ext_unread(s, ext))
		return NULL;
	char *copy = strdup(why);
	void *grown =
		copy ? realloc(s->ext_unread,
			       (s->next_unread + 1) * sizeof(*s->ext_unread))
		     : NULL;
	if (!grown) {
		free(copy);
		return &cs_error_nomem;
	}
	s->ext_unread = grown;
	s->ext_unread[s->next_unread++] =
		(struct rv_ext_unread){.name = name, .why = copy};
	return NULL;
}

const char *rv_session_ext_unread(const struct rv_session *s, const char *ext)
{
	if (!rv_session_lacks_ext(s, ext))
		return NULL;
	for (size_t i = 0; i < s->next_unread; i++)
		if (!strcmp(s->ext_unread[i].name, ext))
			return s->ext_unread[i].why;
	return NULL;
}

void rv_session_set_prefetcher(struct rv_session *s,
			       const struct cs_prefetcher *p)
{
	s->prefetcher = p ? *p : (struct cs_prefetcher){0};
}

void rv_prefetch(struct rv_session *s, uint64_t addr, size_t len)
{
	if (s->prefetcher.prefetch && len)
		s->prefetcher.prefetch(s->prefetcher.priv, addr, len);
}

void rv_session_destroy(struct rv_session *s)
{
	if (!s)
		return;
	rv_names_destroy(s);
	rv_iseq_cache_destroy(s);
	rv_frame_cache_destroy(s);
	rv_frame_names_clear(s);
	rv_heap_slots_destroy(s);
	free(s->cfp_chunk);
	free(s->gc_library);
	free(s->gc_why);
	free(s->ext_modules);
	for (size_t i = 0; i < s->next_unread; i++)
		free(s->ext_unread[i].why);
	free(s->ext_unread);
	free(s);
}
