/* The members of a struct read in one span (rv_view, rubyvm/session.c):
 * each member taken from the span is what rv_read_member reads, bitfields
 * and narrow integers included; a struct straddling into memory that
 * cannot be read yields the members that can be read and fails on the
 * others exactly as the member reads do; missing and malformed items give
 * the member read's errors; a span wider than RV_VIEW_MAX is not read at
 * once. Reads are counted: one for the span, one per member outside it.
 * The layout values here are this test's own, not CRuby's. */
#include <stdlib.h>
#include <string.h>

#include "../../rubyvm/session.h"
#include "check.h"

#define BASE 0x100000ULL
#define MEM_SIZE 0x1000 /* the readable bytes end at BASE + MEM_SIZE */

static uint8_t mem[MEM_SIZE];
static int reads;

static struct cs_error *read_mem(void *priv, uint64_t addr, void *buf,
				 size_t len)
{
	(void)priv;
	reads++;
	if (addr < BASE || addr - BASE > MEM_SIZE ||
	    len > MEM_SIZE - (addr - BASE))
		return cs_error_create(CS_ERR_FAULT, "0x%llx not mapped",
				       (unsigned long long)addr);
	memcpy(buf, mem + (addr - BASE), len);
	return NULL;
}

static void member(struct rv_session *s, enum rv_item_id id, int64_t off,
		   uint32_t size)
{
	s->layout.items[id] = (struct rv_item){
		.value = off, .size = size, .source = RV_FROM_DWARF};
}

static void bits(struct rv_session *s, enum rv_item_id id, uint16_t pos,
		 uint8_t width)
{
	s->layout.items[id] = (struct rv_item){.size = 4,
					       .bit_pos = pos,
					       .bit_size = width,
					       .source = RV_FROM_DWARF};
}

/* Four members and a bitfield pair, as a thread's: ec at 8, status and
 * to_kill in bits 3..5 of the word at 16, nt (4 bytes) at 24, name at
 * 40. */
static const enum rv_item_id ids[] = {RVL_th_ec, RVL_th_status, RVL_th_to_kill,
				      RVL_th_nt, RVL_th_name};

static void build(struct rv_session *s)
{
	memset(s, 0, sizeof(*s));
	s->target = (struct cs_memory){.read = read_mem};
	member(s, RVL_th_ec, 8, 8);
	bits(s, RVL_th_status, 16 * 8 + 3, 2);
	bits(s, RVL_th_to_kill, 16 * 8 + 5, 1);
	member(s, RVL_th_nt, 24, 4);
	member(s, RVL_th_name, 40, 8);
	for (size_t i = 0; i < MEM_SIZE; i++)
		mem[i] = (uint8_t)(i * 7 + 3);
}

/* Every member read through v and on its own: the same value, or both
 * failing with the same message. */
static void same_as_members(struct rv_session *s, const struct rv_view *v,
			    const char *what)
{
	for (size_t i = 0; i < sizeof(ids) / sizeof(*ids); i++) {
		uint64_t a = 0, b = 0;
		struct cs_error *ea = rv_view_member(s, v, ids[i], &a);
		struct cs_error *eb = rv_read_member(s, v->base, ids[i], &b);
		CHECK(!ea == !eb && (ea || a == b) &&
			      (!ea || !strcmp(ea->message, eb->message)),
		      "%s: %s: view %s 0x%llx, member %s 0x%llx", what,
		      rv_layout_item_name(ids[i]), ea ? ea->message : "ok",
		      (unsigned long long)a, eb ? eb->message : "ok",
		      (unsigned long long)b);
		cs_error_destroy(ea);
		cs_error_destroy(eb);
	}
}

int main(void)
{
	struct rv_session s;
	static struct rv_view v;
	uint64_t x;

	/* A struct in readable memory: one read, every member from it. */
	build(&s);
	reads = 0;
	rv_view_read(&s, BASE + 0x100, ids, sizeof(ids) / sizeof(*ids), &v);
	CHECK(reads == 1 && v.lo == 8 && v.hi == 48,
	      "span: %d reads, [%llu, %llu)", reads, (unsigned long long)v.lo,
	      (unsigned long long)v.hi);
	reads = 0;
	for (size_t i = 0; i < sizeof(ids) / sizeof(*ids); i++)
		CHECK(rv_view_try(&s, &v, ids[i], &x), "member %zu", i);
	CHECK(reads == 0, "members from the span: %d reads", reads);
	same_as_members(&s, &v, "readable");
	CHECK(rv_view_try(&s, &v, RVL_th_status, &x) &&
		      x == ((mem[0x110] >> 3) & 3),
	      "bitfield 0x%llx", (unsigned long long)x);
	CHECK(rv_view_try(&s, &v, RVL_th_nt, &x) && x <= UINT32_MAX,
	      "a 4-byte member zero-extended: 0x%llx", (unsigned long long)x);

	/* Straddling the end of readable memory: the span fails, the members
	 * before the end are read, those past it fail as member reads do. */
	uint64_t edge = BASE + MEM_SIZE - 32; /* ec, status, nt readable */
	reads = 0;
	rv_view_read(&s, edge, ids, sizeof(ids) / sizeof(*ids), &v);
	CHECK(reads == 1 && v.lo == v.hi, "straddling: %d reads, %s", reads,
	      v.lo == v.hi ? "nothing held" : "bytes held");
	CHECK(rv_view_try(&s, &v, RVL_th_ec, &x) &&
		      rv_view_try(&s, &v, RVL_th_status, &x) &&
		      rv_view_try(&s, &v, RVL_th_nt, &x),
	      "straddling: the readable members");
	CHECK(!rv_view_try(&s, &v, RVL_th_name, &x),
	      "straddling: the member past the end");
	same_as_members(&s, &v, "straddling");

	/* A missing item is the member read's error; a member the view was
	 * not asked for is read on its own. */
	build(&s);
	s.layout.items[RVL_th_nt].source = RV_MISSING;
	rv_view_read(&s, BASE + 0x100, ids, sizeof(ids) / sizeof(*ids), &v);
	same_as_members(&s, &v, "missing nt");
	member(&s, RVL_th_ractor, 64, 8);
	reads = 0;
	CHECK(rv_view_try(&s, &v, RVL_th_ractor, &x) && reads == 1,
	      "a member outside the span: %d reads", reads);

	/* Malformed items: not a scalar, a bitfield wider than 8 bytes, an
	 * offset no span holds. */
	build(&s);
	member(&s, RVL_th_ec, 8, 16);
	bits(&s, RVL_th_status, 16 * 8 + 3, 64);
	member(&s, RVL_th_name, -8, 8);
	rv_view_read(&s, BASE + 0x100, ids, sizeof(ids) / sizeof(*ids), &v);
	same_as_members(&s, &v, "malformed");

	/* A span wider than RV_VIEW_MAX is left to the member reads. */
	build(&s);
	member(&s, RVL_th_name, RV_VIEW_MAX + 64, 8);
	reads = 0;
	rv_view_read(&s, BASE, ids, sizeof(ids) / sizeof(*ids), &v);
	same_as_members(&s, &v, "wide");
	CHECK(v.hi - v.lo <= RV_VIEW_MAX, "wide: span %llu bytes",
	      (unsigned long long)(v.hi - v.lo));

	/* NULL: nothing read from the view, the member reads' errors. */
	rv_view_read(&s, 0, ids, sizeof(ids) / sizeof(*ids), &v);
	same_as_members(&s, &v, "NULL");
	return check_summary("view");
}
