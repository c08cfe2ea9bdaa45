"""Locals: corestack --locals against what Ruby said of its own locals.

fixtures/locals.rb (loaded by the frames scenario) parks five threads in
frames with locals of every kind, each frame having written its
binding.local_variables (or Kernel#local_variables) with each value's
inspect, class and Kernel#to_s right before it parked
($CORESTACK_ORACLE.locals-TAG.json). On the frames scenario's capture:

    RUBY/frames/locals       corestack --json --locals CORE: the frames of the
                             records have exactly those locals, and the self
                             Ruby recorded (binding.receiver), each of Ruby's
                             class and shown as that Ruby's #inspect shows it
                             (Hash keys, binary Strings, Ranges, Structs and
                             Data objects included; a truncated String,
                             Array, Hash or Integer: its prefix and size;
                             the top self: main; an object whose
                             inspect is Kernel#inspect: its ivars, as that
                             shows them; another object: as Kernel#to_s; a
                             block
                             parameter its method has not read: the Proc
                             passed, or the block literal's Proc that Ruby
                             makes only when it is read, shown at the
                             block's place, as Proc#inspect gives it); the
                             locals of a rescue clause's frame its method's
                             own (outer 0), as the method's iseq says;
                             the text output carries the same "name = value"
                             lines and a "self = value" line
    RUBY/frames/locals-live  the same from corestack --json --locals --pid on
                             the parked process
    RUBY/frames/locals-corrupt  the slots of "kinds"'s environment holding its
                             locals overwritten (in the core, restored after):
                             point's with an unmapped address, small's with a
                             word that is no immediate, the others with random
                             words: no crash and no sanitizer report, valid JSON,
                             and "<unreadable: ...>" for those two

In gdb and lldb, on the same scenario live and from its core (gdbext_gdb.py,
gdbext_lldb.py run the commands of DEBUGGER_STEPS; check_debugger checks):

    gdbext/RUBY/frames/MODE/locals  ruby-bt full --json all as above;
                             ruby-locals on the thread of "block in kinds" (its
                             innermost Ruby frame) and ruby-locals N on "kinds":
                             a "#N" frame line, then a "name = value" line for
                             every local and "self = value", in both and in
                             the text of ruby-bt full all each under its frame's
                             text, past the "#N"; ruby-print of the LocalsPoint's
                             address and of a convenience variable holding it:
                             its inspect and the class; ruby-print of an
                             unmapped address: "<unreadable: ...>"; of that
                             address plus 8: "<unreadable: ADDR is not a Ruby
                             object: inside the heap slot at ...>"
    lldb/RUBY/frames/MODE/locals    the same in lldb (3.3, 3.4)
"""

import glob
import json
import random
import re

from . import compare, corrupt, procs

SCENARIO = "frames"
PLAIN = ("Integer", "Float", "Symbol", "String", "Array", "Hash", "NilClass", "TrueClass",
         "FalseClass", "Class", "Range")


def test_names(ruby, scenario):
    if scenario != SCENARIO:
        return []
    return ["%s/%s/locals" % (ruby, scenario), "%s/%s/locals-live" % (ruby, scenario),
            "%s/%s/locals-corrupt" % (ruby, scenario)]


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
    m = re.fullmatch(r"\{(.*), \.\.\.\((\d+) entries\)\}", shown, re.S)
    if cls == "Hash" and m:
        if int(m.group(2)) != d["size"] or not ins.startswith("{" + m.group(1) + ", "):
            return "not a prefix of %s (%d entries)" % (compare.show(ins[:60]), d["size"])
        return None
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
    m = re.fullmatch(r"(-?\d+)\.\.\.\((\d+) digits\)", shown)
    if cls == "Integer" and m:
        if int(m.group(2)) != len(ins.lstrip("-")) or not ins.startswith(m.group(1)):
            return "not a prefix of %s (%d digits)" % (compare.show(ins[:60]),
                                                       len(ins.lstrip("-")))
        return None
    m = re.fullmatch(r"#<Proc:\(not made yet\)(.*)>", shown, re.S)
    if cls == "Proc" and m:
        # a block parameter not read yet: the Proc Ruby would make of the
        # block, without the address it does not have yet
        where = re.fullmatch(r"#<Proc:0x[0-9a-f]+[ @]?(.*)>", ins, re.S)
        got = m.group(1).lstrip(" ")
        if not where or where.group(1) != got:
            return "not where Ruby's Proc %s is" % compare.show(ins)
        return None
    if cls in PLAIN or d.get("members") or d.get("top") or d.get("default_inspect"):
        want = ins
    else:
        want = d["to_s"]
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
        if "outer" in d and l.get("outer") != d["outer"]:
            return "%s: outer %s, Ruby's iseq has it in the frame's own scope" % (
                d["name"], compare.show(l.get("outer")))
        if l.get("class") != d["class"]:
            return "%s: class %s, Ruby says %s" % (d["name"], compare.show(l.get("class")),
                                                 compare.show(d["class"]))
        problem = value_problem(l.get("value", ""), d)
        if problem:
            return "%s = %s: %s" % (d["name"], compare.show(l.get("value")), problem)
    return None


