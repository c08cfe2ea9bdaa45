"""Unusable input: exit 2 (a truncated core may say partial, 1), one stderr
line naming the file, no crash; every run has --json, whose exit 2 also
writes a document on stdout with the error's code, stderr's message and
the core's path.

    bad/not-a-core           a Ruby executable given as the core
    bad/empty                an empty core file
    bad/truncated-NNpct      a real threads core cut to 1, 30 and 70 percent, and
    bad/truncated-NNb        to 100 and 4096 bytes: one message, the bytes the file
                             has and those its headers describe (read here from
                             them), the causes (ulimit -c, systemd-coredump)
    bad/truncated-kernel     the kernel's crash core cut to 30 percent (its notes
                             kept): the same message, on stderr when the VM's
                             memory is lost (exit 2), else as the partial
                             report's warning (exit 1)
    bad/non-ruby             the core of a process that runs no Ruby (sleep)
    bad/no-debug-info        the static 3.3 Ruby stripped of its DWARF: says 'debug'
    bad/build-id-mismatch    the 3.3-static core with the 3.1 Ruby: says 'build-id'
"""

import json
import os
import re
import shutil
import struct
import subprocess

from . import procs
from .checks import check_unusable
from .scenarios import GCORE_TIMEOUT


TRUNCATIONS = (1, 30, 70)   # percent of a real core kept
CUTS = (100, 4096)          # bytes of it kept: in or near its headers


def described(core):
    """(where the program header table ends, where the last thing the
    headers name ends) in an ELF core, read here from its headers."""
    with open(core, "rb") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        table = phoff + phnum * phentsize
        end = table
        f.seek(phoff)
        for _ in range(phnum):
            ph = f.read(phentsize)
            offset, = struct.unpack_from("<Q", ph, 8)
            filesz, = struct.unpack_from("<Q", ph, 32)
            if filesz:
                end = max(end, offset + filesz)
    return table, end


def test_names():
    return (["bad/not-a-core", "bad/empty"] + ["bad/truncated-%dpct" % p for p in TRUNCATIONS]
            + ["bad/truncated-%db" % c for c in CUTS] + ["bad/truncated-kernel"]
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
    """The threads cores it cuts or pairs with another Ruby, the crash core
    it cuts as the kernel would."""
    selected, rubies, needs = ctx.selected, ctx.rubies, set()
    if any(selected("bad/truncated-%dpct" % p) for p in TRUNCATIONS) or \
            any(selected("bad/truncated-%db" % c) for c in CUTS):
        source = next((r for r in ["3.3-static"] + list(rubies) if r in rubies), None)
        if source:
            needs.add((source, "threads"))
    if selected("bad/truncated-kernel"):
        source = next((r for r in ["3.3-static"] + list(rubies) if r in rubies), None)
        if source:
            needs.add((source, "crash"))
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

    def truncation_source(scen="threads"):
        for ruby in ["3.3-static"] + list(args.rubies):
            if (ruby, scen) in captures:
                return core_of(ruby, scen)
        raise SkipTest("needs a %s core of a selected Ruby" % scen)

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

    def truncated(pct=None, cut=None, scen="threads"):
        def make():
            cap = truncation_source(scen)
            size = os.path.getsize(cap.core)
            keep = cut if cut is not None else max(64, size * pct // 100)
            path = os.path.join(bad, "%s-%s.truncated-%s.core" % (
                cap.ruby, cap.scenario, "%dpct" % pct if cut is None else "%db" % cut))
            copy_prefix(cap.core, path, keep)
            table, whole = described(cap.core)
            said = ("at least %d" % table) if keep < table else "%d" % whole
            pattern = (r"truncated core: the file has %d bytes but its headers describe %s, "
                       r"so .* missing; .*ulimit -c.*systemd-coredump" % (keep, said))
            return ([cs, "--json", path, cap.exe], [path], (1, 2), pattern,
                    "the bytes it has (%d), those its headers describe (%s), the causes" % (keep, said))
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
    tests += [("bad/truncated-%dpct" % pct, truncated(pct=pct)) for pct in TRUNCATIONS]
    tests += [("bad/truncated-%db" % cut, truncated(cut=cut)) for cut in CUTS]
    tests += [("bad/truncated-kernel", truncated(pct=30, scen="crash"))]
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
        core = [a for a in argv[1:] if not a.startswith("--")][0]
        run = procs.run_tool(argv, timeout)
        if run[0] == 1 and not run[2].strip() and pattern:
            # partial: the stacks were readable, the truncation a warning
            rep.result(name, check_partial_warning(run, pattern, what))
            continue
        rep.result(name, check_unusable(run, paths, allowed, pattern, what, json_file=core))


def check_partial_warning(run, pattern, what):
    """Exit 1 of a truncated core whose stacks could be read: a report,
    complete false, and a warning that says pattern."""
    rc, out, err, reason = run
    if reason:
        return reason
    try:
        report = json.loads(out)
    except ValueError:
        return "exit 1 but stdout is not JSON: %s" % out[:200]
    if report.get("complete") is not False:
        return "exit 1 but complete is %s" % report.get("complete")
    warnings = report.get("warnings") or []
    if not any(re.search(pattern, w, re.I) for w in warnings):
        return "no warning says %s: %s" % (what, warnings[:3])
    return None


class SkipTest(Exception):
    pass
