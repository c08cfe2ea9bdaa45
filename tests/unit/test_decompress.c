/* Compressed cores (process/decompress.c) against the tools that write
 * them: a payload shaped like a core (varied bytes, a long run of zeros,
 * repeated records) is compressed by zstd, gzip, xz, lz4 (the frame
 * format, with and without its content size, block checksums, linked
 * blocks and content checksum, and the legacy format of lz4 -l) and bzip2 (large and small blocks), then
 * read back. Each stream must inflate to the payload exactly, its zeros
 * left as holes; two streams one after the other to the payload twice;
 * one cut off to a part of the payload at most, never an error but "holds
 * no data"; one with bytes flipped (or a wrong lz4 content checksum) to
 * CS_ERR_FORMAT; past a bound to CS_ERR_LIMIT. cs_decompress_range reads
 * a stream between other bytes, as a bundle holds it, bounded the same
 * way, and says whether it was whole: cut off, it is not (what a bundle
 * holding a compressed core is refused by). The tools are those
 * .ci/install-deps installs. */
#include "process/decompress.h"
#include "tests/unit/check.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAYLOAD_SIZE (3 * 1024 * 1024 + 123)
#define ZEROS_AT (1024 * 1024)
#define ZEROS_LEN (1024 * 1024)

struct variant {
	const char *kind; /* what cs_compression_of says */
	const char *name;
	const char *command; /* reads stdin, writes stdout */
	int checked;         /* flipped bytes are always found (a checksum) */
};

static const struct variant variants[] = {
	{"zstd", "zstd", "zstd -q -c", 1},
	{"gzip", "gzip", "gzip -c", 1},
	{"xz", "xz", "xz -0 -c", 1},
	/* what systemd-coredump writes: 4 MiB blocks, content checksum */
	{"lz4", "lz4", "lz4 -q -c", 1},
	{"lz4", "lz4 linked 64K blocks, block checksums, content size",
	 "lz4 -q -c -B4 -BD -BX --content-size", 1},
	{"lz4", "lz4 256K blocks, no checksum", "lz4 -q -c -B5 --no-frame-crc",
	 0},
	/* the legacy format: no checksum */
	{"lz4", "lz4 legacy", "lz4 -q -c -l", 0},
	{"bzip2", "bzip2", "bzip2 -c", 1},
	{"bzip2", "bzip2 100k blocks", "bzip2 -1 -c", 1},
};

static char dir[] = "/tmp/test_decompress.XXXXXX";
static uint8_t *payload;

static char *path_of(const char *name)
{
	static char buf[4][256];
	static int i;
	char *p = buf[i++ % 4];
	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

static void make_payload(void)
{
	payload = malloc(PAYLOAD_SIZE);
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (size_t i = 0; i < PAYLOAD_SIZE; i++) {
		if (i >= ZEROS_AT && i < ZEROS_AT + ZEROS_LEN) {
			payload[i] = 0;
		} else if (i < ZEROS_AT) {
			/* a few bits of noise per byte: compressible, not
			 * trivially */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			payload[i] = (uint8_t)('a' + (x & 15));
		} else {
			static const char rec[] =
				"frame 0x7f12 <main> line 42;";
			payload[i] = (uint8_t)(rec[i % (sizeof(rec) - 1)] +
					       i / 65536);
		}
	}
}

static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 20, n = 0;
	uint8_t *p = malloc(cap);
	size_t r;
	while (p && (r = fread(p + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			uint8_t *more = realloc(p, cap *= 2);
			if (!more)
				free(p);
			p = more;
		}
	}
	fclose(f);
	*len = n;
	return p;
}

static void write_all(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

/* The payload through the tool's command -> its stream, or NULL. */
static uint8_t *compress(const struct variant *v, size_t *len)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s < %s > %s", v->command,
		 path_of("payload"), path_of("stream"));
	int rc = system(cmd);
	if (rc != 0 || !WIFEXITED(rc))
		return NULL;
	return read_all(path_of("stream"), len);
}

/* The inflated memfd's bytes, *len its size; *sparse whether its zero run
 * costs no memory. */
static uint8_t *inflated(int fd, size_t *len, int *sparse)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return NULL;
	*sparse = (uint64_t)st.st_blocks * 512 <=
		  (uint64_t)st.st_size - ZEROS_LEN + 8192;
	*len = (size_t)st.st_size;
	uint8_t *p = malloc(*len + 1);
	if (p && pread(fd, p, *len, 0) != (ssize_t)*len) {
		free(p);
		return NULL;
	}
	return p;
}

