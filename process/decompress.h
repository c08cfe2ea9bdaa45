/* Compressed cores (systemd-coredump's .zst and .lz4; .gz, .xz, .bz2) read
 * directly: the kind is told by the magic bytes, never by the file name,
 * and the core is inflated into an anonymous in-memory file, so that the
 * core reader maps it like any other core and nothing is written to disk. */
#ifndef CS_CORESTACK_DECOMPRESS_H
#define CS_CORESTACK_DECOMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "../util/error.h"

/* "zstd", "gzip", "xz", "lz4", "bzip2" when head starts with that format's
 * magic, else NULL. */
const char *cs_compression_of(const uint8_t *head, size_t size);

/* Whether cs_decompress_core can inflate that kind. */
int cs_compression_supported(const char *kind);

/* Inflate the whole compressed file fd (named path in messages) into a
 * new memfd positioned at 0, returned in *ret_fd. The inflated size is
 * bounded by max_bytes (0: half the machine's physical memory); past it,
 * CS_ERR_LIMIT says how to decompress to disk instead. A corrupt or cut
 * off stream is CS_ERR_FORMAT. */
struct cs_error *cs_decompress_core(int fd, const char *path, const char *kind,
				    uint64_t max_bytes, int *ret_fd);

/* Inflate the len compressed bytes of fd at off (a stream of kind)
 * into out_fd, written from its offset 0 with runs of zeros left as
 * holes, its size then the inflated size, *written. More than max_bytes
 * is CS_ERR_LIMIT, a corrupt stream CS_ERR_FORMAT; one cut off ends
 * early: *whole (when not NULL) is then 0, 1 when the input ended where
 * a stream does (lz4's legacy format, which has no end, only when a
 * block is cut off), and the caller may also compare *written with what
 * it expects. */
struct cs_error *cs_decompress_range(int fd, const char *path, const char *kind,
				     uint64_t off, uint64_t len, int out_fd,
				     uint64_t max_bytes, uint64_t *written,
				     int *whole);

#endif
