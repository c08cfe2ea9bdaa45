/* Compressed cores inflated into memory. See decompress.h.
 *
 * Each format runs one streaming loop: read a chunk of the file, inflate
 * it into a fixed buffer, append that to the memfd. A stream cut off
 * before its end keeps what it inflated: the core reader then reports a
 * truncated core, as it does for one cut off uncompressed. */
#include "decompress.h"
#include "../util/lazy_lib.h"

#include <bzlib.h>
#include <errno.h>
#include <inttypes.h>
#include <lz4.h>
#include <lz4frame.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define CS_DECOMPRESS_IN_CHUNK (256 * 1024)
#define CS_DECOMPRESS_OUT_CHUNK (1024 * 1024)
#define CS_DECOMPRESS_PAGE 4096

const char *cs_compression_of(const uint8_t *p, size_t size)
{
	static const struct {
		const char *name;
		unsigned char magic[6];
		size_t len;
	} kinds[] = {
		{"zstd", {0x28, 0xb5, 0x2f, 0xfd}, 4},
		{"xz", {0xfd, '7', 'z', 'X', 'Z', 0}, 6},
		{"lz4", {0x04, 0x22, 0x4d, 0x18}, 4},
		{"lz4", {0x02, 0x21, 0x4c, 0x18}, 4}, /* legacy (lz4 -l) */
		{"gzip", {0x1f, 0x8b}, 2},
		{"bzip2", {'B', 'Z', 'h'}, 3},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (size >= kinds[i].len &&
		    memcmp(p, kinds[i].magic, kinds[i].len) == 0)
			return kinds[i].name;
	}
	return NULL;
}

int cs_compression_supported(const char *kind)
{
	static const char *const known[] = {"zstd", "gzip", "xz", "lz4",
					    "bzip2"};
	for (size_t i = 0; kind && i < sizeof(known) / sizeof(known[0]); i++) {
		if (strcmp(kind, known[i]) == 0)
			return 1;
	}
	return 0;
}

/* Shared state of one inflation: where bytes come from and go to. */
struct cs_inflate {
	int in_fd, out_fd;
	const char *path, *kind;
	uint64_t written, max_bytes;
	uint64_t left; /* compressed bytes still to read */
	uint8_t *in, *out;
	int eof;
	/* the decoder was between streams when the input ended: not cut
	 * off (lz4's legacy format has no end to tell) */
	int ended;
};

/* After one call of a decoder: at a stream's end, or past it when the
 * call took input or gave output; a call that did neither (asked for
 * more with none to give) says nothing new. */
static void cs_inflate_at(struct cs_inflate *z, int at_end, int progress)
{
	if (at_end)
		z->ended = 1;
	else if (progress)
		z->ended = 0;
}

/* Next chunk of compressed input; *n == 0 at end of file. */
static struct cs_error *cs_inflate_read(struct cs_inflate *z, size_t *n)
{
	for (;;) {
		size_t want = CS_DECOMPRESS_IN_CHUNK;
		if (want > z->left)
			want = (size_t)z->left;
		ssize_t r = want ? read(z->in_fd, z->in, want) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return cs_error_create(CS_ERR_OS, "%s: cannot read: %s",
					       z->path, strerror(errno));
		*n = (size_t)r;
		z->left -= (uint64_t)r;
		z->eof = r == 0;
		return NULL;
	}
}

static int cs_all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Append out[0..n) to the memfd. Pages of zeros (most of a core: unused
 * stack and heap) are skipped as holes, so the in-memory file costs what
 * the core's data does, not its apparent size. */
static struct cs_error *cs_inflate_write(struct cs_inflate *z, size_t n)
{
	if (z->written + n > z->max_bytes)
		return cs_error_create(
			CS_ERR_LIMIT,
			"%s: the %s-compressed core inflates to more than "
			"%" PRIu64 " MiB, the bound for inflating in memory; "
			"decompress it to disk first (`%s -dc %s > core`)",
			z->path, z->kind, z->max_bytes >> 20, z->kind, z->path);
	const uint8_t *p = z->out;
	while (n > 0) {
		size_t piece = CS_DECOMPRESS_PAGE -
			       (size_t)(z->written % CS_DECOMPRESS_PAGE);
		if (piece > n)
			piece = n;
		ssize_t w;
		if (cs_all_zero(p, piece))
			w = (ssize_t)piece; /* a hole: nothing written */
		else
			w = pwrite(z->out_fd, p, piece, (off_t)z->written);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			/* to memory (a memfd) or, unpacking a bundle, a
			 * file: the error says which ran out */
			return cs_error_create(CS_ERR_OS,
					       "%s: cannot write the inflated "
					       "core: %s",
					       z->path, strerror(errno));
		p += w;
		n -= (size_t)w;
		z->written += (uint64_t)w;
	}
	return NULL;
}

