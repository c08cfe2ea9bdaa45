"""What a thread blocked on a ractor waits on, against the program's record.

In a scenario whose threads call CorestackOracle.ractor_wait before they park
(fixtures/scenarios/ractor_waits.rb), each such oracle thread carries
"ractor_wait": the ractor it is about to block on (Ractor#inspect's number
and Ractor#name) and the method it blocks in. Threads are matched by name.

    RUBY/SCENARIO/ractor-waits       corestack --json on the core: each such
                                     thread's waiting_on is kind "ractor",
                                     that method, and that ractor's id and name
    RUBY/SCENARIO/ractor-waits-text  its thread line in the text report says
                                     'waiting on ractor (METHOD) #ID "NAME"'
    RUBY/SCENARIO/ractor-waits-live  as RUBY/SCENARIO/ractor-waits, from
                                     corestack --pid
"""

import re

from . import checks, compare

TESTS = ("ractor-waits", "ractor-waits-text", "ractor-waits-live")


def test_names(ruby, scenario):
    return checks.scenario_tests(ruby, scenario, "CorestackOracle.ractor_wait", TESTS)


def expected(oracle):
    """{thread name: its ractor_wait record}"""
    return {t["name"]: t["ractor_wait"] for t in oracle.get("threads") or []
            if t.get("ractor_wait")}


def check_report(oracle, report):
    want = expected(oracle)
    if not want:
        return "the oracle has no thread that recorded a ractor wait"
    got = {t.get("name"): t for t in report.get("threads") or []}
    for name, rec in sorted(want.items()):
        t = got.get(name)
        if t is None:
            return "no thread %s in corestack's report" % compare.show(name)
        w = t.get("waiting_on") or {}
        r = w.get("ractor") or {}
        if w.get("kind") != "ractor" or w.get("method") != rec["method"] or \
                r.get("id") != rec["id"] or r.get("name") != rec["name"]:
            return "%s waits in %s on ractor #%d %s, corestack: %s" % (
                compare.show(name), rec["method"], rec["id"], compare.show(rec["name"]),
                compare.show(w))
        if not isinstance(r.get("address"), str):
            return "%s: the ractor's address is missing: %s" % (compare.show(name), compare.show(r))
    return None


def check_text(oracle, out):
    want = expected(oracle)
    if not want:
        return "the oracle has no thread that recorded a ractor wait"
    lines = out.splitlines()
    for name, rec in sorted(want.items()):
        line = next((l for l in lines if re.match(r'^Thread \d+ "%s"' % re.escape(name), l)), None)
        ref = "waiting on ractor (%s) #%d" % (rec["method"], rec["id"])
        if rec["name"] is not None:
            ref += ' "%s"' % rec["name"]
        if line is None or not (line.endswith(ref) or ref + " " in line or ref + ";" in line):
            return "thread %s: no %s in %s" % (compare.show(name), compare.show(ref),
                                                compare.show(line))
    return None


def report(rep, selected, ruby, scenario, cap, runs, json_report):
    names = test_names(ruby, scenario)
    if names and any(selected(n) for n in names):
        checks.report_json_text_live(rep, selected, names, cap, runs, json_report,
                                     (check_report, check_text, check_report))
