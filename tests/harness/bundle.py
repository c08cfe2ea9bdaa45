"""Bundles: corestack bundle writes a core and the files it needs into one
file, and corestack reads that file where none of those files exist.

    RUBY/bundle              the fixture Ruby's prefix copied, the crash scenario
                             run from the copy (its libruby the one mapped) and its
                             kernel core bundled (exit 0); the copy deleted, then
                             corestack --json BUNDLE gives the oracle's stacks, exit 0,
                             process.bundle naming the bundle and the core by its path;
                             nothing is left in TMPDIR; on the first Ruby, the text
                             report says "Bundle BUNDLE" in one line
    bundle/other-files-here  another program at the executable's path and another
                             library at libruby's: the bundle's files are read, the
                             oracle's stacks, exit 0
    bundle/missing-file      the core bundled with its Ruby gone: exit 1, one warning
                             per missing file naming it, the bundle still written
    bundle/output-exists     -o naming a file that exists: exit 2 naming it and
                             --force, the file untouched; with --force it is written
                             (exit 1: by then the Ruby is gone)
    bundle/compressed-core   the core compressed with zstd and with lz4 (as
                             systemd-coredump writes them), each bundled (exit 0); the
                             Ruby's copy deleted, each bundle gives the oracle's stacks
                             and the threads of the plain core's bundle, exit 0,
                             process.core the compressed file's path; the bundle's core
                             entry is the inflated core, of the plain core's size
    bundle/old-compressed-core
                             a bundle as written before a compressed core was bundled
                             inflated: the plain core's bundle with its core entry
                             the core compressed with zstd (the entry's size the
                             zstd file's); corestack --json on it gives the oracle's
                             stacks and the plain core's bundle's threads, exit 0,
                             nothing left in TMPDIR; --extract lays out DIR/core as
                             the plain core, byte for byte, and the printed gdb
                             command line reads it to the oracle's stacks
    bundle/old-compressed-damaged
                             that bundle with its zstd core cut in half, and with
                             bytes flipped in its middle: corestack --json and
                             --extract each exit 2, one line naming the bundle, that
                             the core is cut off or corrupt and to bundle it again;
                             nothing left in TMPDIR, the directory not left
    bundle/old-compressed-too-large
                             that bundle read, and extracted, with TMPDIR (and
                             the directory it is extracted into) on a tmpfs
                             of a private mount namespace with room for every
                             entry as stored and 16 MiB more, less than the
                             inflated core: each exits 2, one line naming the
                             bundle, that the core inflates to more than is
                             free there and where to find room; nothing left
                             on the tmpfs
    bundle/with-executable   a bundle and an EXECUTABLE: exit 64, one line naming the
                             bundle, nothing left in TMPDIR
    bundle/write-error       corestack bundle whose writes fail past 1 MiB (a file size
                             limit, SIGXFSZ ignored: EFBIG, as a full disk's ENOSPC):
                             exit 2, one line naming the file and the error, the
                             partial file removed
    bundle/core-unreadable   corestack bundle of a core that does not exist, and of a
                             file that is no core: exit 2, one line naming it, no
                             bundle written
    bundle/signal            corestack on the bundle ended by SIGTERM at 0.05, 0.1,
                             0.2, 0.3, 0.45 and 0.6 s (unpacking or reading): it dies
                             of the signal or has finished, and nothing is left in
                             TMPDIR (a signal is delivered as a system call returns:
                             one that created a file before it was recorded left it)
    RUBY/bundle/extract-gdb  with the Ruby's copy deleted, corestack bundle --extract
                             lays the bundle out in a new directory (exit 0, one line on
                             stderr) and prints the commands that open it; the gdb
                             command line as printed (the module loaded from --gdbext
                             by CORESTACK_GDBEXT_DIR), run in batch mode, reads every
                             library from the directory with its symbols, and its
                             ruby-bt --json all gives the oracle's stacks
    RUBY/bundle/extract-lldb the lldb command line as printed, the same: every module
                             lldb loads is in the directory, ruby-bt --json all the
                             oracle's stacks
    RUBY/bundle/extract-corestack
                             the corestack command line as printed, with --json: the
                             oracle's stacks, exit 0
    bundle/extract-dotdot, bundle/extract-relative
                             a bundle whose library path has a ".." component, or is
                             relative: exit 2, one line naming the bundle and what is
                             wrong; the directory, which did not exist, is not left,
                             and nothing is made where the path leads
    bundle/extract-not-empty --extract into a directory that holds a file: exit 2, one
                             line naming the directory, the file untouched and nothing
                             made beside it
    bundle/extract-truncated --extract of a bundle cut short: exit 2, one line naming
                             it, the directory not left
    bundle/bad-magic, bundle/bad-version, bundle/truncated-index,
    bundle/truncated-data, bundle/oversize, bundle/too-many-entries,
    bundle/corrupt-data, bundle/duplicate, bundle/wrong-size
                             the bundle damaged that way: exit 2, one line naming the
                             bundle and what is wrong, no crash, nothing left in
                             TMPDIR

The damaged bundles are made from the first Ruby's bundle by rewriting its
header and index as process/bundle.h lays them out. Bundles and cores are
deleted once read.
"""

