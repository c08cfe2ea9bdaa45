"""Unusable input: exit 2 (a truncated core may say partial, 1), one stderr
line naming the file, no crash.

    bad/not-a-core           a Ruby executable given as the core
    bad/empty                an empty core file
    bad/truncated-NNpct      a real threads core cut to 1, 30 and 70 percent
    bad/non-ruby             the core of a process that runs no Ruby (sleep)
    bad/no-debug-info        the static 3.3 Ruby stripped of its DWARF: says 'debug'
    bad/build-id-mismatch    the 3.3-static core with the 3.1 Ruby: says 'build-id'
"""

import os
import shutil
import subprocess

from . import procs
from .checks import check_unusable
from .scenarios import GCORE_TIMEOUT


TRUNCATIONS = (1, 30, 70)   # percent of a real core kept


def test_names():
    return (["bad/not-a-core", "bad/empty"] + ["bad/truncated-%dpct" % p for p in TRUNCATIONS]
            + ["bad/non-ruby", "bad/no-debug-info", "bad/build-id-mismatch"])


def copy_prefix(src, dst, size):
    """The first size bytes of src, sparse where src is zero."""
    zero = bytes(1 << 20)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        left = size
        while left > 0:
            chunk = fin.read(min(left, len(zero)))
            if not chunk:
                break
            if chunk == zero[:len(chunk)]:
                fout.seek(len(chunk), os.SEEK_CUR)
            else:
                fout.write(chunk)
            left -= len(chunk)
        fout.truncate()


def names(ctx):
    return test_names()


def cores(ctx):
    """The threads cores it cuts or pairs with another Ruby."""
    selected, rubies, needs = ctx.selected, ctx.rubies, set()
    if any(selected("bad/truncated-%dpct" % p) for p in TRUNCATIONS):
        source = next((r for r in ["3.3-static"] + list(rubies) if r in rubies), None)
        if source:
            needs.add((source, "threads"))
    if (selected("bad/no-debug-info") or selected("bad/build-id-mismatch")) and \
            "3.3-static" in rubies:
        needs.add(("3.3-static", "threads"))
    return needs


def rubies(ctx):
    """A Ruby executable as the core; the 3.1 Ruby against the 3.3 core."""
    build = set()
    if ctx.selected("bad/not-a-core") and ctx.rubies and not any(ctx.plan.values()):
        build.add(ctx.rubies[0])
    if ctx.selected("bad/build-id-mismatch") and "3.1" in ctx.rubies:
        build.add("3.1")
    return build


def run_tests(ctx):
    """Each entry: name, function building (argv, paths, allowed, pattern, what)
    or raising procs.Failure, and what it needs."""
    rep, selected, args, prefixes, captures, workdir = (ctx.rep, ctx.selected, ctx.args, ctx.prefixes,
                                                      ctx.captures, ctx.workdir)
    bad = os.path.join(workdir, "bad")
    os.makedirs(bad, exist_ok=True)
    cs, timeout = args.corestack, args.timeout
    built = [r for r in args.rubies if isinstance(prefixes.get(r), str)]
    exe_of = lambda r: os.path.join(prefixes[r], "bin", "ruby")

    def core_of(ruby, scen="threads"):
        cap = captures.get((ruby, scen))
        if cap is None:
            raise SkipTest("needs the %s/%s core (%s)" % (
                ruby, scen, "not in --rubies" if ruby not in args.rubies else "not taken"))
        if isinstance(cap, procs.Failure):
            raise procs.Failure("no %s/%s core: %s" % (ruby, scen, cap))
        return cap

    def truncation_source():
        for ruby in ["3.3-static"] + list(args.rubies):
            if (ruby, "threads") in captures:
                return core_of(ruby)
        raise SkipTest("needs a threads core of a selected Ruby")

    def not_a_core():
        if not built:
            raise SkipTest("needs a built fixture Ruby")
        path = os.path.join(bad, "ruby-executable.not-a-core")
        shutil.copyfile(exe_of(built[0]), path)
        return [cs, "--json", path, exe_of(built[0])], [path], (2,), None, ""

    def empty():
        path = os.path.join(bad, "empty.core")
        open(path, "wb").close()
        return [cs, "--json", path] + ([exe_of(built[0])] if built else []), [path], (2,), None, ""

    def truncated(pct):
        def make():
            cap = truncation_source()
            size = os.path.getsize(cap.core)
            path = os.path.join(bad, "%s-%s.truncated-%dpct.core" % (cap.ruby, cap.scenario, pct))
            copy_prefix(cap.core, path, max(64, size * pct // 100))
            return [cs, "--json", path, cap.exe], [path], (1, 2), None, ""
        return make

    def non_ruby():
        sleeper = subprocess.Popen(["sleep", "100"], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            core = procs.gcore(sleeper.pid, os.path.join(bad, "sleep.core"), GCORE_TIMEOUT)
        finally:
            sleeper.kill()
            sleeper.wait()
        sleep_exe = shutil.which("sleep") or "/usr/bin/sleep"
        return [cs, "--json", core], [core, sleep_exe, os.path.realpath(sleep_exe)], (2,), None, ""

    def no_debug():
        cap = core_of("3.3-static")
        path = os.path.join(bad, "ruby-3.3-static.no-debug")
        res = subprocess.run(["strip", "--strip-debug", "-o", path, cap.exe],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        if res.returncode != 0:
            raise procs.Failure("strip --strip-debug failed: %s" % res.stdout.strip())
        # --no-cache: the layout cache is keyed by build-id, which strip keeps.
        return [cs, "--json", "--no-cache", cap.core, path], [path], (2,), r"debug", "'debug'"

    def mismatch():
        cap = core_of("3.3-static")
        if not isinstance(prefixes.get("3.1"), str):
            raise SkipTest("needs the 3.1 Ruby (%s)" % (
                "not in --rubies" if "3.1" not in args.rubies else "not built"))
        exe = exe_of("3.1")
        return ([cs, "--json", cap.core, exe], [cap.core, exe], (2,),
                r"build-id|does not match", "'build-id' or 'does not match'")

    tests = [("bad/not-a-core", not_a_core), ("bad/empty", empty)]
    tests += [("bad/truncated-%dpct" % pct, truncated(pct)) for pct in TRUNCATIONS]
    tests += [("bad/non-ruby", non_ruby), ("bad/no-debug-info", no_debug),
              ("bad/build-id-mismatch", mismatch)]
    for name, make in tests:
        if not selected(name):
            continue
        try:
            argv, paths, allowed, pattern, what = make()
        except SkipTest as exc:
            rep.skip(name, str(exc))
            continue
        except (procs.Failure, OSError, subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
            continue
        rep.result(name, check_unusable(procs.run_tool(argv, timeout), paths, allowed, pattern, what))


class SkipTest(Exception):
    pass
