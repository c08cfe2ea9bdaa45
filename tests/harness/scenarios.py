"""The scenarios: each program in fixtures/scenarios/ parked, its core taken,
and corestack's reading of it checked against the oracle.

For every fixture Ruby and every scenario, the program runs until all its
threads are parked and fixtures/oracle.rb has written Ruby's own view of
every thread; then a core is taken (gcore, or the kernel's core for the
crash* scenarios):

    RUBY/SCENARIO/capture    the scenario parked, wrote its oracle, and a core exists
    RUBY/SCENARIO/sidecar    fixture self-check: NAME.qualified names frames Ruby reported
    RUBY/SCENARIO/oracle     corestack --json CORE RUBY: exit 0, empty stderr, same
                             threads (name, main, status, tid) and frames (label, path,
                             lineno) as the oracle
    RUBY/SCENARIO/qualified  the same report carries the qualified names of NAME.qualified
    RUBY/SCENARIO/stable-sidecar, RUBY/SCENARIO/stable  the same for NAME.stable and the
                             frames' stable names (docs/names.md)
    RUBY/SCENARIO/text       corestack CORE RUBY: exit 0, every oracle label in the output
    RUBY/SCENARIO/live       corestack --json --pid PID on the parked process: as oracle,
                             and no thread of it left stopped afterwards
    RUBY/SCENARIO/live-nonblocking  the same with --nonblocking

The same captures carry the fiber, thread-state, run-time variant (YJIT, ZJIT,
Ruby::Box) and locals tests (fibers.py, threadstate.py, variants.py, frame_locals.py), and the threads core is what the
corrupt, notes, mutations, stale-pc, frame-reuse and hostile groups patch.
"""

import concurrent.futures
import json
import os
import re
import subprocess
import time

from . import (compare, fibers, frame_locals, locks, procs, ractor_waits, requires, stable_names,
               threadstate, variants)
from .checks import broken_run, check_oracle, first_line, json_report
from .group import ruby_spec


ORACLE_TIMEOUT = 60    # scenario start to oracle file
CRASH_TIMEOUT = 60     # oracle file to the crashed process's exit
GCORE_TIMEOUT = 120


class Capture:
    """A scenario's core with what the oracle said."""

    def __init__(self, ruby, scenario, core, exe, oracle, signal_number):
        self.ruby, self.scenario, self.core, self.exe = ruby, scenario, core, exe
        self.oracle, self.signal_number = oracle, signal_number
        self.live = {}   # "live", "live-nonblocking" -> (run, problem or None)


def scenario_names():
    return sorted(f[:-3] for f in os.listdir(procs.SCENARIOS) if f.endswith(".rb"))


def sidecar_path(scenario, field="qualified"):
    """NAME.qualified / NAME.stable: the names a frame's field must hold."""
    return os.path.join(procs.SCENARIOS, scenario + "." + field)


def scenario_tests(ruby, scenario):
    names = ["capture"]
    if os.path.exists(sidecar_path(scenario)):
        names.append("sidecar")
    names += ["oracle"]
    if os.path.exists(sidecar_path(scenario)):
        names.append("qualified")
    if os.path.exists(sidecar_path(scenario, "stable")):
        names += ["stable-sidecar", "stable"]
    names.append("text")
    if not is_crash(scenario):
        names += ["live", "live-nonblocking"]
    return (["%s/%s/%s" % (ruby, scenario, n) for n in names]
            + fibers.test_names(ruby, scenario)
            + threadstate.test_names(procs.SCENARIOS, ruby, scenario)
            + variants.test_names(ruby, scenario)
            + stable_names.test_names(ruby, scenario)
            + frame_locals.test_names(ruby, scenario)
            + locks.test_names(ruby, scenario)
            + ractor_waits.test_names(ruby, scenario))


def is_crash(scenario):
    return scenario.startswith("crash")


def live_runs(corestack, pid, timeout):
    """corestack --pid on the parked scenario, paused and not; afterwards no
    thread of it may be left stopped. -> {name: (run, problem)}"""
    out = {}
    for name, extra in (("live", []), ("live-nonblocking", ["--nonblocking"])):
        run = procs.run_tool([corestack, "--json", "--pid", str(pid)] + extra, timeout)
        left = procs.stopped_threads(pid)
        out[name] = (run, "threads left stopped: %s" % ", ".join(left) if left else None)
    return out


