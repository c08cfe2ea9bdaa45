"""ruby-frame, ruby-up, ruby-down, ruby-list and completion inside gdb and
lldb, in the sessions the ruby-bt tests already run on threads.rb: what
each debugger runs (a script part shared by both), and the checks against
the oracle (each frame as Ruby printed it) and the file on disk.
"""

import os
import re

from . import compare


# Runs inside the debugger after its own part defined execute(cmd) ->
# (output, error), select(thread key) and native() -> (level, [function
# names from the selected frame outward]). Walks every thread's Ruby frames
# up and back down, checks selection per thread, lists source.
WALK_SCRIPT = r'''
import re as _re
def walk(threads, execute, select, native, set_sysroot, limit=100):
    """threads: [(key, lwp)] -> {"walks": {lwp: [step]}, "persist": [...], "list": [...]}"""
    out = {"walks": {}, "persist": [], "list": []}
    def step(steps, cmd):
        o, e = execute(cmd)
        steps.append({"cmd": cmd, "out": o, "error": e, "native": native()})
        return e is None
    ruby = []
    for key, lwp in threads:
        select(key)
        steps = out["walks"][str(lwp)] = []
        if not step(steps, "ruby-frame 0"):
            continue
        ruby.append((key, lwp))
        n = 1
        while n < limit and step(steps, "ruby-up"):
            n += 1
        step(steps, "ruby-down %d" % (n + 5))
        step(steps, "ruby-down")
        step(steps, "ruby-frame %d" % n)
    if len(ruby) >= 2:
        (a, la), (b, lb) = ruby[:2]
        for key, cmd in ((a, "ruby-frame 1"), (b, "ruby-frame"), (a, "ruby-frame")):
            select(key)
            step(out["persist"], cmd)
    # the first frame with a file and a line past the file's fifth
    pick = None
    for key, lwp in ruby:
        for s in out["walks"][str(lwp)]:
            m = _re.match(r"#(\d+) +([^:]+):(\d+):in ", s["out"] or "")
            if m and pick is None and m.group(2) == os.environ["GDBEXT_LIST_SHOWN"] and \
                    6 < int(m.group(3)) <= len(open(os.environ["GDBEXT_LIST_FILE"]).read()
                                               .splitlines()) - 16:
                pick = (key, int(m.group(1)))
    if pick:
        select(pick[0])
        steps = out["list"]
        step(steps, "ruby-frame %d" % pick[1])
        for cmd in ("ruby-list", "ruby-list", "ruby-list 1"):
            step(steps, cmd)
        if os.environ.get("GDBEXT_SYSROOT"):
            step(steps, "ruby-frame %d" % pick[1])   # lists around its line again
            set_sysroot(os.environ["GDBEXT_SYSROOT"])
            step(steps, "ruby-list")
            set_sysroot("/nonexistent-sysroot")
            step(steps, "ruby-list")
    return out
'''

GDB_PART = r'''
def _execute(cmd):
    try:
        return gdb.execute(cmd, to_string=True), None
    except gdb.error as exc:
        return None, str(exc)
def _select(num):
    for t in gdb.selected_inferior().threads():
        if t.num == num:
            t.switch()
def _native():
    try:
        f = gdb.selected_frame()
        level, names = f.level(), []
        while f is not None and len(names) < 4:
            names.append(f.name())
            f = f.older()
        return level, names
    except gdb.error:
        return None, []
def _sysroot(path):
    gdb.execute("set sysroot " + path, to_string=True)
if os.environ.get("GDBEXT_FRAMES"):
    _sysroot_before = gdb.parameter("sysroot") or ""
    res["frames"] = walk(res["threads"], _execute, _select, _native, _sysroot)
    # ruby-list's tests moved the sysroot; ruby-bt reads a core's files
    # under it, and the plain ruby-bt after this script must find them
    _sysroot(_sysroot_before)
'''

