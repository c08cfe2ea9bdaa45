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
(with its debug info), as tests/run.py does.

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
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import procs  # noqa: E402

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
                base = [args.corestack, "--json", core, exe]
                timed(base, 1)   # warm the layout cache
                evict(core)
                cold, cpu_cold, _ = timed(base, 1)
                load_before = load()
                with_f, cpu_f, out = timed(base, args.runs)
                text, cpu_t, _ = timed(base[:1] + base[2:], args.runs)
                without, cpu_n, _ = timed(base[:1] + ["--no-fibers"] + base[1:], args.runs)
                load_after = load()
                nfib, pages, nbytes = counted(json.loads(out))
                size = os.path.getsize(core) / 1e6
                os.unlink(core)
                if ballast:
                    walk = max(cpu_f - cpu_n, 1e-6)
                    print("  heap walk: %.1f MB of heap in %d pages, %d fibers: "
                          "%.1f ms (CPU %.1f) with fibers, %.1f ms (CPU %.1f) without "
                          "-> %.0f MB/s of CPU, %.1f ns of CPU per ballast object "
                          "(core %.0f MB)" % (
                              nbytes / 1e6, pages, nfib, with_f * 1e3, cpu_f * 1e3,
                              without * 1e3, cpu_n * 1e3, nbytes / 1e6 / walk,
                              walk * 1e9 / ballast, size), flush=True)
                else:
                    print("  %6d fibers asked, %6d listed: all stacks --json %.1f ms (CPU %.1f), "
                          "text %.1f ms (CPU %.1f), --no-fibers %.1f ms (CPU %.1f); "
                          "--json with the core not in the page cache %.1f ms (CPU %.1f); "
                          "heap %.1f MB in %d pages (core %.0f MB, set-up %.0f s); "
                          "load %.2f -> %.2f" % (
                              fibers, nfib, with_f * 1e3, cpu_f * 1e3, text * 1e3, cpu_t * 1e3,
                              without * 1e3, cpu_n * 1e3, cold * 1e3, cpu_cold * 1e3,
                              nbytes / 1e6, pages, size, setup, load_before, load_after),
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
