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
asks every group what it needs (the scenario cores it reads, the fixture
Rubies it runs), then runs the groups in the order of GROUPS and counts the
results; the fixture Rubies are built (fixtures/build-ruby.sh, on first use)
and the cores taken by the scenarios group, Ruby by Ruby. Each group of
tests is a module of tests/harness/ listed once in GROUPS, whose docstring
names its tests and what each checks. A new group is a module defining
names(ctx) and run_tests(ctx), and cores(ctx) or rubies(ctx) when it needs
them (tests/harness/group.py: the protocol and the Context it is given),
and its line in GROUPS; one that patches a Ruby's threads core joins the
others of its kind in EachRuby, defining test_names(ruby) and
run_on(ctx, ruby, cap) instead. The groups:

    RUBY/SCENARIO/...        scenarios.py: every program of fixtures/scenarios/ parked,
                             its core taken, corestack (--json, text, --pid) against
                             the oracle fixtures/oracle.rb wrote; on the same
                             captures threadstate.py (RUBY/SCENARIO/threadstate...),
                             locks.py (RUBY/locks/locks, locks-text, locks-live,
                             monitor-split-debug, monitor-no-debug,
                             monitor-owner-damaged),
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
    remote/...               remote.py
    RUBY/heap/...            heap.py: corestack heap, live and from a core, against
                             ObjectSpace.count_objects and memsize_of; damaged heaps
    RUBY/bundle, bundle/...  bundle.py: a core and its files in one bundle
    debuginfo/debuginfod...  debuginfod.py
    RUBY/native/...          native.py
    RUBY/jit-native/...      jit_native.py: --native past JIT code (RUBY ending in
                             -yjit or -zjit)
    RUBY/nontfile/...        nontfile.py
    viewers/speedscope, viewers/speedscope-timeline, viewers/flamegraph
                             viewers.py: a recording loaded in speedscope's web app, or
                             a flame graph SVG, by headless Chromium
    RUBY/crash/MODE/CHECK    crash.py: kernel cores of a C extension that crashes five
                             ways, against Ruby's own crash report;
                             RUBY/crash/dir/CHECK: a directory of those cores
                             grouped by crash signature (core_dir.py)
    RUBY/crash/MODE/live     crash_live.py: corestack --pid on a Ruby hanging in
                             its crash handler
    core-dir/hostile, core-dir/empty
                             core_dir.py: a directory of what is not a core
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
import os
import shutil
import signal
import sys
import tempfile
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (bad_input, bundle, cli, core_dir, corrupt, crash, crash_live,  # noqa: E402
                     debuginfod,
                     frame_reuse, gdbext, heap, hostile, jit_frames, jit_native, layout,
                     mutations, native,
                     native_cut, nontfile, permissions, procs, record, record_exits, remote,
                     scenarios, stale_pc, thread_notes, top, unit, variants, viewers)
from harness.group import Context, EachRuby, hook  # noqa: E402

RUBIES = ("2.7", "3.1", "3.3", "3.3-static", "3.3-yjit", "3.4", "3.4-yjit")
progress = procs.progress

# Every group of tests, in the order --list prints their names and a run
# reports them (tests/harness/group.py: what a group defines).
GROUPS = (
    unit,
    scenarios,
    bad_input,
    cli,
    record_exits,
    permissions,
    EachRuby(corrupt, thread_notes, native_cut, mutations, stale_pc, frame_reuse, hostile,
             jit_frames),
    layout,
    variants,
    record,
    viewers,
    top,
    remote,
    bundle,
    nontfile,
    heap,
    debuginfod,
    native,
    jit_native,
    crash,
    crash_live,
    core_dir,
    gdbext,
)


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

    rep = Reporter()
    ctx = Context(args, installed, scenarios.scenario_names(), rep)
    if args.list:
        for group in GROUPS:
            for name in group.names(ctx):
                if ctx.selected(name):
                    print(name)
        return 0
    # The plan: the cores groups read, the scenarios whose cores are taken,
    # then the Rubies built (scenarios' run builds them, Ruby by Ruby).
    ctx.cores = set().union(*(hook(g, "cores", ctx) for g in GROUPS))
    ctx.plan = scenarios.plan(ctx)
    ctx.build = set().union(*(hook(g, "rubies", ctx) for g in GROUPS))

    if args.keep:
        ctx.workdir = os.path.abspath(args.keep)
        os.makedirs(ctx.workdir, exist_ok=True)
    else:
        ctx.workdir = tempfile.mkdtemp(prefix="corestack-oracle-")
    # The fixture Rubies stay where they are; corestack's layout cache goes
    # to the work directory, so every run starts cold and leaves nothing.
    os.environ.setdefault("CORESTACK_CACHE", procs.fixture_cache())
    os.environ["XDG_CACHE_HOME"] = os.path.join(ctx.workdir, "xdg-cache")
    os.environ.pop("DEBUGINFOD_URLS", None)   # only the local server of debuginfo/debuginfod
    started = time.monotonic()
    try:
        for group in GROUPS:
            group.run_tests(ctx)
    finally:
        if args.keep:
            progress("cores and oracles kept in %s" % ctx.workdir)
        else:
            shutil.rmtree(ctx.workdir, ignore_errors=True)
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
