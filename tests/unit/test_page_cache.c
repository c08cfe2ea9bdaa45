/* The page cache (process/page_cache.c) over a fake target: bytes come
 * back right across page boundaries, runs of missing pages are read in one
 * call, a clear forgets everything, and with a batch reader the pages used
 * before a clear are read again in one call, fresh, skipping none that a
 * later snapshot still needs when one of them has become unreadable. A
 * read-ahead brings only the part of a page that was used; a read outside
 * it fetches the page whole. */
#include "process/page_cache.h"
#include "tests/unit/check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE 0x10000
#define NPAGES 16

struct fake {
	uint8_t mem[NPAGES * CS_PAGE_SIZE];
	int reads, batches;
	size_t batch_bytes; /* read by batches */
	uint64_t hole;      /* a page that cannot be read, 0 for none */
	bool exited;        /* its reads fail without a fault address */
};

static int readable(const struct fake *f, uint64_t addr, size_t len)
{
	if (addr < BASE || addr + len > BASE + sizeof(f->mem))
		return 0;
	return !f->hole || addr + len <= f->hole ||
	       addr >= f->hole + CS_PAGE_SIZE;
}

static struct cs_error *fake_read(void *priv, uint64_t addr, void *buf,
				  size_t len)
{
	struct fake *f = priv;
	f->reads++;
	if (!readable(f, addr, len))
		return f->exited ? cs_error_create(CS_ERR_FAULT, "exited")
				 : cs_error_fault(addr, "no memory at 0x%llx",
						  (unsigned long long)addr);
	memcpy(buf, f->mem + (addr - BASE), len);
	return NULL;
}

static size_t fake_read_ranges(void *priv, const uint64_t *addrs,
			       void *const *bufs, const size_t *lens, size_t n)
{
	struct fake *f = priv;
	f->batches++;
	for (size_t i = 0; i < n; i++) {
		if (!readable(f, addrs[i], lens[i]))
			return i;
		memcpy(bufs[i], f->mem + (addrs[i] - BASE), lens[i]);
		f->batch_bytes += lens[i];
	}
	return n;
}

/* A whole-page target's own error, made without a read. */
static struct cs_error *fake_unreadable(void *priv, uint64_t addr, size_t len)
{
	(void)priv;
	return cs_error_fault(addr, "unreadable: %zu bytes at 0x%llx", len,
			      (unsigned long long)addr);
}

/* Reads len bytes at addr, which must fail: 1 when the message is
 * want (made with addr and len as fake_unreadable makes it), or when want
 * is NULL the fake's own for a read at addr. */
static int read_fails(struct cs_memory *t, uint64_t addr, size_t len,
		      const char *want)
{
	uint8_t buf[64];
	char msg[128];
	struct cs_error *err = cs_memory_read(t, addr, buf, len);
	if (!err)
		return 0;
	if (want)
		snprintf(msg, sizeof(msg), want, len, (unsigned long long)addr);
	else
		snprintf(msg, sizeof(msg), "no memory at 0x%llx",
			 (unsigned long long)addr);
	int same = strcmp(err->message, msg) == 0;
	cs_error_destroy(err);
	return same;
}

static int read_ok(struct cs_memory *t, const struct fake *f, uint64_t addr,
		   size_t len)
{
	uint8_t buf[3 * CS_PAGE_SIZE];
	struct cs_error *err = cs_memory_read(t, addr, buf, len);
	if (err) {
		cs_error_destroy(err);
		return 0;
	}
	return memcmp(buf, f->mem + (addr - BASE), len) == 0;
}

