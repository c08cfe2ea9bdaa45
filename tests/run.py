#!/usr/bin/env python3
"""Oracle tests: corestack against what Ruby says about itself.

    python3 tests/run.py --corestack PATH [--rubies 2.7,3.1,3.3,3.3-static,3.3-yjit,3.4,3.4-yjit]
                         [--ruby NAME=PREFIX] [-k SUBSTRING] [--list] [--keep DIR]

--list prints the names of the tests -k selects and runs none.

--ruby runs every test on a Ruby installed elsewhere (one built from source
with its debug info, say): what corestack reads there is checked against
that Ruby's own backtraces like on the fixtures. A NAME ending in -yjit runs
the scenarios with --yjit; one ending in -gcdefault, of a Ruby built
--with-modular-gc, with RUBY_GC_LIBRARY=default (variants.py).

This file is the runner: it parses the options, selects tests with -k,
builds the fixture Rubies it needs (fixtures/build-ruby.sh, on first use),
calls each group and counts the results. Each group of tests is a module
of tests/harness/ whose docstring names its tests and what each checks:

    RUBY/SCENARIO/...        scenarios.py: every program of fixtures/scenarios/ parked,
                             its core taken, corestack (--json, text, --pid) against
                             the oracle fixtures/oracle.rb wrote; on the same
                             captures threadstate.py (RUBY/SCENARIO/threadstate...),
                             fibers.py (RUBY/fibers/...), variants.py
                             (RUBY/SCENARIO/yjit, .../zjit, .../box, ...),
                             stable_names.py (RUBY/rules/stable-across-processes),
                             frame_locals.py (RUBY/frames/locals...)
    bad/...                  bad_input.py: unusable input, exit 2 and one line
    cli/...                  cli.py: wrong options, core arguments that are no file
    record/own-child-ends-early, RUBY/record-unreaped-exit...  record_exits.py
    live/no-cap-sys-ptrace...  permissions.py
    RUBY/corrupt/..., RUBY/limits/max-output  corrupt.py
    RUBY/corrupt/native-return-address  native_cut.py
    RUBY/jit/jit-frames, RUBY/jit/corrupt-...  jit_frames.py (ZJIT's JIT frame records)
    RUBY/notes/...           thread_notes.py
    RUBY/mutations/CLASS     mutations.py (tests/mutate.py: the long run)
    RUBY/stale-pc/...        stale_pc.py
    RUBY/frame-reuse         frame_reuse.py
    RUBY/hostile/...         hostile.py
    debuginfo/build-id-dir, debuginfo/debug-dir-file, debuginfo/not-found,
    debuginfo/debuglink, cache/warm, limits/max-frames,
    RUBY/layout-units        layout.py
    RUBY/running-jit-code, 3.3-yjit/..., 3.4-yjit/...  variants.py (run-time variants:
                             a Ruby NAME ending in -yjit, -zjit, -yjit-env, -zjit-env,
                             -box runs with YJIT, ZJIT, Ruby::Box on)
    RUBY/record...           record.py; with it RUBY/record-contention (contention.py),
                             RUBY/mn-threads/... (mn_threads.py), RUBY/traced/...
                             (traced.py), RUBY/many-threads/... (many_threads.py),
                             RUBY/record-states (states.py)
                             RUBY/record-subprocesses..., RUBY/record-progress-...
                             (subprocesses.py)
    RUBY/top, RUBY/top-...   top.py: corestack top in tmux
    remote/..., debuginfo/debuginfod..., RUBY/native/...  native.py
    RUBY/jit-native/...      jit_native.py: --native past JIT code (RUBY ending in
                             -yjit or -zjit)
    RUBY/nontfile/...        nontfile.py
    viewers/speedscope, viewers/speedscope-timeline, viewers/flamegraph
                             viewers.py: a recording loaded in speedscope's web app, or
                             a flame graph SVG, by headless Chromium
    RUBY/crash/MODE/CHECK    crash.py: kernel cores of a C extension that crashes five
                             ways, against Ruby's own crash report
    gdbext/..., lldb/...     gdbext.py: ruby-bt, ruby-frame/up/down, ruby-list and
                             ruby-sample inside gdb and lldb
                             (--gdbext DIR, default build/gdbext; make test:
                             build/gdbext-san, the module under UBSan)
    unit/NAME                unit.py: the unit test programs given with --unit

Prints one line per test (PASS name / FAIL name: reason; SKIP name: reason
for tests whose fixtures are not selected, or whose scenario needs a newer
Ruby: "# corestack-requires: FEATURE (Ruby X.Y)", tests/harness/requires.py), then the FAIL lines again, then "N passed, N failed".
Exit status 1 when a test failed (or none ran). Progress goes to stderr.
"""