LLDB_PART = r'''
def _execute(cmd):
    ret = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(cmd, ret)
    return (ret.GetOutput() or "", None) if ret.Succeeded() else (None, ret.GetError() or "")
def _select(index_id):
    lldb.process.SetSelectedThreadByIndexID(index_id)
def _native():
    thread = lldb.process.GetSelectedThread()
    f = thread.GetSelectedFrame()
    level = f.GetFrameID()
    names = [thread.GetFrameAtIndex(i).GetFunctionName()
             for i in range(level, min(level + 4, thread.GetNumFrames()))]
    return level, names
def _sysroot(path):
    _execute("platform select --sysroot %s host" % path)
'''

# the VM functions that call a C method's function (engine/merge.c)
CALLS_CFUNCS = ("vm_call_cfunc", "vm_call0_cfunc", "vm_call0_body")
LOOPS = ("vm_exec_core", "vm_exec")
LIST_LINE = re.compile(r"^(->|  ) *(\d+)  (.*)$")


def oracle_by_lwp(report, oracle):
    """{lwp: the oracle's frames of that thread}: threads matched by order,
    which the json test checks is the oracle's."""
    out = {}
    for got, want in zip(report.get("threads", []),
                         compare.scenario_threads(oracle["threads"])):
        if got.get("tid") is not None:
            out[got["tid"]] = want["frames"]
    return out


def shown_frame(step):
    """(number, Location#to_s part) of what ruby-frame printed, or None."""
    first = (step["out"] or "").splitlines()[:1]
    m = re.match(r"#(\d+) +(.*)$", first[0]) if first else None
    return (int(m.group(1)), m.group(2).split("  ")[0]) if m else None


def check_native(step, mode, debugger):
    """The debugger's selected frame is the one named, and runs the frame."""
    lines = (step["out"] or "").splitlines()
    level, names = step["native"]
    said = lines[1] if len(lines) > 1 else ""
    m = re.match(r"Native frame selected: (?:frame )?#(\d+)", said)
    if not m:
        return "%s: no native frame selected: %s" % (step["cmd"], compare.show(said))
    if int(m.group(1)) != level:
        return "%s: says native frame #%s, %s's selected frame is #%s" % (
            step["cmd"], m.group(1), debugger, level)
    cfunc = lines[0].endswith("(C)") or "  (C)" in lines[0]
    if not names:
        return "%s: %s shows no selected frame" % (step["cmd"], debugger)
    if cfunc:
        if names[0] in LOOPS or not any((n or "").startswith(CALLS_CFUNCS) for n in names[1:3]):
            return "%s: a C method's frame is %s, not a function the VM's cfunc call ran" % (
                step["cmd"], compare.show(names[:3]))
    elif names[0] not in LOOPS:
        return "%s: a Ruby frame's native frame is %s, not the interpreter loop" % (
            step["cmd"], compare.show(names[0]))
    return None


def check_walk(lwp, steps, frames, debugger, mode):
    """ruby-frame 0, ruby-up to the top, ruby-down past the bottom, ruby-frame
    out of range: each frame as Ruby printed it at that depth."""
    n = len(frames)
    if n == 0:
        return None
    ups = steps[1:n]
    if len(steps) != n + 4:
        return "LWP %d: %d steps for %d Ruby frames: %s" % (
            lwp, len(steps), n, compare.show([s["error"] for s in steps if s["error"]][:2]))
    want = [(0, steps[0])] + [(k + 1, s) for k, s in enumerate(ups)] + [(0, steps[n + 1])]
    for k, s in want:
        got = shown_frame(s)
        if s["error"] or got != (k, frames[k]["text"]):
            return "LWP %d: %s showed %s, Ruby's frame %d is %s" % (
                lwp, s["cmd"], compare.show(s["error"] or s["out"]), k,
                compare.show(frames[k]["text"]))
        reason = check_native(s, mode, debugger)
        if reason:
            return "LWP %d: %s" % (lwp, reason)
    ends = [(steps[n], "Initial frame selected; you cannot go up."),
            (steps[n + 2], "Bottom (innermost) frame selected; you cannot go down."),
            (steps[n + 3], "no Ruby frame #%d" % n)]
    for s, text in ends:
        err = (s["error"] or "").strip()
        if text not in err or len(err.splitlines()) != 1:
            return "LWP %d: %s: expected one error line saying %s, got %s" % (
                lwp, s["cmd"], compare.show(text), compare.show(s["error"] or s["out"]))
    return None