def find_frame(report, record):
    """(thread, index, frame) of the frame a record describes: its label
    and path, and of several such (the threads' blocks at the top level)
    the one with the record's locals."""
    found = []
    for t in report.get("threads", []):
        for i, f in enumerate(t.get("frames", [])):
            if f.get("label") == record["label"] and f.get("path") == record["path"]:
                found.append((t, i, f))
    want = sorted(d["name"] for d in record["locals"])
    for t, i, f in found:
        if sorted(l.get("name") for l in f.get("locals", [])) == want:
            return t, i, f
    return found[0] if found else (None, None, None)


def check_report(report, records):
    if len(records) != 7:
        return "the fixture wrote %d locals records, expected 7" % len(records)
    for tag, record in sorted(records.items()):
        _, _, frame = find_frame(report, record)
        if frame is None:
            return "%s: no frame %s at %s" % (tag, compare.show(record["label"]), record["path"])
        if "locals" not in frame:
            return "%s: frame %s has no \"locals\"" % (tag, record["label"])
        if frame.get("locals_error"):
            return "%s: locals_error %s" % (tag, compare.show(frame["locals_error"]))
        r = check_frame_locals(frame["locals"], record) or check_self(frame, record)
        if r:
            return "%s (%s): %s" % (tag, record["label"], r)
    return None


def check_self(frame, record):
    """The frame's "self" against the self Ruby described."""
    got, d = frame.get("self"), record["self"]
    if not isinstance(got, dict):
        return "self %s, Ruby's is %s" % (compare.show(got), compare.show(d["inspect"]))
    if got.get("class") != d["class"]:
        return "self: class %s, Ruby says %s" % (compare.show(got.get("class")),
                                                 compare.show(d["class"]))
    problem = value_problem(got.get("value", ""), d)
    return "self = %s: %s" % (compare.show(got.get("value")), problem) if problem else None


def check_text(text, report, records):
    """Every local of the records' frames as a "name = value" line."""
    for tag, record in sorted(records.items()):
        _, _, frame = find_frame(report, record)
        for l in frame["locals"] + [dict(frame["self"], name="self")]:
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
    core_name, live_name, corrupt_name = names
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
    if selected(corrupt_name):
        try:
            rep.result(corrupt_name, check_corrupt(cap, records or {}, corestack, timeout,
                                                   run_tool, json_report))
        except (RuntimeError, LookupError, KeyError, OSError, ValueError) as exc:
            rep.result(corrupt_name, "setup: %s" % exc)


def check_corrupt(cap, records, corestack, timeout, run_tool, json_report):
    argv = [corestack, "--json", "--locals", cap.core, cap.exe]
    report, reason = json_report(run_tool(argv, timeout))
    if reason:
        return "the unpatched core: " + reason
    _, _, frame = find_frame(report, records["method"])
    if frame is None:
        return "no frame %s" % records["method"]["label"]
    layout = corrupt.layout_of(corestack, report["process"]["ruby_module"], timeout)
    by_name = dict((d["name"], d) for d in records["method"]["locals"])
    point = int(by_name["point"]["to_s"].split(":")[1].rstrip(">"), 16)
    small = by_name["small"]["inspect"]
    cf = corrupt.CoreFile(cap.core)
    try:
        ep = cf.u64(int(frame["cfp"], 16) + layout["cfp_ep"][0])
        # The env's words below ep: find the slots of point and small
        # (Fixnum 2n+1) by their values, then garble every word between.
        words = [cf.u64(ep - 8 * k) for k in range(1, 64)]
        k_point = words.index(point) + 1
        k_small = words.index(2 * int(small) + 1) + 1
        rng = random.Random(17)
        for k in range(min(k_point, k_small) - 4, max(k_point, k_small) + 4):
            if k > 2:   # the env's own data (flags, specval, me/cref) stays
                cf.write(ep - 8 * k, rng.getrandbits(64).to_bytes(8, "little"))
        cf.write(ep - 8 * k_point, corrupt.UNMAPPED.to_bytes(8, "little"))
        cf.write(ep - 8 * k_small, (point + 4).to_bytes(8, "little"))
        rc, out, err, why = run_tool(argv, timeout)
    finally:
        cf.restore()
    if why or rc not in (0, 1) or procs.sanitizer_report(err):
        return "corestack on the patched core: %s" % (
            why or procs.sanitizer_report(err) or "exit %d: %s" % (rc, err[:200]))
    try:
        patched = json.loads(out)
    except ValueError as exc:
        return "not JSON: %s" % exc
    _, _, frame = find_frame(patched, records["method"])
    values = dict((l["name"], l["value"]) for l in (frame or {}).get("locals", []))
    for name in ("point", "small"):
        if not values.get(name, "").startswith("<unreadable: "):
            return "%s = %s, expected <unreadable: ...>" % (name, compare.show(values.get(name)))
    return None