def capture_all(ruby, exe, scenarios, workdir, keep, corestack=None, timeout=60):
    """Run a Ruby's scenarios side by side, then take their cores one by one.
    -> {scenario: Capture or procs.Failure}"""
    results, running = {}, []
    try:
        for scen in scenarios:
            script = os.path.join(procs.SCENARIOS, scen + ".rb")
            try:
                running.append(procs.Scenario(exe, script, os.path.join(workdir, scen), is_crash(scen),
                                              variants.scenario_env(ruby)))
            except OSError as exc:
                results[scen] = procs.Failure("cannot start %s: %s" % (exe, exc))
        for run in running:
            scen = os.path.basename(run.script)[:-3]
            started = time.monotonic()
            try:
                run.wait_oracle(ORACLE_TIMEOUT)
                try:
                    with open(run.oracle_path) as f:
                        oracle = json.load(f)
                except ValueError as exc:
                    raise procs.Failure("oracle %s is not JSON: %s" % (run.oracle_path, exc))
                signal_number = None
                if run.crash:
                    run.wait_exit(CRASH_TIMEOUT)
                    if not os.WIFSIGNALED(run.status):
                        raise procs.Failure("%s.rb %s instead of dying of a signal; stderr: %s" % (
                            scen, run.describe_exit(), procs.tail(run.stderr_path)))
                    signal_number = os.WTERMSIG(run.status)
                    core = procs.kernel_core(run)
                else:
                    if run.poll():
                        raise procs.Failure("%s.rb %s after writing its oracle; stderr: %s" % (
                            scen, run.describe_exit(), procs.tail(run.stderr_path)))
                    live = live_runs(corestack, run.pid, timeout) if corestack else {}
                    if corestack and frame_locals.test_names(ruby, scen):
                        live["locals-live"] = frame_locals.live_run(corestack, run.pid, timeout,
                                                                    procs.run_tool)
                    if corestack and fibers.test_names(ruby, scen):
                        live["scan-live"] = fibers.live_scan_run(corestack, run.pid, timeout)
                    if run.poll():
                        raise procs.Failure("%s.rb %s after corestack --pid; stderr: %s" % (
                            scen, run.describe_exit(), procs.tail(run.stderr_path)))
                    core = procs.gcore(run.pid, os.path.join(run.workdir, "core"), GCORE_TIMEOUT)
                    if keep:
                        procs.dig_holes(core)
                results[scen] = Capture(ruby, scen, core, exe, oracle, signal_number)
                results[scen].locals = frame_locals.read_records(run.oracle_path)
                if not run.crash:
                    results[scen].live = live
                procs.progress("%s/%s: core %s (%.1f MB, %.1f s)%s" % (
                    ruby, scen, core, os.path.getsize(core) / 1e6, time.monotonic() - started,
                    "; the process was " + run.describe_exit() if run.crash else ""))
            except procs.Failure as exc:
                results[scen] = exc
            finally:
                run.kill()
    finally:
        for run in running:
            run.kill()
    return results


def corestack_runs(corestack, cap, timeout):
    """Both runs of one core: (json_run, text_run), each (rc, out, err, reason)."""
    return (procs.run_tool([corestack, "--json", cap.core, cap.exe], timeout),
            procs.run_tool([corestack, cap.core, cap.exe], timeout))


def check_qualified(run, expectations, oracle, field="qualified"):
    report, reason = json_report(run)
    if reason:
        return reason
    if not isinstance(report.get("threads"), list):
        return "no threads list"
    return compare.check_qualified(expectations, report, oracle, field)


def check_text(run, cap):
    rc, out, err, _ = run
    broken = broken_run(run)
    if broken:
        return broken
    if rc != 0:
        return "exit status %d, expected 0; stderr: %s" % (rc, first_line(err))
    return (compare.check_text(out, cap.oracle) or compare.check_text_stacks(out, cap.oracle)
            or check_fold_words(out, cap.exe))


RUBY_FOLD = {}   # executable -> the line Ruby prints for a deep SystemStackError


