#!/usr/bin/env python3
"""Write the bundle harness's seeds (process/bundle.h's format) into the
directory given: tiny synthetic bundles, not real cores, so that the
corpus stays small. seed-full: a core, an executable, a library and a
debug file; seed-core: the core alone; seed-empty-file: a library of
0 bytes; seed-core-xz, seed-core-gzip: the core alone, its entry the core
compressed (as bundles written before a compressed core was bundled
inflated hold it), which the reader inflates."""

import gzip
import lzma
import os
import struct
import sys


def bundle(entries):
    """entries: (kind, build_id, path, data) -> the bundle's bytes."""
    blobs = [gzip.compress(data, compresslevel=1, mtime=0) for _, _, _, data in entries]
    index_size = 16 + sum(32 + len(b) + len(p) for _, b, p, _ in entries)
    out = bytearray(b"CSBUNDLE" + struct.pack("<II", 1, len(entries)))
    at = index_size
    for (kind, bid, path, data), blob in zip(entries, blobs):
        out += struct.pack("<BBHIQQQ", kind, len(bid), len(path), 0, len(data), at, len(blob))
        out += bid + path
        at += len(blob)
    for blob in blobs:
        out += blob
    return bytes(out)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    core = b"\x7fELF" + bytes(60) + b"core" * 8
    bid = bytes(range(1, 21))
    seeds = {
        "seed-full": [(1, b"", b"/var/crash/core.1", core),
                      (2, bytes(range(20)), b"/usr/bin/ruby", b"\x7fELF exe" * 4),
                      (3, bid, b"/usr/lib/libruby.so.3.4", b"\x7fELF lib" * 4),
                      (4, bid, b"/usr/lib/debug/.build-id/01/02.debug", b"\x7fELF dbg" * 4)],
        "seed-core": [(1, b"", b"core", core)],
        "seed-empty-file": [(1, b"", b"core", core), (3, b"", b"/lib/x.so", b"")],
        "seed-core-xz": [(1, b"", b"core.xz", lzma.compress(core, preset=0))],
        "seed-core-gzip": [(1, b"", b"core.gz", gzip.compress(core, mtime=0))],
    }
    for name, entries in seeds.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(bundle(entries))


if __name__ == "__main__":
    main(sys.argv[1])