import filecmp
import gzip
import os
import re
import shlex
import shutil
import signal
import struct
import subprocess
import time

from . import compare, procs
from .checks import check_oracle, check_unusable, first_line
from .gdbext_gdb import GDB_TIMEOUT, gdb_env
from .gdbext_lldb import lldb_env
from .native import extra_env
from .scenarios import capture_all

SCENARIO = "crash"
SHARED = ("bundle/other-files-here", "bundle/missing-file", "bundle/output-exists",
          "bundle/compressed-core", "bundle/old-compressed-core",
          "bundle/old-compressed-damaged", "bundle/old-compressed-too-large",
          "bundle/with-executable", "bundle/signal",
          "bundle/write-error", "bundle/core-unreadable")
# bundle/compressed-core: (suffix, compressing command)
COMPRESSED = (("zst", ["zstd", "-q", "-1", "-c"]), ("lz4", ["lz4", "-q", "-c"]))
DAMAGE = ("bad-magic", "bad-version", "truncated-index", "truncated-data", "oversize",
          "too-many-entries", "corrupt-data", "duplicate", "wrong-size")
BAD_TESTS = tuple("bundle/" + d for d in DAMAGE)
# corestack bundle --extract: per Ruby, the printed command lines run
EXTRACT = ("extract-gdb", "extract-lldb", "extract-corestack")
# ... and refused on the first Ruby's bundle
EXTRACT_BAD = ("bundle/extract-dotdot", "bundle/extract-relative",
               "bundle/extract-not-empty", "bundle/extract-truncated")
SHARED += EXTRACT_BAD


def ruby_names(ruby):
    return ["%s/bundle" % ruby] + ["%s/bundle/%s" % (ruby, t) for t in EXTRACT]


def names(ctx):
    return [n for r in ctx.rubies for n in ruby_names(r)] + list(SHARED) + list(BAD_TESTS)


def rubies(ctx):
    mine = {r for r in ctx.rubies if ctx.any_selected(ruby_names(r))}
    if ctx.any_selected(SHARED + BAD_TESTS):
        return set(ctx.rubies[:1]) | mine
    return mine


def index_records(data):
    """(offset of each index record, its kind, path) of a bundle."""
    n = struct.unpack_from("<I", data, 12)[0]
    at, out = 16, []
    for _ in range(n):
        kind, idlen, plen = struct.unpack_from("<BBH", data, at)
        path = bytes(data[at + 32 + idlen:at + 32 + idlen + plen]).decode(errors="replace")
        out.append((at, kind, path))
        at += 32 + idlen + plen
    return out


def rows_of(d):
    """The entries of the bundle d: [offset of its record, kind, build-id,
    path, size, its data (one gzip stream)] each, in the order of the data."""
    rows, pos = [], 16
    for _ in range(struct.unpack_from("<I", d, 12)[0]):
        kind, idlen, plen, _, size, off, clen = struct.unpack_from("<BBHIQQQ", d, pos)
        rows.append([pos, kind, bytes(d[pos + 32:pos + 32 + idlen]),
                     bytes(d[pos + 32 + idlen:pos + 32 + idlen + plen]), size,
                     bytes(d[off:off + clen])])
        pos += 32 + idlen + plen
    return rows


def bundle_of(d, rows):
    """The bundle of header d[:16] holding rows (as rows_of gives them): the
    index, then each entry's data in turn, every offset where it lies."""
    at = 16 + sum(32 + len(r[2]) + len(r[3]) for r in rows)
    out = bytearray(d[:16])
    for _, kind, bid, path, size, data in rows:
        out += struct.pack("<BBHIQQQ", kind, len(bid), len(path), 0, size, at,
                           len(data)) + bid + path
        at += len(data)
    for r in rows:
        out += r[5]
    return out


def with_path(d, recs, at, path):
    """The bundle d with the path of the record at at replaced: the index
    rewritten, the data moved after it and every offset with it."""
    rows = rows_of(d)
    for r in rows:
        if r[0] == at:
            r[3] = path
    return bundle_of(d, rows)


def with_core_file(d, data):
    """The bundle d with its core entry's file data instead: what bundles
    written before a compressed core was bundled inflated hold for one."""
    rows = rows_of(d)
    for r in rows:
        if r[1] == 1:
            r[4], r[5] = len(data), gzip.compress(data, compresslevel=1, mtime=0)
    return bundle_of(d, rows)