def check_frames(result, report, oracle, debugger, mode):
    if report is None:
        return "no ruby-bt --json all report to match threads with"
    frames = oracle_by_lwp(report, oracle)
    data = result.get("frames")
    if not data:
        return "the frame commands did not run"
    walked = 0
    ruby_tids = set(t.get("tid") for t in report.get("threads", []))
    for lwp, steps in data["walks"].items():
        lwp = int(lwp)
        if lwp in ruby_tids and lwp not in frames:
            continue   # the oracle's own thread
        if lwp not in frames:
            err = (steps[0]["error"] or "") if steps else ""
            if "runs no Ruby thread" not in err:
                return "LWP %d runs no Ruby thread: ruby-frame said %s" % (
                    lwp, compare.show(err or steps and steps[0]["out"]))
            continue
        reason = check_walk(lwp, steps, frames[lwp], debugger, mode)
        if reason:
            return reason
        walked += 1
    if walked != len(frames):
        return "%d Ruby threads walked, %d have a tid" % (walked, len(frames))
    persist = [shown_frame(s) for s in data["persist"]]
    if [p and p[0] for p in persist] != [1, 0, 1]:
        return "selection is not per thread: ruby-frame 1, another thread's ruby-frame, " \
            "the first's again showed %s" % compare.show(persist)
    return None


def listing(out):
    """[(marked, number, text)] of ruby-list's lines; other lines apart."""
    lines, other = [], []
    for line in (out or "").splitlines():
        m = LIST_LINE.match(line)
        if m:
            lines.append((m.group(1) == "->", int(m.group(2)), m.group(3)))
        else:
            other.append(line)
    return lines, other


