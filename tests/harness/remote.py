"""Cores from another machine: --sysroot, --lib-search-path, compressed
cores, mismatched files.

    remote/...               a core whose files moved to another
                             tree: exit 2 naming --sysroot without it; --sysroot and
                             --lib-search-path give the oracle's stacks; a mismatched
                             library in the root is warned about (exit 1) and not used;
                             the core compressed with zstd, gzip, xz, lz4 (the frame
                             format, as systemd-coredump writes it) and bzip2 read
                             directly; a .zst, .lz4 or .bz2 core cut off at half is a
                             truncated core, and one with 64 bytes flipped at half (its
                             checksums then wrong) is exit 2, one line naming it as
                             corrupt; --native --sysroot merges every thread and shows
                             Ruby's crash handler
    remote/core-zst-no-libzstd, remote/core-gz-no-libzstd, remote/core-lz4-no-liblz4
                             with a libzstd.so.1 (liblz4.so.1) that cannot be loaded
                             first on LD_LIBRARY_PATH: the .zst (.lz4) core is exit 2,
                             one line naming the core, the library and why; the .gz core
                             is read as ever (libzstd is loaded for a zstd core only)

The "other machine" is simulated honestly: the 3.3 fixture Ruby is copied to
W/machine/prefix, the crash scenario runs from that copy (LD_LIBRARY_PATH
points at the copy's lib, so its libruby is the one mapped) and the kernel
writes its core; then W/machine moves to W/sysroot/W/machine and every
other file the core names is copied into W/sysroot too. The paths the core
names no longer exist on this machine.
"""

import os
import shutil
import struct
import subprocess

from . import compare, procs
from .bad_input import copy_prefix
from .checks import check_oracle, check_unusable
from .native import check_rb_bug, copy_into_root, extra_env, nt_file_paths
from .scenarios import capture_all

REMOTE_TESTS = ("remote/no-sysroot", "remote/sysroot", "remote/lib-search-path",
                "remote/mismatched-library", "remote/core-zst", "remote/core-gz",
                "remote/core-xz", "remote/core-lz4", "remote/core-bz2",
                "remote/core-zst-cut", "remote/core-lz4-cut", "remote/core-bz2-cut",
                "remote/core-zst-corrupt", "remote/core-lz4-corrupt",
                "remote/core-bz2-corrupt",
                "remote/sysroot-native", "remote/core-zst-no-libzstd",
                "remote/core-gz-no-libzstd", "remote/core-lz4-no-liblz4")
# Each compression: its name in the tests, how to compress, the library
# loaded for it (the test without it), and what the message then says.
# (libbz2 has no such test: libdw links it, so it is always loaded.)
COMPRESSIONS = (
    ("zst", ["zstd", "-q", "-c"], "libzstd.so.1", "no-libzstd",
     r"libzstd\.so\.1 could not be loaded .*; install libzstd, or decompress it first"),
    ("gz", ["gzip", "-c"], "libzstd.so.1", "no-libzstd", None),
    ("xz", ["xz", "-0", "-T2", "-c"], None, None, None),
    ("lz4", ["lz4", "-q", "-c"], "liblz4.so.1", "no-liblz4",
     r"liblz4\.so\.1 could not be loaded .*; install liblz4, or decompress it first "
     r"\(lz4 -d\)"),
    ("bz2", ["bzip2", "-c"], None, None, None),
)
REMOTE_RUBY = "3.3"


def run_copied_ruby(prefix_copy, workdir, args):
    """The crash scenario from the copied Ruby -> Capture (kernel core)."""
    with extra_env({"LD_LIBRARY_PATH": os.path.join(prefix_copy, "lib")}):
        results = capture_all(REMOTE_RUBY, os.path.join(prefix_copy, "bin", "ruby"),
                                  ["crash"], workdir, True, None, args.timeout)
    cap = results["crash"]
    if isinstance(cap, procs.Failure):
        raise cap
    return cap


def check_warned(res, cap, path):
    """Exit 1 (partial), one stderr line naming the file and its build-id,
    the same warning in the report, and the stacks still the oracle's."""
    reason = check_unusable(res, [path], (1,), r"build-id", "'build-id'")
    if reason:
        return reason
    report, reason = compare.parse_report(res[1])
    if reason:
        return reason
    if not any(path in w for w in report.get("warnings", [])):
        return "no warning naming %s in the report: %s" % (
            path, compare.show(report.get("warnings")))
    return (compare.check_process(report, cap.oracle, cap.signal_number)
            or compare.compare_threads(report, cap.oracle))


def names(ctx):
    return list(REMOTE_TESTS)


def rubies(ctx):
    return {REMOTE_RUBY} if REMOTE_RUBY in ctx.rubies and ctx.any_selected(REMOTE_TESTS) else set()


