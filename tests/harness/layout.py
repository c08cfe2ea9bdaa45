"""Reading the VM layout: split debug info, the layout cache, how much DWARF
the resolver reads; and --max-frames, on the same core.

    debuginfo/build-id-dir, debuginfo/debuglink  the static 3.3 Ruby stripped,
                             its DWARF found by build-id under --debug-dir and by
                             .gnu_debuglink: same stacks as the oracle
    debuginfo/debug-dir-file the unstripped Ruby, renamed, directly in --debug-dir
                             (no .build-id tree): found by its build-id
    debuginfo/not-found      no debug info anywhere: exit 2, the message names
                             --debug-dir's directory and /usr/lib/debug
    cache/warm               a second run served from the layout cache: same report
    limits/max-frames        --max-frames cuts every stack, marks it, says how many
                             frames past it the oracle has, exits 1 (partial)
    RUBY/layout-units        resolving the layout reads at most the compile units
                             layout.def names, never all of them
"""

import os
import re
import shutil
import subprocess

from . import compare, procs
from .checks import check_oracle, first_line
from .scenarios import Capture


TESTS = ("debuginfo/build-id-dir", "debuginfo/debug-dir-file", "debuginfo/not-found",
         "debuginfo/debuglink", "cache/warm", "limits/max-frames")


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
    names = TESTS
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

    def run_in(debug_dir):
        """corestack on the stripped Ruby with --debug-dir DEBUG_DIR, the
        debuglink target moved away meanwhile."""
        hidden = debug + ".hidden"
        os.rename(debug, hidden)
        try:
            return procs.run_tool([cs, "--json", "--no-cache", "--debug-dir", debug_dir,
                                   cap.core, stripped], args.timeout)
        finally:
            os.rename(hidden, debug)

    if selected("debuginfo/build-id-dir"):
        # Only the build-id tree.
        tree = os.path.join(workdir, "debug-tree")
        target = os.path.join(tree, ".build-id", build_id[:2], build_id[2:] + ".debug")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(debug, target)
        rep.result("debuginfo/build-id-dir", check_oracle(run_in(tree), cap))
    if selected("debuginfo/debug-dir-file"):
        # The unstripped Ruby under another name in DIR, no .build-id tree:
        # found by its build-id.
        flat = os.path.join(workdir, "debug-flat")
        os.makedirs(flat, exist_ok=True)
        shutil.copyfile(cap.exe, os.path.join(flat, "ruby-unstripped"))
        rep.result("debuginfo/debug-dir-file", check_oracle(run_in(flat), cap))
    if selected("debuginfo/not-found"):
        empty = os.path.join(workdir, "debug-empty")
        os.makedirs(empty, exist_ok=True)
        rep.result("debuginfo/not-found",
                   check_not_found(run_in(empty), [empty, "/usr/lib/debug"]))
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
        argv = [cs, "--max-frames", "3", cap.core, cap.exe]
        rep.result("limits/max-frames", check_max_frames(
            procs.run_tool(argv[:1] + ["--json"] + argv[1:], args.timeout),
            procs.run_tool(argv, args.timeout), cap, 3))


def check_not_found(run, dirs):
    """Exit 2, and the one stderr line names every debug directory."""
    rc, out, err, reason = run
    if reason:
        return reason
    if rc != 2:
        return "exit status %d, expected 2: %s" % (rc, first_line(err))
    missing = [d for d in dirs if d not in err]
    if missing or len(err.strip().splitlines()) != 1:
        return "the message does not name %s: %s" % (missing, first_line(err))
    return None


def check_max_frames(run, text_run, cap, limit):
    """Exit 1 (partial), each stack cut to the limit and marked truncated,
    the frames kept equal to the oracle's innermost ones, and how many were
    cut (frames_cut, and the text's "<N more frames not shown") what the
    oracle has past them."""
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
        cut = len(expected) - len(frames) if got.get("truncated") else 0
        if got.get("frames_cut") != cut:
            return "thread %s: frames_cut %s, the oracle has %d frames past the %d kept" % (
                compare.show(got.get("name")), compare.show(got.get("frames_cut")), cut, len(frames))
    rc, text, err, reason = text_run
    if reason or rc != 1:
        return reason or "text: exit status %d, expected 1" % rc
    said = [int(n) for n in re.findall(r"^ *<(\d+) more frames? not shown: --max-frames>$",
                                         text, re.M)]
    cuts = [t["frames_cut"] for t in report["threads"] if t.get("frames_cut")]
    cuts += [f["frames_cut"] for t in report["threads"] for f in t.get("fibers", [])
             if f.get("frames_cut")]
    if sorted(said) != sorted(cuts) or not said:
        return "text says %s more frames not shown, JSON frames_cut %s" % (said, cuts)
    return None


# Compile units the layout resolver may index: those layout.def names (the
# last argument of each item: vm.c, gc.c, thread.c, ...); a scan of every
# unit (hundreds) is what this catches.
def layout_units():
    with open(os.path.join(procs.ROOT, "rubyvm", "layout.def")) as f:
        return set(re.findall(r'^\w+\(.*"([\w.]+\.c)"\)\s*$', f.read(), re.M))


MAX_UNITS_READ = len(layout_units())


def units_named(module, names):
    """How many of module's compile units have a basename in names: two
    units may share one (4.0's encoding.c and prism/encoding.c), and the
    resolver reads each unit of a name it asks. None when readelf cannot
    tell."""
    try:
        out = subprocess.run(["readelf", "--debug-dump=info", "--dwarf-depth=1", module],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    n, in_cu = 0, False
    for line in out.splitlines():
        if "DW_TAG_compile_unit" in line:
            in_cu = True
        elif in_cu and "DW_AT_name" in line:
            n += os.path.basename(line.rsplit(": ", 1)[-1].strip()) in names
            in_cu = False
    return n or None


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
        elif int(m.group(1)) > (units_named(module, layout_units()) or MAX_UNITS_READ):
            rep.result(name, "indexed %s of %s compile units, more than the %d named %s" % (
                m.group(1), m.group(2), units_named(module, layout_units()) or MAX_UNITS_READ,
                "in rubyvm/layout.def"))
        else:
            rep.result(name, None)
