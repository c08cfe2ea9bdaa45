"""Corrupt target memory: frames whose values fail a sanity check are marked
unreliable with the reason, and the rest of the walk goes on.

Each test patches a few bytes of a real fixture core in place (restored
afterwards), at places found from corestack's own JSON (frame addresses) and
from the layout corestack resolves from the Ruby's DWARF (`--layout`), so
the tests carry no CRuby offsets of their own:

    RUBY/corrupt/pointer  a control frame's iseq pointer aimed outside every
                          mapping: that frame says why, the others are intact
    RUBY/corrupt/line     every line-table entry of a frame's iseq set past
                          the iseq's last line: "line N outside the iseq's lines"
    RUBY/corrupt/string   a byte of a frame's label made invalid UTF-8: the
                          frame says so, and the JSON stays valid UTF-8
    RUBY/corrupt/frame-env   a frame's ep aimed off its VM stack at a word
                          that does not say escaped: that frame says so
    RUBY/corrupt/frame-type  a C method's env flags word holding a pointer:
                          the frame is kept and says its type is none the VM
                          has (before, it was skipped and went missing)
    RUBY/corrupt/thread-list-cycle     a thread's list node pointed back at itself
    RUBY/corrupt/thread-list-head      the list head pointed past the first threads
    RUBY/corrupt/thread-list-unlinked  a thread unlinked consistently (next and prev
                          of its neighbours), so that only the count CRuby keeps
                          beside the list tells: each exits 1 with an error naming the
                          list, prints no thread twice and none that the list does not
                          reach, and ends in well under 10 s (before, a cycle ran to
                          the 100,000-thread bound and a short list passed for whole)
    RUBY/corrupt/argc, argv-pointer, argv-string  Ruby's copy of its argv with
                          an argc past the bound, argv[1] aimed at no mapping,
                          argv[0]'s NUL gone (its string runs into argv[1]'s):
                          the command line falls back to the core's notes, the
                          stacks untouched, exit 0, no sanitizer report
    RUBY/corrupt/held-mutexes-unmapped, held-mutexes-cycle  the holder's
                          keeping_mutexes aimed at no mapping, its mutex's
                          next_mutex at itself: exit 1, that thread's locks_error
                          says why, every stack as before
    RUBY/limits/max-output  the output budget (--max-output, by default tied to
                          the core's size) stops the walk: exit 1, the stacks
                          read so far kept and equal to the full report's, the
                          rest marked as cut by the budget
"""

import json
import os
import re
import struct
import subprocess
import time

from . import compare, elfcore

BAD_LINE = 999999
UNMAPPED = 0x10   # the zero page is never mapped


class CoreFile(elfcore.Patches):
    """Read and patch a core's memory by virtual address (PT_LOAD data only)."""

    def __init__(self, path):
        super().__init__(path)
        self.loads = [(vaddr, off, filesz)
                      for p_type, off, vaddr, filesz in elfcore.program_headers(path)
                      if p_type == elfcore.PT_LOAD and filesz]

    def offset(self, addr, size):
        for vaddr, off, filesz in self.loads:
            if vaddr <= addr and addr + size <= vaddr + filesz:
                return off + addr - vaddr
        raise LookupError("0x%x (+%d) is not in %s" % (addr, size, self.path))

    def read(self, addr, size):
        return self.read_at(self.offset(addr, size), size)

    def u64(self, addr):
        return struct.unpack("<Q", self.read(addr, 8))[0]

    def uint(self, addr, size):
        return int.from_bytes(self.read(addr, size), "little")

    def write(self, addr, data):
        self.write_at(self.offset(addr, len(data)), data)


