#!/usr/bin/env python3
"""The long mutation run: tests/harness/mutations.py with many seeds.

    python3 tests/mutate.py --corestack build/corestack-san [--count 1000]
                            [--rubies 2.7,3.4]

Each class (frame-word, list, registers, notes, truncated) gets COUNT seeded
mutations of every fixture Ruby's threads core; a class line says how many
runs were wrong and shows the first few (seed, what was changed, why). The
suite (make test) runs the same with a dozen seeds per class.
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corestack", required=True)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--rubies", default=None)
    args = ap.parse_args()
    cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "run.py"),
           "--corestack", args.corestack, "-k", "/mutations/", "--mutations", str(args.count),
           "--timeout", "120"]
    if args.rubies:
        cmd += ["--rubies", args.rubies]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