import argparse
import concurrent.futures
import os
import shutil
import signal
import sys
import tempfile
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (bad_input, checks, cli, corrupt, crash, fibers, frame_locals,  # noqa: E402
                     frame_reuse, gdbext, hostile, jit_frames, jit_native,
                     layout, many_threads, mutations, native, native_cut, nontfile, permissions,
                     procs, record, record_exits, requires, scenarios, stable_names, stale_pc,
                     subprocesses, thread_notes, top, traced, unit, variants, viewers)

RUBIES = ("2.7", "3.1", "3.3", "3.3-static", "3.3-yjit", "3.4", "3.4-yjit")
BUILD_TIMEOUT = 3600
progress = procs.progress


class Reporter:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        # Wall time between one result and the previous, by test group:
        # where a run's time goes (printed at the end, slowest first).
        self.last = time.monotonic()
        self.spent = {}
        # Failures again at the end: a long run's log is often read from its
        # tail only, and a FAIL line in the middle would be lost.
        self.failures = []

    def charge(self, name):
        now = time.monotonic()
        parts = [p for p in name.split("/") if p not in RUBIES][:2]
        key = "/".join(parts) or name
        self.spent[key] = self.spent.get(key, 0.0) + now - self.last
        self.last = now

    def slowest(self, count=15):
        top = sorted(self.spent.items(), key=lambda kv: -kv[1])[:count]
        return ", ".join("%s %.0f s" % kv for kv in top if kv[1] >= 1)

    def result(self, name, reason):
        self.charge(name)
        if reason is None:
            self.passed += 1
            print("PASS " + name, flush=True)
        else:
            self.failed += 1
            line = "FAIL %s: %s" % (name, " ".join(str(reason).split("\n")))
            self.failures.append(line)
            print(line, flush=True)

    def skip(self, name, reason):
        self.charge(name)
        self.skipped += 1
        print("SKIP %s: %s" % (name, reason), flush=True)


def ruby_spec(spec):
    version, _, variant = spec.partition("-")
    return version, variant or "shared"


def bad_needs(selected, rubies):
    """(ruby, scenario) cores the selected bad/ tests use."""
    needs = set()
    if any(selected("bad/truncated-%dpct" % p) for p in bad_input.TRUNCATIONS) or \
            any(selected("bad/truncated-%db" % c) for c in bad_input.CUTS):
        source = next((r for r in ["3.3-static"] + list(rubies) if r in rubies), None)
        if source:
            needs.add((source, "threads"))
    if selected("bad/truncated-kernel"):
        source = next((r for r in ["3.3-static"] + list(rubies) if r in rubies), None)
        if source:
            needs.add((source, "crash"))
    if (selected("bad/no-debug-info") or selected("bad/build-id-mismatch")) and "3.3-static" in rubies:
        needs.add(("3.3-static", "threads"))
    for r in rubies:
        if selected("%s/limits/max-output" % r) or \
                any(selected("%s/corrupt/%s" % (r, n)) for n in corrupt.test_names()) or \
                any(selected("%s/notes/%s" % (r, n)) for n, _ in thread_notes.PATCHES) or \
                selected("%s/corrupt/native-return-address" % r) or \
                any(selected(n) for n in mutations.test_names(r)) or \
                any(selected(n) for n in stale_pc.test_names(r)) or \
                selected(frame_reuse.test_name(r)):
            needs.add((r, "threads"))
    for r in rubies:
        if any(selected(n) for n in hostile.test_names(r)):
            needs.add((r, "threads"))
        if any(selected(n) for n in jit_frames.test_names(r)):
            needs.add((r, jit_frames.SCENARIO))
    if any(selected(n) for n in native.DEBUGINFO_TESTS) and "3.3-static" in rubies:
        needs.add(("3.3-static", "threads"))
    needs |= {(r, "crash") for r in rubies if selected("%s/native/rb-bug" % r)}
    return needs


