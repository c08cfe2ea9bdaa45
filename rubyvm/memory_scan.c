/* Finding the T_DATA objects of one data type without the GC's help.
 *
 * A GC whose heap cannot be walked (MMTk, loaded from RUBY_GC_LIBRARY,
 * has no heap pages; a GC library may have no debug info) still keeps
 * every object in the process's writable memory, and a typed data object
 * holds its data type's address in its type word. So every aligned 8-byte
 * word of the writable regions the target lists is compared with that
 * address (its low bits cleared, as 4.0 keeps "embedded" there), and where
 * one matches, the object would begin type_off bytes before it: its slot
 * must then read as heap.c's walk reads a slot (T_DATA, typed, this type).
 * A copy of an object's bytes elsewhere (a stale stack slot, a buffer)
 * passes these checks too: the caller checks what the data points to
 * (fibers.c: the fiber points back at the object).
 *
 * Bounded: at most opts.max_scan_bytes are read, a chunk at a time; a
 * chunk that cannot be read is read again page by page, and what stays
 * unreadable is counted. Either cut makes the result incomplete, and
 * scan->error says so; scan->bytes counts the bytes read. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

#define CHUNK ((size_t)1 << 20)
#define PAGE ((uint64_t)4096)
/* Far above the fibers a process can have (each has its own stacks). */
#define MAX_FOUND ((size_t)1 << 24)

struct scan_state {
	struct rv_session *s;
	const struct rv_typed_data_check *c;
	struct rv_heap_scan *scan;
	uint64_t unreadable, first_unreadable;
	bool too_many;
};

/* The words of [addr, addr + len), read into buf: false when out of
 * memory. */
static bool scan_words(struct scan_state *st, const uint8_t *buf, uint64_t addr,
		       size_t len)
{
	const struct rv_typed_data_check *c = st->c;
	uint8_t slot[256 + 8];
	for (size_t off = 0; off + 8 <= len; off += 8) {
		uint64_t w;
		memcpy(&w, buf + off, 8);
		if ((w & c->type_mask) != c->type)
			continue;
		uint64_t obj = addr + off - c->type_off, data;
		if (addr + off < c->type_off || c->need > sizeof(slot) ||
		    !rv_try_read(st->s, obj, slot, c->need) ||
		    !rv_typed_data_match(c, slot, &data))
			continue;
		if (st->scan->count >= MAX_FOUND) {
			st->too_many = true;
			return true;
		}
		if (!rv_heap_add_found(st->scan, obj, data))
			return false;
	}
	return true;
}

/* [addr, addr + len): in one read, else page by page. */
static bool scan_range(struct scan_state *st, uint8_t *buf, uint64_t addr,
		       size_t len)
{
	if (rv_try_read(st->s, addr, buf, len)) {
		st->scan->bytes += len;
		return scan_words(st, buf, addr, len);
	}
	for (uint64_t at = addr; at < addr + len;) {
		uint64_t next = (at | (PAGE - 1)) + 1;
		size_t n =
			(size_t)((next < addr + len ? next : addr + len) - at);
		if (rv_try_read(st->s, at, buf, n)) {
			st->scan->bytes += n;
			if (!scan_words(st, buf, at, n))
				return false;
		} else {
			if (!st->unreadable)
				st->first_unreadable = at;
			st->unreadable += n;
		}
		at += n;
	}
	return true;
}

struct cs_error *rv_memory_find_typed_data(struct rv_session *s, uint64_t type,
					   struct rv_heap_scan *scan)
{
	memset(scan, 0, sizeof(*scan));
	struct rv_typed_data_check c;
	if (!rv_typed_data_check_init(s, type, &c, scan, "memory not scanned"))
		return NULL;
	if (!s->regions.next) {
		rv_heap_note(scan, "memory not scanned: the target does not "
				   "list its writable memory");
		scan->not_begun = true;
		return NULL;
	}
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		return &cs_error_nomem;
	struct scan_state st = {.s = s, .c = &c, .scan = scan};
	uint64_t max = s->opts.max_scan_bytes ? s->opts.max_scan_bytes
					      : RV_DEFAULT_MAX_SCAN_BYTES;
	uint64_t start, end, done = 0, from = 0;
	bool capped = false;
	for (; !capped && !st.too_many &&
	       s->regions.next(s->regions.priv, from, &start, &end);
	     from = end) {
		if (end <= from)
			break; /* a target that does not move on */
		if (start < from)
			start = from;
		start = (start + 7) & ~(uint64_t)7;
		for (uint64_t at = start; at < end && !st.too_many;) {
			size_t len = end - at < CHUNK ? (size_t)(end - at)
						      : CHUNK;
			if (len > max - done) {
				len = (size_t)(max - done);
				capped = true;
			}
			if (!len)
				break;
			if (!scan_range(&st, buf, at, len)) {
				free(buf);
				return &cs_error_nomem;
			}
			done += len;
			at += len;
			if (capped)
				break;
		}
	}
	free(buf);
	if (capped)
		rv_heap_note(scan,
			     "memory scan stopped at its bound of %llu bytes: "
			     "objects in the rest of writable memory not "
			     "found",
			     (unsigned long long)max);
	else if (st.too_many)
		rv_heap_note(scan,
			     "memory scan stopped after %zu objects: the rest "
			     "not found",
			     MAX_FOUND);
	else if (st.unreadable)
		rv_heap_note(scan,
			     "memory scan: %llu bytes of writable memory "
			     "unreadable (the first at 0x%llx): objects there "
			     "not found",
			     (unsigned long long)st.unreadable,
			     (unsigned long long)st.first_unreadable);
	return NULL;
}
