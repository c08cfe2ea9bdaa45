#!/usr/bin/env python3
"""Fiber benchmark for README.md. Not a test: it prints figures.

    python3 tests/bench_fibers.py [--corestack build/corestack]
                                  [--rubies 3.3,2.7] [--fibers 1000,10000,50000]
                                  [--ruby NAME=PREFIX ...]

For each fixture Ruby and fiber count N, fixtures/scenarios/fibers.rb runs
with CORESTACK_FIBERS=N (N suspended fibers over four threads, plus the
scenario's dozen others) until its oracle is written, is dumped with gcore,
and corestack reads the core end to end (every stack of every thread and
fiber, --json, layout from the warm cache), median of several runs; the
same with --no-fibers gives the cost of the fibers alone. Wall and CPU
(user+sys) time are both given: on a shared machine the wall time carries
other programs' load. The heap-walk throughput is the GC heap scanned (JSON
"heap.bytes") per CPU second of a run with CORESTACK_BALLAST objects (a
large heap, few fibers) minus the same run with --no-fibers, and that CPU
time per ballast object (how the walk compares across heap layouts: size
pools, slot sizes). --ruby NAME=PREFIX adds a Ruby installed under PREFIX
(with its debug info), as tests/run.py does. --baseline OLD runs an older
build beside the new one, in turn, warm and cold.

The floor each figure is measured against (CORESTACK_READ_STATS and
CORESTACK_READ_LOG of a --json run): warm, the start-up of `corestack
--version` plus the time to copy each distinct byte the run read once
from the core; cold, the time to read just the pages holding those bytes
from the core file once it is dropped from the page cache (os.pread, by
file offset, every run of pages asked for at once first: a reader that
knew beforehand what to read).

Each fiber's stack is two memory mappings (stack and guard page), so
Linux's default vm.max_map_count (65530) stops Ruby near 32,000 fibers.
When a count needs more, the bench raises vm.max_map_count for its run
(root only: /proc/sys/vm/max_map_count) and puts the old value back
afterwards, also on ^C; without root it says so and tries anyway.
"""
import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import elfcore, procs  # noqa: E402

SCENARIO = os.path.join(ROOT, "fixtures", "scenarios", "fibers.rb")


def timed(argv, runs):
    """Median wall and CPU (user+sys) seconds of runs, and the last stdout."""
    walls, cpus, out = [], [], None
    for _ in range(runs):
        with tempfile.TemporaryFile() as f:
            start = time.perf_counter()
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f,
                                 stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(p.pid, 0)
            walls.append(time.perf_counter() - start)
            cpus.append(usage.ru_utime + usage.ru_stime)
            if os.waitstatus_to_exitcode(status) not in (0, 1):
                raise SystemExit("bench: %s failed (%s)" % (" ".join(argv), status))
            f.seek(0)
            out = f.read().decode()
    return statistics.median(walls), statistics.median(cpus), out


def evict(path):
    """Drop the file's pages from the page cache: the next run reads the
    core from disk, as the first look at a core copied from elsewhere does."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def load():
    return os.getloadavg()[0]


def capture(exe, tmp, fibers, ballast):
    """gcore of fibers.rb with that many fibers -> (core, seconds to set up)."""
    os.environ["CORESTACK_FIBERS"] = str(fibers)
    os.environ["CORESTACK_BALLAST"] = str(ballast)
    workdir = os.path.join(tmp, "f%d-b%d" % (fibers, ballast))
    start = time.monotonic()
    sc = procs.Scenario(exe, SCENARIO, workdir, False)
    try:
        sc.wait_oracle(600)
        return procs.gcore(sc.pid, os.path.join(workdir, "core"), 600), \
            time.monotonic() - start
    finally:
        sc.kill()


MAX_MAP_COUNT = "/proc/sys/vm/max_map_count"
MAPS_PER_FIBER = 2          # the fiber's stack and its guard page
MAPS_SPARE = 20000          # the Ruby's own mappings, threads, heap pages


@contextlib.contextmanager
def map_count_for(fibers):
    """vm.max_map_count high enough for that many fibers while the block
    runs (root only), restored afterwards."""
    want = fibers * MAPS_PER_FIBER + MAPS_SPARE
    try:
        with open(MAX_MAP_COUNT) as f:
            old = int(f.read())
    except (OSError, ValueError) as exc:
        print("  note: cannot read %s (%s); %d fibers may fail" % (MAX_MAP_COUNT, exc, fibers),
              flush=True)
        yield
        return
    if old >= want:
        yield
        return
    try:
        with open(MAX_MAP_COUNT, "w") as f:
            f.write(str(want))
    except OSError as exc:
        print("  note: vm.max_map_count is %d, %d fibers need about %d mappings and it cannot "
              "be raised here (%s): run as root, or `sysctl -w vm.max_map_count=%d` first; "
              "trying anyway" % (old, fibers, want, exc.strerror or exc, want), flush=True)
        yield
        return
    print("  vm.max_map_count raised from %d to %d for %d fibers (restored afterwards)" % (
        old, want, fibers), flush=True)
    try:
        yield
    finally:
        with open(MAX_MAP_COUNT, "w") as f:
            f.write(str(old))


def load_segments(core):
    """The core's PT_LOAD segments with file bytes: (vaddr, offset, size)."""
    return sorted((vaddr, offset, size)
                  for p_type, offset, vaddr, size in elfcore.program_headers(core)
                  if p_type == elfcore.PT_LOAD and size)


