#!/usr/bin/env python3
"""What a recorder does to a program with GVL contention (not a test).

    python3 tests/bench_contention.py --corestack build/corestack [--ruby 3.3]
                                      [--windows 6] [--window 3]

fixtures/profile/contention.rb runs one CPU-bound thread beside threads
that sleep, wait on a pipe and wait on a queue, and prints every second how
many rounds each finished. One run of it; recorders at 100 Hz are attached
in windows, paused and --nonblocking in turn, with windows of no recorder
between them. For each thread and mode: its rounds per second over all the
seconds of that mode, and the ratio to the unrecorded rate. A paused sampler that
stops the program's timer thread (Ruby 3.3+) or otherwise upsets the GVL
hand-off shows here as waiting threads that stop progressing.
"""
import argparse
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import procs  # noqa: E402

SCRIPT = os.path.join(ROOT, "fixtures", "profile", "contention.rb")
LINE = re.compile(r"progress (.*)")
KINDS = ("cpu", "sleep", "io", "queue")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corestack", required=True)
    ap.add_argument("--ruby", default="3.3", help="fixture Ruby (default %(default)s)")
    ap.add_argument("--windows", type=int, default=6, help="windows per recorder mode")
    ap.add_argument("--window", type=float, default=3.0, help="seconds per window")
    args = ap.parse_args()
    version, _, variant = args.ruby.partition("-")
    ruby = os.path.join(procs.build_ruby(version, variant or "shared", 3600), "bin", "ruby")
    proc = subprocess.Popen([ruby, SCRIPT], stdout=subprocess.PIPE, text=True)
    mode = ["none"]
    seen = []   # (mode, {kind: count})

    def reader():
        for line in proc.stdout:
            m = LINE.match(line)
            if m:
                counts = dict(kv.split("=") for kv in m.group(1).split())
                seen.append((mode[0], {k: int(counts.get(k, 0)) for k in KINDS}))

    threading.Thread(target=reader, daemon=True).start()
    try:
        time.sleep(2)
        for _ in range(args.windows):
            for rec in ("paused", "nonblocking"):
                mode[0] = "none"
                time.sleep(args.window)
                mode[0] = rec
                extra = ["--nonblocking"] if rec == "nonblocking" else []
                subprocess.run([args.corestack, "record", "--pid", str(proc.pid), "--rate", "100",
                                "--duration", str(args.window), "-o", os.devnull] + extra,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                mode[0] = "switch"   # the second the recorder left in is not counted
                time.sleep(1.2)
    finally:
        proc.kill()
        proc.wait()
    # A second that began under another mode is left out: the first line
    # printed in a mode may hold the end of the previous one.
    rows, prev = {}, None
    for m, counts in seen:
        if m == prev and m != "switch":
            rows.setdefault(m, []).append(counts)
        prev = m
    def rate(m, k):
        return sum(c[k] for c in rows.get(m, [])) / max(1, len(rows.get(m, [])))

    print("rounds per second over %s seconds (ratio to no recorder)" %
          ", ".join("%d %s" % (len(rows.get(m, [])), m) for m in ("none", "paused", "nonblocking")))
    print("%-12s" % "mode" + "".join("%18s" % k for k in KINDS))
    for m in ("none", "paused", "nonblocking"):
        cells = ["%9.1f (%5.1f%%)" % (rate(m, k), 100.0 * rate(m, k) / rate("none", k)
                                       if rate("none", k) else 0) for k in KINDS]
        print("%-12s" % m + "".join("%18s" % c for c in cells))

if __name__ == "__main__":
    main()
