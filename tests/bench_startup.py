#!/usr/bin/env python3
"""Start-up benchmark (`make bench-startup`, part of `make bench`). Not a test.

How long a run that does next to nothing takes: `corestack --version`, and
`corestack` on a file that does not exist (exit 2 at once), beside
`/bin/true` (the floor: one exec, libc only) and `eu-stack --help`
(elfutils' own tool, on the same libdw). Each command is started with
posix_spawn and reaped with wait4, the commands in turn round after round
so that the host's load falls on all of them alike; printed are the median
wall time from spawn to exit, the median CPU time (user + system, from
wait4) and how many shared objects the dynamic loader loads at start-up
(the program's own list, as `ldd` reads it: LD_TRACE_LOADED_OBJECTS).

With --baseline CORESTACK (a build of an older commit, say), its two runs
are measured in the same rounds and shown beside.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MISSING = "/nonexistent/corestack-bench/core"


def spawn_timed(argv, devnull):
    """Wall and CPU seconds of one run of argv, output discarded."""
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0),
                                       (os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, _, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime


def shared_objects(path):
    """The shared objects the dynamic loader loads for path at start-up
    (ld.so included, the vDSO not)."""
    env = dict(os.environ, LD_TRACE_LOADED_OBJECTS="1")
    out = subprocess.run([path], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, check=False).stdout
    return sum(1 for line in out.splitlines() if "/" in line)


def measure(cases, runs, warmup=20):
    """{name: (median wall, median CPU)}, the cases run in turn, each round
    starting one case further on (a run's time depends a little on which
    ran before it)."""
    walls = {name: [] for name, _ in cases}
    cpus = {name: [] for name, _ in cases}
    with open(os.devnull, "r+b") as null:
        fd = null.fileno()
        for i in range(warmup + runs):
            first = i % len(cases)
            for name, argv in cases[first:] + cases[:first]:
                wall, cpu = spawn_timed(argv, fd)
                if i >= warmup:
                    walls[name].append(wall)
                    cpus[name].append(cpu)
    return {name: (statistics.median(walls[name]), statistics.median(cpus[name]))
            for name, _ in cases}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corestack", default=os.path.join(ROOT, "build", "corestack"))
    ap.add_argument("--baseline", help="another corestack build, measured beside")
    ap.add_argument("--runs", type=int, default=300, help="runs per command (default %(default)s)")
    args = ap.parse_args()

    true = shutil.which("true") and "/bin/true"
    eu_stack = shutil.which("eu-stack")
    builds = [("corestack", os.path.abspath(args.corestack))]
    if args.baseline:
        builds.append(("baseline", os.path.abspath(args.baseline)))
    cases = [("/bin/true", [true])]
    if eu_stack:
        cases.append(("eu-stack --help", [eu_stack, "--help"]))
    for label, path in builds:
        cases.append(("%s --version" % label, [path, "--version"]))
        cases.append(("%s MISSING-FILE" % label, [path, MISSING]))
    for label, path in builds:
        rc = subprocess.run([path, MISSING], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, check=False).returncode
        if rc != 2:
            sys.exit("bench_startup: %s on a missing file exited %d, not 2" % (path, rc))
    objects = {name: shared_objects(argv[0]) for name, argv in cases}

    load_before = os.getloadavg()[0]
    results = measure(cases, args.runs)
    load_after = os.getloadavg()[0]

    floor_wall, floor_cpu = results["/bin/true"]
    print("start-up: median of %d runs each, commands in turn; load %.2f before, %.2f after"
          % (args.runs, load_before, load_after))
    print("%-28s %10s %10s %13s %8s" % ("command", "wall", "CPU", "x true (w/C)",
                                          "objects"))
    for name, argv in cases:
        wall, cpu = results[name]
        print("%-28s %7.2f ms %7.2f ms %6.2f/%5.2fx %8d" % (
            name, wall * 1e3, cpu * 1e3, wall / floor_wall, cpu / floor_cpu, objects[name]))
    print("(MISSING-FILE: %s, exit 2; x true: wall and CPU over /bin/true's; objects: "
          "shared objects loaded at start-up, ld.so included. On a loaded machine\n"
          "the wall times are mostly the scheduler's: compare CPU.)" % MISSING)


if __name__ == "__main__":
    main()
