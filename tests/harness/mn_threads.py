"""M:N threads: Ruby threads parked on no native thread of their own.

    RUBY/mn-threads/oracle   fixtures/scenarios/waits.rb run with
                             RUBY_MN_THREADS=1 (3.3+ schedules its threads M:N;
                             older Rubies ignore it): corestack --json --pid as
                             the oracle, exit 0
    RUBY/mn-threads/native   corestack --native --json --pid: exit 0 (a thread
                             parked off any native thread is no failure to merge),
                             each such thread says off_native and no merge_error,
                             and the Ruby frames are still the oracle's
    RUBY/mn-threads/native-core  the same on a gcore'd core

A thread without a native thread has no tid and no native stack; before,
--native called that a failed merge and exited 1.
"""

import json
import os

from . import compare, procs

SCENARIO = "waits"
ORACLE_TIMEOUT = 60
GCORE_TIMEOUT = 120


def test_names(ruby):
    return ["%s/mn-threads/%s" % (ruby, t) for t in ("oracle", "native", "native-core")]


def check(res, oracle, native):
    rc, out, err, reason = res
    if reason:
        return reason
    san = procs.sanitizer_report(err)
    if san:
        return "sanitizer report: %s" % san
    if rc != 0:
        return "exit %d, expected 0; stderr: %s" % (rc, err.strip()[:300])
    report, why = compare.parse_report(out)
    if why:
        return why
    why = compare.compare_threads(report, oracle)
    if why or not native:
        return why
    for t in report["threads"]:
        if t.get("merge_error"):
            return "thread %s: merge_error %s" % (compare.show(t.get("name")),
                                                  compare.show(t["merge_error"]))
        if t.get("tid") is None and t.get("off_native") is not True:
            return "thread %s has no tid but is not off_native" % compare.show(t.get("name"))
    return None


def mn_tests(rep, selected, corestack, ruby, exe, workdir, timeout):
    names = test_names(ruby)
    if not any(selected(n) for n in names):
        return
    script = os.path.join(procs.SCENARIOS, SCENARIO + ".rb")
    run = None
    try:
        run = procs.Scenario(exe, script, os.path.join(workdir, "mn-" + ruby), False,
                             {"RUBY_MN_THREADS": "1"})
        run.wait_oracle(ORACLE_TIMEOUT)
        with open(run.oracle_path) as f:
            oracle = json.load(f)
        pid = str(run.pid)
        if selected(names[0]):
            rep.result(names[0], check(procs.run_tool([corestack, "--json", "--pid", pid],
                                                      timeout), oracle, False))
        if selected(names[1]):
            rep.result(names[1], check(procs.run_tool(
                [corestack, "--json", "--native", "--pid", pid], timeout), oracle, True))
        if selected(names[2]):
            core = procs.gcore(run.pid, os.path.join(run.workdir, "core"), GCORE_TIMEOUT)
            try:
                rep.result(names[2], check(procs.run_tool(
                    [corestack, "--json", "--native", core, exe], timeout), oracle, True))
            finally:
                os.unlink(core)
    except (procs.Failure, OSError, ValueError) as exc:
        for n in names:
            if selected(n):
                rep.result(n, "setup: %s" % exc)
    finally:
        if run:
            run.kill()
