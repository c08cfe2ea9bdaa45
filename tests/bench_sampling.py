#!/usr/bin/env python3
"""Sampling benchmarks for README.md (`make bench-sampling`). Not a test.

All on fixtures/profile/deep50.rb (CPU-bound work under a 50-frame Ruby
stack) and the 3.3 fixture Ruby, with `corestack record`.

1. Cost of one sample: record --pid on the running program, paused and
   --nonblocking, at 100 and 1000 Hz; record itself reports the mean wall
   and CPU time per sample and the rate reached. Several runs each, run
   alternately; the median and the range are printed. Beside them the
   floor: the time a sample spent in the system calls that copied the
   process's bytes (CORESTACK_READ_STATS), how many calls and bytes.
   Then the kernel's floor at each rate: the ranges one sample read
   (CORESTACK_READ_LOG) read again from the same process in one
   process_vm_readv a tick, nothing decoded (tests/bench/read_floor.c,
   --read-floor), and a sample's decoding alone (its CPU time less its
   reads).
2. Cost to the sampled program, measured in one run of it: the program
   prints when each round of its fixed work started and ended; a recorder
   is attached for a window, then none for a window, alternating nonblocking
   and paused recorders with windows of no recorder between them. A
   round's time counts for its window's mode. This machine runs the same
   round in about 11 ms or about 22 ms, switching every few hundred
   milliseconds to seconds (the host's load; no steal time is reported),
   which swamps a few percent in any mean or whole-run time; so the rounds
   of the fast state (see FAST_STATE) are compared across modes. Rounds in
   the first quarter second of a window are left out: there corestack
   starts, attaches and decodes every frame once.
3. The same cost over whole runs: fixed work timed by the program itself,
   alone and under record (`-- command`), runs alternating.

With --baseline CORESTACK (an older build), part 1 runs every case with
both, alternately, and prints the difference of the medians: what the
change between the two builds costs or saves a sample.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import procs  # noqa: E402

SCRIPT = os.path.join(ROOT, "fixtures", "profile", "deep50.rb")
RECORD_LINE = re.compile(r"(\d+) samples in [\d.]+ s \([\d.]+ Hz asked, ([\d.]+) achieved\), "
                         r"(\d+) lost(?:, \d+ with no Ruby thread)?, ([\d.]+) us per sample "
                         r"\(([\d.]+) us of CPU\)")
# CORESTACK_READ_STATS: the samples' reads of the process (the floor)
READS_LINE = re.compile(r"a sample: ([\d.]+) calls, (\d+) bytes, ([\d.]+) us in them")
# and the same after the first sample, which decodes every frame once
LATER_LINE = re.compile(r"the first sample ([\d.]+) us \(([\d.]+) us of CPU\); after it, a sample: "
                        r"([\d.]+) us \(([\d.]+) us of CPU\), ([\d.]+) calls, (\d+) bytes, "
                        r"([\d.]+) us in them")
SETTLE = 0.25   # seconds at the start of a window not counted
FAST_STATE = 1.25


def record(corestack, args, read_log=None):
    """(samples, achieved Hz, lost, wall us, cpu us) from record's summary
    line, and from a build that tells them (CORESTACK_READ_STATS) a
    sample's system calls reading the process, bytes read and us in them
    (else None for each). With read_log, the ranges one sample read are
    written there."""
    env = dict(os.environ, CORESTACK_READ_STATS="1")
    if read_log:
        env["CORESTACK_READ_LOG"] = read_log
    res = subprocess.run([corestack, "record", "-o", os.devnull] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    m = RECORD_LINE.search(res.stderr)
    if res.returncode != 0 or not m:
        raise SystemExit("bench: record %s: exit %d: %s" % (" ".join(args), res.returncode,
                                                           res.stderr.strip()[-300:]))
    r = READS_LINE.search(res.stderr)
    reads = (float(r.group(1)), int(r.group(2)), float(r.group(3))) if r else (None,) * 3
    later = LATER_LINE.search(res.stderr)
    later = tuple(float(g) for g in later.groups()) if later else (None,) * 7
    return (int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4)),
            float(m.group(5))) + reads + later


def spread(values, fmt):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(values), min(values),
                                                   max(values))


class Target:
    """deep50.rb forever, its rounds collected as (start, end) as they end."""

    def __init__(self, ruby):
        self.proc = subprocess.Popen([ruby, SCRIPT, "forever"], stdout=subprocess.PIPE,
                                     text=True)
        self.rounds = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = line.split()
            if len(parts) == 2:
                self.rounds.append((float(parts[0]), float(parts[1])))

    def within(self, start, end):
        return [e - s for s, e in self.rounds if s >= start and e <= end]

    def stop(self):
        self.proc.kill()
        self.proc.wait()


FLOOR_LINE = re.compile(r"median ([\d.]+) us \(min ([\d.]+), max ([\d.]+)\)")


def read_floor(tool, corestack, pid, rate, seconds, runs):
    """The kernel's floor at rate: one call a tick reading what one
    nonblocking sample read; [(median us, ranges, bytes, pages)] a run."""
    out = []
    log = os.path.join("/tmp", "corestack-read-floor-%d.txt" % os.getpid())
    try:
        for _ in range(runs):
            record(corestack, ["--pid", str(pid), "--rate", str(rate), "--duration", "1",
                               "--nonblocking"], read_log=log)
            if not os.path.exists(log):
                return []
            res = subprocess.run([tool, str(pid), str(rate), str(seconds), log],
                                 stdout=subprocess.PIPE, text=True)
            m = FLOOR_LINE.search(res.stdout)
            shape = re.search(r"of (\d+) ranges, (\d+) bytes in (\d+) pages", res.stdout)
            if res.returncode != 0 or not m or not shape or " 0 failed" not in res.stdout:
                raise SystemExit("bench: read floor: %s" % res.stdout.strip())
            out.append((float(m.group(1)),) + tuple(int(g) for g in shape.groups()))
    finally:
        if os.path.exists(log):
            os.unlink(log)
    return out


def sample_cost(corestack, ruby, runs, seconds, baseline=None, floor_tool=None):
    target = Target(ruby)
    builds = [("", corestack)] + ([("baseline ", baseline)] if baseline else [])
    try:
        time.sleep(1)
        results = {}
        for _ in range(runs):
            for mode in ("nonblocking", "paused"):
                for rate in (100, 1000):
                    args = ["--pid", str(target.proc.pid), "--rate", str(rate),
                            "--duration", str(seconds)]
                    if mode == "nonblocking":
                        args.append("--nonblocking")
                    for which, exe in builds:
                        results.setdefault((which + mode, rate), []).append(
                            record(exe, args))
        floors = {}
        if floor_tool:
            for rate in (100, 1000):
                floors[rate] = read_floor(floor_tool, corestack, target.proc.pid, rate,
                                          seconds, runs)
    finally:
        target.stop()
    print("== one sample of a 50-frame stack (deep50.rb, %d runs of %g s each, median (range))"
          % (runs, seconds))
    print("%-12s %5s  %-24s %-24s %-18s %-7s %s" % (
        "mode", "rate", "wall us/sample", "CPU us/sample", "rate reached", "lost",
        "floor: in the reads us/sample (calls, bytes)"))
    for (mode, rate), rs in sorted(results.items()):
        lost = sum(r[2] for r in rs) / max(1, sum(r[0] + r[2] for r in rs))
        floor = ""
        if all(r[7] is not None for r in rs):
            floor = "%s (%.1f, %d)" % (spread([r[7] for r in rs], "%.1f"),
                                       statistics.median(r[5] for r in rs),
                                       statistics.median(r[6] for r in rs))
        print("%-12s %5d  %-24s %-24s %-18s %-7s %s" % (
            mode, rate, spread([r[3] for r in rs], "%.1f"), spread([r[4] for r in rs], "%.1f"),
            spread([r[1] for r in rs], "%.0f"), "%.2f%%" % (100 * lost), floor))
    later = [(k, rs) for k, rs in sorted(results.items()) if all(r[8] is not None for r in rs)]
    if later:
        print("the same after each run's first sample (which decodes every frame once):")
        print("%-12s %5s  %-24s %-24s %-24s %s" % (
            "mode", "rate", "wall us/sample", "CPU us/sample", "in the reads us/sample",
            "calls, bytes; the first sample's CPU us"))
    for (mode, rate), rs in later:
        print("%-12s %5d  %-24s %-24s %-24s %.1f, %d; %s" % (
            mode, rate, spread([r[10] for r in rs], "%.1f"), spread([r[11] for r in rs], "%.1f"),
            spread([r[14] for r in rs], "%.1f"), statistics.median(r[12] for r in rs),
            statistics.median(r[13] for r in rs), spread([r[9] for r in rs], "%.0f")))
    for rate, fl in sorted(floors.items()):
        if not fl:
            continue
        rs = [r for r in results[("nonblocking", rate)] if r[8] is not None]
        print("floor at %4d Hz: one call of what a sample read (%d ranges, %d bytes, "
              "%d pages): %s us; a nonblocking sample's CPU less its reads, after the "
              "first: %s us"
              % (rate, statistics.median(f[1] for f in fl), statistics.median(f[2] for f in fl),
                 statistics.median(f[3] for f in fl), spread([f[0] for f in fl], "%.1f"),
                 spread([r[11] - r[14] for r in rs], "%.1f") if rs else "-"))
    if baseline:
        print("this build against the baseline (median minus the baseline's median), "
              "wall / CPU us a sample:")
        for mode in ("nonblocking", "paused"):
            for rate in (100, 1000):
                new, old = results[(mode, rate)], results[("baseline " + mode, rate)]
                print("%-12s %5d  %+.1f / %+.1f" % (
                    mode, rate,
                    statistics.median(r[3] for r in new) - statistics.median(r[3] for r in old),
                    statistics.median(r[4] for r in new) - statistics.median(r[4] for r in old)))


def in_run_overhead(corestack, ruby, pairs, window):
    """Windows alternate: none, nonblocking, none, paused, none, ..."""
    target = Target(ruby)
    windows = []   # (mode, start, end, lost fraction)
    try:
        time.sleep(1.5)
        for i in range(2 * pairs):
            mode = "nonblocking" if i % 2 == 0 else "paused"
            start = time.monotonic()
            time.sleep(window)
            windows.append(("none", start, time.monotonic(), 0))
            args = ["--pid", str(target.proc.pid), "--rate", "100", "--duration", str(window)]
            if mode == "nonblocking":
                args.append("--nonblocking")
            start = time.monotonic()
            samples, _, lost = record(corestack, args)[:3]
            windows.append((mode, start, time.monotonic(), lost / max(1, samples + lost)))
        start = time.monotonic()
        time.sleep(window)
        windows.append(("none", start, time.monotonic(), 0))
        time.sleep(0.1)   # the last rounds reach the reader
    finally:
        target.stop()
    rounds = {"none": [], "nonblocking": [], "paused": []}
    lost = {"nonblocking": [], "paused": []}
    for mode, start, end, lf in windows:
        rounds[mode] += target.within(start + SETTLE, end)
        if mode != "none":
            lost[mode].append(lf)
    # This machine runs a round in one of two states, minutes or
    # milliseconds long, about 2x apart (the host's other load; no steal
    # time is reported). Rounds of the fast state, up to FAST_STATE times
    # the fastest few percent of the unrecorded ones, are compared.
    quick = sorted(rounds["none"])[len(rounds["none"]) // 20]
    limit = FAST_STATE * quick
    fast = {m: [r for r in rs if r <= limit] for m, rs in rounds.items()}
    base = statistics.median(fast["none"])
    print()
    print("== cost to the program, in one run: record at 100 Hz in %g s windows, "
          "%d per mode, between windows without" % (window, pairs))
    print("rounds without a recorder: %d, median %.2f ms; %d%% in the fast state "
          "(<= %.2f ms), median %.2f ms there"
          % (len(rounds["none"]), 1000 * statistics.median(rounds["none"]),
             100 * len(fast["none"]) // max(1, len(rounds["none"])), 1000 * limit, 1000 * base))
    for mode in ("nonblocking", "paused"):
        if not fast[mode]:
            print("%-12s no rounds in the fast state" % mode)
            continue
        t = statistics.median(fast[mode])
        every = statistics.mean(rounds[mode]) / statistics.mean(rounds["none"]) - 1
        print("%-12s %d rounds, %d%% fast, median %.2f ms there: %+.2f%% "
              "(all rounds' mean: %+.1f%%); %.2f%% samples lost"
              % (mode, len(rounds[mode]), 100 * len(fast[mode]) // max(1, len(rounds[mode])),
                 1000 * t, 100 * (t / base - 1), 100 * every, 100 * statistics.mean(lost[mode])))


def whole_run_overhead(corestack, ruby, rounds, runs):
    """Run time of fixed work under record at 100 Hz against without, each
    measured by the program itself; runs alternate so drift hits all."""
    modes = {"alone": [], "nonblocking": [], "paused": []}
    lost = {"nonblocking": [], "paused": []}
    for _ in range(runs):
        for mode in modes:
            argv = [ruby, SCRIPT, str(rounds)]
            if mode != "alone":
                argv = [corestack, "record", "--rate", "100", "-o", os.devnull] + \
                    (["--nonblocking"] if mode == "nonblocking" else []) + ["--"] + argv
            res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            modes[mode].append(float(res.stdout.strip().splitlines()[-1]))
            m = RECORD_LINE.search(res.stderr)
            if mode != "alone" and m:
                lost[mode].append(int(m.group(3)) / max(1, int(m.group(1)) + int(m.group(3))))
    base, base_min = statistics.median(modes["alone"]), min(modes["alone"])
    print()
    print("== cost to the program over whole runs: %d rounds, %d runs each, alternating"
          % (rounds, runs))
    print("alone                median %.3f s, fastest %.3f s" % (base, base_min))
    for mode in ("nonblocking", "paused"):
        t, t_min = statistics.median(modes[mode]), min(modes[mode])
        print("record %-12s  median %.3f s (%+.1f%%), fastest %.3f s (%+.1f%%), "
              "%.2f%% samples lost"
              % (mode, t, 100 * (t / base - 1), t_min, 100 * (t_min / base_min - 1),
                 100 * statistics.mean(lost[mode] or [0])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corestack", required=True)
    ap.add_argument("--runs", type=int, default=5, help="runs per sample-cost case")
    ap.add_argument("--pairs", type=int, default=20, help="recorded windows per mode")
    ap.add_argument("--window", type=float, default=1.5, help="seconds per window")
    ap.add_argument("--whole-runs", type=int, default=11, help="whole runs per mode (0: none)")
    ap.add_argument("--baseline", help="a corestack to compare one sample's cost with")
    ap.add_argument("--sample-cost-only", action="store_true", help="part 1 only")
    ap.add_argument("--read-floor", default=os.path.join(ROOT, "build", "bench-read-floor"),
                    help="tests/bench/read_floor.c built (make build/bench-read-floor); "
                    "no floor when it is missing")
    args = ap.parse_args()
    corestack = os.path.abspath(args.corestack)
    ruby = os.path.join(procs.build_ruby("3.3", "shared", 3600), "bin", "ruby")
    print("load average before: %s" % open("/proc/loadavg").read().split()[0])
    sample_cost(corestack, ruby, args.runs, 2,
                os.path.abspath(args.baseline) if args.baseline else None,
                args.read_floor if os.path.exists(args.read_floor) else None)
    if args.sample_cost_only:
        return
    in_run_overhead(corestack, ruby, args.pairs, args.window)
    if args.whole_runs:
        whole_run_overhead(corestack, ruby, 100, args.whole_runs)


if __name__ == "__main__":
    main()