static struct cs_error *cs_inflate_corrupt(struct cs_inflate *z,
					   const char *why)
{
	return cs_error_create(CS_ERR_FORMAT,
			       "%s: %s-compressed, but the stream is corrupt "
			       "after %" PRIu64 " inflated bytes (%s)",
			       z->path, z->kind, z->written, why);
}

/* libzstd is loaded for a zstd-compressed core only (util/lazy_lib.h). */
enum {
	ZS_CREATE,
	ZS_DECOMPRESS,
	ZS_IS_ERROR,
	ZS_ERROR_NAME,
	ZS_FREE,
	ZS_NSYMS
};
static const char *const zstd_names[] = {
	[ZS_CREATE] = "ZSTD_createDStream",
	[ZS_DECOMPRESS] = "ZSTD_decompressStream",
	[ZS_IS_ERROR] = "ZSTD_isError",
	[ZS_ERROR_NAME] = "ZSTD_getErrorName",
	[ZS_FREE] = "ZSTD_freeDStream",
	[ZS_NSYMS] = NULL,
};
static void *zstd_syms[ZS_NSYMS];
static struct cs_lazy_lib zstd_lib =
	CS_LAZY_LIB("libzstd.so.1", zstd_names, zstd_syms);

static struct cs_error *cs_inflate_zstd(struct cs_inflate *z)
{
	const char *why = cs_lazy_lib_load(&zstd_lib);
	if (why)
		return cs_error_create(CS_ERR_OS,
				       "%s: zstd-compressed, but %s; install "
				       "libzstd, or decompress it first "
				       "(zstd -d)",
				       z->path, why);
	/* typed as zstd.h declares them */
	__typeof__(ZSTD_createDStream) *create = zstd_syms[ZS_CREATE];
	__typeof__(ZSTD_decompressStream) *decompress =
		zstd_syms[ZS_DECOMPRESS];
	__typeof__(ZSTD_isError) *is_error = zstd_syms[ZS_IS_ERROR];
	__typeof__(ZSTD_getErrorName) *error_name = zstd_syms[ZS_ERROR_NAME];
	__typeof__(ZSTD_freeDStream) *free_ds = zstd_syms[ZS_FREE];
	ZSTD_DStream *ds = create();
	if (!ds)
		return &cs_error_nomem;
	struct cs_error *err = NULL;
	size_t n = 0;
	while (!err && !(err = cs_inflate_read(z, &n)) && n > 0) {
		ZSTD_inBuffer in = {z->in, n, 0};
		while (!err && in.pos < in.size) {
			ZSTD_outBuffer out = {z->out, CS_DECOMPRESS_OUT_CHUNK,
					      0};
			size_t before = in.pos;
			size_t r = decompress(ds, &out, &in);
			if (is_error(r))
				err = cs_inflate_corrupt(z, error_name(r));
			else
				err = cs_inflate_write(z, out.pos);
			if (!err)
				cs_inflate_at(z, r == 0,
					      in.pos > before || out.pos > 0);
		}
	}
	/* Output zstd still holds after the input ended. */
	for (int more = 1; !err && more;) {
		ZSTD_inBuffer in = {z->in, 0, 0};
		ZSTD_outBuffer out = {z->out, CS_DECOMPRESS_OUT_CHUNK, 0};
		size_t r = decompress(ds, &out, &in);
		if (is_error(r)) {
			z->ended = 0;
			break; /* cut off: keep what was inflated */
		}
		err = cs_inflate_write(z, out.pos);
		cs_inflate_at(z, r == 0, out.pos > 0);
		more = out.pos == out.size;
	}
	free_ds(ds);
	return err;
}