def file_pages(core, log):
    """The 4 KiB pages of the core file that hold the ranges of a read log."""
    segs = load_segments(core)
    pages = set()
    with open(log) as f:
        for line in f:
            addr, length = line.split()
            addr, length = int(addr, 16), int(length)
            for vaddr, offset, size in segs:
                lo, hi = max(addr, vaddr), min(addr + length, vaddr + size)
                if lo < hi:
                    first = (offset + lo - vaddr) >> 12
                    last = (offset + hi - 1 - vaddr) >> 12
                    pages.update(range(first, last + 1))
    return sorted(pages)


def page_runs(pages):
    """Sorted page numbers as runs of adjacent pages: (first, count)."""
    runs = []
    for p in pages:
        if runs and runs[-1][0] + runs[-1][1] == p:
            runs[-1][1] += 1
        else:
            runs.append([p, 1])
    return runs


def cold_floor(core, pages):
    """Seconds to read those pages of the core from disk, once: every run
    of adjacent pages asked of the kernel at once (POSIX_FADV_WILLNEED, as
    corestack's madvise does), then each read."""
    evict(core)
    fd = os.open(core, os.O_RDONLY)
    try:
        start = time.perf_counter()
        runs = page_runs(pages)
        for first, count in runs:
            os.posix_fadvise(fd, first * 4096, count * 4096, os.POSIX_FADV_WILLNEED)
        for first, count in runs:
            os.pread(fd, count * 4096, first * 4096)
        return time.perf_counter() - start
    finally:
        os.close(fd)


def read_stats(argv, log):
    """distinct bytes, pages, ns to copy them once, of a counted run."""
    env = dict(os.environ, CORESTACK_READ_STATS="1", CORESTACK_READ_LOG=log)
    res = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=env)
    m = re.search(r"(\d+) distinct bytes in (\d+) pages, copied once in (\d+) ns",
                  res.stderr)
    return tuple(int(x) for x in m.groups()) if m else None


def floors(corestack, core, exe, tmp):
    """The warm and cold floors (seconds) of a --json run, and its
    distinct bytes; None where this build does not tell them."""
    log = os.path.join(tmp, "read.log")
    stats = read_stats([corestack, "--json", core, exe], log)
    if not stats or not os.path.exists(log):
        return None
    distinct, _, touch_ns = stats
    startup, _, _ = timed([corestack, "--version"], 15)
    pages = file_pages(core, log)
    cold = statistics.median(cold_floor(core, pages) for _ in range(3))
    return startup + touch_ns / 1e9, cold, distinct, len(pages)


