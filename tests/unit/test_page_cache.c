/* The page cache (corestack/page_cache.c) over a fake target: bytes come
 * back right across page boundaries, runs of missing pages are read in one
 * call, a clear forgets everything, and with a batch reader the pages used
 * before a clear are read again in one call, fresh, skipping none that a
 * later snapshot still needs when one of them has become unreadable. */
#include "corestack/page_cache.h"
#include "tests/unit/check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BASE 0x10000
#define NPAGES 16

struct fake {
	uint8_t mem[NPAGES * CS_PAGE_SIZE];
	int reads, batches;
	uint64_t hole; /* a page that cannot be read, 0 for none */
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
		return cs_error_create(CS_ERR_FAULT, "no memory at 0x%llx",
				       (unsigned long long)addr);
	memcpy(buf, f->mem + (addr - BASE), len);
	return NULL;
}

static size_t fake_read_pages(void *priv, const uint64_t *pages,
			      void *const *bufs, size_t n, size_t size)
{
	struct fake *f = priv;
	f->batches++;
	for (size_t i = 0; i < n; i++) {
		if (!readable(f, pages[i], size))
			return i;
		memcpy(bufs[i], f->mem + (pages[i] - BASE), size);
	}
	return n;
}

static int read_ok(struct rv_target *t, const struct fake *f, uint64_t addr,
		   size_t len)
{
	uint8_t buf[3 * CS_PAGE_SIZE];
	struct cs_error *err = rv_target_read(t, addr, buf, len);
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
	struct rv_target inner = {fake_read, &f};
	struct cs_page_cache c;
	CHECK(cs_page_cache_init(&c, &inner), "init");
	struct rv_target t = cs_page_cache_target(&c);

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
	c.read_pages = fake_read_pages;
	c.read_pages_priv = &f;
	CHECK(read_ok(&t, &f, BASE + 5 * CS_PAGE_SIZE, 8), "another page");
	int reads = f.reads;
	cs_page_cache_clear(&c);
	CHECK(f.batches == 1, "one batch per clear (%d)", f.batches);
	f.mem[5 * CS_PAGE_SIZE] ^= 0xff; /* changes after the read-ahead */
	uint8_t b;
	struct cs_error *err = rv_target_read(&t, BASE + 5 * CS_PAGE_SIZE, &b, 1);
	CHECK(!err && f.reads == reads && b != f.mem[5 * CS_PAGE_SIZE],
	      "a read-ahead page is served without a read");
	cs_error_destroy(err);
	cs_page_cache_clear(&c); /* the page above was used: read again */
	CHECK(read_ok(&t, &f, BASE + 5 * CS_PAGE_SIZE, 8) && f.reads == reads,
	      "the next clear reads the changed page afresh");

	/* A page that became unreadable ends the batch; those after it are
	 * read on demand, and the bad one still fails. */
	CHECK(read_ok(&t, &f, BASE + 1 * CS_PAGE_SIZE, 8) &&
		      read_ok(&t, &f, BASE + 9 * CS_PAGE_SIZE, 8),
	      "two more pages");
	f.hole = BASE + 1 * CS_PAGE_SIZE;
	cs_page_cache_clear(&c);
	CHECK(read_ok(&t, &f, BASE + 9 * CS_PAGE_SIZE, 8),
	      "a page after the hole is still read right");
	CHECK(!read_ok(&t, &f, BASE + 1 * CS_PAGE_SIZE, 8),
	      "the unreadable page fails");
	cs_page_cache_free(&c);
	return check_summary("test_page_cache");
}