static struct cs_error *cs_inflate_gzip(struct cs_inflate *z)
{
	z_stream s;
	memset(&s, 0, sizeof(s));
	if (inflateInit2(&s, 15 + 32) != Z_OK) /* +32: gzip header */
		return &cs_error_nomem;
	struct cs_error *err = NULL;
	size_t n = 0;
	while (!err && !(err = cs_inflate_read(z, &n)) && n > 0) {
		s.next_in = z->in;
		s.avail_in = (uInt)n;
		while (!err && s.avail_in > 0) {
			s.next_out = z->out;
			s.avail_out = CS_DECOMPRESS_OUT_CHUNK;
			int r = inflate(&s, Z_NO_FLUSH);
			if (r != Z_OK && r != Z_STREAM_END &&
			    r != Z_BUF_ERROR) {
				err = cs_inflate_corrupt(
					z, s.msg ? s.msg : "zlib error");
				break;
			}
			err = cs_inflate_write(z, CS_DECOMPRESS_OUT_CHUNK -
							  s.avail_out);
			cs_inflate_at(z, r == Z_STREAM_END, r != Z_BUF_ERROR);
			/* gzip files may hold several members, one after
			 * the other (what `cat a.gz b.gz` makes). */
			if (!err && r == Z_STREAM_END && s.avail_in > 0)
				inflateReset(&s);
			else if (r == Z_STREAM_END)
				break;
		}
	}
	inflateEnd(&s);
	return err;
}

static struct cs_error *cs_inflate_xz(struct cs_inflate *z)
{
	lzma_stream s = LZMA_STREAM_INIT;
	if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
		return &cs_error_nomem;
	struct cs_error *err = NULL;
	size_t n = 0;
	lzma_ret r = LZMA_OK;
	while (!err && r == LZMA_OK) {
		if (s.avail_in == 0 && !z->eof) {
			if ((err = cs_inflate_read(z, &n)))
				break;
			s.next_in = z->in;
			s.avail_in = n;
		}
		s.next_out = z->out;
		s.avail_out = CS_DECOMPRESS_OUT_CHUNK;
		r = lzma_code(&s, z->eof ? LZMA_FINISH : LZMA_RUN);
		err = cs_inflate_write(z,
				       CS_DECOMPRESS_OUT_CHUNK - s.avail_out);
		z->ended = r == LZMA_STREAM_END;
		if (r == LZMA_BUF_ERROR && z->eof)
			break; /* cut off: keep what was inflated */
		if (!err && r != LZMA_OK && r != LZMA_STREAM_END)
			err = cs_inflate_corrupt(z, "xz decoder error");
	}
	lzma_end(&s);
	return err;
}

/* liblz4 is loaded for an lz4-compressed core only, as libzstd is. Its
 * frame API reads what the lz4 tool and systemd-coredump write: one frame
 * or several one after the other, each with or without its content size,
 * block checksums, a content checksum and blocks linked to the ones before
 * them; a checksum that does not match is an error, the stream corrupt.
 * Its block API reads the legacy format of `lz4 -l` (below). */
enum {
	L4_CREATE,
	L4_DECOMPRESS,
	L4_IS_ERROR,
	L4_ERROR_NAME,
	L4_FREE,
	L4_BLOCK,
	L4_NSYMS
};
static const char *const lz4_names[] = {
	[L4_CREATE] = "LZ4F_createDecompressionContext",
	[L4_DECOMPRESS] = "LZ4F_decompress",
	[L4_IS_ERROR] = "LZ4F_isError",
	[L4_ERROR_NAME] = "LZ4F_getErrorName",
	[L4_FREE] = "LZ4F_freeDecompressionContext",
	[L4_BLOCK] = "LZ4_decompress_safe",
	[L4_NSYMS] = NULL,
};
static void *lz4_syms[L4_NSYMS];
static struct cs_lazy_lib lz4_lib =
	CS_LAZY_LIB("liblz4.so.1", lz4_names, lz4_syms);

/* The lz4 tool's legacy format (lz4 -l): after its magic, blocks each
 * preceded by its compressed size (4 bytes, little-endian) and each
 * inflating on its own to at most 8 MiB; the magic again where a size is
 * due starts the next stream. It has no checksum: a damaged block that
 * still decodes cannot be told from a sound one. */
#define LZ4_LEGACY_MAGIC 0x184c2102u
#define LZ4_LEGACY_BLOCK (8u << 20)
/* LZ4_compressBound of a whole block: no block is larger compressed */
#define LZ4_LEGACY_MAX_IN (LZ4_LEGACY_BLOCK + LZ4_LEGACY_BLOCK / 255 + 16)

/* The input of z as bytes: the chunk read last and how much of it is
 * used. */
struct byte_reader {
	struct cs_inflate *z;
	size_t pos, n;
};

