"""Reading the VM layout: split debug info, the layout cache, how much DWARF
the resolver reads; and --max-frames, on the same core.

    debuginfo/build-id-dir, debuginfo/debuglink  the static 3.3 Ruby stripped,
                             its DWARF found by build-id under --debug-dir and by
                             .gnu_debuglink: same stacks as the oracle
    cache/warm               a second run served from the layout cache: same report
    limits/max-frames        --max-frames cuts every stack, marks it, exits 1 (partial)
    RUBY/layout-units        resolving the layout reads at most the 16 compile units
                             layout.def names, never all of them
"""

import os
import re
import shutil
import subprocess

from . import compare, procs
from .checks import check_oracle, first_line
from .scenarios import Capture


TESTS = ("debuginfo/build-id-dir", "debuginfo/debuglink", "cache/warm", "limits/max-frames")


def split_debug(exe, outdir):
    """objcopy --only-keep-debug + strip: -> (stripped exe, debug file, build-id)."""
    os.makedirs(outdir, exist_ok=True)
    debug = os.path.join(outdir, "ruby.debug")
    stripped = os.path.join(outdir, "ruby")
    for argv in (["objcopy", "--only-keep-debug", exe, debug],
                 ["objcopy", "--strip-debug", "--add-gnu-debuglink=" + debug, exe, stripped]):
        res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=300)
        if res.returncode != 0:
            raise procs.Failure("%s failed: %s" % (argv[0], res.stdout.strip()))
    out = subprocess.run(["readelf", "-n", stripped], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise procs.Failure("no build-id in %s" % stripped)
    return stripped, debug, m.group(1)


def names(ctx):
    return list(TESTS) + ["%s/layout-units" % r for r in ctx.rubies]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.selected("%s/layout-units" % r)}


def run_tests(ctx):
    debuginfo_tests(ctx)
    layout_tests(ctx)


def debuginfo_tests(ctx):
    """Split debug info: found by build-id under --debug-dir, and by
    .gnu_debuglink next to the binary; then the layout cache."""
    rep, selected, args, captures, workdir = ctx.rep, ctx.selected, ctx.args, ctx.captures, ctx.workdir
    names = ("debuginfo/build-id-dir", "debuginfo/debuglink", "cache/warm", "limits/max-frames")
    if not any(selected(n) for n in names):
        return
    cap = captures.get(("3.3-static", "threads"))
    if not isinstance(cap, Capture):
        for n in filter(selected, names):
            rep.skip(n, "needs the 3.3-static/threads core")
        return
    cs = args.corestack
    try:
        stripped, debug, build_id = split_debug(cap.exe, os.path.join(workdir, "split"))
    except (procs.Failure, OSError, subprocess.SubprocessError) as exc:
        for n in filter(selected, names):
            rep.result(n, "setup: %s" % exc)
        return
    if selected("debuginfo/build-id-dir"):
        # Only the build-id tree: the debuglink target is moved away.
        tree = os.path.join(workdir, "debug-tree")
        target = os.path.join(tree, ".build-id", build_id[:2], build_id[2:] + ".debug")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(debug, target)
        hidden = debug + ".hidden"
        os.rename(debug, hidden)
        try:
            run = procs.run_tool([cs, "--json", "--no-cache", "--debug-dir", tree,
                                  cap.core, stripped], args.timeout)
        finally:
            os.rename(hidden, debug)
        rep.result("debuginfo/build-id-dir", check_oracle(run, cap))
    if selected("debuginfo/debuglink"):
        run = procs.run_tool([cs, "--json", "--no-cache", cap.core, stripped], args.timeout)
        rep.result("debuginfo/debuglink", check_oracle(run, cap))
    if selected("cache/warm"):
        cache = os.path.join(workdir, "layout-cache")
        runs = [procs.run_tool([cs, "--json", "--cache-dir", cache, cap.core, cap.exe],
                               args.timeout) for _ in range(2)]
        reason = check_oracle(runs[1], cap)
        if not reason and not os.listdir(cache):
            reason = "nothing was written to the layout cache %s" % cache
        if not reason and runs[0][1] != runs[1][1]:
            reason = "the cached run's report differs from the first run's"
        rep.result("cache/warm", reason)
    if selected("limits/max-frames"):
        rep.result("limits/max-frames", check_max_frames(
            procs.run_tool([cs, "--json", "--max-frames", "3", cap.core, cap.exe], args.timeout),
            cap, 3))


def check_max_frames(run, cap, limit):
    """Exit 1 (partial), each stack cut to the limit and marked truncated,
    the frames kept equal to the oracle's innermost ones."""
    rc, out, err, reason = run
    if reason:
        return reason
    if procs.sanitizer_report(err):
        return "sanitizer report: %s" % procs.sanitizer_report(err)
    if rc != 1:
        return "exit status %d, expected 1 (partial)" % rc
    report, why = compare.parse_report(out)
    if why:
        return why
    if report.get("complete") is not False:
        return "complete is %s, expected false" % compare.show(report.get("complete"))
    threads = [t for t in report["threads"] if t.get("name") != "corestack-oracle"]
    for got, want in zip(threads, cap.oracle["threads"]):
        frames, expected = got.get("frames", []), want["frames"]
        if len(expected) > limit and not (got.get("truncated") and len(frames) == limit):
            return "thread %s: %d frames, truncated=%s; expected %d and truncated" % (
                compare.show(got.get("name")), len(frames), got.get("truncated"), limit)
        for f, w in zip(frames, expected):
            if (f.get("label"), f.get("lineno")) != (w["label"], w["lineno"]):
                return "thread %s: frame %s, oracle %s" % (
                    compare.show(got.get("name")), compare.show(f.get("label")),
                    compare.show(w["label"]))
    return None


# Compile units the layout resolver may index: the 16 that layout.def names
# (vm.c, gc.c, shape.c, symbol.c, hash.c, cont.c, iseq.c, class.c,
# vm_backtrace.c, variable.c, st.c, version.c, numeric.c, bignum.c, ruby.c,
# zjit.c); a scan of every unit (hundreds) is what this catches.
MAX_UNITS_READ = 16


def layout_tests(ctx):
    """The resolver reads only the compile units layout.def names: a missing
    version-specific item must not turn into a scan of every unit."""
    rep, selected, args, prefixes = ctx.rep, ctx.selected, ctx.args, ctx.prefixes
    for ruby in args.rubies:
        name = "%s/layout-units" % ruby
        prefix = prefixes.get(ruby)
        if not selected(name) or not isinstance(prefix, str):
            continue
        libdir = os.path.join(prefix, "lib")
        libs = sorted(f for f in os.listdir(libdir) if re.match(r"libruby\.so\.\d+\.\d+\.\d+$", f))
        module = os.path.join(libdir, libs[0]) if libs else os.path.join(prefix, "bin", "ruby")
        res = subprocess.run([args.corestack, "--layout", module, "--no-cache"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout)
        m = re.search(r"indexed (\d+) of (\d+) compile units", res.stdout)
        if res.returncode != 0 or not m:
            rep.result(name, "corestack --layout exited %d: %s" % (res.returncode, first_line(res.stderr)))
        elif int(m.group(1)) > MAX_UNITS_READ:
            rep.result(name, "indexed %s of %s compile units, more than %d" % (
                m.group(1), m.group(2), MAX_UNITS_READ))
        else:
            rep.result(name, None)
