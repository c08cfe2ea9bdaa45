#!/usr/bin/env python3
"""Heap census, dump and retention benchmark for docs/performance.md. Not
a test: it prints figures.

    python3 tests/bench_heap.py [--corestack build/corestack] [--ruby PREFIX]
                                [--scale 110] [--runs 5]

fixtures/heap/heap.rb runs with SCALE (110: about a million live objects)
on the Ruby under PREFIX (default: the 3.4 fixture Ruby) until its heap is
settled, is dumped with gcore, and `corestack heap --json CORE EXE` reads
the core (layout from the warm cache), median of RUNS: wall and CPU
(user+sys) time, and the peak RSS of corestack against the size of the GC
heap it read (JSON pages.bytes); and the same of `corestack heap --json
--pid PID` on the process itself before the core is taken (it is stopped
for the whole walk). The goal is under 1 s and under twice the heap's
size. Then, on the core, the same figures for `corestack heap --dump FILE`
(every object in dump_all's JSON lines; FILE's size printed) and for
`corestack heap --retainers HeapFixture::Plain --top 3` (the largest three
instances of a class counted in a heap walk, then a breadth-first search
from the roots until all three are reached).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import procs  # noqa: E402
from harness.heap import start_fixture  # noqa: E402

DEFAULT_RUBY = os.path.expanduser("~/.cache/corestack/rubies/3.4-yjit-r5")


def run(argv):
    """(wall s, cpu s, max RSS bytes, stdout) of one run."""
    with tempfile.TemporaryFile() as f:
        start = time.perf_counter()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f,
                             stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit("bench: %s failed (%s)" % (" ".join(argv), status))
        f.seek(0)
        return (wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024,
                f.read().decode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corestack", default=os.path.join(ROOT, "build", "corestack"))
    ap.add_argument("--ruby", default=DEFAULT_RUBY, help="install prefix")
    ap.add_argument("--scale", type=int, default=110)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    exe = os.path.join(args.ruby, "bin", "ruby")
    with tempfile.TemporaryDirectory(prefix="bench-heap-") as work:
        started = time.monotonic()
        fixture, record = None, None
        try:
            fixture, record = start_fixture(exe, os.path.basename(args.ruby), work, 600,
                                            [str(args.scale)])
            print("fixture: %d live objects (count_objects), settled in %.1f s" % (
                record["count_objects"]["TOTAL"] - record["count_objects"]["FREE"],
                time.monotonic() - started))
            live = [run([args.corestack, "heap", "--json", "--pid", str(fixture.pid)])
                    for _ in range(args.runs)]
            core = procs.gcore(fixture.pid, os.path.join(work, "core"), 600)
        finally:
            if fixture:
                fixture.kill()
        print("core: %.1f MB" % (os.path.getsize(core) / 1e6))
        argv = [args.corestack, "heap", "--json", core, exe]
        run(argv)   # the layout cache warm
        runs = [run(argv) for _ in range(args.runs)]
        doc = json.loads(runs[-1][3])
        heap = doc["pages"]["bytes"]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = max(r[2] for r in runs)
        print("census: %d live objects in %d pages (%.1f MB of heap)" % (
            doc["live"], doc["pages"]["read"], heap / 1e6))
        print("time: %.3f s wall, %.3f s CPU (median of %d)" % (wall, cpu, args.runs))
        print("peak RSS: %.1f MB (%.2f x the heap)" % (rss / 1e6, rss / heap))
        print("command: %s" % " ".join(argv))
        dump = os.path.join(work, "heap.dump")
        for what, extra in (("dump", ["--dump", dump]),
                            ("retainers", ["--retainers", "HeapFixture::Plain", "--top", "3"])):
            argv = [args.corestack, "heap", "--json"] + extra + [core, exe]
            runs = [run(argv) for _ in range(args.runs)]
            print("%s: %.3f s wall, %.3f s CPU (median of %d), peak RSS %.1f MB%s" % (
                what, statistics.median(r[0] for r in runs),
                statistics.median(r[1] for r in runs), args.runs,
                max(r[2] for r in runs) / 1e6,
                ", %.1f MB written" % (os.path.getsize(dump) / 1e6) if what == "dump" else ""))
            print("command: %s" % " ".join(argv))
        print("live (--pid, the process stopped throughout): %.3f s wall, %.3f s CPU, "
              "peak RSS %.1f MB" % (statistics.median(r[0] for r in live),
                                    statistics.median(r[1] for r in live),
                                    max(r[2] for r in live) / 1e6))


if __name__ == "__main__":
    main()
