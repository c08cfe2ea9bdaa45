"""corestack record on fixtures/profile/named_late.rb, whose worker thread
spins in before_name, then names itself "late", then spins in after_name.

    RUBY/record-named-late   record -- COMMAND, collapsed: both methods under
                             "late" and no thread label but "late" and the
                             main thread's ("thread PID", the pid the program
                             wrote, or "thread 1" without tids): the samples
                             from before the name are the named thread's, not
                             a "thread TID" of their own
"""

import os
import subprocess

from . import procs

PROGRAM = os.path.join(procs.ROOT, "fixtures", "profile", "named_late.rb")


def test_name(ruby):
    return "%s/record-named-late" % ruby


def check(out, pid_path):
    try:
        with open(pid_path) as f:
            pid = int(f.read())
        with open(out) as f:
            lines = [l.rsplit(" ", 1) for l in f.read().splitlines() if l.strip()]
    except (OSError, ValueError) as exc:
        return "no profile or pid: %s" % exc
    counts = {}
    for stack, count in lines:
        frames = stack.split(";")
        for method in ("before_name", "after_name"):
            if any(f.endswith("#" + method) for f in frames):
                counts[(frames[0], method)] = counts.get((frames[0], method), 0) + int(count)
    labels = sorted({stack.split(";")[0] for stack, _ in lines})
    # The main thread is "thread PID", or "thread 1" (its place in the
    # thread list) on a Ruby whose threads record no tid.
    extra = [l for l in labels if l not in ("late", "thread %d" % pid, "thread 1")]
    if extra or len(labels) > 2:
        return "thread labels %s: expected only 'late' and 'thread %d' or 'thread 1' (%s)" % (
            labels, pid, sorted(counts.items()))
    for method in ("before_name", "after_name"):
        if not counts.get(("late", method)):
            return "no sample of %s under 'late': %s" % (method, sorted(counts.items()))
    return None


def named_late_test(rep, selected, corestack, ruby, exe, workdir, timeout):
    name = test_name(ruby)
    if not selected(name):
        return
    out = os.path.join(workdir, "named-late.folded")
    pid_path = os.path.join(workdir, "named-late.pid")
    try:
        res = subprocess.run([corestack, "record", "--rate", "200", "-o", out, "--",
                              exe, PROGRAM, pid_path], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        rep.result(name, "record hung")
        return
    if res.returncode != 0:
        rep.result(name, "record exited %d: %s" % (res.returncode, res.stderr[-300:]))
        return
    if procs.sanitizer_report(res.stderr):
        rep.result(name, "sanitizer report: %s" % procs.sanitizer_report(res.stderr))
        return
    rep.result(name, check(out, pid_path))