# --- in a debugger -------------------------------------------------------------

def debugger_plan(records):
    """What the debugger scripts need: the labels and path of the frames."""
    if not {"block", "method", "stack"} <= set(records):
        return None
    return {"block": records["block"]["label"], "method": records["method"]["label"],
            "path": records["block"]["path"]}


# Shared by the gdb and lldb scripts (which define run(name, cmd) and
# select(tid)): ruby-bt full, then the commands on the frames it names.
DEBUGGER_STEPS = r'''
def locals_steps(run, select, full_text):
    plan = json.loads(os.environ["GDBEXT_LOCALS"])
    start, end = full_text.find("{"), full_text.rfind("}")
    report = json.loads(full_text[start:end + 1])
    for t in report["threads"]:
        labels = [(f["label"], f["path"]) for f in t["frames"]]
        if (plan["block"], plan["path"]) in labels:
            method = labels.index((plan["method"], plan["path"]))
            block = labels.index((plan["block"], plan["path"]))
            point = [l["value"] for l in t["frames"][block]["locals"] if l["name"] == "point"][0]
            addr = int(point.split(":")[1].split()[0].rstrip(">"), 16)
            res["locals_plan"] = {"block": block, "method": method, "point": point}
            select(t["tid"])
            run("full text", "ruby-bt full all")
            run("locals", "ruby-locals")
            run("locals N", "ruby-locals %d" % method)
            run("rp", "rp 0x%x" % addr)
            # an aligned address no mapping holds, and one inside the
            # object's heap slot: neither is an object
            run("rp bad", "ruby-print 0x10")
            run("rp inside", "ruby-print 0x%x" % (addr + 8))
            return addr
    return None
'''


def locals_under_frames(text):
    """Each local's line (and self's) starts under its frame's text, past
    the frame's number "#N", as gdb shows a frame's locals."""
    column, seen = None, 0
    for line in text.splitlines():
        m = re.match(r"( *#\d+ +)\S", line)
        if m:
            column = len(m.group(1))
            continue
        if line.startswith("Thread ") or not line.strip():
            column = None
            continue
        local = re.match(r"( *)(\S+) = ", line)
        if local and column is not None:
            seen += 1
            if len(local.group(1)) <= column:
                return "a local at column %d, its frame's text at %d: %s" % (
                    len(local.group(1)), column, compare.show(line))
    return None if seen else "no local under a numbered frame: %s" % compare.show(text[:300])


def check_debugger(runs, records, parse_report):
    """The results of DEBUGGER_STEPS: runs {name: {"out"} or {"error"}}."""
    for key in ("full", "full text", "locals", "locals N", "rp", "rp expr", "rp bad",
                "rp inside"):
        if key not in runs:
            return "%s did not run (no frame of the locals fixture found?)" % key
        if "error" in runs[key]:
            return "%s: %s" % (key, compare.show(runs[key]["error"].strip()[:300]))
    report, reason = parse_report(runs["full"]["out"])
    if reason:
        return "ruby-bt full --json all: " + reason
    r = check_report(report, records)
    if r:
        return "ruby-bt full --json all: " + r
    for key in ("full text", "locals", "locals N"):
        r = locals_under_frames(runs[key]["out"])
        if r:
            return "%s: %s" % (key, r)
    for key, tag in (("locals", "block"), ("locals N", "method")):
        thread, index, frame = find_frame(report, records[tag])
        out = runs[key]["out"]
        if not out.startswith("#%d " % index):
            return "%s: first line %s, expected frame #%d" % (
                key, compare.show(out.splitlines()[:1]), index)
        lines = [x.strip() for x in out.splitlines()[1:]]
        for l in frame["locals"] + [dict(frame["self"], name="self")]:
            if not any(x.startswith("%s = %s" % (l["name"], l["value"])) for x in lines):
                return "%s: no line for %s = %s" % (key, l["name"], compare.show(l["value"]))
    point = [d for d in records["method"]["locals"] if d["name"] == "point"][0]
    want = "%s  (%s)" % (point["inspect"], point["class"])
    for key in ("rp", "rp expr"):
        if runs[key]["out"].strip() != want:
            return "%s: %s, expected %s" % (key, compare.show(runs[key]["out"].strip()),
                                            compare.show(want))
    if not runs["rp bad"]["out"].startswith("<unreadable: "):
        return "ruby-print of an address holding no object: %s" % compare.show(
            runs["rp bad"]["out"])
    addr = int(point["to_s"].split(":")[1].rstrip(">"), 16)
    want = "<unreadable: 0x%x is not a Ruby object: inside the heap slot at 0x%x>" % (
        addr + 8, addr)
    if runs["rp inside"]["out"].strip() != want:
        return "ruby-print of the object's address plus 8: %s, expected %s" % (
            compare.show(runs["rp inside"]["out"].strip()), compare.show(want))
    return None
