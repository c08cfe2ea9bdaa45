"""Thread state, wait reasons and ractors against what the program says.

A scenario NAME.rb may have a NAME.threadstate sidecar, written by hand
from the program (never from corestack's output), one line per thread of
the scenario, tab-separated:

    path<TAB>lineno<TAB>state<TAB>waiting_on[<TAB>ractor]

The thread is the one whose backtrace (the oracle's) has a frame at
path:lineno (path: the basename, or an fnmatch pattern); exactly one
thread must. state is corestack's "state" ("sleeping_forever" ...),
waiting_on the "waiting_on.kind" or "-" for none; ractor, when given, is
"ID" or "ID:NAME" of the thread's ractor. Every thread the oracle reports
must be named by one line.

    RUBY/NAME/threadstate-sidecar  each line names exactly one oracle thread,
                                   every oracle thread is named, and its state is
                                   the one Thread#inspect showed (sleep_forever)
    RUBY/NAME/threadstate          corestack --json gives each thread that state
                                   (and Thread#inspect's), wait reason, blocking
                                   region flag (BLOCKING_REGION) and ractor;
                                   and each fiber the oracle recorded (ractors.rb:
                                   one suspended in a second ractor, whose object
                                   space is its own where ractors have one) under
                                   its thread with Ruby's status and stack
"""

import fnmatch
import os

from . import compare

STATES = ("runnable", "sleeping", "sleeping_forever", "aborting", "dead")
# Thread#inspect's status (the oracle's status_detail) for each state.
DETAIL_OF = {"runnable": "run", "sleeping": "sleep", "sleeping_forever": "sleep_forever",
             "aborting": "aborting", "dead": "dead"}
WAITS = ("mutex", "queue", "sized_queue", "condition_variable", "sleep",
         "thread_join", "thread_stop", "io", "process_wait", "ractor")
# Whether a thread waiting so is in a blocking region (GVL released), from
# CRuby's thread.c and io.c (2.7 to 3.3): Ruby's own sleeps go through
# native_sleep, never BLOCKING_REGION; waiting for an fd does (read(2), or
# ppoll on a non-blocking pipe). Process.wait differs by version (2.7 may
# sleep on SIGCHLD instead): not checked.
BLOCKING_REGION = {"mutex": False, "queue": False, "sized_queue": False,
                   "condition_variable": False, "sleep": False, "thread_join": False,
                   "thread_stop": False, "io": True}


def sidecar_path(scenarios_dir, scenario):
    return os.path.join(scenarios_dir, scenario + ".threadstate")


def test_names(scenarios_dir, ruby, scenario):
    if not os.path.exists(sidecar_path(scenarios_dir, scenario)):
        return []
    return ["%s/%s/threadstate-sidecar" % (ruby, scenario),
            "%s/%s/threadstate" % (ruby, scenario)]


class Line:
    def __init__(self, where, path, lineno, state, wait, ractor):
        self.where, self.path, self.lineno = where, path, lineno
        self.state, self.wait, self.ractor = state, wait, ractor

    def has_frame(self, thread):
        for f in thread.get("frames", []):
            path = f.get("path")
            if isinstance(path, str) and str(f.get("lineno")) == self.lineno and (
                    fnmatch.fnmatchcase(os.path.basename(path), self.path)
                    or fnmatch.fnmatchcase(path, self.path)):
                return True
        return False


def load(path):
    """-> (list of Line, None) or (None, reason)."""
    lines = []
    for number, text, cols in compare.sidecar_rows(path):
        where = "%s:%d" % (os.path.basename(path), number)
        if len(cols) not in (4, 5) or not all(cols):
            return None, "%s: not 4 or 5 tab-separated columns: %s" % (where, compare.show(text))
        if cols[2] not in STATES:
            return None, "%s: unknown state %s" % (where, compare.show(cols[2]))
        if cols[3] != "-" and cols[3] not in WAITS:
            return None, "%s: unknown wait %s" % (where, compare.show(cols[3]))
        lines.append(Line(where, cols[0], cols[1], cols[2],
                          None if cols[3] == "-" else cols[3],
                          cols[4] if len(cols) == 5 else None))
    return lines, None


def assign(lines, threads):
    """Each line's thread index in threads -> (list, None) or (None, reason)."""
    out = []
    for line in lines:
        hits = [i for i, t in enumerate(threads) if line.has_frame(t)]
        if len(hits) != 1:
            return None, "%s: %s:%s is in %d threads' backtraces, expected 1" % (
                line.where, line.path, line.lineno, len(hits))
        out.append(hits[0])
    return out, None