def all_tests(args, scenario_list):
    """Every test's name, in the order main reaches them (--list)."""
    rubies = args.rubies
    names = unit.test_names(args.unit.split())
    names += [n for r in rubies for s in scenario_list for n in scenarios.scenario_tests(r, s)]
    names += bad_input.test_names() + cli.test_names() + ["record/own-child-ends-early"] + list(permissions.NAMES)
    for r in rubies:
        names += ["%s/limits/max-output" % r] + ["%s/corrupt/%s" % (r, n) for n in corrupt.test_names()]
        names += ["%s/notes/%s" % (r, n) for n, _ in thread_notes.PATCHES]
        names += ["%s/corrupt/native-return-address" % r] + mutations.test_names(r)
        names += stale_pc.test_names(r) + [frame_reuse.test_name(r)] + hostile.test_names(r)
        names += jit_frames.test_names(r)
    names += list(layout.TESTS)
    names += ["%s/layout-units" % r for r in rubies]
    names += [n for r in rubies for n in variants.running_test_names(r)]
    names += [n for r in rubies for n in record.test_names(r)]
    names += list(viewers.TESTS) if rubies else []
    names += [n for r in rubies for n in top.test_names(r)]
    names += list(native.REMOTE_TESTS) + [n for r in rubies for n in nontfile.test_names(r)]
    names += list(native.DEBUGINFO_TESTS) + [n for r in rubies for n in native.native_test_names(r)]
    names += [n for r in rubies for n in jit_native.test_names(r)]
    names += [n for r in rubies for n in crash.test_names(r)]
    names += [n for r in rubies for n in gdbext.ruby_tests(r, scenario_list)] + list(gdbext.BAD_TESTS)
    if gdbext.INSTALL_RUBY in rubies:
        names += list(gdbext.INSTALL_TESTS)
    return names


def patient_result(future):
    """future.result(), waking up often: signals only reach Python code in
    the main thread, and a worker thread may be the one that caught them."""
    while not future.done():
        concurrent.futures.wait([future], timeout=0.2)
    return future.result()


