"""Stable names across processes (docs/names.md).

    RUBY/rules/stable-across-processes  rules.rb run again in a second process
        that runs GC.compact first; corestack --json --pid on it gives every
        thread the same stable names, frame for frame, as the first process's
        core, and no stable name holds an address
"""

import os
import re

from . import procs
from .checks import json_report

SCENARIO = "rules"
ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")


def test_names(ruby, scenario):
    return ["%s/%s/stable-across-processes" % (ruby, SCENARIO)] if scenario == SCENARIO else []


def stacks(report):
    """Each thread's stable names, innermost first, but the oracle's own
    thread; sorted, as two processes may list their threads apart."""
    out = []
    for thread in report.get("threads") or []:
        if thread.get("name") == "corestack-oracle":
            continue
        out.append(tuple(f.get("stable") for f in thread.get("frames") or []))
    return sorted(out, key=repr)


def with_address(report):
    for thread in report.get("threads") or []:
        for frame in thread.get("frames") or []:
            name = frame.get("stable")
            if isinstance(name, str) and ADDRESS.search(name):
                return name
    return None


def compacted_report(corestack, exe, workdir, env, timeout):
    """(report, reason): rules.rb run with CORESTACK_COMPACT, read live."""
    run = procs.Scenario(exe, os.path.join(procs.SCENARIOS, SCENARIO + ".rb"), workdir, False,
                         dict(env or {}, CORESTACK_COMPACT="1"))
    try:
        run.wait_oracle(60)
        return json_report(procs.run_tool([corestack, "--json", "--pid", str(run.pid)], timeout))
    except procs.Failure as exc:
        return None, str(exc)
    finally:
        run.kill()


def check(first, second):
    if not stacks(first):
        return "the first process shows no thread"
    for report in (first, second):
        name = with_address(report)
        if name:
            return "stable name with an address: %s" % name
    a, b = stacks(first), stacks(second)
    if a != b:
        only = sorted(set(a) ^ set(b), key=repr)[:2]
        return "the two processes' stable names differ, e.g. %r" % (only,)
    return None


def report(rep, selected, ruby, scenario, cap, runs, corestack, timeout, env, workdir):
    for name in test_names(ruby, scenario):
        if not selected(name):
            continue
        if isinstance(cap, procs.Failure) or not runs:
            rep.result(name, "no core: capture failed")
            continue
        first, reason = json_report(runs[0])
        if reason:
            rep.result(name, "first process: " + reason)
            continue
        second, reason = compacted_report(corestack, cap.exe, os.path.join(workdir, "compacted"),
                                          env, timeout)
        rep.result(name, ("second process: " + reason) if reason else check(first, second))