def damaged(data, how):
    """The bundle's bytes damaged as DAMAGE names -> (bytes, what the one
    stderr line must say)."""
    d = bytearray(data)
    recs = index_records(d)
    lib = next(r for r in recs if r[1] == 3)
    if how == "bad-magic":
        # still close to a bundle, but not one: read as a core, refused
        d[0:8] = b"CSBUNDLX"
        return d, r"not an ELF file"
    if how == "bad-version":
        struct.pack_into("<I", d, 8, 99)
        return d, r"version 99, this corestack reads version 1"
    if how == "truncated-index":
        return d[:recs[-1][0] + 8], r"cut off: its index runs past the end"
    if how == "truncated-data":
        return d[:len(d) - 1000], r"cut off: entry \d+ .* past the end of the file"
    if how == "oversize":
        struct.pack_into("<Q", d, recs[0][0] + 8, 1 << 60)
        return d, r"MiB unpacked, more than the bound"
    if how == "too-many-entries":
        struct.pack_into("<I", d, 12, 1 << 20)
        return d, r"1048576 entries, not 1 to 4096"
    if how == "corrupt-data":
        off = struct.unpack_from("<Q", d, lib[0] + 16)[0]
        for i in range(off + 20, off + 200):
            d[i] ^= 0x5a
        return d, r"entry \d+ \(lib .*\) is corrupt"
    if how == "duplicate":
        # a second library of the first library's path
        other = next(r for r in recs if r[1] == 3 and r[0] != lib[0])
        return with_path(d, recs, other[0], lib[2].encode()), \
            r"entries \d+ and \d+ are the same lib"
    if how == "wrong-size":
        size = struct.unpack_from("<Q", d, lib[0] + 8)[0]
        struct.pack_into("<Q", d, lib[0] + 8, size + 4096)
        return d, r"is corrupt: its data does not inflate to its %d bytes" % (size + 4096)
    raise ValueError(how)


def core_size(path):
    """The size a bundle's index gives its core entry."""
    with open(path, "rb") as f:
        data = f.read(1 << 20)
    at = next(r[0] for r in index_records(data) if r[1] == 1)
    return struct.unpack_from("<Q", data, at + 8)[0]


def make_compressed(cs, timeout, core, base):
    """core compressed each way of COMPRESSED and bundled -> [(compressed
    core, bundle, why corestack bundle failed or None)]."""
    out = []
    for suffix, argv in COMPRESSED:
        packed = os.path.join(base, "core." + suffix)
        with open(core, "rb") as fin, open(packed, "wb") as fout:
            res = subprocess.run(argv, stdin=fin, stdout=fout, stderr=subprocess.PIPE,
                                 timeout=600)
        if res.returncode != 0:
            raise procs.Failure("%s failed: %s" % (argv[0], res.stderr[:200]))
        bundle = os.path.join(base, "core-%s.bundle" % suffix)
        made = procs.run_tool([cs, "bundle", "-o", bundle, packed], timeout)
        why = None
        if made[0] != 0:
            why = "corestack bundle of the %s core: exit %s: %s" % (
                suffix, made[0], made[3] or first_line(made[2]))
        out.append((packed, bundle, why))
    return out


def check_compressed(cs, timeout, env, tmp, cap, bundle, compressed):
    """The bundles of the compressed cores read as the plain core's bundle."""
    plain, reason = compare.parse_report(procs.run_tool(env + [cs, "--json", bundle],
                                                        timeout)[1])
    if reason:
        return "the plain core's bundle: " + reason
    for packed, path, why in compressed:
        if why:
            return why
        size = core_size(path)
        if size != os.path.getsize(cap.core):
            return "%s: its core entry is %d bytes, the plain core %d" % (
                path, size, os.path.getsize(cap.core))
        res = procs.run_tool(env + [cs, "--json", path], timeout)
        reason = check_bundled(res, cap, path, packed) or leftovers(tmp)
        if reason:
            return "%s: %s" % (path, reason)
        report, _ = compare.parse_report(res[1])
        if report.get("threads") != plain.get("threads"):
            return "%s: its threads differ from the plain core's bundle's" % path
    return None


def leftovers(tmp):
    """None, or what corestack left in its TMPDIR."""
    left = os.listdir(tmp)
    return "left in TMPDIR: %s" % ", ".join(left) if left else None


def take_core(ruby, prefix, base, args):
    """The scenario run from a copy of the prefix -> (Capture, the copy)."""
    copy = os.path.join(base, "prefix")
    shutil.copytree(prefix, copy, symlinks=True)
    with extra_env({"LD_LIBRARY_PATH": os.path.join(copy, "lib")}):
        results = capture_all(ruby, os.path.join(copy, "bin", "ruby"), [SCENARIO],
                              os.path.join(base, "run"), True, None, args.timeout)
    cap = results[SCENARIO]
    if isinstance(cap, procs.Failure):
        raise cap
    return cap, copy