def run_tests(ctx):
    rep, selected, args, prefixes, workdir = ctx.rep, ctx.selected, ctx.args, ctx.prefixes, ctx.workdir
    names = [n for n in REMOTE_TESTS if selected(n)]
    if not names:
        return
    prefix = prefixes.get(REMOTE_RUBY)
    if not isinstance(prefix, str):
        for n in names:
            rep.skip(n, "needs the %s fixture Ruby (%s)" % (
                REMOTE_RUBY, "not in --rubies" if REMOTE_RUBY not in args.rubies else "not built"))
        return
    cs, timeout = args.corestack, args.timeout
    base = os.path.join(workdir, "remote")
    machine = os.path.join(base, "machine")
    root = os.path.join(base, "sysroot")
    try:
        shutil.rmtree(base, ignore_errors=True)
        shutil.copytree(prefix, os.path.join(machine, "prefix"), symlinks=True)
        cap = run_copied_ruby(os.path.join(machine, "prefix"),
                              os.path.join(base, "run"), args)
        os.makedirs(os.path.dirname(root + machine), exist_ok=True)
        os.rename(machine, root + machine)
        for path in set(nt_file_paths(cap.core)):
            copy_into_root(path, root)
    except (procs.Failure, OSError, subprocess.SubprocessError, struct.error) as exc:
        for n in names:
            rep.result(n, "setup: %s" % exc)
        return
    exe_path = os.path.join(machine, "prefix", "bin", "ruby")
    cap.exe = None

    if selected("remote/no-sysroot"):
        # The core's paths are gone: unusable, and the message says how.
        res = procs.run_tool([cs, "--json", cap.core], timeout)
        rep.result("remote/no-sysroot", check_unusable(
            res, [exe_path], (2,), r"--sysroot", "'--sysroot'"))
    if selected("remote/sysroot"):
        res = procs.run_tool([cs, "--json", "--sysroot", root, cap.core], timeout)
        rep.result("remote/sysroot", check_oracle(res, cap))
    if selected("remote/sysroot-native"):
        # Native frames too come from the files under the root.
        res = procs.run_tool([cs, "--json", "--native", "--sysroot", root, cap.core], timeout)
        reason = check_oracle(res, cap) or check_rb_bug(res)
        rep.result("remote/sysroot-native", reason)
    if selected("remote/lib-search-path"):
        dirs = ":".join([os.path.join(base, "nowhere"),
                         root + os.path.join(machine, "prefix", "bin"),
                         root + os.path.join(machine, "prefix", "lib")])
        res = procs.run_tool([cs, "--json", "--lib-search-path", dirs, cap.core], timeout)
        rep.result("remote/lib-search-path", check_oracle(res, cap))
    if selected("remote/mismatched-library"):
        # libm replaced by another library in the root: warned, not used.
        reason = None
        libm = next((p for p in nt_file_paths(cap.core)
                     if os.path.basename(p).startswith("libm.so")), None)
        other = next((p for p in nt_file_paths(cap.core)
                      if os.path.basename(p).startswith("libz.so")
                      or os.path.basename(p).startswith("libcrypt.so")), None)
        if not libm or not other:
            reason = "setup: the core maps no libm and no libz/libcrypt to swap in"
        else:
            saved = root + libm + ".right"
            os.rename(root + libm, saved)
            shutil.copy2(other, root + libm)
            try:
                res = procs.run_tool([cs, "--json", "--sysroot", root, cap.core], timeout)
            finally:
                os.replace(saved, root + libm)
            reason = check_warned(res, cap, root + libm)
        rep.result("remote/mismatched-library", reason)
    for kind, argv, lib, without, says in COMPRESSIONS:
        name = "remote/core-" + kind
        no_lib = "%s-%s" % (name, without)
        no_lib = no_lib if no_lib in REMOTE_TESTS and selected(no_lib) else None
        cut_test = name + "-cut"
        cut_test = cut_test if cut_test in REMOTE_TESTS and selected(cut_test) else None
        corrupt_test = name + "-corrupt"
        corrupt_test = corrupt_test if corrupt_test in REMOTE_TESTS and \
            selected(corrupt_test) else None
        if not selected(name) and not no_lib and not cut_test and not corrupt_test:
            continue
        # No suffix: the kind is read from the magic bytes, not the name.
        packed = os.path.join(base, "packed-" + kind)
        with open(cap.core, "rb") as fin, open(packed, "wb") as fout:
            res = subprocess.run(argv, stdin=fin, stdout=fout, stderr=subprocess.PIPE,
                                 timeout=600)
        if res.returncode != 0:
            rep.result(name, "setup: %s failed: %s" % (argv[0], res.stderr[:200]))
            continue
        if selected(name):
            res = procs.run_tool([cs, "--json", "--sysroot", root, packed], timeout)
            rep.result(name, check_oracle(res, cap))
        if no_lib:
            # A file of the library's name that is no ELF file, found first:
            # the dynamic loader refuses it.
            bogus = os.path.join(base, "bogus-lib")
            os.makedirs(bogus, exist_ok=True)
            with open(os.path.join(bogus, lib), "w") as f:
                f.write("not a library\n")
            res = procs.run_tool(["env", "LD_LIBRARY_PATH=" + bogus, cs, "--json",
                                  "--sysroot", root, packed], timeout)
            if says:
                reason = check_unusable(res, [packed], (2,), says,
                                        "that %s could not be loaded" % lib)
            else:
                reason = check_oracle(res, cap)
            rep.result(no_lib, reason)
        if cut_test:
            # A compressed core cut off at half: what inflated is read as a
            # truncated core (exit 1 or 2, one line), never a crash.
            cut = packed + "-cut"
            copy_prefix(packed, cut, os.path.getsize(packed) // 2)
            res = procs.run_tool([cs, "--json", "--sysroot", root, cut], timeout)
            rep.result(cut_test, check_unusable(
                res, [cut], (1, 2), r"truncated", "'truncated'"))
        if corrupt_test:
            bad = packed + "-corrupt"
            with open(packed, "rb") as f:
                data = bytearray(f.read())
            for i in range(len(data) // 2, len(data) // 2 + 64):
                data[i] ^= 0x5a
            with open(bad, "wb") as f:
                f.write(data)
            res = procs.run_tool([cs, "--json", "--sysroot", root, bad], timeout)
            rep.result(corrupt_test, check_unusable(
                res, [bad], (2,), r"-compressed, but the stream is corrupt", "'corrupt'"))


