"""A stale pc in the innermost frame, made on a real core.

YJIT's machine code writes cfp->pc only before calls that can look at it,
so the innermost frame of a thread caught inside JIT code may hold a pc
left from an older frame in the same slot. No process can be made to stop
there on demand, so these tests make that state on the threads scenario's
core (restored afterwards): the worker thread's innermost control frame is
moved to its frame of `deeper` (ec->cfp, ec being the thread's root
fiber's saved_ec, which is the thread's EC), and that frame's pc is set
relative to its iseq's encoded code. Every place comes from corestack's
JSON (fiber, cfp and iseq addresses) and from the layout it reads from
the Ruby's DWARF (`--layout`); no offsets of our own.

What CRuby does with such a pc (vm_backtrace.c at the 2.7, 3.1 and 3.3
tags): calc_pos/calc_lineno expect a pc in [iseq_encoded, iseq_encoded +
iseq_size] (VM_ASSERT, and pc == the end is allowed: the position looked
up is pc - 1); a frame without a pc (NULL) gets the iseq's first line
(location.first_lineno; 0 for a top-level iseq, and 2.7 gives 0 always);
and for profilers 3.3's thread_profile_frames gives line 0 to the topmost
frame whose cfp->jit_return is set, since its pc may be out of date.
corestack reads an innermost pc outside the iseq as no pc at all, by the
3.1+ rule: the method's first line, marked pc_stale; a pc outside its iseq
in an older frame, which JIT code always keeps current, is corruption.

    RUBY/stale-pc/past-end      pc one VALUE past the end of the iseq's code:
                                pc_stale, line = the `def deeper` line of
                                threads.rb, no error, exit 0, the older frames
                                as Ruby's backtrace had them, text says so
    RUBY/stale-pc/before-start  pc one VALUE before the code: the same
    RUBY/stale-pc/at-end        pc exactly at the end (allowed by CRuby): not
                                stale, a line of the method, no error
    RUBY/stale-pc/not-innermost the same past-end pc in `deeper` left under its
                                callee: that frame unreliable ("outside its
                                iseq"), exit 1, the rest intact
"""

import os
import re
import struct
import subprocess

from . import compare, corrupt

SCENARIO = "threads"
METHOD = "deeper"          # Outer::Inner#deeper, the worker's frame under Queue#pop
CASES = ("past-end", "before-start", "at-end", "not-innermost")


def test_names(ruby):
    return ["%s/stale-pc/%s" % (ruby, c) for c in CASES]


def method_lines(script, name):
    """(first, last) line of `def name` and of its `end` (the next line
    indented as the def), read from the program itself."""
    with open(script) as f:
        lines = f.read().split("\n")
    for i, text in enumerate(lines):
        m = re.match(r"(\s*)def %s\b" % re.escape(name), text)
        if m:
            for j in range(i + 1, len(lines)):
                if lines[j] == m.group(1) + "end":
                    return i + 1, j + 1
    raise RuntimeError("no `def %s` ... `end` in %s" % (name, script))


class Place:
    """Where the patches go, from the unpatched report and the layout."""

    def __init__(self, cf, layout, report):
        for ti, t in enumerate(report.get("threads", [])):
            for fi, f in enumerate(t["frames"]):
                if compare.plain_label(f.get("label")) == METHOD and (f.get("path") or "").endswith(SCENARIO + ".rb"):
                    self.thread, self.index, self.frame = ti, fi, f
                    break
            else:
                continue
            break
        else:
            raise RuntimeError("no frame of %s in the report" % METHOD)
        t = report["threads"][self.thread]
        roots = [f for f in t.get("fibers") or [] if f.get("root") and f.get("current")]
        if len(roots) != 1 or not roots[0].get("fiber"):
            raise RuntimeError("the worker thread lists %d running root fibers" % len(roots))
        self.ec = int(roots[0]["fiber"], 16) + layout["fiber_saved_ec"][0]
        self.ec_cfp = self.ec + layout["ec_cfp"][0]
        top = cf.u64(self.ec_cfp)
        if top != int(t["frames"][0]["cfp"], 16):
            raise RuntimeError("ec->cfp 0x%x is not the first frame's cfp %s" % (
                top, t["frames"][0]["cfp"]))
        self.cfp = int(self.frame["cfp"], 16)
        self.pc_at = self.cfp + layout["cfp_pc"][0]
        if cf.u64(self.pc_at) != int(self.frame["pc"], 16):
            raise RuntimeError("the frame's pc is not at cfp + cfp_pc")
        body = cf.u64(int(self.frame["iseq"], 16) + layout["iseq_body"][0])
        self.encoded = cf.u64(body + layout["body_iseq_encoded"][0])
        self.size = cf.uint(body + layout["body_iseq_size"][0], layout["body_iseq_size"][1])
        self.value = layout["value_size"][0]
        if not 0 < self.size < 1 << 20:
            raise RuntimeError("implausible iseq_size %d" % self.size)

    def pc_for(self, case):
        return {"past-end": self.encoded + (self.size + 1) * self.value,
                "before-start": self.encoded - self.value,
                "at-end": self.encoded + self.size * self.value,
                "not-innermost": self.encoded + (self.size + 1) * self.value}[case]