def counted(report):
    fibers = sum(len(t["fibers"]) for t in report["threads"])
    return fibers, report["heap"]["pages"], report["heap"]["bytes"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corestack", default=os.path.join(ROOT, "build", "corestack"))
    ap.add_argument("--rubies", default="3.3,2.7")
    ap.add_argument("--fibers", default="1000,10000,50000")
    ap.add_argument("--ballast", type=int, default=2000000,
                    help="objects for the heap-walk throughput run")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cold-runs", type=int, default=1,
                    help="runs with the core dropped from the page cache first")
    ap.add_argument("--baseline", help="an older corestack build, run beside it")
    ap.add_argument("--ruby", action="append", default=[], metavar="NAME=PREFIX",
                    help="also a Ruby installed under PREFIX (repeatable)")
    args = ap.parse_args()
    rubies = [(r, None) for r in args.rubies.split(",") if r]
    for spec in args.ruby:
        name, sep, prefix = spec.partition("=")
        if not sep or not name or not prefix:
            ap.error("--ruby takes NAME=PREFIX, not %r" % spec)
        rubies.append((name, prefix))
    # SIGTERM unwinds like ^C: vm.max_map_count restored, the scenario killed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="corestack-bench-fibers-") as tmp:
        # The fixture Rubies stay where they are; the layout cache is ours.
        os.environ.setdefault("CORESTACK_CACHE", procs.fixture_cache())
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "xdg")
        for ruby, prefix in rubies:
            if prefix is None:
                version, _, variant = ruby.partition("-")
                prefix = procs.build_ruby(version, variant or "shared", 3600)
            exe = os.path.join(prefix, "bin", "ruby")
            print("Ruby %s" % ruby, flush=True)
            cases = [(int(n), 0) for n in args.fibers.split(",")] + [(0, args.ballast)]
            for fibers, ballast in cases:
                try:
                    with map_count_for(fibers):
                        core, setup = capture(exe, tmp, fibers, ballast)
                except procs.Failure as exc:
                    print("  %6d fibers: scenario failed: %s" % (fibers, str(exc)[:300]),
                          flush=True)
                    continue
                builds = [("new", args.corestack)]
                if args.baseline:
                    builds.append(("old", args.baseline))
                res = {}
                for name, cs in builds:
                    timed([cs, "--json", core, exe], 1)   # warm the layout cache
                load_before = load()
                for _ in range(args.cold_runs):   # the builds in turn, cold
                    for name, cs in builds:
                        evict(core)
                        c, cc, _ = timed([cs, "--json", core, exe], 1)
                        res.setdefault(name, {}).setdefault("cold", []).append((c, cc))
                for name, cs in builds:
                    base = [cs, "--json", core, exe]
                    r = res[name]
                    r["json"] = timed(base, args.runs)
                    r["text"] = timed(base[:1] + base[2:], args.runs)
                    r["none"] = timed(base[:1] + ["--no-fibers"] + base[1:], args.runs)
                load_after = load()
                floor = floors(args.corestack, core, exe, tmp)
                out = res["new"]["json"][2]
                nfib, pages, nbytes = counted(json.loads(out))
                size = os.path.getsize(core) / 1e6
                for name, _ in builds:
                    r = res[name]
                    with_f, cpu_f, _ = r["json"]
                    text, cpu_t, _ = r["text"]
                    without, cpu_n, _ = r["none"]
                    cold = statistics.median(c for c, _ in r["cold"])
                    cpu_cold = statistics.median(c for _, c in r["cold"])
                    who = " (%s build)" % name if args.baseline else ""
                    if ballast:
                        walk = max(cpu_f - cpu_n, 1e-6)
                        print("  heap walk%s: %.1f MB of heap in %d pages, %d fibers: "
                              "%.1f ms (CPU %.1f) with fibers, %.1f ms (CPU %.1f) without "
                              "-> %.0f MB/s of CPU, %.1f ns of CPU per ballast object "
                              "(core %.0f MB)" % (
                                  who, nbytes / 1e6, pages, nfib, with_f * 1e3, cpu_f * 1e3,
                                  without * 1e3, cpu_n * 1e3, nbytes / 1e6 / walk,
                                  walk * 1e9 / ballast, size), flush=True)
                    else:
                        print("  %6d fibers asked, %6d listed%s: all stacks --json %.1f ms "
                              "(CPU %.1f), text %.1f ms (CPU %.1f), --no-fibers %.1f ms "
                              "(CPU %.1f); --json with the core not in the page cache "
                              "%.1f ms (CPU %.1f); heap %.1f MB in %d pages (core %.0f MB, "
                              "set-up %.0f s); load %.2f -> %.2f" % (
                                  fibers, nfib, who, with_f * 1e3, cpu_f * 1e3, text * 1e3,
                                  cpu_t * 1e3, without * 1e3, cpu_n * 1e3, cold * 1e3,
                                  cpu_cold * 1e3, nbytes / 1e6, pages, size, setup,
                                  load_before, load_after), flush=True)
                if floor:
                    warm_floor, cold_fl, distinct, npages = floor
                    print("  floor: %d distinct bytes read, in %d pages of the core file; "
                          "warm %.1f ms (start-up and copying them once), cold %.1f ms "
                          "(reading those pages from disk)" % (
                              distinct, npages, warm_floor * 1e3, cold_fl * 1e3), flush=True)
                os.unlink(core)
    return 0


if __name__ == "__main__":
    sys.exit(main())