/* Up to len bytes of z's input into dst, in *got (fewer at its end). */
static struct cs_error *take_bytes(struct byte_reader *r, uint8_t *dst,
				   size_t len, size_t *got)
{
	struct cs_error *err;
	*got = 0;
	while (*got < len) {
		if (r->pos == r->n) {
			r->pos = 0;
			if ((err = cs_inflate_read(r->z, &r->n)))
				return err;
			if (!r->n)
				return NULL;
		}
		size_t k = r->n - r->pos;
		if (k > len - *got)
			k = len - *got;
		memcpy(dst + *got, r->z->in + r->pos, k);
		r->pos += k;
		*got += k;
	}
	return NULL;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* A legacy stream (or several) after its first magic; a block cut off
 * ends it, keeping the blocks before. */
static struct cs_error *cs_inflate_lz4_legacy(struct cs_inflate *z,
					      struct byte_reader *r)
{
	__typeof__(LZ4_decompress_safe) *block = lz4_syms[L4_BLOCK];
	uint8_t *in = malloc(LZ4_LEGACY_MAX_IN),
		*out = malloc(LZ4_LEGACY_BLOCK);
	uint8_t *chunk_out = z->out;
	struct cs_error *err = NULL;
	if (!in || !out)
		err = &cs_error_nomem;
	z->ended = 1; /* unless a block is cut off */
	for (;;) {
		uint8_t head[4];
		size_t got;
		if (err || (err = take_bytes(r, head, 4, &got)) || got < 4) {
			z->ended = !err && got == 0;
			break;
		}
		uint32_t size = le32(head);
		if (size == LZ4_LEGACY_MAGIC)
			continue; /* the next stream */
		if (size > LZ4_LEGACY_MAX_IN) {
			err = cs_inflate_corrupt(z, "a legacy block larger "
						    "than lz4 makes");
			break;
		}
		if ((err = take_bytes(r, in, size, &got)) || got < size) {
			z->ended = 0;
			break;
		}
		int n = block((const char *)in, (char *)out, (int)size,
			      (int)LZ4_LEGACY_BLOCK);
		if (n < 0) {
			err = cs_inflate_corrupt(z, "a legacy block that does "
						    "not decode");
			break;
		}
		z->out = out; /* written from the block's own buffer */
		err = cs_inflate_write(z, (size_t)n);
		z->out = chunk_out;
	}
	free(in);
	free(out);
	return err;
}

/* The frame decoder and what it is called through. */
struct lz4_frames {
	LZ4F_dctx *dctx;
	__typeof__(LZ4F_decompress) *decompress;
	__typeof__(LZ4F_isError) *is_error;
	__typeof__(LZ4F_getErrorName) *error_name;
};

/* in[0..n) through the frame decoder, what it inflates written. */
static struct cs_error *lz4_feed(struct cs_inflate *z, struct lz4_frames *f,
				 const uint8_t *in, size_t n)
{
	struct cs_error *err = NULL;
	size_t pos = 0;
	while (!err && pos < n) {
		size_t dst = CS_DECOMPRESS_OUT_CHUNK, src = n - pos;
		size_t r = f->decompress(f->dctx, z->out, &dst, in + pos, &src,
					 NULL);
		if (f->is_error(r))
			return cs_inflate_corrupt(z, f->error_name(r));
		if (src == 0 && dst == 0) /* never seen: the decoder takes all
					   * input it is given, but a loop
					   * must not spin */
			return cs_inflate_corrupt(z, "no progress");
		pos += src;
		err = cs_inflate_write(z, dst);
		cs_inflate_at(z, r == 0, 1);
	}
	return err;
}

static struct cs_error *cs_inflate_lz4(struct cs_inflate *z)
{
	const char *why = cs_lazy_lib_load(&lz4_lib);
	if (why)
		return cs_error_create(CS_ERR_OS,
				       "%s: lz4-compressed, but %s; install "
				       "liblz4, or decompress it first "
				       "(lz4 -d)",
				       z->path, why);
	struct byte_reader r = {.z = z};
	uint8_t magic[4];
	size_t got;
	struct cs_error *err = take_bytes(&r, magic, 4, &got);
	if (err || got < 4)
		return err;
	if (le32(magic) == LZ4_LEGACY_MAGIC)
		return cs_inflate_lz4_legacy(z, &r);
	/* typed as lz4frame.h declares them */
	__typeof__(LZ4F_createDecompressionContext) *create =
		lz4_syms[L4_CREATE];
	__typeof__(LZ4F_freeDecompressionContext) *free_dctx =
		lz4_syms[L4_FREE];
	struct lz4_frames f = {
		.decompress = lz4_syms[L4_DECOMPRESS],
		.is_error = lz4_syms[L4_IS_ERROR],
		.error_name = lz4_syms[L4_ERROR_NAME],
	};
	if (f.is_error(create(&f.dctx, LZ4F_VERSION)) || !f.dctx)
		return &cs_error_nomem;
	/* the magic, the rest of the chunk it was read from, the others */
	size_t n = 0;
	if (!(err = lz4_feed(z, &f, magic, sizeof(magic))))
		err = lz4_feed(z, &f, z->in + r.pos, r.n - r.pos);
	while (!err && !(err = cs_inflate_read(z, &n)) && n > 0)
		err = lz4_feed(z, &f, z->in, n);
	/* Output of a decoded block that did not fit yet; a frame cut off
	 * keeps what was inflated. */
	for (size_t dst = 1; !err && dst > 0;) {
		size_t src = 0;
		dst = CS_DECOMPRESS_OUT_CHUNK;
		size_t ret =
			f.decompress(f.dctx, z->out, &dst, z->in, &src, NULL);
		if (f.is_error(ret)) {
			z->ended = 0;
			break;
		}
		err = cs_inflate_write(z, dst);
		cs_inflate_at(z, ret == 0, dst > 0);
	}
	free_dctx(f.dctx);
	return err;
}

/* libbz2 likewise, for a bzip2-compressed core. Each block carries a CRC of
 * its data and the stream one of them all: a mismatch is BZ_DATA_ERROR. */
enum { B2_INIT, B2_DECOMPRESS, B2_END, B2_NSYMS };
static const char *const bz2_names[] = {
	[B2_INIT] = "BZ2_bzDecompressInit",
	[B2_DECOMPRESS] = "BZ2_bzDecompress",
	[B2_END] = "BZ2_bzDecompressEnd",
	[B2_NSYMS] = NULL,
};
static void *bz2_syms[B2_NSYMS];
static struct cs_lazy_lib bz2_lib =
	CS_LAZY_LIB("libbz2.so.1.0", bz2_names, bz2_syms);

static const char *cs_bz2_why(int r)
{
	switch (r) {
	case BZ_DATA_ERROR:
		return "bad data or a CRC that does not match";
	case BZ_DATA_ERROR_MAGIC:
		return "no bzip2 magic where a stream should start";
	default:
		return "bzip2 decoder error";
	}
}

static struct cs_error *cs_inflate_bzip2(struct cs_inflate *z)
{
	const char *why = cs_lazy_lib_load(&bz2_lib);
	if (why)
		return cs_error_create(CS_ERR_OS,
				       "%s: bzip2-compressed, but %s; install "
				       "libbz2, or decompress it first "
				       "(bzip2 -d)",
				       z->path, why);
	/* typed as bzlib.h declares them */
	__typeof__(BZ2_bzDecompressInit) *init = bz2_syms[B2_INIT];
	__typeof__(BZ2_bzDecompress) *decompress = bz2_syms[B2_DECOMPRESS];
	__typeof__(BZ2_bzDecompressEnd) *end = bz2_syms[B2_END];
	bz_stream s;
	memset(&s, 0, sizeof(s));
	if (init(&s, 0, 0) != BZ_OK)
		return &cs_error_nomem;
	struct cs_error *err = NULL;
	size_t n = 0;
	while (!err && !(err = cs_inflate_read(z, &n)) && n > 0) {
		s.next_in = (char *)z->in;
		s.avail_in = (unsigned)n;
		/* until the input is used and the block's output all out */
		do {
			s.next_out = (char *)z->out;
			s.avail_out = CS_DECOMPRESS_OUT_CHUNK;
			unsigned before = s.avail_in;
			int r = decompress(&s);
			if (r == BZ_MEM_ERROR) {
				err = &cs_error_nomem;
				break;
			}
			if (r != BZ_OK && r != BZ_STREAM_END) {
				err = cs_inflate_corrupt(z, cs_bz2_why(r));
				break;
			}
			err = cs_inflate_write(z, CS_DECOMPRESS_OUT_CHUNK -
							  s.avail_out);
			cs_inflate_at(z, r == BZ_STREAM_END,
				      s.avail_in < before ||
					      s.avail_out <
						      CS_DECOMPRESS_OUT_CHUNK);
			if (!err && r == BZ_STREAM_END) {
				/* another stream may follow (what `cat a.bz2
				 * b.bz2` and pbzip2 make) */
				char *next = s.next_in;
				unsigned left = s.avail_in;
				end(&s);
				memset(&s, 0, sizeof(s));
				if (init(&s, 0, 0) != BZ_OK) {
					err = &cs_error_nomem;
					break;
				}
				s.next_in = next;
				s.avail_in = left;
			}
		} while (!err && (s.avail_in > 0 || s.avail_out == 0));
	}
	/* a stream cut off keeps what was inflated */
	end(&s);
	return err;
}

static uint64_t cs_default_bound(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || size <= 0)
		return UINT64_C(4) << 30;
	return (uint64_t)pages * (uint64_t)size / 2;
}

