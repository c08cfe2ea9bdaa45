"""ruby-sample inside gdb on fixtures/profile/shares.rb (gdbext/RUBY/sample,
then gdbext/RUBY/sample-speedscope and gdbext/RUBY/sample-state in the same
session), and the checks of a sample's summary, collapsed stacks and
speedscope file lldb's test shares.

gdbext/RUBY/sample-state: shares.rb's one thread runs Ruby (heavy, light)
but for a moment between turns (File.exist? of its stop file, which
releases the GVL on some Rubies), so `--state blocked` takes samples and
keeps no stack of heavy or light, and `--state running` keeps them.
"""

import json
import os
import re
import subprocess

from . import compare, procs
from .gdbext_gdb import GDB_TIMEOUT, SHARES, gdb_env


# --- ruby-sample ---------------------------------------------------------------

SAMPLE_SCRIPT = r'''
import gdb, json, os
gdb.execute("source " + os.environ["GDBEXT_LOADER"])
pid = gdb.selected_inferior().pid
res = {}
try:
    res["summary"] = gdb.execute("ruby-sample 2 --out " + os.environ["GDBEXT_FOLDED"], to_string=True)
except gdb.error as exc:
    res["error"] = str(exc)
states = []
for tid in os.listdir("/proc/%d/task" % pid):
    with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
        states.append(f.read().rsplit(")", 1)[1].split()[0])
res["states"] = states
res["running"] = [t.num for t in gdb.selected_inferior().threads() if t.is_running()]
try:
    res["speedscope"] = gdb.execute("ruby-sample 0.5 --out %s --format speedscope"
                                    % os.environ["GDBEXT_SPEEDSCOPE"], to_string=True)
except gdb.error as exc:
    res["speedscope"] = "error: %s" % exc
for state in ("blocked", "running"):
    try:
        res["state-" + state] = gdb.execute("ruby-sample 0.3 --state " + state, to_string=True)
    except gdb.error as exc:
        res["state-" + state] = "error: %s" % exc
# Tells the program to end now rather than at its deadline.
open(os.environ["GDBEXT_STOP"], "w").close()
gdb.execute("continue", to_string=True)
res["exitcode"] = int(gdb.parse_and_eval("$_exitcode")) if str(gdb.parse_and_eval("$_exitcode")) != "void" else None
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''


def summary_totals(summary):
    """frame -> total samples, from the summary table."""
    totals = {}
    for line in summary.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+%\s+(\d+)\s+(.*)$", line)
        if m:
            totals[m.group(3)] = int(m.group(2))
    return totals


def check_sample(data, folded):
    if "error" in data:
        return "ruby-sample failed: %s" % data["error"].strip()
    totals = summary_totals(data["summary"])
    heavy, light = totals.get("Object#heavy", 0), totals.get("Object#light", 0)
    if heavy + light < 50 or heavy < 1.5 * light:
        return "summary: Object#heavy %d, Object#light %d samples: heavy does 3x the work" % (
            heavy, light)
    try:
        with open(folded) as f:
            text = f.read()
    except OSError as exc:
        return "no collapsed stacks: %s" % exc
    fh, fl = procs.shares_of(text)
    if (fh, fl) != (heavy, light):
        return "collapsed stacks count heavy %d light %d, the summary %d %d" % (fh, fl, heavy, light)
    if "stopped again" not in data["summary"]:
        return "summary does not say the inferior is stopped again: %s" % compare.show(
            data["summary"][-200:])
    if any(s not in ("t", "T") for s in data["states"]) or data["running"]:
        return "after ruby-sample: thread states %s, gdb running threads %s" % (
            data["states"], data["running"])
    if data.get("exitcode") != 0:
        return "resumed after ruby-sample, the program exited %s, expected 0" % data.get("exitcode")
    return None


def check_speedscope(said, path):
    """ruby-sample --format speedscope said where it wrote a speedscope file
    whose samples name shares.rb's methods, weighed in nanoseconds: the
    time with frames at least ten periods and at most what the summary says
    the sampling lasted (shares.rb has one thread)."""
    if not re.search(r"speedscope profile written to %s\n" % re.escape(path), said):
        return "ruby-sample --format speedscope said: %s" % compare.show(said[-300:])
    try:
        with open(path) as f:
            doc = json.load(f)
        frames = [fr["name"] for fr in doc["shared"]["frames"]]
        names = {frames[i] for prof in doc["profiles"] for stack in prof["samples"]
                 for i in stack}
        units = {prof["unit"] for prof in doc["profiles"]}
        covered = sum(w for prof in doc["profiles"]
                      for stack, w in zip(prof["samples"], prof["weights"]) if stack) / 1e9
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        return "not a speedscope file: %s" % exc
    if not {"Object#heavy", "Object#light"} <= names:
        return "Object#heavy and Object#light not both in the samples: %s" % sorted(names)
    if units != {"nanoseconds"}:
        return "weights in %s, not nanoseconds" % sorted(units)
    reported = re.search(r"(\d+) samples in ([\d.]+) s \((\d+) Hz\)", said)
    if not reported:
        return "no summary: %s" % compare.show(said[:300])
    period = 1 / float(reported.group(3))
    if not 10 * period <= covered <= float(reported.group(2)) + 0.05 + 2 * period:
        return "%.3f s with frames in the file, the summary says %s samples in %s s" % (
            covered, reported.group(1), reported.group(2))
    return None


SUMMARY_COUNTS = re.compile(r"(\d+) samples in .*; (\d+) thread stacks with Ruby frames")


def check_state(data):
    """--state blocked: samples taken, no stack in heavy or light kept;
    --state running: those kept."""
    blocked, running = data.get("state-blocked", ""), data.get("state-running", "")
    m = SUMMARY_COUNTS.search(blocked)
    kept = summary_totals(blocked)
    if not m or int(m.group(1)) < 5 or kept.get("Object#heavy") or kept.get("Object#light"):
        return "--state blocked kept heavy or light, which run Ruby: %s" % compare.show(
            blocked[:300])
    m = SUMMARY_COUNTS.search(running)
    totals = summary_totals(running)
    if not m or int(m.group(2)) < 5 or not (totals.get("Object#heavy") or
                                            totals.get("Object#light")):
        return "--state running kept no stack of heavy or light: %s" % compare.show(
            running[:300])
    return None


def sample_test(rep, args, ruby, exe, workdir, selected):
    name = "gdbext/%s/sample" % ruby
    folded = os.path.join(workdir, "sample.folded")
    speedscope = os.path.join(workdir, "sample.speedscope.json")
    scope_name = "gdbext/%s/sample-speedscope" % ruby
    state_name = "gdbext/%s/sample-state" % ruby
    # It ends when the script creates the stop file after its samples, so
    # that the `continue` after ruby-sample sees it run on to its normal
    # exit; or, should the script never get there, 60 s after its start.
    stop = os.path.join(workdir, "sample.stop")
    if os.path.exists(stop):
        os.unlink(stop)
    with procs.started([exe, SHARES, "60", stop]) as target:
        loader = os.path.join(args.gdbext, "ruby-gdb.py")
        path = os.path.join(workdir, "sample.script.py")
        result = os.path.join(workdir, "sample.result.json")
        with open(path, "w") as f:
            f.write(SAMPLE_SCRIPT)
        try:
            res = subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", "source " + path,
                                  "-p", str(target.pid)], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 timeout=GDB_TIMEOUT,
                                 env=gdb_env(args.gdbext, {"GDBEXT_LOADER": loader,
                                                           "GDBEXT_RESULT": result,
                                                           "GDBEXT_FOLDED": folded,
                                                           "GDBEXT_STOP": stop,
                                                           "GDBEXT_SPEEDSCOPE": speedscope}))
        except subprocess.TimeoutExpired:
            rep.result(name, "gdb hung")
            if selected(scope_name):
                rep.result(scope_name, "gdb hung")
            return
        if procs.sanitizer_report(res.stderr):
            rep.result(name, "sanitizer report: %s" % procs.sanitizer_report(res.stderr))
            return
        try:
            with open(result) as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            rep.result(name, "gdb wrote no result (%s): %s" % (exc, compare.show(res.stderr[-300:])))
            return
        if selected(name):
            rep.result(name, check_sample(data, folded))
        if selected(scope_name):
            rep.result(scope_name, check_speedscope(data.get("speedscope", ""), speedscope))
        if selected(state_name):
            rep.result(state_name, check_state(data))