def check_bundled(res, cap, bundle, core=None):
    """res read the bundle of cap's core (its path core when it was given
    another): the oracle's stacks, the bundle and the core named."""
    core = core or cap.core
    reason = check_oracle(res, cap)
    if reason:
        return reason
    report, _ = compare.parse_report(res[1])
    proc = report.get("process", {})
    b = proc.get("bundle")
    if not isinstance(b, dict) or b.get("file") != bundle:
        return "process.bundle is %s, expected the bundle %s" % (compare.show(b), bundle)
    if proc.get("core") != core:
        return "process.core is %s, expected the core's path %s" % (
            compare.show(proc.get("core")), core)
    return None


def run_tests(ctx):
    rep, args, workdir = ctx.rep, ctx.args, ctx.workdir
    cs, timeout = args.corestack, args.timeout
    first = True
    for ruby in ctx.rubies:
        shared = first and ctx.any_selected(SHARED + BAD_TESTS)
        if not ctx.any_selected(ruby_names(ruby)) and not shared:
            continue
        prefix = ctx.prefixes.get(ruby)
        wanted = ruby_names(ruby) + (list(SHARED + BAD_TESTS) if shared else [])
        wanted = [n for n in wanted if ctx.selected(n)]
        if not isinstance(prefix, str):
            for n in wanted:
                rep.skip(n, "needs the %s fixture Ruby" % ruby)
            continue
        first = False
        base = os.path.join(workdir, "bundle", ruby)
        try:
            shutil.rmtree(base, ignore_errors=True)
            os.makedirs(base)
            run_ruby(ctx, ruby, prefix, base, wanted, shared, cs, timeout)
        except (procs.Failure, OSError, subprocess.SubprocessError, ValueError) as exc:
            for n in wanted:
                rep.result(n, "setup: %s" % exc)
        finally:
            shutil.rmtree(base, ignore_errors=True)


