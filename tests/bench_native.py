#!/usr/bin/env python3
"""Benchmark of --native (issue 5), figures for README.md. Not a test.

    python3 tests/bench_native.py --corestack build/corestack [--runs 7] [--ruby 3.3]

A core of fixtures/profile/threads50.rb (50 threads, each ~25 Ruby frames
deep, parked in Queue#pop; taken with gcore), then, median wall time and
peak memory (max RSS) of: eu-stack --core (native frames only), corestack
(Ruby frames only), corestack --native (both, merged). corestack runs with
its layout cache warm, and once more cold (--no-cache).
"""
import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench import ROOT, fmt_ms, median_of  # noqa: E402
from harness import procs  # noqa: E402


def take_core(ruby_exe, tmp):
    ready = os.path.join(tmp, "ready")
    os.environ["BENCH_READY"] = ready
    sc = procs.Scenario(ruby_exe, os.path.join(ROOT, "fixtures", "profile", "threads50.rb"),
                        os.path.join(tmp, "run"), False)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            if sc.poll() or time.monotonic() > deadline:
                raise SystemExit("bench: threads50.rb did not park: %s" % procs.tail(sc.stderr_path))
            time.sleep(0.05)
        return procs.gcore(sc.pid, os.path.join(tmp, "core"), 120)
    finally:
        sc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corestack", required=True)
    ap.add_argument("--ruby", default="3.3")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    version, _, variant = args.ruby.partition("-")
    prefix = procs.build_ruby(version, variant or "shared", timeout=3600)
    cs = os.path.abspath(args.corestack)
    with tempfile.TemporaryDirectory(prefix="bench-native-") as tmp:
        core = take_core(os.path.join(prefix, "bin", "ruby"), tmp)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        env.pop("DEBUGINFOD_URLS", None)
        median_of([cs, core], 1, env)   # fills the layout cache
        rows = [
            ("eu-stack --core (native only)", ["eu-stack", "--core", core]),
            ("eu-stack -i -s --core (with inlines and file:line)",
             ["eu-stack", "-i", "-s", "--core", core]),
            ("corestack (Ruby only, warm cache)", [cs, core]),
            ("corestack --native (warm cache)", [cs, "--native", core]),
            ("corestack --native --no-cache", [cs, "--native", "--no-cache", core]),
        ]
        print("core: %s, %.0f MB, Ruby %s, median of %d runs" % (
            os.path.basename(core), os.path.getsize(core) / 1e6, args.ruby, args.runs))
        print("| what | time | max RSS |")
        print("|---|---|---|")
        for name, argv in rows:
            wall, rss = median_of(argv, args.runs, env)
            print("| %s | %s | %.1f MiB |" % (name, fmt_ms(wall), rss / 1024))


if __name__ == "__main__":
    main()