def check_fold_words(out, exe):
    """A folded recursion says "... N levels..." as Ruby's own backtrace of
    a SystemStackError does (eval_error.c), which this Ruby is run to show."""
    ours = [l.strip() for l in out.splitlines() if compare.FOLD.match(l.strip())]
    if not ours:
        return None
    if exe not in RUBY_FOLD:
        res = subprocess.run([exe, "-e", "def f; f; end; f"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=120)
        lines = [l.strip() for l in res.stderr.splitlines() if "levels" in l]
        RUBY_FOLD[exe] = lines[0] if lines else None
    theirs = RUBY_FOLD[exe]
    if theirs is None:
        return "Ruby printed no '... N levels...' line for a SystemStackError"
    shape = lambda l: re.sub(r"\d+", "N", compare.FOLD.match(l).group(0).split(" (")[0]) \
        if compare.FOLD.match(l) else l
    if shape(ours[0]) != shape(theirs):
        return "fold line %s is not worded as Ruby's %s" % (compare.show(ours[0]), compare.show(theirs))
    return None


def report_scenario(rep, selected, ruby, scen, cap, runs):
    threadstate.report(rep, selected, procs.SCENARIOS, ruby, scen, cap,
                       runs[0] if runs else None, json_report)
    variants.report(rep, selected, ruby, scen, cap)
    locks.report(rep, selected, ruby, scen, cap, runs, json_report)
    ractor_waits.report(rep, selected, ruby, scen, cap, runs, json_report)
    names = dict((n.rsplit("/", 1)[1], n) for n in scenario_tests(ruby, scen))
    want = lambda key: key in names and selected(names[key])
    if isinstance(cap, procs.Failure):
        for key in ("capture", "sidecar", "oracle", "qualified", "stable-sidecar", "stable",
                    "text"):
            if want(key):
                rep.result(names[key], str(cap) if key == "capture" else "no core: capture failed")
        return
    if want("capture"):
        rep.result(names["capture"], None)
    expectations, sidecar_error = None, None
    if "sidecar" in names:
        expectations, sidecar_error = compare.load_sidecar(sidecar_path(scen))
    if want("sidecar"):
        rep.result(names["sidecar"], sidecar_error
                   or compare.check_sidecar_against_oracle(expectations, cap.oracle))
    if want("oracle"):
        rep.result(names["oracle"], check_oracle(runs[0], cap))
    if want("qualified"):
        rep.result(names["qualified"], sidecar_error or check_qualified(runs[0], expectations, cap.oracle))
    if "stable" in names:
        stable, stable_error = compare.load_sidecar(sidecar_path(scen, "stable"))
        if want("stable-sidecar"):
            rep.result(names["stable-sidecar"], stable_error
                       or compare.check_sidecar_against_oracle(stable, cap.oracle))
        if want("stable"):
            rep.result(names["stable"], stable_error
                       or check_qualified(runs[0], stable, cap.oracle, "stable"))
    if want("text"):
        rep.result(names["text"], check_text(runs[1], cap))
    for key in ("live", "live-nonblocking"):
        if want(key):
            if key not in cap.live:
                rep.result(names[key], "corestack --pid did not run")
                continue
            run, problem = cap.live[key]
            rep.result(names[key], check_oracle(run, cap, live=True) or problem)


# --- the group ------------------------------------------------------------------

def names(ctx):
    return [n for r in ctx.rubies for s in ctx.scenarios for n in scenario_tests(r, s)]


def plan(ctx):
    """ruby -> the scenarios whose cores are taken: those a selected test
    or another group's cores() needs, less those the Ruby lacks a feature
    for (their tests SKIP)."""
    plan = {r: [s for s in ctx.scenarios
                if ctx.any_selected(scenario_tests(r, s)) or (r, s) in ctx.cores]
            for r in ctx.rubies}
    for r in ctx.rubies:
        for s in list(plan[r]):
            why = requires.missing(os.path.join(procs.SCENARIOS, s + ".rb"), ruby_spec(r)[0])
            if why:
                plan[r].remove(s)
                for t in scenario_tests(r, s):
                    if ctx.selected(t):
                        ctx.rep.skip(t, why)
    return plan


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.plan[r]}


def patient_result(future):
    """future.result(), waking up often: signals only reach Python code in
    the main thread, and a worker thread may be the one that caught them."""
    while not future.done():
        concurrent.futures.wait([future], timeout=0.2)
    return future.result()


def run_tests(ctx):
    """Ruby by Ruby: the Ruby built (every one ctx.build holds, with or
    without scenarios), its planned scenarios' cores taken and checked."""
    args, rep, selected = ctx.args, ctx.rep, ctx.selected
    for ruby in ctx.rubies:
        if ruby not in ctx.build:
            continue
        t0 = time.monotonic()
        procs.progress("%s: fixture Ruby" % ruby)
        if ctx.build_ruby(ruby) is None or not ctx.plan[ruby]:
            continue
        exe = ctx.exe(ruby)
        rwork = os.path.join(ctx.workdir, ruby)
        results = capture_all(ruby, exe, ctx.plan[ruby], rwork, bool(args.keep),
                              args.corestack, args.timeout)
        for scen, cap in results.items():
            ctx.captures[(ruby, scen)] = cap
        t1 = time.monotonic()
        procs.progress("%s: cores taken in %.1f s" % (ruby, t1 - t0))
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futures = {scen: pool.submit(corestack_runs, args.corestack, cap, args.timeout)
                       for scen, cap in results.items() if isinstance(cap, Capture)}
            try:
                for scen in ctx.plan[ruby]:
                    runs = patient_result(futures[scen]) if scen in futures else None
                    report_scenario(rep, selected, ruby, scen, results[scen], runs)
                    fibers.report(rep, selected, ruby, scen, results[scen], runs,
                                  args.corestack, args.timeout, json_report)
                    locks.report_debug_info(rep, selected, ruby, scen, results[scen],
                                            args.corestack, args.timeout, rwork)
                    stable_names.report(rep, selected, ruby, scen, results[scen], runs,
                                        args.corestack, args.timeout,
                                        variants.scenario_env(ruby), rwork)
                    frame_locals.report(rep, selected, ruby, scen, results[scen],
                                        args.corestack, args.timeout, procs.run_tool,
                                        json_report)
            except BaseException:   # ^C or SIGTERM: do not wait for the pool
                for future in futures.values():
                    future.cancel()
                procs.kill_live()
                raise
        procs.progress("%s: corestack checked in %.1f s" % (ruby, time.monotonic() - t1))
        if not args.keep:   # gcore writes every mapping out: free the disk early
            for scen, cap in results.items():
                if isinstance(cap, Capture) and (ruby, scen) not in ctx.cores \
                        and (ruby, scen) != ("3.3-static", "threads"):
                    os.unlink(cap.core)
