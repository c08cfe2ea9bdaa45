"""Checks of one corestack run that every group of tests makes.

A run is procs.run_tool's (rc, stdout, stderr, reason); every check returns
None when it passes, or one line saying what is wrong.
"""

import json
import os
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


def check_error_document(out, err, path):
    """The --json document of an unusable input: the same schema, complete
    false, and an error whose message is the one stderr gives."""
    try:
        doc = json.loads(out)
    except ValueError as exc:
        return "exit 2 with --json but stdout is not JSON (%s): %s" % (exc, compare.show(out[:200]))
    if not isinstance(doc, dict) or doc.get("corestack_schema") != 1:
        return "exit 2 with --json: no corestack_schema 1 in %s" % compare.show(out[:200])
    if doc.get("complete") is not False:
        return "exit 2 with --json: complete is %s" % compare.show(doc.get("complete"))
    e = doc.get("error")
    if not isinstance(e, dict):
        return "exit 2 with --json: no error object in %s" % compare.show(out[:200])
    if not isinstance(e.get("code"), str) or not re.fullmatch(r"[a-z_]+", e["code"]):
        return "exit 2 with --json: error code %s" % compare.show(e.get("code"))
    if "corestack: %s" % e.get("message") != err.rstrip("\n"):
        return "exit 2 with --json: error message %s is not stderr's %s" % (
            compare.show(e.get("message")), compare.show(err))
    if e.get("file") != path:
        return "exit 2 with --json: error file %s, expected %s" % (
            compare.show(e.get("file")), compare.show(path))
    return None


def check_unusable(run, paths, allowed=(2,), pattern=None, what="", json_file=None):
    """exit in allowed, one stderr line naming one of paths, no crash; with
    json_file (a run with --json), exit 2 also prints on stdout a document
    whose error has a code, the stderr line's message and json_file."""
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
    if rc == 2 and json_file is not None:
        why = check_error_document(out, err, json_file)
        if why:
            return why
    if rc == 1:
        report, why = compare.parse_report(out)
        if why:
            return "exit status 1 (partial) but " + why
        if report.get("complete") is not False:
            return "exit status 1 (partial) but complete is %s" % compare.show(report.get("complete"))
    return None


def scenario_tests(ruby, scenario, call, tests):
    """RUBY/SCENARIO/TEST for each of tests when the scenario's program
    calls call ("CorestackOracle.locks"), else none."""
    path = os.path.join(procs.SCENARIOS, scenario + ".rb")
    try:
        with open(path, encoding="utf-8") as f:
            if call not in f.read():
                return []
    except OSError:
        return []
    return ["%s/%s/%s" % (ruby, scenario, t) for t in tests]


def report_json_text_live(rep, selected, names, cap, runs, json_report, checks):
    """The three tests of a scenario's oracle-recorded facts: names ends in
    the core's JSON test, the text test and the live JSON test (in that
    order); checks is (check of the JSON with the oracle, check of the
    text, check of the live JSON). runs: the core's JSON and text runs;
    cap.live["live"] the live JSON run."""
    oracle = getattr(cap, "oracle", None)
    for k, (name, check) in enumerate(zip(names, checks)):
        if not selected(name):
            continue
        if oracle is None:
            rep.result(name, "no core: capture failed")
            continue
        if k == 1:
            rc, out, err, reason = runs[1]
            rep.result(name, reason or ("exit status %d: %s" % (rc, err.strip()[:200]) if rc
                                        else check(oracle, out)))
            continue
        run, problem = (runs[0], None) if k == 0 else \
            cap.live.get("live", (None, "corestack --pid did not run"))
        if run is None:
            rep.result(name, problem)
            continue
        got, why = json_report(run)
        rep.result(name, why or check(oracle, got) or problem)