def check_sidecar(lines, oracle):
    threads = compare.scenario_threads(oracle["threads"])
    index, reason = assign(lines, threads)
    if reason:
        return reason
    for i, t in enumerate(threads):
        if i not in index:
            return "%s names no line for it (frames: %s)" % (
                compare.thread_title(i, t), compare.show(t.get("frames", [])[:2]))
    for line, i in zip(lines, index):
        if threads[i].get("status_detail") != DETAIL_OF[line.state]:
            return "%s: state %s, but Thread#inspect said %s" % (
                line.where, line.state, compare.show(threads[i].get("status_detail")))
        if line.ractor is not None and "ractor_id" in threads[i]:
            said = str(threads[i]["ractor_id"]) + (
                ":" + threads[i]["ractor_name"] if threads[i].get("ractor_name") is not None else "")
            if said != line.ractor:
                return "%s: ractor %s, but Ruby said %s" % (line.where, line.ractor, said)
    return None


def ractor_text(thread):
    r = thread.get("ractor")
    if not isinstance(r, dict):
        return None
    return str(r.get("id")) + (":" + r["name"] if r.get("name") is not None else "")


def check_report(lines, oracle, report):
    mine = compare.scenario_threads(oracle["threads"])
    theirs = compare.scenario_threads(report.get("threads") or [])
    index, reason = assign(lines, mine)
    if reason:
        return reason
    for line, i in zip(lines, index):
        if i >= len(theirs) or not line.has_frame(theirs[i]):
            return "%s: corestack's thread %d has no frame at %s:%s" % (
                line.where, i, line.path, line.lineno)
        got = theirs[i]
        title = "%s (%s)" % (compare.thread_title(i, got), line.where)
        said = DETAIL_OF.get(got.get("state"))
        if said != mine[i].get("status_detail"):
            return "%s: state: Thread#inspect said %s, corestack %s" % (
                title, compare.show(mine[i].get("status_detail")), compare.show(got.get("state")))
        if got.get("state") != line.state:
            return "%s: state: expected %s, corestack %s" % (
                title, line.state, compare.show(got.get("state")))
        waiting = got.get("waiting_on")
        kind = waiting.get("kind") if isinstance(waiting, dict) else waiting
        if kind != line.wait:
            return "%s: waiting_on: expected %s, corestack %s" % (
                title, compare.show(line.wait), compare.show(waiting))
        expected = BLOCKING_REGION.get(line.wait)
        if expected is not None and got.get("blocking_region") is not expected:
            return "%s: blocking_region: expected %s for %s, corestack %s" % (
                title, expected, line.wait, compare.show(got.get("blocking_region")))
        if line.ractor is not None and ractor_text(got) != line.ractor:
            return "%s: ractor: expected %s, corestack %s" % (
                title, line.ractor, compare.show(got.get("ractor")))
    return check_fibers(oracle, theirs)


def check_fibers(oracle, theirs):
    """Each fiber the oracle recorded under corestack's thread of its owner
    (the oracle's threads and corestack's scenario threads are in the same
    order), with its status and, where Ruby gave them, its frames."""
    for want in oracle.get("fibers") or []:
        where = "fiber %s %s" % (compare.show(want["tag"]), want["object"])
        ti = want["thread"]
        if ti is None or ti >= len(theirs):
            return "%s: its thread %s is not in corestack's report" % (where, ti)
        got = [f for f in theirs[ti].get("fibers") or []
               if f.get("object") and int(f["object"], 16) == int(want["object"], 16)]
        if not got:
            return "%s: not among %s's fibers" % (
                where, compare.thread_title(ti, theirs[ti]))
        if got[0].get("status") != want["status"]:
            return "%s: status: Ruby %s, corestack %s" % (
                where, compare.show(want["status"]), compare.show(got[0].get("status")))
        if want.get("frames") is not None:
            ours = [(f.get("label"), f.get("path"), f.get("lineno")) for f in got[0].get("frames") or []]
            rubys = [(f.get("label"), f.get("path"), f.get("lineno")) for f in want["frames"]]
            if ours != rubys:
                return "%s: frames: Ruby %s, corestack %s" % (
                    where, compare.show(rubys)[:300], compare.show(ours)[:300])
    return None


def report(rep, selected, scenarios_dir, ruby, scenario, cap, json_run, json_report):
    """The two tests of one scenario capture (cap: Capture or a failure)."""
    names = test_names(scenarios_dir, ruby, scenario)
    if not names or not any(selected(n) for n in names):
        return
    lines, reason = load(sidecar_path(scenarios_dir, scenario))
    oracle = getattr(cap, "oracle", None)
    if oracle is None:
        for n in names:
            if selected(n):
                rep.result(n, "no core: capture failed")
        return
    if selected(names[0]):
        rep.result(names[0], reason or check_sidecar(lines, oracle))
    if selected(names[1]):
        if reason:
            rep.result(names[1], reason)
            return
        got, why = json_report(json_run)
        rep.result(names[1], why or check_report(lines, oracle, got))