def check_lines(step, path, lineno, first, last):
    """step listed lines first..last of path, lineno marked: the other
    lines printed, or a reason."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            content = f.read().splitlines()
    except OSError as exc:
        return "%s: %s" % (path, exc)
    last = min(last, len(content))
    lines, other = listing(step["out"])
    want = [(k == lineno, k, content[k - 1]) for k in range(first, last + 1)]
    if step["error"] or lines != want:
        return "%s: listed %s, expected lines %d-%d of %s with %d marked" % (
            step["cmd"], compare.show(step["error"] or step["out"]), first, last, path, lineno)
    return other


def check_list(result, sysroot, mode, newer_known=True, script=None):
    """ruby-list around the selected frame's line (of script, where Ruby
    shows a path relative to the process's directory), again the next lines,
    ruby-list 1; under a sysroot holding a newer copy (live: an hour after
    the start; core: half a second after the core, in the same second):
    one note line (where the debugger says what to compare with); under
    one without the file: one error line."""
    steps = (result.get("frames") or {}).get("list") or []
    if len(steps) != 7:
        return "ruby-list steps: %s" % compare.show([s["cmd"] for s in steps])
    m = re.match(r"#\d+ +([^:]+):(\d+):in ", steps[0]["out"] or "")
    if not m or not (m.group(1).startswith("/") or script):
        return "ruby-frame before ruby-list showed %s" % compare.show(steps[0])
    path, lineno = m.group(1), int(m.group(2))
    if not path.startswith("/"):
        path = script   # listed from its absolute path, wherever gdb runs
    checks = [(steps[1], lineno - 5, lineno + 5, lineno),
              (steps[2], lineno + 6, lineno + 16, lineno),
              (steps[3], 1, 11, lineno)]
    for step, first, last, mark in checks:
        other = check_lines(step, path, mark, first, last)
        if isinstance(other, str):
            return other
        if other:
            return "%s printed more than the lines: %s" % (step["cmd"], compare.show(other))
    copy = sysroot + path
    other = check_lines(steps[5], copy, lineno, lineno - 5, lineno + 5)
    if isinstance(other, str):
        return "under the sysroot: " + other
    what = "the core was written" if mode == "core" else "the process started"
    if not newer_known:
        if other:
            return "a note where nothing is known to compare with: %s" % compare.show(other)
    elif len(other) != 1 or not re.fullmatch(r"note: %s was modified \(.*\) after %s: .*" % (
            re.escape(copy), what), other[0]):
        return "a newer file: expected one note line, got %s" % compare.show(other)
    err = (steps[6]["error"] or "").strip()
    if "cannot open /nonexistent-sysroot%s: No such file or directory" % path not in err \
            or len(err.splitlines()) != 1:
        return "a missing file: expected one error line, got %s" % compare.show(
            steps[6]["error"] or steps[6]["out"])
    return None


def frames_env(sysroot, script, shown=None):
    """What the walk (WALK_SCRIPT) needs from the test. shown: the path
    Ruby shows for script, when not script itself."""
    return {"GDBEXT_FRAMES": "1", "GDBEXT_SYSROOT": sysroot, "GDBEXT_LIST_FILE": script,
            "GDBEXT_LIST_SHOWN": shown or script}


def make_sysroot(workdir, script):
    """A sysroot holding a copy of script, modified an hour from now."""
    import shutil
    import time
    root = os.path.join(workdir, "sysroot")
    dest = root + script
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copyfile(script, dest)
    later = time.time() + 3600
    os.utime(dest, (later, later))
    return root


def newer_within_second(core, sysroot, script):
    """The core written at S.25 and the sysroot's copy of script modified
    at S.75 of the same second S: newer than the core by half a second,
    which a comparison of whole seconds does not see."""
    second = int(os.stat(core).st_mtime) * 10**9
    os.utime(core, ns=(second + 250000000,) * 2)
    os.utime(sysroot + script, ns=(second + 750000000,) * 2)


def complete_commands(workdir):
    """gdb commands completing what check_complete checks: on gdb's command
    line (gdb.execute drops a trailing blank), each after a marker."""
    texts = ("ruby-bt ", "ruby-bt --j", "ruby-sample --",
             "ruby-bt --out %s/orac" % workdir, "ruby-sample --format pp",
             "ruby-sample --state running,bl", "ruby-sample --state ",
             "ruby-sample --state running,", "ruby-bt full ")
    out = []
    for k, text in enumerate(texts):
        out += ["echo @complete %d\\n" % k, "complete " + text]
    return out + ["echo @complete end\\n"]


def check_complete(stdout, threads):
    got, key = {}, None
    for line in stdout.splitlines():
        m = re.fullmatch(r"@complete (\d+|end)", line)
        if m:
            key = m.group(1)
        elif key is not None and key != "end":
            got.setdefault(int(key), []).append(line)
    # by complete_commands' order; the --out one (3) is checked below
    want = {
        0: ("ruby-bt ", sorted(["ruby-bt --json", "ruby-bt --out", "ruby-bt --via-debugger",
                                "ruby-bt all", "ruby-bt full"] +
                               ["ruby-bt %d" % num for num, _ in threads])),
        1: ("ruby-bt --j", ["ruby-bt --json"]),
        2: ("ruby-sample --", ["ruby-sample --format", "ruby-sample --out", "ruby-sample --rate",
                               "ruby-sample --state"]),
        4: ("ruby-sample --format pp", ["ruby-sample --format pprof"]),
        5: ("ruby-sample --state running,bl", ["ruby-sample --state running,blocked"]),
        6: ("ruby-sample --state ", sorted("ruby-sample --state " + s
                                           for s in ("running", "waiting", "blocked", "gc"))),
        # a state already in the list is not offered again
        7: ("ruby-sample --state running,", sorted("ruby-sample --state running," + s
                                                   for s in ("waiting", "blocked", "gc"))),
        8: ("ruby-bt full ", sorted(["ruby-bt full --json", "ruby-bt full --out",
                                     "ruby-bt full --via-debugger", "ruby-bt full all"] +
                                    ["ruby-bt full %d" % num for num, _ in threads])),
    }
    for k, (text, lines) in want.items():
        if sorted(got.get(k, [])) != lines:
            return "complete %s: %s, expected %s" % (text, compare.show(got.get(k)),
                                                     compare.show(lines))
    if not any(l.endswith("/oracle.json") for l in got.get(3, [])):
        return "complete ruby-bt --out DIR/orac: %s, expected the oracle's file" % (
            compare.show(got.get(3)))
    return None
