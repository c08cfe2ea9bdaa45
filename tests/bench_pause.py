#!/usr/bin/env python3
"""Reading a large process live, for docs/performance.md (`make bench-pause`).
Not a test.

fixtures/many_threads.rb N heartbeat parks N threads in Queue#pop (0 to 3
calls deep) and runs two threads that tick every millisecond, one created
before the parked ones (the lowest tid: corestack stops it among the first
and resumes it among the first) and one after them (the highest tid: stopped
and resumed among the last). corestack --pid reads the process, paused and
--nonblocking, runs alternating; for each run:

  - wall time and peak memory (max RSS) of corestack;
  - how long each ticking thread was held up: the longest gap between two of
    its ticks during the run (1-2 ms when nothing stops it). A paused read
    stops every thread from its own stop to its own resume, so the two gaps
    bracket how long the process was stopped.

Before the runs, the same gaps over an idle second: what this machine's
scheduling alone gives. Medians and ranges of --runs runs per mode.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import procs  # noqa: E402

FIXTURE = os.path.join(ROOT, "fixtures", "many_threads.rb")
START_TIMEOUT = 600   # seconds for the fixture to park every thread


def more_threads():
    """In the fixture: as many processes/threads as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    resource.setrlimit(resource.RLIMIT_NPROC, (hard, hard))


class Fixture:
    def __init__(self, ruby, count):
        self.proc = subprocess.Popen([ruby, FIXTURE, str(count), "heartbeat"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, preexec_fn=more_threads)
        started = time.monotonic()
        line = self.proc.stdout.readline()   # "ready" once all are parked
        if line.strip() != "ready":
            self.proc.kill()
            raise SystemExit("bench: many_threads.rb %d: %r (exit %s)" % (
                count, line, self.proc.wait()))
        self.started_in = time.monotonic() - started
        self.pid = self.proc.pid

    def gaps(self):
        """Longest tick gaps (first, last thread) in ms since the last call."""
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        parts = self.proc.stdout.readline().split()
        return float(parts[1]), float(parts[2])

    def kernel_threads(self):
        with open("/proc/%d/status" % self.pid) as f:
            return int(next(l for l in f if l.startswith("Threads:")).split()[1])

    def close(self):
        self.proc.kill()
        self.proc.wait()


def read_once(corestack, fix, extra):
    """(wall s, max RSS MiB, gap first ms, gap last ms) of one corestack --pid."""
    fix.gaps()
    started = time.monotonic()
    child = subprocess.Popen([corestack, "--pid", str(fix.pid)] + extra,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    time.sleep(0.05)   # the last ticks after the resume
    first, last = fix.gaps()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("bench: corestack --pid %d %s: exit %d: %s" % (
            fix.pid, " ".join(extra), os.waitstatus_to_exitcode(status), err.decode()[-300:]))
    return wall, usage.ru_maxrss / 1024, first, last


def spread(values, fmt):
    return (fmt + " (" + fmt + "–" + fmt + ")") % (statistics.median(values), min(values),
                                                   max(values))


def bench(corestack, ruby, count, runs):
    fix = Fixture(ruby, count)
    try:
        kernel = fix.kernel_threads()
        fix.gaps()
        time.sleep(1)
        idle = fix.gaps()
        print("\n%d parked threads (%d in the kernel), parked in %.1f s; idle gaps %.1f / %.1f ms"
              % (count, kernel, fix.started_in, idle[0], idle[1]))
        results = {"paused": [], "--nonblocking": []}
        for _ in range(runs):
            for mode in results:
                results[mode].append(read_once(corestack, fix,
                                               [] if mode == "paused" else [mode]))
        print("| mode | wall | max RSS | first thread held | last thread held |")
        print("|---|---|---|---|---|")
        for mode, rows in results.items():
            print("| %s | %s s | %s MiB | %s ms | %s ms |" % (
                mode, spread([r[0] for r in rows], "%.2f"), spread([r[1] for r in rows], "%.0f"),
                spread([r[2] for r in rows], "%.0f"), spread([r[3] for r in rows], "%.0f")))
    finally:
        fix.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corestack", required=True)
    ap.add_argument("--ruby", default="3.3", help="fixture Ruby (default %(default)s)")
    ap.add_argument("--threads", default="10000,20000", help="parked threads, comma-separated")
    ap.add_argument("--runs", type=int, default=5, help="runs per mode and size")
    args = ap.parse_args()
    corestack = os.path.abspath(args.corestack)
    version, _, variant = args.ruby.partition("-")
    ruby = os.path.join(procs.build_ruby(version, variant or "shared", 3600), "bin", "ruby")
    print("load average before: %s" % open("/proc/loadavg").read().split()[0])
    for count in (int(n) for n in args.threads.split(",")):
        bench(corestack, ruby, count, args.runs)


if __name__ == "__main__":
    main()