def layout_of(corestack, module, timeout):
    """corestack --layout MODULE -> {item: (value, size or None)}."""
    res = subprocess.run([corestack, "--no-cache", "--layout", module], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError("corestack --layout %s: exit %d: %s" % (
            module, res.returncode, res.stderr.strip()[:200]))
    items = {}
    for line in res.stdout.splitlines():
        m = re.match(r"(\w+)\s+(dwarf|macro|fallback|elf|cache)\s+(-?\d+)(?:\s+size\s+(\d+))?", line)
        if m:
            items[m.group(1)] = (int(m.group(3)), int(m.group(4)) if m.group(4) else None)
    return items


def baseline_and_layout(corestack, cap, timeout):
    """The unpatched core's report and its Ruby's layout (layout_of); raises
    RuntimeError when corestack cannot read the core completely."""
    rc, baseline, _, err = run_json(corestack, cap.core, cap.exe, timeout)
    if rc != 0 or baseline is None:
        raise RuntimeError("the unpatched core: exit %d: %s" % (rc, err.strip()[:200]))
    return baseline, layout_of(corestack, baseline["process"]["ruby_module"], timeout)


def run_json(corestack, core, exe, timeout):
    """-> (exit status, report dict or None, raw stdout bytes, stderr text)."""
    res = subprocess.run([corestack, "--json", core, exe], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=timeout)
    try:
        report = json.loads(res.stdout.decode("utf-8"))
    except ValueError:
        report = None
    return res.returncode, report, res.stdout, res.stderr.decode("utf-8", "replace")


def target_frame(report, scenario_file):
    """(thread index, frame index) of the first Ruby frame of the scenario's
    own file that runs a plain method (its label a heap String)."""
    for ti, t in enumerate(report.get("threads", [])):
        for fi, f in enumerate(t["frames"]):
            if f["kind"] == "ruby" and f.get("iseq") and \
                    (f.get("path") or "").endswith(scenario_file) and \
                    re.fullmatch(r"[a-z_]\w*", compare.plain_label(f.get("label") or "")):
                return ti, fi
    raise RuntimeError("no frame of a method of %s in the report" % scenario_file)


def check_marked(corestack, core, exe, timeout, baseline, where, reason_re, same_iseq=False):
    """The patched core: exit 1, the frame at where marked with reason_re, the
    other frames as in baseline, except C frames that took their location
    from the broken frame, which must say so."""
    rc, report, raw, err = run_json(corestack, core, exe, timeout)
    san = [l for l in err.splitlines() if "Sanitizer" in l or "runtime error" in l]
    if san:
        return "sanitizer report: %s" % san[0]
    if report is None:
        return "stdout is not valid UTF-8 JSON: %s" % compare.show(raw[:200])
    if rc != 1:
        return "exit status %d, expected 1 (partial); stderr: %s" % (rc, err.strip()[:200])
    if report.get("complete") is not False:
        return "complete is %s, expected false" % report.get("complete")
    ti, index = where
    frames, before = report["threads"][ti]["frames"], baseline["threads"][ti]["frames"]
    if len(frames) != len(before):
        return "the thread has %d frames, %d before the patch" % (len(frames), len(before))
    error = frames[index].get("error") or ""
    if not re.search(reason_re, error):
        return "frame %d error is %s, expected /%s/" % (index, compare.show(error), reason_re)
    iseq = before[index].get("iseq")
    callee_cfuncs = set()   # C frames (and frames shown as C methods) placed at it
    for i in range(index - 1, -1, -1):
        if before[i]["kind"] != "cfunc" and not before[i].get("as_c_method"):
            break
        callee_cfuncs.add(i)
    for i, (f, b) in enumerate(zip(frames, before)):
        if i == index or (same_iseq and b.get("iseq") == iseq):
            continue
        if i in callee_cfuncs and f.get("error"):
            continue
        for key in ("label", "path", "lineno", "error"):
            if f.get(key) != b.get(key):
                return "frame %d %s changed: %s -> %s" % (
                    i, key, compare.show(b.get(key)), compare.show(f.get(key)))
    text = subprocess.run([corestack, core, exe], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)
    if b"<unreliable: " not in text.stdout:
        return "the text output does not mark the frame <unreliable: ...>"
    return None


def patch_pointer(cf, layout, frame):
    # the frame's iseq member: iseq, or _iseq where Ruby renamed it
    iseq_at = (layout.get("cfp_iseq") or layout["cfp_iseq_master"])[0]
    cf.write(int(frame["cfp"], 16) + iseq_at, struct.pack("<Q", UNMAPPED))
    return r"cannot read \d+ bytes at 0x[0-9a-f]+: (not in the core|outside)"


def patch_line(cf, layout, frame):
    body = cf.u64(int(frame["iseq"], 16) + layout["iseq_body"][0])
    entries = cf.u64(body + layout["body_insns_body"][0])
    count = cf.uint(body + layout["body_insns_size"][0], layout["body_insns_size"][1])
    if not 0 < count < 100000:
        raise RuntimeError("implausible line table size %d" % count)
    step, (at, size) = layout["insn_info_size"][0], layout["insn_info_line_no"]
    for i in range(count):
        cf.write(entries + i * step + at, BAD_LINE.to_bytes(size, "little"))
    return r"line %d outside the iseq's lines \d+-\d+" % BAD_LINE


def patch_string(cf, layout, frame):
    """Find the label's bytes in its String (inside the object, or behind one
    of its words) and break the first one."""
    body = cf.u64(int(frame["iseq"], 16) + layout["iseq_body"][0])
    string = cf.u64(body + layout["body_label"][0])
    want = compare.plain_label(frame["label"]).encode()   # the iseq's own label
    obj = cf.read(string, 64)
    places = [string + obj.find(want)] if obj.find(want) >= 0 else []
    for (word,) in struct.iter_unpack("<Q", obj):
        try:
            if not places and cf.read(word, len(want)) == want:
                places.append(word)
        except LookupError:
            continue
    if not places:
        raise RuntimeError("label %r not found in the String at 0x%x" % (want, string))
    cf.write(places[0], b"\xff")
    return r"label is not valid UTF-8"


def patch_env(cf, layout, frame):
    """The frame's ep aimed at its own control frame, whose first word (the
    pc, an aligned pointer) then reads as env flags without the escaped
    bit: an env that is neither on the VM stack below its frame nor on the
    heap."""
    cfp = int(frame["cfp"], 16)
    flags_at = layout["env_index_flags"][0] * 8
    cf.write(cfp + layout["cfp_ep"][0], struct.pack("<Q", cfp + layout["cfp_pc"][0] - flags_at))
    return r"ep 0x[0-9a-f]+ is off its VM stack and its env did not escape"


def patch_frame_type(cf, layout, frame):
    """A C method's env flags word overwritten with a pointer (its own
    control frame's address): a frame type the VM does not have. Before,
    such a frame was skipped like an ifunc frame, and the C method silently
    went missing."""
    cfp = int(frame["cfp"], 16)
    ep = cf.u64(cfp + layout["cfp_ep"][0])
    cf.write(ep + layout["env_index_flags"][0] * 8, struct.pack("<Q", cfp))
    return r"env flags 0x[0-9a-f]+ name no frame type"


def ruby_method_frame(report, scenario_file):
    return target_frame(report, scenario_file)


def c_method_frame(report, scenario_file):
    """(thread index, frame index) of the first C method that has a Ruby
    caller in the scenario's file."""
    for ti, t in enumerate(report.get("threads", [])):
        frames = t["frames"]
        for fi, f in enumerate(frames):
            if f["kind"] == "cfunc" and not f.get("as_c_method") and \
                    any(g["kind"] == "ruby" and (g.get("path") or "").endswith(scenario_file)
                        for g in frames[fi + 1:]):
                return ti, fi
    raise RuntimeError("no C method frame called from %s in the report" % scenario_file)


# name, patch, whether frames of the same iseq may change, which frame
PATCHES = (("pointer", patch_pointer, False, ruby_method_frame),
           ("line", patch_line, True, ruby_method_frame),
           ("string", patch_string, True, ruby_method_frame),
           ("frame-env", patch_env, False, ruby_method_frame),
           ("frame-type", patch_frame_type, False, c_method_frame))


BUDGET = 3000   # bytes: about fifteen frames


def check_budget(corestack, cap, baseline, timeout):
    res = subprocess.run([corestack, "--json", "--max-output", str(BUDGET), cap.core, cap.exe],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    try:
        report = json.loads(res.stdout.decode("utf-8"))
    except ValueError:
        return "stdout is not JSON (exit %d): %r; stderr %r" % (
            res.returncode, res.stdout[:200], res.stderr[-300:])
    if res.returncode != 1:
        return "exit status %d, expected 1 (partial)" % res.returncode
    threads, full = report.get("threads", []), baseline["threads"]
    if len(threads) != len(full):
        return "%d threads, %d without the budget" % (len(threads), len(full))
    kept = sum(len(t["frames"]) for t in threads)
    if kept == 0 or kept >= sum(len(t["frames"]) for t in full):
        return "%d frames kept: the budget cut nothing or everything" % kept
    cut = [t for t in threads if re.search(r"budget", t.get("error") or "")]
    if not cut or not all(t.get("truncated") for t in cut):
        return "no thread says the budget stopped it (truncated and an error naming it)"
    for t, f in zip(threads, full):
        # A C frame, or a Ruby frame shown as a C method, cut off from its
        # caller has no location to show: none, never another.
        for got, want in zip(t["frames"], f["frames"]):
            as_c = got["kind"] != "ruby" or got.get("as_c_method")
            if got["label"] != want["label"] or \
                    (got["lineno"] != want["lineno"] and (not as_c or got["lineno"] != 0)):
                return "thread %s: frame %s line %s, %s line %s without the budget" % (
                    compare.show(t.get("name")), compare.show(got["label"]), got["lineno"],
                    compare.show(want["label"]), want["lineno"])
    return None


LIST_TIME_LIMIT = 10   # seconds; an intact core takes well under one


def list_fields(layout):
    """(node offset in rb_thread_t, next offset, prev offset) for either
    naming of CRuby's lists (2.7's living_threads, 3.x's ractor sets)."""
    node = layout.get("th_lt_node") or layout.get("th_vmlt_node")
    nxt = layout.get("ccan_list_node_next") or layout.get("list_node_next")
    prv = layout.get("ccan_list_node_prev") or layout.get("list_node_prev")
    if not (node and nxt and prv):
        raise RuntimeError("no thread list node layout (th_lt_node/th_vmlt_node, next, prev)")
    return node[0], nxt[0], prv[0]


def main_ractor_nodes(cf, layout, baseline):
    """The list nodes of the threads of the first ractor, in list order."""
    node_at, _, _ = list_fields(layout)
    threads = [t for t in baseline["threads"]
               if (t.get("ractor") or {}).get("id") in (None, 1)]
    if len(threads) < 3:
        raise RuntimeError("needs 3 threads in one list, the core has %d" % len(threads))
    return [int(t["thread"], 16) + node_at for t in threads]


def patch_list_cycle(cf, layout, nodes):
    _, nxt, _ = list_fields(layout)
    cf.write(nodes[1] + nxt, struct.pack("<Q", nodes[1]))


def patch_list_head(cf, layout, nodes):
    _, nxt, prv = list_fields(layout)
    head = cf.u64(nodes[0] + prv)        # the first node links back to the head
    cf.write(head + nxt, struct.pack("<Q", nodes[-1]))


def patch_list_unlinked(cf, layout, nodes):
    _, nxt, prv = list_fields(layout)
    cf.write(nodes[0] + nxt, struct.pack("<Q", nodes[2]))
    cf.write(nodes[2] + prv, struct.pack("<Q", nodes[0]))


LIST_PATCHES = (("thread-list-cycle", patch_list_cycle),
                ("thread-list-head", patch_list_head),
                ("thread-list-unlinked", patch_list_unlinked))


def check_list(corestack, cap, baseline, timeout):
    start = time.monotonic()
    rc, report, raw, err = run_json(corestack, cap.core, cap.exe, timeout)
    took = time.monotonic() - start
    if any("Sanitizer" in l or "runtime error" in l for l in err.splitlines()):
        return "sanitizer report: %s" % err.strip()[:200]
    if report is None:
        return "stdout is not JSON: %s" % compare.show(raw[:200])
    if rc != 1 or report.get("complete") is not False:
        return "exit status %d, complete %s: expected 1 and false (a silent wrong answer)" % (
            rc, report.get("complete"))
    errors = " | ".join(report.get("errors") or [])
    if not re.search(r"list|count", errors):
        return "no error names the thread list: %s" % compare.show(errors[:300])
    seen = [t.get("thread") for t in report.get("threads", [])]
    if len(seen) != len(set(seen)):
        return "a thread is printed twice (%d threads, %d distinct)" % (len(seen), len(set(seen)))
    known = {t.get("thread") for t in baseline["threads"]}
    if not set(seen) <= known:
        return "threads the list does not hold: %s" % sorted(set(seen) - known)
    if took > LIST_TIME_LIMIT:
        return "took %.1f s" % took
    return None


def list_tests(rep, selected, ruby, cap, corestack, timeout, baseline, layout):
    for what, patch in LIST_PATCHES:
        name = "%s/corrupt/%s" % (ruby, what)
        if not selected(name):
            continue
        cf = CoreFile(cap.core)
        try:
            patch(cf, layout, main_ractor_nodes(cf, layout, baseline))
            rep.result(name, check_list(corestack, cap, baseline, timeout))
        except (RuntimeError, LookupError, KeyError, OSError, subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
        finally:
            cf.restore()


def holder_thread(baseline):
    """(index, thread, its first held mutex's rb_mutex_t) of a thread that
    holds a mutex (threads.rb's holder)."""
    for i, t in enumerate(baseline["threads"]):
        if t.get("holds"):
            return i, t, int(t["holds"][0]["data"], 16)
    raise RuntimeError("no thread holds a mutex in the core")


def patch_held_unmapped(cf, layout, thread, mutex):
    cf.write(int(thread["thread"], 16) + layout["th_keeping_mutexes"][0],
             struct.pack("<Q", UNMAPPED))
    return r"held mutexes: unreadable mutex at 0x%x" % UNMAPPED


def patch_held_cycle(cf, layout, thread, mutex):
    cf.write(mutex + layout["mutex_next"][0], struct.pack("<Q", mutex))
    return r"held mutexes: a cycle"


HELD_PATCHES = (("held-mutexes-unmapped", patch_held_unmapped),
                ("held-mutexes-cycle", patch_held_cycle))


def check_held(corestack, cap, baseline, index, reason_re, timeout):
    """Exit 1, the locks_error of thread index says why (reason_re), every
    stack as before (tests/harness/locks.py's damaged Monitor too)."""
    rc, report, raw, err = run_json(corestack, cap.core, cap.exe, timeout)
    if any("Sanitizer" in l or "runtime error" in l for l in err.splitlines()):
        return "sanitizer report: %s" % err.strip()[:200]
    if report is None:
        return "stdout is not JSON: %s" % compare.show(raw[:200])
    if rc != 1 or report.get("complete") is not False:
        return "exit status %d, complete %s: expected 1 and false" % (rc, report.get("complete"))
    got = report["threads"][index]
    if not re.search(reason_re, got.get("locks_error") or ""):
        return "locks_error %s, expected /%s/" % (compare.show(got.get("locks_error")), reason_re)
    labels = lambda r: [[f.get("label") for f in t["frames"]] for t in r["threads"]]
    if labels(report) != labels(baseline):
        return "the stacks changed"
    return None


def held_tests(rep, selected, ruby, cap, corestack, timeout, baseline, layout):
    for what, patch in HELD_PATCHES:
        name = "%s/corrupt/%s" % (ruby, what)
        if not selected(name):
            continue
        cf = CoreFile(cap.core)
        try:
            index, thread, mutex = holder_thread(baseline)
            reason = patch(cf, layout, thread, mutex)
            rep.result(name, check_held(corestack, cap, baseline, index, reason, timeout))
        except (RuntimeError, LookupError, KeyError, OSError, subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
        finally:
            cf.restore()


NT_PRPSINFO = 3


def module_base(core, path):
    """Where the core's NT_FILE maps the start (file offset 0) of path."""
    for _, ntype, _, desc in elfcore.notes(core):
        if ntype != elfcore.NT_FILE:
            continue
        count, page = struct.unpack_from("<QQ", desc, 0)
        ranges = [struct.unpack_from("<QQQ", desc, 16 + 24 * i) for i in range(count)]
        names = desc[16 + 24 * count:].split(b"\0")
        starts = [r[0] for r, n in zip(ranges, names) if n == path.encode() and r[2] == 0]
        if starts:
            return min(starts)
    raise LookupError("%s is not in the core's NT_FILE note" % path)


def notes_command(core):
    """The command line of the core's NT_PRPSINFO note (pr_psargs)."""
    for _, ntype, _, desc in elfcore.notes(core):
        if ntype == NT_PRPSINFO:
            return desc[56:136].split(b"\0")[0].decode("utf-8", "replace")
    raise LookupError("no NT_PRPSINFO note in %s" % core)


def patch_argc(cf, layout, origarg):
    value, size = layout["origarg_argc"]
    cf.write(origarg + value, struct.pack("<i", 0x7fffffff))


def patch_argv1(cf, layout, origarg):
    argv = cf.u64(origarg + layout["origarg_argv"][0])
    cf.write(argv + 8, struct.pack("<Q", UNMAPPED))


def patch_argv_string(cf, layout, origarg):
    """argv[0]'s NUL overwritten: its string runs on into argv[1]'s."""
    argv = cf.u64(origarg + layout["origarg_argv"][0])
    s, nxt = cf.u64(argv), cf.u64(argv + 8)
    if nxt <= s or nxt - s > 4096:
        raise LookupError("argv[1] at 0x%x is not right after argv[0] at 0x%x" % (nxt, s))
    cf.write(nxt - 1, b"x")


ARGV_PATCHES = (("argc", patch_argc), ("argv-pointer", patch_argv1),
                ("argv-string", patch_argv_string))


def check_argv(corestack, cap, baseline, notes, timeout):
    """The command line falls back to the notes', the stacks are untouched."""
    rc, report, raw, err = run_json(corestack, cap.core, cap.exe, timeout)
    if any("Sanitizer" in l or "runtime error" in l for l in err.splitlines()):
        return "sanitizer report: %s" % err.strip()[:200]
    if report is None or rc != 0:
        return "exit status %d: %s" % (rc, compare.show(err[:200]))
    got = report["process"].get("command") or ""
    if got.rstrip(" ") != notes.rstrip(" "):
        return "process.command %s, not the notes' %s" % (
            compare.show(got[:200]), compare.show(notes))
    if report["threads"] != baseline["threads"]:
        return "the stacks differ from the unpatched core's"
    return None


def argv_tests(rep, selected, ruby, cap, corestack, timeout, baseline, layout):
    """Ruby's copy of its argv damaged: its argc past any bound, a pointer
    aimed at no mapping, a string whose NUL is gone."""
    for what, patch in ARGV_PATCHES:
        name = "%s/corrupt/%s" % (ruby, what)
        if not selected(name):
            continue
        cf = CoreFile(cap.core)
        try:
            if "origarg" not in layout:
                raise LookupError("the layout has no origarg")
            origarg = module_base(cap.core, baseline["process"]["ruby_module"]) \
                + layout["origarg"][0]
            patch(cf, layout, origarg)
            rep.result(name, check_argv(corestack, cap, baseline, notes_command(cap.core),
                                        timeout))
        except (RuntimeError, LookupError, KeyError, OSError, subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
        finally:
            cf.restore()


def corrupt_names():
    """The corrupt/ tests' names after RUBY/corrupt/."""
    return [p[0] for p in PATCHES] + [n for n, _ in LIST_PATCHES] + \
        [n for n, _ in ARGV_PATCHES] + [n for n, _ in HELD_PATCHES]


def test_names(ruby):
    return ["%s/limits/max-output" % ruby] + ["%s/corrupt/%s" % (ruby, n) for n in corrupt_names()]


def run_on(ctx, ruby, cap):
    """The three patches on one Ruby's threads core (a scenarios.Capture)."""
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    names = ["%s/corrupt/%s" % (ruby, n) for n in corrupt_names()]
    budget_name = "%s/limits/max-output" % ruby
    try:
        baseline, layout = baseline_and_layout(corestack, cap, timeout)
    except (RuntimeError, KeyError, OSError, subprocess.SubprocessError) as exc:
        for n in names + [budget_name]:
            if selected(n):
                rep.result(n, "setup: %s" % exc)
        return
    if selected(budget_name):
        try:
            rep.result(budget_name, check_budget(corestack, cap, baseline, timeout))
        except (OSError, subprocess.SubprocessError) as exc:
            rep.result(budget_name, "setup: %s" % exc)
    list_tests(rep, selected, ruby, cap, corestack, timeout, baseline, layout)
    argv_tests(rep, selected, ruby, cap, corestack, timeout, baseline, layout)
    held_tests(rep, selected, ruby, cap, corestack, timeout, baseline, layout)
    scenario_file = os.path.basename(cap.scenario) + ".rb"
    for (what, patch, same_iseq, find), name in zip(PATCHES, names):
        if not selected(name):
            continue
        cf = CoreFile(cap.core)
        try:
            where = find(baseline, scenario_file)
            frame = baseline["threads"][where[0]]["frames"][where[1]]
            reason = patch(cf, layout, frame)
            rep.result(name, check_marked(corestack, cap.core, cap.exe, timeout,
                                          baseline, where, reason, same_iseq))
        except (RuntimeError, LookupError, KeyError, OSError, subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
        finally:
            cf.restore()