/* Inflate z's input into z->out_fd by kind; the file's size is then what
 * was inflated (trailing holes included). */
static struct cs_error *cs_inflate_run(struct cs_inflate *z)
{
	z->in = malloc(CS_DECOMPRESS_IN_CHUNK);
	z->out = malloc(CS_DECOMPRESS_OUT_CHUNK);
	struct cs_error *err = NULL;
	if (!z->in || !z->out)
		err = &cs_error_nomem;
	else if (strcmp(z->kind, "zstd") == 0)
		err = cs_inflate_zstd(z);
	else if (strcmp(z->kind, "gzip") == 0)
		err = cs_inflate_gzip(z);
	else if (strcmp(z->kind, "xz") == 0)
		err = cs_inflate_xz(z);
	else if (strcmp(z->kind, "lz4") == 0)
		err = cs_inflate_lz4(z);
	else if (strcmp(z->kind, "bzip2") == 0)
		err = cs_inflate_bzip2(z);
	else
		err = cs_error_create(CS_ERR_FORMAT,
				      "%s: %s-compressed cores are not read "
				      "directly; decompress it first",
				      z->path, z->kind);
	free(z->in);
	free(z->out);
	if (!err && ftruncate(z->out_fd, (off_t)z->written) != 0)
		err = cs_error_create(CS_ERR_OS, "%s: cannot write: %s",
				      z->path, strerror(errno));
	return err;
}