def run_ruby(ctx, ruby, prefix, base, wanted, shared, cs, timeout):
    rep = ctx.rep
    cap, copy = take_core(ruby, prefix, base, ctx.args)
    bundle = os.path.join(base, "core.bundle")
    tmp = os.path.join(base, "tmp")
    os.makedirs(tmp)
    made = procs.run_tool([cs, "bundle", "-o", bundle, cap.core], timeout)
    if made[0] != 0:
        raise procs.Failure("corestack bundle exit %s: %s" % (made[0], first_line(made[2])))
    exe = os.path.join(copy, "bin", "ruby")
    libruby = [os.path.join(copy, "lib", f) for f in os.listdir(os.path.join(copy, "lib"))
               if f.startswith("libruby.so.") and not os.path.islink(os.path.join(copy, "lib", f))]

    if "bundle/missing-file" in wanted:
        # moved away, not deleted: the test after it puts other files there
        shutil.move(copy, copy + ".away")
        partial = os.path.join(base, "partial.bundle")
        res = procs.run_tool([cs, "bundle", "-o", partial, cap.core], timeout)
        shutil.move(copy + ".away", copy)
        reason = None
        if res[0] != 1:
            reason = "exit %s, expected 1; stderr: %s" % (res[0], first_line(res[2]))
        elif not os.path.exists(partial):
            reason = "no bundle written"
        else:
            for path in [exe] + libruby:
                if not any("not bundled: " + path in line for line in res[2].splitlines()):
                    reason = "no warning naming %s: %s" % (path, compare.show(res[2][:400]))
                    break
        if partial and os.path.exists(partial):
            os.unlink(partial)
        rep.result("bundle/missing-file", reason)

    if "bundle/write-error" in wanted:
        out = os.path.join(base, "too-large.bundle")
        res = procs.run_tool(["sh", "-c", "trap '' XFSZ; ulimit -f 1024; exec \"$@\"", "sh",
                              cs, "bundle", "-o", out, cap.core], timeout)
        reason = check_unusable(res, [out], (2,), r"cannot write: File too large",
                                "'cannot write: File too large'")
        if not reason and os.path.exists(out):
            reason = "the partial bundle was left"
        rep.result("bundle/write-error", reason)

    compressed = []
    if "bundle/compressed-core" in wanted:
        compressed = make_compressed(cs, timeout, cap.core, base)

    shutil.rmtree(copy)   # the Ruby is gone: only the bundle has its files
    if cap.core.startswith(copy):
        raise procs.Failure("the core was written inside the prefix")
    env = ["env", "TMPDIR=" + tmp]
    if "%s/bundle" % ruby in wanted:
        res = procs.run_tool(env + [cs, "--json", bundle], timeout)
        reason = check_bundled(res, cap, bundle) or leftovers(tmp)
        if not reason and shared:
            text = procs.run_tool(env + [cs, bundle], timeout)
            lines = [ln for ln in text[1].splitlines() if ln.startswith("Bundle ")]
            if text[0] != 0 or len(lines) != 1 or bundle not in lines[0]:
                reason = "text report: exit %s, Bundle lines %s" % (text[0], compare.show(lines))
            reason = reason or leftovers(tmp)
        rep.result("%s/bundle" % ruby, reason)

    extract_tests(ctx, ruby, cap, bundle, base, wanted, cs, timeout)
    old_bundle_tests(ctx, cap, bundle, base, wanted, env, tmp)

    if "bundle/other-files-here" in wanted:
        # Files at the paths the core names, not the ones it mapped.
        os.makedirs(os.path.dirname(exe))
        os.makedirs(os.path.join(copy, "lib"))
        shutil.copy("/bin/true", exe)
        for lib in libruby:
            shutil.copy(next(p for p in ("/lib/x86_64-linux-gnu/libz.so.1",
                                         "/usr/lib/x86_64-linux-gnu/libz.so.1", "/bin/true")
                             if os.path.exists(p)), lib)
        res = procs.run_tool(env + [cs, "--json", bundle], timeout)
        shutil.rmtree(copy)
        rep.result("bundle/other-files-here", check_bundled(res, cap, bundle) or leftovers(tmp))

    if "bundle/output-exists" in wanted:
        there = os.path.join(base, "exists")
        with open(there, "w") as f:
            f.write("keep me\n")
        res = procs.run_tool([cs, "bundle", "-o", there, cap.core], timeout)
        with open(there) as f:
            kept = f.read() == "keep me\n"
        reason = check_unusable(res, [there], (2,), r"exists; pass --force", "'--force'")
        if not reason and not kept:
            reason = "the existing file was changed"
        if not reason:
            res = procs.run_tool([cs, "bundle", "--force", "-o", there, cap.core], timeout)
            with open(there, "rb") as f:
                head = f.read(8)
            # exit 1: the Ruby's own files are gone by now, said and left out
            if res[0] not in (0, 1) or head != b"CSBUNDLE":
                reason = "with --force: exit %s, file starts %r; %s" % (
                    res[0], head, first_line(res[2]))
        os.unlink(there)
        rep.result("bundle/output-exists", reason)

    if "bundle/compressed-core" in wanted:
        reason = check_compressed(cs, timeout, env, tmp, cap, bundle, compressed)
        for packed, path, _ in compressed:
            for f in (packed, path):
                if os.path.exists(f):
                    os.unlink(f)
        rep.result("bundle/compressed-core", reason)

    if "bundle/with-executable" in wanted:
        res = procs.run_tool(env + [cs, bundle, "/bin/true"], timeout)
        rep.result("bundle/with-executable", check_unusable(
            res, [bundle], (64,), r"holds its executable", "'holds its executable'")
            or leftovers(tmp))

    if "bundle/core-unreadable" in wanted:
        reason = None
        out = os.path.join(base, "never.bundle")
        not_core = os.path.join(base, "not-a-core")
        with open(not_core, "w") as f:
            f.write("not a core\n")
        for core, says in ((os.path.join(base, "no-such-core"), r"No such file"),
                           (not_core, r"not an ELF file")):
            res = procs.run_tool([cs, "bundle", "-o", out, core], timeout)
            reason = check_unusable(res, [core], (2,), says, compare.show(says))
            if not reason and os.path.exists(out):
                reason = "a bundle was written"
            if reason:
                break
        rep.result("bundle/core-unreadable", reason)

    if "bundle/signal" in wanted:
        reason = None
        for delay in (0.05, 0.1, 0.2, 0.3, 0.45, 0.6):
            proc = subprocess.Popen(env + [cs, bundle], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(delay)
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout)
            if rc not in (0, -signal.SIGTERM):
                reason = "killed at %.1f s: exit %s" % (delay, rc)
            reason = reason or leftovers(tmp)
            if reason:
                break
        rep.result("bundle/signal", reason)

    bad = [d for d in DAMAGE if "bundle/" + d in wanted]
    if bad:
        with open(bundle, "rb") as f:
            data = f.read()
        for how in bad:
            name = "bundle/" + how
            d, pattern = damaged(data, how)
            if d is None:
                rep.result(name, pattern)
                continue
            path = os.path.join(base, how + ".bundle")
            with open(path, "wb") as f:
                f.write(d)
            res = procs.run_tool(env + [cs, "--json", path], timeout)
            os.unlink(path)
            rep.result(name, check_unusable(res, [path], (2,), pattern, compare.show(pattern),
                                            json_file=path) or leftovers(tmp))
    os.unlink(bundle)


# --- bundles whose core entry is a compressed core -----------------------------

