"""A target another tracer (a debugger) already holds.

fixtures/scenarios/threads.rb, parked, its threads PTRACE_SEIZEd by a helper
process (as gdb -p would, without stopping them):

    RUBY/traced/live               corestack --pid: exit 2, one line naming the
                                   pid and the tracer's pid
    RUBY/traced/record             corestack record --pid -o FILE: the same, at
                                   once, and FILE not written (before, every
                                   sample was lost and it exited 0 with an
                                   empty profile)
    RUBY/traced/live-nonblocking   corestack --pid --nonblocking reads memory
                                   only, which another tracer does not prevent:
                                   exit 0, the oracle's stacks
    RUBY/traced/record-nonblocking record --pid --nonblocking: exit 0, samples
                                   taken

After each, no thread of the target is left stopped.
"""

import json
import os
import subprocess
import sys

from . import procs, variants
from .checks import check_oracle, check_unusable
from .scenarios import Capture

SCENARIO = "threads"
ORACLE_TIMEOUT = 60
TESTS = ("live", "record", "live-nonblocking", "record-nonblocking")

# Seizes every thread of pid (no stop), says so, holds them until stdin ends.
TRACER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p)
PTRACE_SEIZE = 0x4206
pid = int(sys.argv[1])
for tid in sorted(int(t) for t in os.listdir("/proc/%d/task" % pid)):
    if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
        sys.exit("PTRACE_SEIZE of %d: %s" % (tid, os.strerror(ctypes.get_errno())))
print("seized", flush=True)
sys.stdin.read()
"""


def test_names(ruby):
    return ["%s/traced/%s" % (ruby, t) for t in TESTS]


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(l for l in f if l.startswith("TracerPid:")).split()[1])


def start_tracer(pid):
    tracer = subprocess.Popen([sys.executable, "-c", TRACER, str(pid)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if tracer.stdout.readline().strip() != "seized":
        tracer.kill()
        raise procs.Failure("the tracer helper failed: %s" % tracer.communicate()[1].strip())
    if tracer_of(pid) != tracer.pid:
        tracer.kill()
        raise procs.Failure("pid %d is traced by %d, not by the helper %d" % (
            pid, tracer_of(pid), tracer.pid))
    return tracer


def check_profile(res, path):
    rc, out, err, reason = res
    if reason:
        return reason
    if procs.sanitizer_report(err):
        return "sanitizer report: %s" % procs.sanitizer_report(err)
    if rc != 0:
        return "exit %d, expected 0: %s" % (rc, err.strip()[-300:])
    return procs.profile_has_samples(path)


def one_test(test, corestack, pid, tracer, cap, workdir, timeout):
    refused = r"traced by another tracer, pid %d\b" % tracer
    profile = os.path.join(workdir, "traced-%s.folded" % test)
    if test in ("live", "live-nonblocking"):
        extra = ["--nonblocking"] if test == "live-nonblocking" else []
        res = procs.run_tool([corestack, "--json", "--pid", str(pid)] + extra, timeout)
        if test == "live":
            return check_unusable(res, ["pid %d" % pid], (2,), refused,
                                      "that pid %d traces it" % tracer)
        return check_oracle(res, cap, live=True)
    extra = ["--nonblocking"] if test == "record-nonblocking" else []
    res = procs.run_tool([corestack, "record", "--pid", str(pid), "--duration", "1",
                          "-o", profile] + extra, timeout)
    if test == "record-nonblocking":
        return check_profile(res, profile)
    return check_unusable(res, ["pid %d" % pid], (2,), refused,
                              "that pid %d traces it" % tracer) or (
        "%s was written" % profile if os.path.exists(profile) else None)


def traced_tests(rep, selected, corestack, ruby, exe, workdir, timeout):
    names = [n for n in test_names(ruby) if selected(n)]
    if not names:
        return
    target = tracer = None
    try:
        target = procs.Scenario(exe, os.path.join(procs.SCENARIOS, SCENARIO + ".rb"),
                                os.path.join(workdir, "traced-" + ruby), False,
                                variants.scenario_env(ruby))
        target.wait_oracle(ORACLE_TIMEOUT)
        with open(target.oracle_path) as f:
            oracle = json.load(f)
        cap = Capture(ruby, SCENARIO, None, exe, oracle, None)
        tracer = start_tracer(target.pid)
        for test in TESTS:
            name = "%s/traced/%s" % (ruby, test)
            if name in names:
                reason = one_test(test, corestack, target.pid, tracer.pid, cap,
                                  target.workdir, timeout)
                left = procs.stopped_threads(target.pid)
                rep.result(name, reason or (
                    "threads left stopped: %s" % ", ".join(left) if left else None))
    except (procs.Failure, OSError, ValueError, StopIteration) as exc:
        for n in names:
            rep.result(n, "setup: %s" % exc)
    finally:
        if tracer:
            tracer.kill()
            tracer.wait()
        if target:
            target.kill()
