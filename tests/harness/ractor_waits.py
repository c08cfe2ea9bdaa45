"""What a thread blocked on a ractor waits on, against the program's record.

In a scenario whose threads call CorestackOracle.ractor_wait before they park
(fixtures/scenarios/ractor_waits.rb), each such oracle thread carries
"ractor_wait": the ractor it is about to block on (Ractor#inspect's number
and Ractor#name) and the method it blocks in, and for a join the name of
that ractor's main thread, whose end it waits for ("main": the main
ractor's). Threads are matched by name. The wait-for graph of those joins
(an edge from a thread that sleeps for ever) gives the expected deadlocks
(its cycles) and who is stuck behind whom.

    RUBY/SCENARIO/ractor-waits       corestack --json on the core: each such
                                     thread's waiting_on is kind "ractor",
                                     that method, and that ractor's id and name;
                                     waits_for that main thread (by
                                     "ractor_main_thread") or, without one,
                                     nobody; "deadlock", "stuck_behind" and
                                     "deadlocks" as the joins give them
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


def key(thread):
    return "main" if thread.get("main") else thread.get("name")


def joins(oracle, want):
    """-> (cycles as frozensets of names, {name: the thread it is stuck
    behind}) from the recorded joins of threads that sleep for ever."""
    forever = {key(t) for t in oracle.get("threads") or []
               if t.get("status_detail") == "sleep_forever"}
    edge = {n: r["main_thread"] for n, r in want.items()
            if r.get("main_thread") and n in forever}
    cycles = []
    for start in edge:
        seen, n = [], start
        while n in edge and n not in seen:
            seen.append(n)
            n = edge[n]
        if n in seen:
            cycle = frozenset(seen[seen.index(n):])
            if cycle not in cycles:
                cycles.append(cycle)
    in_cycle = set().union(*cycles) if cycles else set()
    stuck = {n: w for n, w in edge.items() if n not in in_cycle and w in forever}
    return cycles, stuck


def check_graph(oracle, report, want):
    cycles, stuck = joins(oracle, want)
    got = {key(t): t for t in report.get("threads") or []}
    addr = {n: t.get("thread") for n, t in got.items()}
    by_addr = {a: n for n, a in addr.items()}
    for name, rec in sorted(want.items()):
        t, main = got[name], rec.get("main_thread")
        wf = (t.get("waiting_on") or {}).get("waits_for")
        if main and (not wf or wf.get("by") != "ractor_main_thread" or
                     wf.get("thread") != addr.get(main)):
            return "%s joins ractor #%d: waits for %s (%s), corestack %s" % (
                compare.show(name), rec["id"], compare.show(main), addr.get(main),
                compare.show(wf))
        if not main and wf:
            return "%s waits for no one thread, corestack %s" % (compare.show(name),
                                                                 compare.show(wf))
        in_cycle = any(name in c for c in cycles)
        if (t.get("deadlock") is not None) != in_cycle:
            return "%s: deadlock %s, expected %s" % (compare.show(name),
                                                     compare.show(t.get("deadlock")), in_cycle)
        want_stuck = addr.get(stuck[name]) if name in stuck else None
        if t.get("stuck_behind") != want_stuck:
            return "%s: stuck_behind %s, expected %s (%s)" % (
                compare.show(name), compare.show(t.get("stuck_behind")), want_stuck,
                stuck.get(name))
    listed = [frozenset(by_addr.get(x.get("thread")) for x in d.get("threads", []))
              for d in report.get("deadlocks") or []]
    if sorted(map(sorted, listed)) != sorted(map(sorted, cycles)):
        return "deadlocks %s, expected %s" % (sorted(map(sorted, listed)),
                                              sorted(map(sorted, cycles)))
    return None


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
    return check_graph(oracle, report, want)


def deadlock_blocks(lines):
    """The threads each "Deadlock N:" block before the threads names."""
    blocks = []
    for l in lines:
        if l.startswith("Thread "):
            break
        if re.match(r"^Deadlock \d+: ", l):
            blocks.append(set())
        m = re.match(r'^  Thread \d+(?: "([^"]*)")?', l)
        if m and blocks:
            blocks[-1].add(m.group(1) or "main")
    return sorted(map(sorted, blocks))


def check_text(oracle, out):
    want = expected(oracle)
    if not want:
        return "the oracle has no thread that recorded a ractor wait"
    lines = out.splitlines()
    cycles = sorted(map(sorted, joins(oracle, want)[0]))
    if deadlock_blocks(lines) != cycles:
        return "Deadlock blocks name %s, expected %s" % (deadlock_blocks(lines), cycles)
    for name, rec in sorted(want.items()):
        line = next((l for l in lines if re.match(r'^Thread \d+ "%s"' % re.escape(name), l)), None)
        ref = "waiting on ractor (%s) #%d" % (rec["method"], rec["id"])
        if rec["name"] is not None:
            ref += ' "%s"' % rec["name"]
        if line is None or not re.search(re.escape(ref) + r"(\Z|[ ,;])", line):
            return "thread %s: no %s in %s" % (compare.show(name), compare.show(ref),
                                                compare.show(line))
        main = rec.get("main_thread")
        joined = r", whose main thread is thread \d+" + (
            "" if main == "main" else r' "%s"' % re.escape(main or ""))
        if main and not re.search(joined + r"(\Z|[ ,;])", line):
            return "thread %s: no ', whose main thread is thread N%s' in %s" % (
                compare.show(name), "" if main == "main" else ' "%s"' % main,
                compare.show(line))
    return None


def report(rep, selected, ruby, scenario, cap, runs, json_report):
    names = test_names(ruby, scenario)
    if names and any(selected(n) for n in names):
        checks.report_json_text_live(rep, selected, names, cap, runs, json_report,
                                     (check_report, check_text, check_report))