def old_bundles(cap, bundle, base):
    """The bundle rewritten as one written before a compressed core was
    bundled inflated: its core entry the core compressed with zstd; and that
    zstd core cut in half, and with bytes flipped in its middle -> {name:
    path}."""
    with open(cap.core, "rb") as f:
        res = subprocess.run(["zstd", "-q", "-1", "-c"], stdin=f, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=600)
    if res.returncode != 0:
        raise procs.Failure("zstd failed: %s" % res.stderr[:200])
    z = res.stdout
    flipped = bytearray(z)
    for i in range(len(z) // 2, len(z) // 2 + 16):
        flipped[i] ^= 0x5a
    with open(bundle, "rb") as f:
        data = f.read()
    out = {}
    for name, core in (("whole", z), ("cut", z[:len(z) // 2]), ("corrupt", bytes(flipped))):
        out[name] = os.path.join(base, "old-%s.bundle" % name)
        with open(out[name], "wb") as f:
            f.write(with_core_file(data, core))
    return out


def check_old_whole(ctx, cap, plain, path, base, env, tmp):
    """The old bundle at path reads as the plain core's bundle, and
    extracted, DIR/core is the plain core, which gdb reads."""
    cs, timeout = ctx.args.corestack, ctx.args.timeout
    res = procs.run_tool(env + [cs, "--json", path], timeout)
    reason = check_bundled(res, cap, path) or leftovers(tmp)
    if reason:
        return reason
    report, _ = compare.parse_report(res[1])
    if report.get("threads") != plain.get("threads"):
        return "its threads differ from the plain core's bundle's"
    target = os.path.join(base, "old-extracted")
    try:
        res = procs.run_tool(["env", "CORESTACK_GDBEXT_DIR=" + ctx.args.gdbext, cs, "bundle",
                              "--extract", "-o", target, path], timeout)
        if res[0] != 0:
            return "corestack bundle --extract: exit %s: %s" % (res[0], first_line(res[2]))
        root = os.path.realpath(target)
        core = os.path.join(root, "core")
        if not os.path.isfile(core):
            return "no core at %s" % core
        if not filecmp.cmp(core, cap.core, shallow=False):
            with open(core, "rb") as f:
                head = f.read(4)
            return "%s is not the plain core (it starts %r)" % (core, head)
        return run_printed_gdb(printed_commands(res[1]).get("gdb"), root,
                               ctx.args.gdbext, base, cap)
    finally:
        shutil.rmtree(target, ignore_errors=True)


def check_old_damaged(ctx, paths, base, env, tmp):
    """The old bundles whose zstd core is cut off or corrupt: refused, read
    and extracted, with one line saying so and what to do."""
    cs, timeout = ctx.args.corestack, ctx.args.timeout
    says = {"cut": r"compressed \(zstd\), is cut off after \d+ inflated bytes",
            "corrupt": r"zstd-compressed, but the stream is corrupt"}
    target = os.path.join(base, "old-extract-here")
    for name, pattern in says.items():
        pattern += r".*bundle the core again"
        path = paths[name]
        res = procs.run_tool(env + [cs, "--json", path], timeout)
        reason = check_unusable(res, [path], (2,), pattern, compare.show(pattern),
                                json_file=path) or leftovers(tmp)
        if not reason:
            reason = extract_refused(cs, timeout, path, target, pattern, [path])
        if not reason and os.path.exists(target):
            reason = "the directory was left: %s" % compare.show(os.listdir(target))
        shutil.rmtree(target, ignore_errors=True)
        if reason:
            return "%s: %s" % (name, reason)
    return None


# Room on the small TMPDIR beyond the entries as stored: less than any
# fixture's inflated core.
SMALL_TMP_MARGIN = 16 << 20

# Mounts a tmpfs of $1 KiB on $2, runs the rest of the arguments there
# and writes what is left on it into $3 (a private mount namespace: the
# tmpfs is gone with the command).
SMALL_TMP_SCRIPT = ('mount -t tmpfs -o size="$1"k tmpfs "$2" || exit 99; mnt=$2 left=$3; '
                    'shift 3; "$@"; rc=$?; ls -A "$mnt" > "$left"; exit $rc')


def check_old_too_large(ctx, cap, path, base):
    """The old bundle at path, read and extracted where there is room for
    its entries as stored but not for its core inflated: refused, in one
    line that says so and where to find room, nothing left there."""
    cs, timeout = ctx.args.corestack, ctx.args.timeout
    with open(path, "rb") as f:
        stored = sum(r[4] for r in rows_of(f.read()))
    if os.path.getsize(cap.core) <= 2 * SMALL_TMP_MARGIN:
        return "the core (%d bytes) is too small to outgrow the margin" % (
            os.path.getsize(cap.core))
    mnt, left = os.path.join(base, "small-tmp"), os.path.join(base, "small-tmp.left")
    os.makedirs(mnt, exist_ok=True)
    kib = (stored + SMALL_TMP_MARGIN) >> 10
    says = {"read": (r"inflates to more than \d+ MiB, more than is free in TMPDIR; "
                     r"set TMPDIR to a directory with room", [cs, "--json", path]),
            "extract": (r"inflates to more than \d+ MiB, more than is free where it is "
                        r"extracted; extract it where there is room",
                        [cs, "bundle", "--extract", "-o", os.path.join(mnt, "x"), path])}
    for name, (pattern, argv) in says.items():
        res = procs.run_tool(["unshare", "-m", "sh", "-c", SMALL_TMP_SCRIPT, "sh", str(kib),
                              mnt, left, "env", "TMPDIR=" + mnt] + argv, timeout)
        if res[0] == 99:
            return "%s: cannot mount a small tmpfs (unshare -m, as root): %s" % (
                name, first_line(res[2]))
        reason = check_unusable(res, [path], (2,), pattern, compare.show(pattern),
                                json_file=path if name == "read" else None)
        with open(left) as f:
            there = f.read().split()
        if not reason and there:
            reason = "left on the small TMPDIR: %s" % ", ".join(there)
        if reason:
            return "%s: %s" % (name, reason)
    return None


def old_bundle_tests(ctx, cap, bundle, base, wanted, env, tmp):
    rep = ctx.rep
    mine = [n for n in ("bundle/old-compressed-core", "bundle/old-compressed-damaged",
                        "bundle/old-compressed-too-large") if n in wanted]
    if not mine:
        return
    paths = old_bundles(cap, bundle, base)
    try:
        if "bundle/old-compressed-core" in mine:
            plain, reason = compare.parse_report(
                procs.run_tool(env + [ctx.args.corestack, "--json", bundle],
                               ctx.args.timeout)[1])
            if reason:
                reason = "the plain core's bundle: " + reason
            else:
                reason = check_old_whole(ctx, cap, plain, paths["whole"], base, env, tmp)
            rep.result("bundle/old-compressed-core", reason)
        if "bundle/old-compressed-damaged" in mine:
            rep.result("bundle/old-compressed-damaged",
                       check_old_damaged(ctx, paths, base, env, tmp))
        if "bundle/old-compressed-too-large" in mine:
            rep.result("bundle/old-compressed-too-large",
                       check_old_too_large(ctx, cap, paths["whole"], base))
    finally:
        for p in paths.values():
            os.unlink(p)


# --- corestack bundle --extract ---------------------------------------------------

def printed_commands(out):
    """The command lines corestack bundle --extract printed: {"gdb": argv,
    "lldb": argv, "corestack": argv}, each the line after its comment."""
    cmds, lines = {}, out.splitlines()
    for i, line in enumerate(lines):
        for name in ("gdb", "lldb", "corestack"):
            if line.startswith("# %s" % name) and i + 1 < len(lines):
                cmds[name] = shlex.split(lines[i + 1])
    return cmds


def loaded_outside(paths, root):
    """The first of paths that does not lie under root, or None."""
    for p in paths:
        if not p.startswith(root + "/"):
            return p
    return None


def check_stacks_json(path, cap, said):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as exc:
        return "ruby-bt wrote no JSON (%s): %s" % (exc, compare.show(said[-300:]))
    report, reason = compare.parse_report(text)
    if reason:
        return reason
    return (compare.check_shape(report)
            or compare.check_process(report, cap.oracle, cap.signal_number)
            or compare.compare_threads(report, cap.oracle))


def run_printed_gdb(argv, root, gdbext, workdir, cap):
    if not argv or argv[0] != "gdb":
        return "no gdb command line printed"
    loader = "source %s/ruby-gdb.py" % os.path.realpath(gdbext)
    if loader not in argv:
        return "the gdb command line does not load the module (%r): %s" % (
            loader, compare.show(argv))
    if not shutil.which("gdb"):
        return "gdb is not installed"
    out = os.path.join(workdir, "gdb-stacks.json")
    full = ["gdb", "-nx", "-q", "-batch", "-ex", "info sharedlibrary",
            "-ex", "ruby-bt --json --out %s all" % out] + argv[1:]
    try:
        res = subprocess.run(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=GDB_TIMEOUT,
                             env=gdb_env(gdbext))
    except subprocess.TimeoutExpired:
        return "gdb timed out"
    if procs.sanitizer_report(res.stderr):
        return "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    # info sharedlibrary: a row per library, "No" when gdb did not find
    # its file ("Yes (*)": found, without debug info)
    rows = re.findall(r"^(?:0x[0-9a-f]+\s+0x[0-9a-f]+)?\s+(Yes|No)(?: \(\*\))?\s+(/.*)$",
                      res.stdout, re.M)
    if not rows:
        return "gdb listed no shared library: %s" % compare.show(res.stdout[-300:])
    missing = [p for found, p in rows if found == "No"]
    if missing:
        return "gdb did not find %s" % missing[0]
    outside = loaded_outside([p for _, p in rows], root)
    if outside:
        return "gdb read %s, outside the extracted directory" % outside
    return check_stacks_json(out, cap, res.stdout + res.stderr)


def run_printed_lldb(argv, root, gdbext, workdir, cap):
    if not argv or argv[0] != "lldb":
        return "no lldb command line printed"
    loader = "command script import %s/ruby_lldb.py" % os.path.realpath(gdbext)
    if loader not in argv:
        return "the lldb command line does not load the module (%r): %s" % (
            loader, compare.show(argv))
    lldb = shutil.which("lldb-14") or shutil.which("lldb")
    if not lldb:
        return "lldb-14 is not installed (.ci/install-deps)"
    out = os.path.join(workdir, "lldb-stacks.json")
    full = [lldb, "-b", "-o", "image list -f", "-o", "ruby-bt --json --out %s all" % out] + argv[1:]
    try:
        res = subprocess.run(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=GDB_TIMEOUT,
                             env=lldb_env(gdbext))
    except subprocess.TimeoutExpired:
        return "lldb timed out"
    if procs.sanitizer_report(res.stderr):
        return "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    # image list -f: "[  3] /path" per module
    paths = re.findall(r"^\[\s*\d+\] (/\S+)", res.stdout, re.M)
    if len(paths) < 2:
        return "lldb listed %d modules: %s" % (len(paths), compare.show(res.stdout[-300:]))
    outside = loaded_outside(paths, root)
    if outside:
        return "lldb loaded %s, outside the extracted directory" % outside
    return check_stacks_json(out, cap, res.stdout + res.stderr)


def extract_refused(cs, timeout, bundle, target, pattern, names):
    """--extract of bundle into target: exit 2, one line naming one of
    names and matching pattern."""
    res = procs.run_tool([cs, "bundle", "--extract", "-o", target, bundle], timeout)
    return check_unusable(res, names, (2,), pattern, compare.show(pattern))


def extract_tests(ctx, ruby, cap, bundle, base, wanted, cs, timeout):
    rep, gdbext = ctx.rep, ctx.args.gdbext
    mine = ["%s/bundle/%s" % (ruby, t) for t in EXTRACT]
    if any(n in wanted for n in mine):
        target = os.path.join(base, "extracted")
        res = procs.run_tool(["env", "CORESTACK_GDBEXT_DIR=" + gdbext, cs, "bundle",
                              "--extract", "-o", target, bundle], timeout)
        root = os.path.realpath(target)
        reason = None
        if res[0] != 0:
            reason = "corestack bundle --extract: exit %s: %s" % (res[0], first_line(res[2]))
        elif len(res[2].strip().splitlines()) != 1 or "extracted" not in res[2]:
            reason = "stderr is not one line saying what was extracted: %s" % compare.show(res[2])
        elif not os.path.isfile(os.path.join(root, "core")):
            reason = "no core at %s/core" % root
        cmds = printed_commands(res[1]) if not reason else {}
        for t, name in zip(EXTRACT, mine):
            if name not in wanted:
                continue
            if reason:
                rep.result(name, reason)
            elif t == "extract-gdb":
                rep.result(name, run_printed_gdb(cmds.get("gdb"), root, gdbext, base, cap))
            elif t == "extract-lldb":
                rep.result(name, run_printed_lldb(cmds.get("lldb"), root, gdbext, base, cap))
            else:
                argv = cmds.get("corestack")
                if not argv:
                    rep.result(name, "no corestack command line printed")
                    continue
                run = procs.run_tool(argv[:1] + ["--json"] + argv[1:], timeout)
                rep.result(name, check_oracle(run, cap))
        shutil.rmtree(target, ignore_errors=True)

    damage = [n for n in EXTRACT_BAD if n in wanted]
    if not damage:
        return
    with open(bundle, "rb") as f:
        data = bytearray(f.read())
    recs = index_records(data)
    lib = next(r for r in recs if r[1] == 3)
    target = os.path.join(base, "extract-here")
    for name in damage:
        path = os.path.join(base, name.split("/")[-1] + ".bundle")
        escape = os.path.join(base, "escaped.so")
        pattern, names = None, [path]
        if name == "bundle/extract-dotdot":
            # from the directory one level up: base/escaped.so
            d = with_path(data, recs, lib[0], b"/../escaped.so")
            pattern = r'has a "\.\." component'
        elif name == "bundle/extract-relative":
            d = with_path(data, recs, lib[0], b"../escaped.so")
            pattern = r"is not absolute"
        elif name == "bundle/extract-truncated":
            d = data[:len(data) - 1000]
            pattern = r"cut off"
        else:
            d = data
            os.makedirs(target)
            with open(os.path.join(target, "keep"), "w") as f:
                f.write("keep me\n")
            pattern, names = r"exists and is not empty", [target]
        with open(path, "wb") as f:
            f.write(d)
        reason = extract_refused(cs, timeout, path, target, pattern, names)
        os.unlink(path)
        if not reason and os.path.exists(escape):
            reason = "%s was made, outside the directory" % escape
        if not reason and name == "bundle/extract-not-empty":
            with open(os.path.join(target, "keep")) as f:
                kept = f.read() == "keep me\n"
            if not kept or os.listdir(target) != ["keep"]:
                reason = "the directory changed: %s" % compare.show(os.listdir(target))
        elif not reason and os.path.exists(target):
            reason = "the directory was left: %s" % compare.show(os.listdir(target))
        shutil.rmtree(target, ignore_errors=True)
        rep.result(name, reason)
