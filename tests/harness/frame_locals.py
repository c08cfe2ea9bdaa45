"""Locals: corestack --locals against what Ruby said of its own locals.

fixtures/locals.rb (loaded by the frames scenario) parks two threads in
frames with locals of every kind, each frame having written its
binding.local_variables (or Kernel#local_variables) with each value's
inspect, class and Kernel#to_s right before it parked
($CORESTACK_ORACLE.locals-TAG.json). On the frames scenario's capture:

    RUBY/frames/locals       corestack --json --locals CORE: the frames of the
                             records have exactly those locals, each of Ruby's
                             class and shown as Ruby shows it (a truncated
                             String, Array or Hash: its prefix and size; a
                             Bignum: its class; another object: as Kernel#to_s);
                             the text output carries the same "name = value"
                             lines
    RUBY/frames/locals-live  the same from corestack --json --locals --pid on
                             the parked process

gdbext_gdb.py and gdbext_lldb.py check ruby-locals, ruby-bt full and
ruby-print with the same records (check_locals).
"""

import glob
import json
import re

from . import compare

SCENARIO = "frames"
PLAIN = ("Integer", "Float", "Symbol", "String", "Array", "NilClass", "TrueClass",
         "FalseClass", "Class")


def test_names(ruby, scenario):
    if scenario != SCENARIO:
        return []
    return ["%s/%s/locals" % (ruby, scenario), "%s/%s/locals-live" % (ruby, scenario)]


def read_records(oracle_path):
    """{tag: record} the locals fixture wrote next to the oracle."""
    records = {}
    for path in sorted(glob.glob(oracle_path + ".locals-*.json")):
        with open(path) as f:
            records[path[len(oracle_path) + len(".locals-"):-len(".json")]] = json.load(f)
    return records


def live_run(corestack, pid, timeout, run_tool):
    return run_tool([corestack, "--json", "--locals", "--pid", str(pid)], timeout)


def value_problem(shown, d):
    """Why shown is not how corestack should show the value Ruby described
    as d, or None."""
    cls, ins = d["class"], d["inspect"]
    if cls == "Hash":
        entries = d["entries"]
        want = "{" + ", ".join("%s=>%s" % (k, v) for k, v in entries)
        if d["size"] > len(entries):
            want += "%s...(%d entries)" % (", " if entries else "", d["size"])
        want += "}"
        return None if shown == want else "expected %s" % compare.show(want)
    m = re.fullmatch(r'(".*)"\.\.\.\((\d+) bytes\)', shown, re.S)
    if cls == "String" and m:
        if int(m.group(2)) != d["size"] or not ins.startswith(m.group(1)):
            return "not a prefix of %s (%d bytes)" % (compare.show(ins[:60]), d["size"])
        return None
    m = re.fullmatch(r"\[(.*), \.\.\.\((\d+) elements\)\]", shown, re.S)
    if cls == "Array" and m:
        if int(m.group(2)) != d["size"] or not ins.startswith("[" + m.group(1) + ", "):
            return "not a prefix of %s (%d elements)" % (compare.show(ins[:60]), d["size"])
        return None
    if cls == "Integer" and shown.startswith("#<Integer:0x") and shown.endswith("(bignum)>"):
        return None if abs(int(ins)) >= 2 ** 62 else "a Fixnum shown as a Bignum"
    want = ins if cls in PLAIN else d["to_s"]
    return None if shown == want else "expected %s" % compare.show(want)


def check_frame_locals(got, record):
    """got: a frame's "locals" (name, value, class); record: Ruby's."""
    names = [l.get("name") for l in got]
    want = [d["name"] for d in record["locals"]]
    if sorted(names) != sorted(want):
        return "locals %s, Ruby has %s" % (compare.show(names), compare.show(want))
    by_name = dict((l["name"], l) for l in got)
    for d in record["locals"]:
        l = by_name[d["name"]]
        if l.get("class") != d["class"]:
            return "%s: class %s, Ruby says %s" % (d["name"], compare.show(l.get("class")),
                                                 compare.show(d["class"]))
        problem = value_problem(l.get("value", ""), d)
        if problem:
            return "%s = %s: %s" % (d["name"], compare.show(l.get("value")), problem)
    return None


def find_frame(report, record):
    """(thread, index, frame) of the frame a record describes."""
    for t in report.get("threads", []):
        for i, f in enumerate(t.get("frames", [])):
            if f.get("label") == record["label"] and f.get("path") == record["path"]:
                return t, i, f
    return None, None, None


def check_report(report, records):
    if len(records) != 3:
        return "the fixture wrote %d locals records, expected 3" % len(records)
    for tag, record in sorted(records.items()):
        _, _, frame = find_frame(report, record)
        if frame is None:
            return "%s: no frame %s at %s" % (tag, compare.show(record["label"]), record["path"])
        if "locals" not in frame:
            return "%s: frame %s has no \"locals\"" % (tag, record["label"])
        if frame.get("locals_error"):
            return "%s: locals_error %s" % (tag, compare.show(frame["locals_error"]))
        r = check_frame_locals(frame["locals"], record)
        if r:
            return "%s (%s): %s" % (tag, record["label"], r)
    return None


def check_text(text, report, records):
    """Every local of the records' frames as a "name = value" line."""
    for tag, record in sorted(records.items()):
        _, _, frame = find_frame(report, record)
        for l in frame["locals"]:
            line = "%s = %s" % (l["name"], l["value"])
            if not any(x.strip().startswith(line) for x in text.splitlines()):
                return "%s: no line %s in the text" % (tag, compare.show(line))
    return None


def check_run(run, records, json_report, text_run=None):
    report, reason = json_report(run)
    if reason:
        return reason
    r = check_report(report, records)
    if r or text_run is None:
        return r
    rc, out, err, why = text_run
    if why or rc != 0:
        return "corestack --locals (text): %s" % (why or "exit status %d: %s" % (rc, err[:200]))
    return check_text(out, report, records)


def report(rep, selected, ruby, scenario, cap, corestack, timeout, run_tool, json_report):
    names = test_names(ruby, scenario)
    if not names or not any(selected(n) for n in names):
        return
    core_name, live_name = names
    records = getattr(cap, "locals", None)
    if not hasattr(cap, "core"):
        for n in names:
            if selected(n):
                rep.result(n, "no core: capture failed")
        return
    if selected(core_name):
        run = run_tool([corestack, "--json", "--locals", cap.core, cap.exe], timeout)
        text = run_tool([corestack, "--locals", cap.core, cap.exe], timeout)
        rep.result(core_name, check_run(run, records or {}, json_report, text))
    if selected(live_name):
        run = cap.live.get("locals-live")
        rep.result(live_name, check_run(run, records or {}, json_report)
                   if run else "corestack --locals --pid did not run")