# --- main ----------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corestack", required=True, help="the corestack executable under test")
    ap.add_argument("--rubies", default=",".join(RUBIES),
                    help="fixture Rubies, comma-separated (default %(default)s)")
    ap.add_argument("--ruby", action="append", default=[], metavar="NAME=PREFIX",
                    help="also run every test on a Ruby already installed under PREFIX "
                    "(with debug info), named NAME in the test names; NAME ending in "
                    "-yjit, -zjit, -yjit-env, -zjit-env, -box or -gcdefault runs it with "
                    "YJIT, ZJIT (threshold 1, or switched on by RUBY_*JIT_ENABLE=1), "
                    "RUBY_BOX=1, or RUBY_GC_LIBRARY=default (a Ruby built "
                    "--with-modular-gc) (tests/harness/variants.py) (repeatable)")
    ap.add_argument("-k", dest="keys", action="append", default=[], metavar="SUBSTRING",
                    help="only tests whose name contains SUBSTRING (repeatable)")
    ap.add_argument("--list", action="store_true",
                    help="print the selected tests' names, one a line, and run none")
    ap.add_argument("--keep", metavar="DIR", help="keep cores and oracles in DIR")
    ap.add_argument("--mutations", type=int, default=mutations.SEEDED, metavar="N",
                    help="seeded mutations per class and Ruby (default %(default)s; "
                         "tests/mutate.py runs 1,000)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per corestack run (default 60)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel corestack runs")
    ap.add_argument("--unit", default="", help="unit test programs, space-separated")
    ap.add_argument("--frame-reuse-check", metavar="PROGRAM",
                    help="build/check-frame-reuse, for the RUBY/frame-reuse tests")
    ap.add_argument("--unit-arg", action="append", default=[],
                    help="argument passed to every unit test program")
    ap.add_argument("--gdbext", default=os.path.join(procs.ROOT, "build", "gdbext"),
                    help="directory of the gdb/lldb module and loaders (default %(default)s)")
    args = ap.parse_args()
    # SIGTERM unwinds like ^C: scenario processes killed, temporary cores removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    args.rubies = [r.strip() for r in args.rubies.split(",") if r.strip()]
    for r in args.rubies:
        if r not in RUBIES:
            ap.error("unknown Ruby %r (known: %s)" % (r, ", ".join(RUBIES)))
    installed = {}   # NAME -> PREFIX of --ruby
    for spec in args.ruby:
        name, _, prefix = spec.partition("=")
        if not name or not os.path.isfile(os.path.join(prefix, "bin", "ruby")):
            ap.error("--ruby %r: expected NAME=PREFIX with PREFIX/bin/ruby" % spec)
        installed[name] = os.path.abspath(prefix)
        args.rubies.append(name)
    if os.sep in args.corestack:
        args.corestack = os.path.abspath(args.corestack)
    else:
        args.corestack = shutil.which(args.corestack) or args.corestack

    selected = lambda name: not args.keys or any(k in name for k in args.keys)
    scenario_list = scenarios.scenario_names()
    if args.list:
        for name in all_tests(args, scenario_list):
            if selected(name):
                print(name)
        return 0
    wanted_bad = bad_needs(selected, args.rubies)
    plan = {r: [s for s in scenario_list
                if any(selected(t) for t in scenarios.scenario_tests(r, s)) or (r, s) in wanted_bad]
            for r in args.rubies}
    rep = Reporter()
    for r in args.rubies:   # scenarios a fixture Ruby lacks the feature for
        for s in list(plan[r]):
            why = requires.missing(os.path.join(procs.SCENARIOS, s + ".rb"), ruby_spec(r)[0])
            if why:
                plan[r].remove(s)
                for t in scenarios.scenario_tests(r, s):
                    if selected(t):
                        rep.skip(t, why)
    build_anyway = set()    # Rubies whose executable a bad/ test uses
    if selected("bad/not-a-core") and args.rubies and not any(plan.values()):
        build_anyway.add(args.rubies[0])
    if selected("bad/build-id-mismatch") and "3.1" in args.rubies:
        build_anyway.add("3.1")
    for r in args.rubies:
        if any(selected(n) for n in native.native_test_names(r) + nontfile.test_names(r)
               + crash.test_names(r)):
            build_anyway.add(r)
    build_anyway |= {r for r in args.rubies if any(selected(n) for n in jit_native.test_names(r))}
    if any(selected(n) for n in viewers.TESTS) and args.rubies:
        build_anyway.add(args.rubies[0])
    if any(selected(n) for n in native.REMOTE_TESTS) and native.REMOTE_RUBY in args.rubies:
        build_anyway.add(native.REMOTE_RUBY)
    for r in args.rubies:   # tests on a fixture Ruby without its scenarios
        if any(selected("%s/%s" % (r, t)) for t in ("layout-units", "running-jit-code")) or \
                any(selected(n) for n in record.test_names(r) + top.test_names(r)):
            build_anyway.add(r)
        if gdbext.wanted(selected, [r], scenario_list):
            build_anyway.add(r)

    if args.keep:
        workdir = os.path.abspath(args.keep)
        os.makedirs(workdir, exist_ok=True)
    else:
        workdir = tempfile.mkdtemp(prefix="corestack-oracle-")
    # The fixture Rubies stay where they are; corestack's layout cache goes
    # to the work directory, so every run starts cold and leaves nothing.
    os.environ.setdefault("CORESTACK_CACHE", procs.fixture_cache())
    os.environ["XDG_CACHE_HOME"] = os.path.join(workdir, "xdg-cache")
    os.environ.pop("DEBUGINFOD_URLS", None)   # only the local server of debuginfo/debuginfod
    started = time.monotonic()
    unit.unit_tests(rep, selected, args.unit.split(), args.unit_arg, args.timeout)
    prefixes, captures = {}, {}
    try:
        for ruby in args.rubies:
            if not plan[ruby] and ruby not in build_anyway:
                continue
            t0 = time.monotonic()
            progress("%s: fixture Ruby" % ruby)
            try:
                prefixes[ruby] = installed.get(ruby) or \
                    procs.build_ruby(*ruby_spec(ruby), timeout=BUILD_TIMEOUT)
            except procs.Unavailable as exc:   # e.g. YJIT without rustc
                prefixes[ruby] = exc
                rep.skip("%s/build" % ruby, str(exc))
                continue
            except procs.Failure as exc:
                prefixes[ruby] = exc
                rep.result("%s/build" % ruby, str(exc))
                continue
            if not plan[ruby]:
                continue
            exe = os.path.join(prefixes[ruby], "bin", "ruby")
            rwork = os.path.join(workdir, ruby)
            results = scenarios.capture_all(ruby, exe, plan[ruby], rwork, bool(args.keep),
                                  args.corestack, args.timeout)
            for scen, cap in results.items():
                captures[(ruby, scen)] = cap
            t1 = time.monotonic()
            progress("%s: cores taken in %.1f s" % (ruby, t1 - t0))
            with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
                futures = {scen: pool.submit(scenarios.corestack_runs, args.corestack, cap, args.timeout)
                           for scen, cap in results.items() if isinstance(cap, scenarios.Capture)}
                try:
                    for scen in plan[ruby]:
                        runs = patient_result(futures[scen]) if scen in futures else None
                        scenarios.report_scenario(rep, selected, ruby, scen, results[scen], runs)
                        fibers.report(rep, selected, ruby, scen, results[scen], runs,
                                      args.corestack, args.timeout, checks.json_report)
                        stable_names.report(rep, selected, ruby, scen, results[scen], runs,
                                            args.corestack, args.timeout,
                                            variants.scenario_env(ruby), rwork)
                        frame_locals.report(rep, selected, ruby, scen, results[scen],
                                            args.corestack, args.timeout, procs.run_tool,
                                            checks.json_report)
                except BaseException:   # ^C or SIGTERM: do not wait for the pool
                    for future in futures.values():
                        future.cancel()
                    procs.kill_live()
                    raise
            progress("%s: corestack checked in %.1f s" % (ruby, time.monotonic() - t1))
            if not args.keep:   # gcore writes every mapping out: free the disk early
                for scen, cap in results.items():
                    if isinstance(cap, scenarios.Capture) and (ruby, scen) not in wanted_bad \
                            and (ruby, scen) != ("3.3-static", "threads"):
                        os.unlink(cap.core)
        bad_input.bad_tests(rep, selected, args, prefixes, captures, workdir)
        cli.cli_tests(rep, selected, args.corestack, procs.run_tool, procs.sanitizer_report,
                      args.timeout)
        record_exits.own_child_test(rep, selected, args.corestack, args.timeout)
        permissions.permission_tests(rep, selected, args.corestack, checks.check_unusable,
                                     procs.run_tool, args.timeout)
        for ruby in args.rubies:
            cap = captures.get((ruby, "threads"))
            if isinstance(cap, scenarios.Capture):
                corrupt.corrupt_tests(rep, selected, ruby, cap, args.corestack, args.timeout)
                thread_notes.notes_tests(rep, selected, ruby, cap, args.corestack, args.timeout)
                native_cut.native_cut_test(rep, selected, ruby, cap, args.corestack, args.timeout)
                mutations.mutation_tests(rep, selected, ruby, cap, args.corestack, args.timeout,
                                         args.mutations)
                stale_pc.stale_pc_tests(rep, selected, ruby, cap, args.corestack, args.timeout)
                frame_reuse.frame_reuse_test(rep, selected, ruby, cap, args.frame_reuse_check,
                                             args.timeout)
                hostile.hostile_tests(rep, selected, ruby, cap, args.corestack, args.timeout)
            cap = captures.get((ruby, jit_frames.SCENARIO))
            if isinstance(cap, scenarios.Capture):
                jit_frames.jit_frames_tests(rep, selected, ruby, cap, args.corestack,
                                            args.timeout)
            elif any(selected(n) for n in jit_frames.test_names(ruby)):
                for n in jit_frames.test_names(ruby):
                    if selected(n):
                        rep.result(n, "setup: no %s/%s core: %s" % (ruby, jit_frames.SCENARIO, cap))
        layout.debuginfo_tests(rep, selected, args, captures, workdir)
        layout.layout_tests(rep, selected, args, prefixes)
        variants.running_test(rep, selected, args.corestack, prefixes, args.timeout)
        record.record_tests(rep, selected, args, prefixes, workdir)
        viewers.viewer_tests(rep, selected, args, prefixes, workdir)
        for ruby in args.rubies:
            if isinstance(prefixes.get(ruby), str):
                top.top_tests(rep, selected, args.corestack, ruby,
                              os.path.join(prefixes[ruby], "bin", "ruby"))
        native.remote_tests(rep, selected, args, prefixes, workdir)
        nontfile.nontfile_tests(rep, selected, args, prefixes, workdir)
        native.debuginfo_tests(rep, selected, args, captures, workdir)
        native.native_tests(rep, selected, args, prefixes, workdir, captures)
        jit_native.jit_native_tests(rep, selected, args, prefixes, workdir)
        crash.crash_tests(rep, selected, args, prefixes, workdir)
        gdbext.gdbext_tests(rep, selected, args, prefixes, scenario_list, workdir)
    finally:
        if args.keep:
            progress("cores and oracles kept in %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    progress("finished in %.1f s" % (time.monotonic() - started))
    progress("slowest groups (time since the previous result): " + rep.slowest())
    for line in rep.failures:
        # Bounded, so the recap fits in a log's tail.
        print(line if len(line) <= 1500 else line[:1500] + " ...", flush=True)
    total = rep.passed + rep.failed
    print("%d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    if total == 0:
        progress("no test ran (check -k and --rubies)")
        return 1
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
