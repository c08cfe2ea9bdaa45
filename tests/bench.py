#!/usr/bin/env python3
"""Benchmarks for README.md (`make bench`). Not a test: it prints figures.

1. End to end on the same core of the 2.7.4 fixture (threads scenario):
   corestack versus gdb with Ruby's own .gdbinit `rb_ps` (from the same
   Ruby source tree), wall time, median of several runs.
2. Layout resolution for libruby 3.3.8: cold (no layout cache: DWARF read
   and resolved) and warm (on-disk layout cache), against the time needed
   just to inflate the compressed debug sections libdw reads. With
   --baseline CORESTACK (another build, e.g. of an earlier commit) the cold
   runs of both and the inflation are taken in turn, run after run, and
   reported as medians of wall and CPU (user+sys) time side by side.
3. Peak memory (max RSS) of a corestack run.
4. A core of 300 parked threads, each about 44 Ruby frames deep
   (fixtures/many_threads.rb 300 deep=40, Ruby 3.4: 13,000 frames): the
   time of a snapshot with and without the fiber search, and what it read
   of the target (CORESTACK_READ_STATS=1): reads, bytes asked for, the
   distinct bytes and pages among them, and the floor: start-up
   (`corestack --version`) plus the time to copy those distinct bytes once
   from the core. With --baseline OLD, an older build is run beside it,
   the two in turn.

Sampling (`corestack record`) has its own: tests/bench_sampling.py.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import procs  # noqa: E402


def run_cpu(argv):
    """Wall and CPU (user+sys) seconds of one run; output discarded."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("bench: %s failed (%s)" % (" ".join(argv), status))
    return wall, usage.ru_utime + usage.ru_stime


def layout_side_by_side(lib, builds, inflate_tool, runs):
    """Cold layout resolution of each (label, corestack) build and the
    inflation alone, alternating run by run so that the machine's load
    falls on all alike; median wall and CPU time of each."""
    argvs = [(label, [cs, "--layout", lib, "--no-cache"]) for label, cs in builds]
    # The floors: the sections inflated by libelf (a buffer per section,
    # as libdw would have them inflated), and inflated the resolver's way
    # (zlib into one mapping advised for huge pages).
    argvs.append(("inflate floor: libelf", [inflate_tool, lib]))
    argvs.append(("inflate floor: one huge-page image", [inflate_tool, "--image", lib]))
    times = {label: ([], []) for label, _ in argvs}
    for _ in range(runs):
        for label, argv in argvs:
            wall, cpu = run_cpu(argv)
            times[label][0].append(wall)
            times[label][1].append(cpu)
    floors = [statistics.median(times[label][1]) for label, _ in argvs[-2:]]
    print("== layout resolution, %s (%d runs each, alternating)" % (lib, runs))
    width = max(len(label) for label, _ in argvs)
    print("%-*s %10s %10s %14s %14s" % (width, "", "wall", "CPU", "CPU / libelf", "CPU / image"))
    for label, _ in argvs:
        wall = statistics.median(times[label][0])
        cpu = statistics.median(times[label][1])
        print("%-*s %10s %10s %13.2fx %13.2fx" % (width, label, fmt_ms(wall), fmt_ms(cpu),
                                                  cpu / floors[0], cpu / floors[1]))