int main(void)
{
	static struct fake f;
	for (size_t i = 0; i < sizeof(f.mem); i++)
		f.mem[i] = (uint8_t)(i * 7 + i / CS_PAGE_SIZE);
	struct cs_memory inner = {fake_read, &f};
	struct cs_page_cache c;
	CHECK(cs_page_cache_init(&c, &inner), "init");
	struct cs_memory t = cs_page_cache_target(&c);

	/* A read across three missing pages: right bytes, one inner read. */
	CHECK(read_ok(&t, &f, BASE + 100, 2 * CS_PAGE_SIZE + 10),
	      "read across pages");
	CHECK(f.reads == 1, "3 missing pages in %d reads, expected 1", f.reads);
	CHECK(read_ok(&t, &f, BASE + 200, 50) && f.reads == 1,
	      "a cached page is not read again (%d reads)", f.reads);

	/* Clear without a batch reader: everything is read again. */
	cs_page_cache_clear(&c);
	f.mem[200] ^= 0xff;
	CHECK(read_ok(&t, &f, BASE + 200, 50) && f.reads == 2,
	      "after a clear the page is read afresh (%d reads)", f.reads);

	/* With a batch reader, a clear reads the used pages in one call. */
	c.read_ranges = fake_read_ranges;
	c.read_ranges_priv = &f;
	CHECK(read_ok(&t, &f, BASE + 5 * CS_PAGE_SIZE, 8), "another page");
	int reads = f.reads;
	cs_page_cache_clear(&c);
	CHECK(f.batches == 1, "one batch per clear (%d)", f.batches);
	f.mem[5 * CS_PAGE_SIZE] ^= 0xff; /* changes after the read-ahead */
	uint8_t b;
	struct cs_error *err =
		cs_memory_read(&t, BASE + 5 * CS_PAGE_SIZE, &b, 1);
	CHECK(!err && f.reads == reads && b != f.mem[5 * CS_PAGE_SIZE],
	      "a read-ahead page is served without a read");
	cs_error_destroy(err);
	cs_page_cache_clear(&c); /* the page above was used: read again */
	CHECK(read_ok(&t, &f, BASE + 5 * CS_PAGE_SIZE, 8) && f.reads == reads,
	      "the next clear reads the changed page afresh");

	/* A page that became unreadable is left out of the batch; those
	 * after it are still read ahead, and the bad one still fails. */
	CHECK(read_ok(&t, &f, BASE + 1 * CS_PAGE_SIZE, 8) &&
		      read_ok(&t, &f, BASE + 9 * CS_PAGE_SIZE, 8),
	      "two more pages");
	f.hole = BASE + 1 * CS_PAGE_SIZE;
	cs_page_cache_clear(&c);
	reads = f.reads;
	CHECK(read_ok(&t, &f, BASE + 9 * CS_PAGE_SIZE, 8) && f.reads == reads,
	      "a page after the hole is still read ahead");
	CHECK(!read_ok(&t, &f, BASE + 1 * CS_PAGE_SIZE, 8),
	      "the unreadable page fails");
	f.hole = 0;

	/* Only the used part of a page is read ahead, with a margin: a read
	 * near it is served, one far from it fetches the page whole. */
	for (int i = 0; i <= CS_PAGE_KEEP; i++)
		cs_page_cache_clear(&c); /* nothing used lately */
	f.batch_bytes = 0;
	cs_page_cache_clear(&c);
	CHECK(f.batch_bytes == 0,
	      "pages unused for %d clears are not read "
	      "ahead (%zu bytes)",
	      CS_PAGE_KEEP, f.batch_bytes);
	uint64_t page = BASE + 12 * CS_PAGE_SIZE;
	CHECK(read_ok(&t, &f, page + 1000, 16), "a few bytes");
	f.batch_bytes = 0;
	cs_page_cache_clear(&c);
	CHECK(f.batch_bytes > 0 && f.batch_bytes <= 1024,
	      "a clear read %zu bytes again for 16 used", f.batch_bytes);
	reads = f.reads;
	f.mem[12 * CS_PAGE_SIZE + 1000] ^= 0xff; /* after the read-ahead */
	CHECK(cs_memory_read(&t, page + 1000, &b, 1) == NULL &&
		      b != f.mem[12 * CS_PAGE_SIZE + 1000] && f.reads == reads,
	      "the used bytes come from the read-ahead");
	CHECK(read_ok(&t, &f, page + 1100, 8) && f.reads == reads,
	      "bytes near them too");
	CHECK(read_ok(&t, &f, page + 3000, 8) && f.reads == reads + 1,
	      "bytes far away fetch the page (%d reads)", f.reads - reads);
	CHECK(read_ok(&t, &f, page + 1000, 1) && read_ok(&t, &f, page, 4096) &&
		      f.reads == reads + 1,
	      "then the whole page is served, fresh");
	/* A read across a partly cached page and a missing one. */
	CHECK(read_ok(&t, &f, page + 1000, 8), "used again");
	cs_page_cache_clear(&c);
	reads = f.reads;
	CHECK(read_ok(&t, &f, page + 3000, CS_PAGE_SIZE), "across two pages");
	CHECK(f.reads == reads + 1,
	      "the partial page and the next in one "
	      "read (%d)",
	      f.reads - reads);

	/* A page used once is read ahead at the next CS_PAGE_KEEP clears,
	 * not after. */
	for (int i = 0; i <= CS_PAGE_KEEP; i++)
		cs_page_cache_clear(&c);
	CHECK(read_ok(&t, &f, page + 900, 8), "used once");
	for (int i = 1; i <= CS_PAGE_KEEP + 1; i++) {
		f.batch_bytes = 0;
		cs_page_cache_clear(&c);
		CHECK((f.batch_bytes > 0) == (i <= CS_PAGE_KEEP),
		      "clear %d after the use read %zu bytes ahead", i,
		      f.batch_bytes);
	}

	/* Without a whole-page target's error, a read in an unreadable
	 * page tries the page, then exactly what was asked, each time. */
	uint64_t hole = BASE + 5 * CS_PAGE_SIZE;
	const char *own = "unreadable: %zu bytes at 0x%llx";
	f.hole = hole;
	cs_page_cache_clear(&c);
	reads = f.reads;
	CHECK(read_fails(&t, hole + 0x70, 24, NULL) &&
		      read_fails(&t, hole + 0x80, 8, NULL) &&
		      f.reads == reads + 4,
	      "two reads in an unreadable page: %d calls", f.reads - reads);
	/* With it, the page is tried once until the next clear, and a read
	 * beginning in it fails with the target's error for that read. */
	c.unreadable = fake_unreadable;
	c.unreadable_priv = &f;
	cs_page_cache_clear(&c);
	reads = f.reads;
	CHECK(read_fails(&t, hole + 0x70, 24, own) && f.reads == reads + 1,
	      "the first read in the page: the page tried (%d calls)",
	      f.reads - reads);
	CHECK(read_fails(&t, hole + 0x80, 8, own) &&
		      read_fails(&t, hole, 4096, own) && f.reads == reads + 1,
	      "later reads beginning in it: no call (%d)", f.reads - reads);
	uint8_t across[16];
	struct cs_error *cut = cs_memory_read(&t, hole - 8, across, 16);
	CHECK(cut && strstr(cut->message, "no memory") &&
		      read_ok(&t, &f, hole - 8, 8),
	      "a read beginning before it gets the target's own error");
	cs_error_destroy(cut);
	cs_page_cache_clear(&c);
	reads = f.reads;
	CHECK(read_fails(&t, hole + 0x80, 8, own) && f.reads == reads + 1,
	      "a clear forgets it (%d calls)", f.reads - reads);
	/* A failure that names no fault address there (the process ended,
	 * say) is not taken for an unreadable page. */
	f.exited = true;
	cs_page_cache_clear(&c);
	reads = f.reads;
	struct cs_error *gone =
		cs_memory_read(&t, hole + 0x70, (uint8_t[8]){0}, 8);
	CHECK(gone && strcmp(gone->message, "exited") == 0 &&
		      f.reads == reads + 2,
	      "no fault address: the read asked exactly, its error kept");
	cs_error_destroy(gone);
	f.exited = false;
	f.hole = 0;
	cs_page_cache_free(&c);
	return check_summary("test_page_cache");
}
