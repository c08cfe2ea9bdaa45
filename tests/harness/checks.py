"""Checks of one corestack run that every group of tests makes.

A run is procs.run_tool's (rc, stdout, stderr, reason); every check returns
None when it passes, or one line saying what is wrong.
"""

import re

from . import compare, procs


def first_line(text):
    lines = text.strip().splitlines()
    return compare.show(lines[0][:200]) if lines else "(empty)"


def broken_run(run):
    """The run's own failure (a timeout, say) or a sanitizer report on its
    stderr; None when neither."""
    err, reason = run[2], run[3]
    if reason:
        return reason
    san = procs.sanitizer_report(err)
    return "sanitizer report on stderr: %s" % san if san else None


def json_report(run):
    """-> (report, None) or (None, reason) for a run that must exit 0."""
    rc, out, err, _ = run
    broken = broken_run(run)
    if broken:
        return None, broken
    if rc != 0:
        return None, "exit status %d, expected 0; stderr: %s" % (rc, first_line(err))
    report, reason = compare.parse_report(out)
    return report, reason


def check_oracle(run, cap, live=False):
    report, reason = json_report(run)
    if reason:
        return reason
    if run[2]:
        return "stderr is not empty: %s" % first_line(run[2])
    if live and report.get("process", {}).get("source") != "live":
        return "process.source is %s, expected \"live\"" % compare.show(
            report.get("process", {}).get("source"))
    return (compare.check_shape(report)
            or compare.check_process(report, cap.oracle, cap.signal_number)
            or compare.compare_threads(report, cap.oracle))


def check_unusable(run, paths, allowed=(2,), pattern=None, what=""):
    """exit in allowed, one stderr line naming one of paths, no crash."""
    rc, out, err, _ = run
    broken = broken_run(run)
    if broken:
        return broken
    if rc not in allowed:
        return "exit status %d, expected %s; stderr: %s" % (
            rc, " or ".join(map(str, allowed)), first_line(err))
    lines = err.rstrip("\n").split("\n")
    if not err.strip() or len(lines) != 1:
        return "stderr has %d lines, expected exactly one: %s" % (
            0 if not err.strip() else len(lines), compare.show(err[:300]))
    if not any(p in err for p in paths):
        return "stderr does not name %s: %s" % (" or ".join(paths), first_line(err))
    if pattern and not re.search(pattern, err, re.I):
        return "stderr does not say %s: %s" % (what, first_line(err))
    if rc == 1:
        report, why = compare.parse_report(out)
        if why:
            return "exit status 1 (partial) but " + why
        if report.get("complete") is not False:
            return "exit status 1 (partial) but complete is %s" % compare.show(report.get("complete"))
    return None