def run_usage(argv, env=None):
    """Wall seconds and resource usage of one run; output discarded."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit("bench: %s failed (%s)" % (" ".join(argv), status))
    return wall, usage


def run_timed(argv, env=None):
    """Wall seconds and max RSS (KiB) of one run; output discarded."""
    wall, usage = run_usage(argv, env)
    return wall, usage.ru_maxrss


def median_of(argv, runs, env=None):
    walls, rss = [], 0
    for _ in range(runs):
        wall, maxrss = run_timed(argv, env)
        walls.append(wall)
        rss = max(rss, maxrss)
    return statistics.median(walls), rss


def take_core(ruby_prefix, scenario, tmp):
    """Run a scenario until it parks, gcore it, kill it; return the core."""
    workdir = os.path.join(tmp, scenario)
    sc = procs.Scenario(os.path.join(ruby_prefix, "bin", "ruby"),
                        os.path.join(ROOT, "fixtures", "scenarios", scenario),
                        workdir, False)
    try:
        sc.wait_oracle(60)
        return procs.gcore(sc.pid, os.path.join(workdir, "core"), 120)
    finally:
        sc.kill()


def fmt_ms(s):
    return "%.1f ms" % (s * 1000)


def sections_1_to_3(corestack, cache, runs, tmp):
    # 1. corestack vs gdb rb_ps on a 2.7.4 core.
    prefix27 = procs.build_ruby("2.7", "shared", 3600)
    core = take_core(prefix27, "threads.rb", tmp)
    ruby = os.path.join(prefix27, "bin", "ruby")
    gdbinit = os.path.join(cache, "src", "2.7", ".gdbinit")
    cold_time, cold_rss = median_of([corestack, "--no-cache", core, ruby], runs)
    subprocess.run([corestack, core, ruby], stdout=subprocess.DEVNULL)  # fill the cache
    warm_time, warm_rss = median_of([corestack, core, ruby], runs)
    gdb_argv = ["gdb", "-batch", "-nx", "-x", gdbinit, "-ex", "rb_ps", ruby, core]
    gdb_time, _ = median_of(gdb_argv, max(3, runs // 2))
    print("== end to end, threads scenario core of Ruby 2.7.4 (median of %d)" % runs)
    print("corestack, layout from DWARF (--no-cache)  %s" % fmt_ms(cold_time))
    print("corestack, layout from the cache           %s" % fmt_ms(warm_time))
    print("gdb -batch + Ruby's .gdbinit rb_ps         %s" % fmt_ms(gdb_time))
    print("speed-up, cold / warm                      %.0fx / %.0fx"
          % (gdb_time / cold_time, gdb_time / warm_time))
    print("corestack max RSS, cold / warm             %.1f / %.1f MiB"
          % (cold_rss / 1024, warm_rss / 1024))

    # 2. Layout resolution on libruby 3.3.8.
    prefix33 = procs.build_ruby("3.3", "shared", 3600)
    lib = [os.path.join(prefix33, "lib", f) for f in os.listdir(os.path.join(prefix33, "lib"))
           if f.startswith("libruby.so.") and f.count(".") == 4][0]
    layout_dir = os.path.join(tmp, "layouts")
    cold, _ = median_of([corestack, "--layout", lib, "--no-cache"], runs)
    subprocess.run([corestack, "--layout", lib, "--cache-dir", layout_dir],
                   stdout=subprocess.DEVNULL, check=True)
    warm, _ = median_of([corestack, "--layout", lib, "--cache-dir", layout_dir], runs)
    base, _ = median_of([corestack, "--version"], runs)
    inflate_tool = os.path.join(ROOT, "build", "bench-inflate")
    inflate = None
    if os.path.exists(inflate_tool):
        inflate, _ = median_of([inflate_tool, lib], runs)
    print()
    print("== layout resolution, %s" % lib)
    print("process start-up (corestack --version)  %s" % fmt_ms(base))
    print("cold, from DWARF (--no-cache)            %s" % fmt_ms(cold))
    print("warm, from the layout cache              %s" % fmt_ms(warm))
    if inflate is not None:
        print("inflating the debug sections libdw reads %s  (cold/inflate %.2fx)"
              % (fmt_ms(inflate), cold / inflate))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corestack", required=True)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--baseline", metavar="CORESTACK",
                    help="an older corestack build, run beside this one: its cold "
                    "layout resolution (2) and its snapshot of the deep-thread core (4)")
    ap.add_argument("--only", choices=["layout", "threads"],
                    help="run only this benchmark (2's layout side by side, or 4)")
    args = ap.parse_args()
    corestack = os.path.abspath(args.corestack)
    baseline = os.path.abspath(args.baseline) if args.baseline else None
    cache = procs.fixture_cache()

    if args.only == "layout" or (args.baseline and args.only is None):
        prefix33 = procs.build_ruby("3.3", "shared", 3600)
        lib = [os.path.join(prefix33, "lib", f) for f in os.listdir(os.path.join(prefix33, "lib"))
               if f.startswith("libruby.so.") and f.count(".") == 4][0]
        builds = [("cold, this build (%s)" % args.corestack, corestack)]
        if args.baseline:
            builds.insert(0, ("cold, baseline (%s)" % args.baseline,
                              os.path.abspath(args.baseline)))
        layout_side_by_side(lib, builds, os.path.join(ROOT, "build", "bench-inflate"),
                            args.runs)
        if args.only == "layout":
            return
        print()

    with tempfile.TemporaryDirectory() as tmp:
        if args.only is None:
            sections_1_to_3(corestack, cache, args.runs, tmp)

        # 4. Many threads, deep stacks: the time and the reads of one snapshot.
        prefix34 = procs.build_ruby("3.4", "yjit", 3600)
        ruby34 = os.path.join(prefix34, "bin", "ruby")
        sc = procs.Scenario(ruby34, os.path.join(ROOT, "fixtures", "many_threads.rb"),
                            os.path.join(tmp, "many"), False, args=["300", "deep=40"])
        try:
            sc.wait_oracle(120)
            core = procs.gcore(sc.pid, os.path.join(tmp, "many", "core"), 300)
        finally:
            sc.kill()
        print()
        print("== 300 parked threads 40-44 calls deep, Ruby 3.4 core "
              "(median of %d, warm layout cache)" % args.runs)
        many_threads(corestack, baseline, core, ruby34, args.runs)


def read_stats(argv):
    """The numbers of CORESTACK_READ_STATS's line: reads, bytes, small,
    threads, frames and, from builds that tell them, distinct bytes,
    pages, ns to copy them once."""
    res = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, CORESTACK_READ_STATS="1"))
    stats = [l for l in res.stderr.splitlines() if "read stats" in l]
    if not stats:
        return []
    m = re.search(r"(\d+) reads, (\d+) bytes, (\d+) reads of 8 bytes or less; "
                  r"(\d+) threads, (\d+) Ruby frames"
                  r"(?:; (\d+) distinct bytes in (\d+) pages, copied once in (\d+) ns)?",
                  stats[0])
    return [int(x) for x in m.groups() if x is not None] if m else []


def many_threads(corestack, baseline, core, ruby, runs):
    builds = [("new", corestack)] + ([("old", baseline)] if baseline else [])
    startup = {}
    for name, exe in builds:
        startup[name] = statistics.median(run_usage([exe, "--version"])[0]
                                          for _ in range(max(runs, 15)))
    for label, extra in (("with the fiber search", []), ("--no-fibers", ["--no-fibers"])):
        walls = {name: [] for name, _ in builds}
        cpus = {name: [] for name, _ in builds}
        for name, exe in builds:
            subprocess.run([exe] + extra + [core, ruby], stdout=subprocess.DEVNULL)  # cache
        for _ in range(runs):  # the builds in turn
            for name, exe in builds:
                wall, usage = run_usage([exe] + extra + [core, ruby])
                walls[name].append(wall)
                cpus[name].append(usage.ru_utime + usage.ru_stime)
        print("%s:" % label)
        for name, exe in builds:
            nums = read_stats([exe] + extra + [core, ruby])
            print("  %s build: %s (CPU %s)" % (name, fmt_ms(statistics.median(walls[name])),
                                              fmt_ms(statistics.median(cpus[name]))))
            if len(nums) < 5:
                continue
            reads, nbytes, small, threads, frames = nums[:5]
            print("    %d reads, %d bytes asked (%d reads of 8 bytes or less); "
                  "%d threads, %d frames: %.1f reads, %.0f bytes per frame"
                  % (reads, nbytes, small, threads, frames, reads / max(frames, 1),
                     nbytes / max(frames, 1)))
            if len(nums) == 8:
                distinct, pages, touch_ns = nums[5:]
                floor = startup[name] + touch_ns / 1e9
                print("    %d distinct bytes (%.2f reads of each) in %d pages; "
                      "copied once %.2f ms; floor (start-up %s + that) %s"
                      % (distinct, nbytes / max(distinct, 1), pages, touch_ns / 1e6,
                         fmt_ms(startup[name]), fmt_ms(floor)))


if __name__ == "__main__":
    main()
