"""ruby-sample inside gdb on fixtures/profile/shares.rb (gdbext/RUBY/sample),
and the check of a sample's summary and collapsed stacks lldb's test
shares.
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


def sample_test(rep, args, ruby, exe, workdir):
    name = "gdbext/%s/sample" % ruby
    folded = os.path.join(workdir, "sample.folded")
    # It ends 15 s after its start (wall clock): long enough for a slow
    # attach on a loaded machine plus the 2 s of sampling, so that the
    # `continue` after ruby-sample sees it run on to its normal exit.
    with procs.started([exe, SHARES, "15"]) as target:
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
                                                           "GDBEXT_FOLDED": folded}))
        except subprocess.TimeoutExpired:
            rep.result(name, "gdb hung")
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
        rep.result(name, check_sample(data, folded))