/* cs_decompress_core on the bytes s[0..n) -> the error (or NULL), the
 * inflated bytes in *out (its size *out_len). */
static struct cs_error *core_of(const struct variant *v, const uint8_t *s,
				size_t n, uint64_t bound, uint8_t **out,
				size_t *out_len, int *sparse)
{
	const char *path = path_of("core");
	write_all(path, s, n);
	int fd = open(path, O_RDONLY);
	int ofd = -1;
	*out = NULL;
	*out_len = 0;
	struct cs_error *err =
		cs_decompress_core(fd, path, v->kind, bound, &ofd);
	close(fd);
	if (!err) {
		*out = inflated(ofd, out_len, sparse);
		close(ofd);
	}
	return err;
}

static int mentions(const struct cs_error *err, const char *what)
{
	return err && err->message && strstr(err->message, what) &&
	       strstr(err->message, dir) && !strchr(err->message, '\n');
}

static void test_variant(const struct variant *v)
{
	size_t n;
	uint8_t *s = compress(v, &n);
	CHECK(s && n > 16, "%s: `%s` made no stream", v->name, v->command);
	if (!s || n <= 16) {
		free(s);
		return;
	}
	const char *kind = cs_compression_of(s, n);
	CHECK(kind && strcmp(kind, v->kind) == 0, "%s: told as %s", v->name,
	      kind ? kind : "nothing");
	CHECK(cs_compression_supported(v->kind), "%s: not supported", v->name);

	/* whole */
	uint8_t *out;
	size_t len;
	int sparse = 0;
	struct cs_error *err = core_of(v, s, n, 0, &out, &len, &sparse);
	CHECK(!err, "%s: %s", v->name, err ? err->message : "");
	CHECK(!err && len == PAYLOAD_SIZE && out &&
		      memcmp(out, payload, len) == 0,
	      "%s: inflated to %zu bytes, not the %d of the payload", v->name,
	      len, PAYLOAD_SIZE);
	CHECK(!err && sparse, "%s: the run of zeros is not a hole", v->name);
	free(out);
	cs_error_destroy(err);

	/* two streams, one after the other */
	uint8_t *two = malloc(2 * n);
	memcpy(two, s, n);
	memcpy(two + n, s, n);
	err = core_of(v, two, 2 * n, 0, &out, &len, &sparse);
	CHECK(!err && len == 2 * (size_t)PAYLOAD_SIZE && out &&
		      memcmp(out, payload, PAYLOAD_SIZE) == 0 &&
		      memcmp(out + PAYLOAD_SIZE, payload, PAYLOAD_SIZE) == 0,
	      "%s: two streams inflated to %zu bytes (%s), not the payload "
	      "twice",
	      v->name, len, err ? err->message : "no error");
	free(out);
	cs_error_destroy(err);
	/* ... whole as a range too: the second stream ends where one may */
	write_all(path_of("two"), two, 2 * n);
	int tfd = open(path_of("two"), O_RDONLY),
	    ofd = open(path_of("two-out"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	uint64_t written = 0;
	int whole = -1;
	err = cs_decompress_range(tfd, path_of("two"), v->kind, 0, 2 * n, ofd,
				  3 * (uint64_t)PAYLOAD_SIZE, &written, &whole);
	CHECK(!err && written == 2 * (uint64_t)PAYLOAD_SIZE && whole == 1,
	      "%s: two streams as a range: %llu bytes, whole %d (%s)", v->name,
	      (unsigned long long)written, whole,
	      err ? err->message : "no error");
	cs_error_destroy(err);
	close(tfd);
	close(ofd);
	unlink(path_of("two"));
	unlink(path_of("two-out"));
	free(two);

	/* cut off: what inflated is kept, never more than the payload's
	 * start */
	for (size_t k = 1; k <= 3; k++) {
		size_t cut = n * k / 4;
		err = core_of(v, s, cut, 0, &out, &len, &sparse);
		int ok = err ? err->code == CS_ERR_FORMAT &&
					 mentions(err, "holds no data")
			     : len < PAYLOAD_SIZE && len > 0 &&
					 memcmp(out, payload, len) == 0;
		CHECK(ok,
		      "%s: cut at %zu of %zu bytes: %s, %zu bytes inflated "
		      "(a part of the payload, or 'holds no data')",
		      v->name, cut, n, err ? err->message : "no error", len);
		free(out);
		cs_error_destroy(err);
	}

	/* corrupt: bytes flipped in the middle */
	if (v->checked) {
		uint8_t *bad = malloc(n);
		memcpy(bad, s, n);
		for (size_t i = n / 2; i < n / 2 + 16 && i < n; i++)
			bad[i] ^= 0x5a;
		err = core_of(v, bad, n, 0, &out, &len, &sparse);
		CHECK(err && err->code == CS_ERR_FORMAT &&
			      mentions(err, "corrupt"),
		      "%s: flipped bytes: %s", v->name,
		      err ? err->message : "no error");
		free(out);
		cs_error_destroy(err);
		free(bad);
	}

	/* past the bound */
	err = core_of(v, s, n, PAYLOAD_SIZE / 2, &out, &len, &sparse);
	CHECK(err && err->code == CS_ERR_LIMIT && mentions(err, " -dc "),
	      "%s: past the bound: %s", v->name,
	      err ? err->message : "no error");
	free(out);
	cs_error_destroy(err);

	/* a range of a larger file, as a bundle holds it */
	uint8_t *framed = malloc(n + 150);
	memset(framed, 0x77, 100);
	memcpy(framed + 100, s, n);
	memset(framed + 100 + n, 0x77, 50);
	const char *path = path_of("framed");
	write_all(path, framed, n + 150);
	free(framed);
	int fd = open(path, O_RDONLY);
	for (int bounded = 0; bounded < 2; bounded++) {
		char name[64];
		snprintf(name, sizeof(name), "range%d", bounded);
		int ofd = open(path_of(name), O_RDWR | O_CREAT | O_TRUNC, 0600);
		uint64_t written = 0;
		int whole = -1;
		err = cs_decompress_range(fd, path, v->kind, 100, n, ofd,
					  PAYLOAD_SIZE - (uint64_t)bounded,
					  &written, &whole);
		if (bounded) {
			CHECK(err && err->code == CS_ERR_LIMIT,
			      "%s: a range past its bound: %s", v->name,
			      err ? err->message : "no error");
		} else {
			out = inflated(ofd, &len, &sparse);
			CHECK(!err && written == PAYLOAD_SIZE &&
				      len == PAYLOAD_SIZE && out &&
				      memcmp(out, payload, len) == 0,
			      "%s: a range inflated to %llu bytes (%s)",
			      v->name, (unsigned long long)written,
			      err ? err->message : "no error");
			CHECK(whole == 1, "%s: a whole range said cut off (%d)",
			      v->name, whole);
			free(out);
		}
		cs_error_destroy(err);
		close(ofd);
		unlink(path_of(name));
	}
	/* a range cut off, at a quarter, half and three quarters: told */
	for (size_t k = 1; k <= 3; k++) {
		int ofd =
			open(path_of("cut"), O_RDWR | O_CREAT | O_TRUNC, 0600);
		uint64_t written = 0;
		int whole = -1;
		err = cs_decompress_range(fd, path, v->kind, 100, n * k / 4,
					  ofd, PAYLOAD_SIZE, &written, &whole);
		CHECK(err ? err->code == CS_ERR_FORMAT : whole == 0,
		      "%s: a range cut at %zu of %zu bytes: %s, whole %d",
		      v->name, n * k / 4, n, err ? err->message : "no error",
		      whole);
		cs_error_destroy(err);
		close(ofd);
		unlink(path_of("cut"));
	}
	close(fd);
	free(s);
}

/* The last 4 bytes of an lz4 frame with a content checksum are that
 * checksum: one wrong is a corrupt stream, whatever inflated before. */
static void test_lz4_content_checksum(void)
{
	size_t n;
	uint8_t *s = compress(&variants[3], &n);
	if (!s || n < 16) {
		CHECK(0, "lz4 made no stream");
		free(s);
		return;
	}
	CHECK(s[4] & 0x04, "lz4's frame has no content checksum (FLG 0x%02x)",
	      s[4]);
	s[n - 1] ^= 1;
	uint8_t *out;
	size_t len;
	int sparse;
	struct cs_error *err =
		core_of(&variants[3], s, n, 0, &out, &len, &sparse);
	CHECK(err && err->code == CS_ERR_FORMAT && mentions(err, "corrupt"),
	      "lz4, a wrong content checksum: %s",
	      err ? err->message : "no error");
	cs_error_destroy(err);
	free(out);
	free(s);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	make_payload();
	write_all(path_of("payload"), payload, PAYLOAD_SIZE);
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		test_variant(&variants[i]);
	test_lz4_content_checksum();
	free(payload);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 2;
	return check_summary("test_decompress");
}