struct cs_error *cs_decompress_core(int fd, const char *path, const char *kind,
				    uint64_t max_bytes, int *ret_fd)
{
	*ret_fd = -1;
	struct cs_inflate z = {
		.in_fd = fd,
		.path = path,
		.kind = kind,
		.max_bytes = max_bytes ? max_bytes : cs_default_bound(),
		.left = UINT64_MAX,
	};
	if (lseek(fd, 0, SEEK_SET) != 0)
		return cs_error_create(CS_ERR_OS, "%s: cannot seek: %s", path,
				       strerror(errno));
	z.out_fd = memfd_create("corestack-core", MFD_CLOEXEC);
	if (z.out_fd < 0)
		return cs_error_create(CS_ERR_OS,
				       "%s: cannot create an in-memory file "
				       "for the inflated core: %s",
				       path, strerror(errno));
	struct cs_error *err = cs_inflate_run(&z);
	if (!err && z.written == 0)
		err = cs_error_create(CS_ERR_FORMAT,
				      "%s: %s-compressed, but the stream "
				      "holds no data (cut off, or not a "
				      "compressed core?)",
				      path, kind);
	if (err) {
		close(z.out_fd);
		return err;
	}
	*ret_fd = z.out_fd;
	return NULL;
}

struct cs_error *cs_decompress_range(int fd, const char *path, const char *kind,
				     uint64_t off, uint64_t len, int out_fd,
				     uint64_t max_bytes, uint64_t *written,
				     int *whole)
{
	struct cs_inflate z = {
		.in_fd = fd,
		.out_fd = out_fd,
		.path = path,
		.kind = kind,
		.max_bytes = max_bytes,
		.left = len,
	};
	*written = 0;
	if (off > (uint64_t)INT64_MAX ||
	    lseek(fd, (off_t)off, SEEK_SET) != (off_t)off)
		return cs_error_create(CS_ERR_OS, "%s: cannot seek: %s", path,
				       strerror(errno));
	struct cs_error *err = cs_inflate_run(&z);
	*written = z.written;
	if (whole)
		*whole = z.ended;
	return err;
}
