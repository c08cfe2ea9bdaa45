#!/usr/bin/env python3
"""gdbext benchmarks for gdbext/README.md (`make bench-gdbext`). Not a test.

1. (last: the slow part) In one gdb session on one core of the 2.7.4 fixture (threads and deep
   scenarios): `ruby-bt all` (direct read of the core, and --via-debugger)
   against Ruby's own .gdbinit `rb_ps`, wall time of the first call and
   median of the following ones.
2. `ruby-bt all` on a large live process and on its core (3.3: 200
   threads, each 200 Ruby calls deep).
3. `ruby-sample` on fixtures/profile/shares.rb (3.3): time one stack read
   takes, and the achieved rate against 100 and 1000 Hz asked.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench import take_core  # noqa: E402
from harness import procs  # noqa: E402

# Runs inside gdb: times each command, first call and repeats.
TIMING = r'''
import gdb, json, os, statistics, time
gdb.execute("source " + os.environ["GDBEXT_LOADER"])
gdb.execute("source " + os.environ["RUBY_GDBINIT"])
runs = int(os.environ["BENCH_RUNS"])
res = {}
for name, cmd in (("ruby-bt all", "ruby-bt all"),
                  ("ruby-bt --via-debugger all", "ruby-bt --via-debugger all"),
                  ("rb_ps", "rb_ps")):
    times = []
    for i in range((int(os.environ["RB_PS_RUNS"]) if name == "rb_ps" else runs) + 1):
        t0 = time.perf_counter()
        out = gdb.execute(cmd, to_string=True)
        times.append(time.perf_counter() - t0)
    res[name] = {"first": times[0], "median": statistics.median(times[1:] or times),
                 "lines": len(out.splitlines())}
with open(os.environ["BENCH_RESULT"], "w") as f:
    json.dump(res, f)
'''


def gdb_timing(gdbext, gdbinit, ruby, core, runs, rb_ps_runs, tmp):
    script = os.path.join(tmp, "timing.py")
    result = os.path.join(tmp, "timing.json")
    with open(script, "w") as f:
        f.write(TIMING)
    env = procs.quiet_env({"GDBEXT_LOADER": os.path.join(gdbext, "ruby-gdb.py"),
                           "CORESTACK_GDBEXT_DIR": gdbext,
                           "RUBY_GDBINIT": gdbinit, "BENCH_RUNS": str(runs),
                           "RB_PS_RUNS": str(rb_ps_runs),
                           "BENCH_RESULT": result})
    subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", "source " + script, ruby, core],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, timeout=1200, check=False)
    with open(result) as f:
        return json.load(f)


# A large process: many threads, each deep in Ruby calls.
LARGE = r'''
def down(n, q) = n.zero? ? (q << 1; sleep) : [0].each { down(n - 1, q) }
q = Queue.new
THREADS.times { Thread.new { down(DEPTH, q) } }
THREADS.times { q.pop }
File.write(ARGV[0], "ready")
sleep
'''


def large_timing(gdbext, ruby, tmp, threads, depth, runs):
    """ruby-bt all on a live process and on its core: (live, core) seconds."""
    script = os.path.join(tmp, "large.rb")
    ready = os.path.join(tmp, "large.ready")
    with open(script, "w") as f:
        f.write(LARGE.replace("THREADS", str(threads)).replace("DEPTH", str(depth)))
    proc = subprocess.Popen([ruby, script, ready], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if os.path.exists(ready):
                break
            time.sleep(0.1)
        live = gdb_bt_timing(gdbext, ["-p", str(proc.pid)], runs, tmp)
        core = procs.gcore(proc.pid, os.path.join(tmp, "large-core"), 300)
    finally:
        proc.kill()
        proc.wait()
    res = live, gdb_bt_timing(gdbext, [ruby, core], runs, tmp)
    os.unlink(core)
    return res


BT_TIMING = r'''
import gdb, json, os, statistics, time
gdb.execute("source " + os.environ["GDBEXT_LOADER"])
times = []
for i in range(int(os.environ["BENCH_RUNS"])):
    t0 = time.perf_counter()
    out = gdb.execute("ruby-bt all", to_string=True)
    times.append(time.perf_counter() - t0)
with open(os.environ["BENCH_RESULT"], "w") as f:
    json.dump({"first": times[0], "median": statistics.median(times[1:] or times),
               "lines": len(out.splitlines())}, f)
'''


def gdb_bt_timing(gdbext, target, runs, tmp):
    script = os.path.join(tmp, "bt_timing.py")
    result = os.path.join(tmp, "bt_timing.json")
    with open(script, "w") as f:
        f.write(BT_TIMING)
    env = procs.quiet_env({"GDBEXT_LOADER": os.path.join(gdbext, "ruby-gdb.py"),
                           "CORESTACK_GDBEXT_DIR": gdbext, "BENCH_RUNS": str(runs),
                           "BENCH_RESULT": result})
    subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", "source " + script] + target,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env, timeout=1200, check=False)
    with open(result) as f:
        return json.load(f)


def sample(gdbext, ruby, rate, seconds):
    """ruby-sample in gdb on shares.rb -> its last summary line."""
    target = subprocess.Popen([ruby, os.path.join(ROOT, "fixtures", "profile", "shares.rb")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        res = subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex",
                              "source " + os.path.join(gdbext, "ruby-gdb.py"),
                              "-ex", "ruby-sample %g --rate %d" % (seconds, rate),
                              "-p", str(target.pid)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=procs.quiet_env(), timeout=120)
    finally:
        target.kill()
        target.wait()
    m = re.search(r"^(\d+) samples in ([\d.]+) s \((\d+) Hz asked, ([\d.]+) achieved\), "
                  r"(\d+) lost, ([\d.]+) us per stack read", res.stdout, re.M)
    if not m:
        raise SystemExit("bench: no ruby-sample summary: %s" % res.stdout[-500:])
    return m.groups()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gdbext", default=os.path.join(ROOT, "build", "gdbext"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    gdbext = os.path.abspath(args.gdbext)
    cache = procs.fixture_cache()
    with tempfile.TemporaryDirectory() as tmp:
        ruby33 = os.path.join(procs.build_ruby("3.3", "shared", 3600), "bin", "ruby")
        threads, depth = 200, 200
        live, core = large_timing(gdbext, ruby33, tmp, threads, depth, args.runs)
        print("== ruby-bt all on a large process: Ruby 3.3.8, %d threads %d calls deep "
              "(%d lines; first call / median of %d)" % (threads, depth, core["lines"], args.runs))
        print("live (gdb -p)                %9.1f ms / %9.1f ms" % (
            live["first"] * 1e3, live["median"] * 1e3))
        print("core (gdb RUBY CORE)         %9.1f ms / %9.1f ms" % (
            core["first"] * 1e3, core["median"] * 1e3))
        print()
        print("== ruby-sample in gdb on shares.rb (Ruby 3.3.8), 3 s")
        for rate in (100, 1000):
            n, secs, asked, achieved, lost, us = sample(gdbext, ruby33, rate, 3)
            print("%5s Hz asked: %s achieved, %s samples, %s lost, %s us per stack read"
                  % (asked, achieved, n, lost, us))
        print()
        prefix27 = procs.build_ruby("2.7", "shared", 3600)
        ruby27 = os.path.join(prefix27, "bin", "ruby")
        gdbinit = os.path.join(cache, "src", "2.7", ".gdbinit")
        # rb_ps walks a 3000-frame stack in gdb macros for minutes: once.
        for scenario, rb_ps_runs in (("threads.rb", args.runs), ("deep.rb", 0)):
            core = take_core(prefix27, scenario, tmp)
            res = gdb_timing(gdbext, gdbinit, ruby27, core, args.runs, rb_ps_runs, tmp)
            print("== one gdb session on a %s core of Ruby 2.7.4 (first call / median of %d "
                  "more; rb_ps %d more)" % (scenario, args.runs, rb_ps_runs))
            for name in ("ruby-bt all", "ruby-bt --via-debugger all", "rb_ps"):
                r = res[name]
                print("%-28s %9.1f ms / %9.1f ms  (%d lines)"
                      % (name, r["first"] * 1e3, r["median"] * 1e3, r["lines"]))
            rb, bt = res["rb_ps"], res["ruby-bt all"]
            print("rb_ps / ruby-bt all          %8.0fx      / %8.0fx" % (
                rb["first"] / bt["first"], rb["median"] / bt["median"]))
            os.unlink(core)
            print()


if __name__ == "__main__":
    main()