def oracle_tail(oracle, report_thread):
    """The oracle's frames of the worker thread from `deeper` outwards."""
    for t in compare.scenario_threads(oracle["threads"]):
        labels = [compare.plain_label(f["label"]) for f in t["frames"]]
        if METHOD in labels and t.get("name") == report_thread.get("name"):
            return t["frames"][labels.index(METHOD):]
    raise RuntimeError("no thread of the oracle has a %s frame" % METHOD)


def check_innermost(corestack, cap, place, case, expected, lines, timeout):
    rc, report, raw, err = corrupt.run_json(corestack, cap.core, cap.exe, timeout)
    san = [l for l in err.splitlines() if "Sanitizer" in l or "runtime error" in l]
    if san:
        return "sanitizer report: %s" % san[0]
    if report is None:
        return "stdout is not JSON: %s" % compare.show(raw[:200])
    if rc != 0 or report.get("complete") is not True:
        return "exit %d, complete %s; expected 0 and true (a stale pc is no error): %s" % (
            rc, compare.show(report.get("complete")), err.strip()[:200])
    frames = report["threads"][place.thread]["frames"]
    if len(frames) != len(expected):
        return "%d frames, expected %d (the oracle's from %s on): %s" % (
            len(frames), len(expected), METHOD, [f.get("label") for f in frames])
    top = frames[0]
    if top.get("error"):
        return "the innermost frame is marked unreliable: %s" % top["error"]
    first, last = lines
    if case == "at-end":
        if top.get("pc_stale") is not False:
            return "pc at the iseq's end (CRuby allows it) reported pc_stale %s" % (
                compare.show(top.get("pc_stale")))
        if not first <= (top.get("lineno") or 0) <= last:
            return "line %s is not a line of %s (%d-%d)" % (top.get("lineno"), METHOD, first, last)
    else:
        if top.get("pc_stale") is not True:
            return "pc_stale is %s, expected true" % compare.show(top.get("pc_stale"))
        if top.get("lineno") != first:
            return "line %s, expected %d (the iseq's first line, `def %s`)" % (
                top.get("lineno"), first, METHOD)
    for i, (got, want) in enumerate(zip(frames, expected)):
        keys = ("label", "path") if i == 0 else ("label", "path", "lineno")
        for key in keys:
            if got.get(key) != want.get(key):
                return "frame %d %s: %s, Ruby said %s" % (
                    i, key, compare.show(got.get(key)), compare.show(want.get(key)))
        if i and (got.get("error") or got.get("pc_stale")):
            return "older frame %d marked: error %s, pc_stale %s" % (
                i, compare.show(got.get("error")), compare.show(got.get("pc_stale")))
    text = subprocess.run([corestack, cap.core, cap.exe], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout).stdout.decode("utf-8", "replace")
    said = [l for l in text.splitlines()
            if compare.plain_label((re.search(r":in [`']([^']*)'", l) or [None, None])[1])
            == METHOD]
    stale = [l for l in said if "<stale pc" in l]
    if case != "at-end" and len(stale) != 1:
        return "the text output marks %d %s lines <stale pc ...>" % (len(stale), METHOD)
    if case == "at-end" and stale:
        return "the text output marks a pc at the iseq's end stale: %s" % stale[0].strip()
    return None


def run_on(ctx, ruby, cap):
    """The four cases on one Ruby's threads core (a scenarios.Capture)."""
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    names = test_names(ruby)
    try:
        baseline, layout = corrupt.baseline_and_layout(corestack, cap, timeout)
        place = Place(corrupt.CoreFile(cap.core), layout, baseline)
        expected = oracle_tail(cap.oracle, baseline["threads"][place.thread])
        lines = method_lines(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "fixtures", "scenarios", SCENARIO + ".rb"), METHOD)
    except (RuntimeError, LookupError, KeyError, ValueError, OSError,
            subprocess.SubprocessError) as exc:
        for n in names:
            if selected(n):
                rep.result(n, "setup: %s" % exc)
        return
    for case, name in zip(CASES, names):
        if not selected(name):
            continue
        cf = corrupt.CoreFile(cap.core)
        try:
            cf.write(place.pc_at, struct.pack("<Q", place.pc_for(case)))
            if case == "not-innermost":
                reason = corrupt.check_marked(corestack, cap.core, cap.exe, timeout, baseline,
                                              (place.thread, place.index),
                                              r"pc 0x[0-9a-f]+ outside its iseq")
            else:
                cf.write(place.ec_cfp, struct.pack("<Q", place.cfp))
                reason = check_innermost(corestack, cap, place, case, expected, lines, timeout)
            rep.result(name, reason)
        except (RuntimeError, LookupError, OSError, subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
        finally:
            cf.restore()
