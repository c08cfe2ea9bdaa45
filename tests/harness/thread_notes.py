"""Damaged thread notes: a tid is believed only when Ruby's record and the
core's NT_PRSTATUS notes agree.

Each test patches a real fixture core's notes in place (restored after) and
checks corestack's reading against the intact core's:

    RUBY/notes/registers-swapped  the register sets of the main thread and
                          another swapped between their notes: both threads
                          say why their tid is not believed (tid_error), the
                          exit status is 1, and with --native no native stack
                          is merged into either
    RUBY/notes/stack-pointer      another thread's stack pointer set to the
                          main thread's: that thread's tid_error says its
                          stack pointer is outside the machine stack Ruby
                          records for it, exit 1
    RUBY/notes/tid-duplicated     another thread's note given the main
                          thread's tid: exit 1, a thread names the clash
    RUBY/notes/tid-zero           another thread's note given tid 0: the
                          report is the intact one, or exit 1 with that
                          thread marked; never a tid changed with exit 0

Throughout: no thread's tid may differ from the intact core's unless that
thread has a tid_error (a silent wrong answer otherwise). The offsets in
the note are the x86-64 Linux ABI's struct elf_prstatus (pr_pid at 32,
pr_reg at 112, 27 registers), not CRuby's.
"""

import json
import struct
import subprocess

from . import elfcore

NT_PRSTATUS = 1
PR_PID, PR_REG, PR_REG_SIZE = 32, 112, 27 * 8


def prstatus_notes(path):
    """{tid: file offset of its NT_PRSTATUS desc}."""
    out = {}
    for _, ntype, off, desc in elfcore.notes(path):
        if ntype == NT_PRSTATUS and len(desc) >= PR_REG + PR_REG_SIZE:
            tid, = struct.unpack_from("<i", desc, PR_PID)
            out[tid] = off
    return out


def run(corestack, core, exe, timeout, native=False):
    cmd = [corestack, "--json"] + (["--native"] if native else []) + [core, exe]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    try:
        report = json.loads(res.stdout.decode("utf-8"))
    except ValueError:
        report = None
    return res.returncode, report, res.stderr.decode("utf-8", "replace")


def pick(baseline):
    """(main thread's tid, another Ruby thread's tid) of the intact core."""
    main = [t["tid"] for t in baseline["threads"] if t.get("main") and t.get("tid")]
    other = [t["tid"] for t in baseline["threads"] if not t.get("main") and t.get("tid")]
    if not main or not other:
        raise RuntimeError("needs the main thread and another with tids")
    return main[0], other[0]


def swap_registers(p, notes, main, other):
    a, b = notes[main] + PR_REG, notes[other] + PR_REG
    ra, rb = p.read_at(a, PR_REG_SIZE), p.read_at(b, PR_REG_SIZE)
    p.write_at(a, rb)
    p.write_at(b, ra)
    return [main, other]


RSP = 19   # struct user_regs_struct


def move_stack_pointer(p, notes, main, other):
    """Another thread's stack pointer set to the main thread's: its
    registers no longer lie in the machine stack Ruby records for it."""
    at = PR_REG + RSP * 8
    p.write_at(notes[other] + at, p.read_at(notes[main] + at, 8))
    return [other]


def duplicate_tid(p, notes, main, other):
    p.write_at(notes[other] + PR_PID, struct.pack("<i", main))
    return None   # which thread names the clash depends on the Ruby


def zero_tid(p, notes, main, other):
    p.write_at(notes[other] + PR_PID, struct.pack("<i", 0))
    return "either"


PATCHES = (("registers-swapped", swap_registers),
           ("stack-pointer", move_stack_pointer),
           ("tid-duplicated", duplicate_tid),
           ("tid-zero", zero_tid))


def no_silent_tid(report, baseline):
    """A thread whose tid changed must say why."""
    before = {t["thread"]: t.get("tid") for t in baseline["threads"]}
    for t in report["threads"]:
        if t.get("tid") != before.get(t["thread"]) and not t.get("tid_error"):
            return "thread %s: tid %s, %s in the intact core, and no tid_error" % (
                t["thread"], t.get("tid"), before.get(t["thread"]))
    return None


def check(corestack, cap, baseline, timeout, marked, main):
    rc, report, err = run(corestack, cap.core, cap.exe, timeout)
    if "Sanitizer" in err or "runtime error" in err:
        return "sanitizer report: %s" % err.strip()[:200]
    if report is None:
        return "stdout is not JSON (exit %d): %s" % (rc, err.strip()[:200])
    bad = no_silent_tid(report, baseline)
    if bad:
        return bad
    flagged = [t for t in report["threads"] if t.get("tid_error")]
    if marked == "either":
        if rc == 0 and report["threads"] != baseline["threads"]:
            return "exit 0 with a report that differs from the intact core's"
        return None
    if rc != 1 or report.get("complete") is not False:
        return "exit %d, complete %s: expected 1 and false" % (rc, report.get("complete"))
    if not flagged:
        return "no thread has a tid_error"
    if marked:
        want = {t["thread"] for t in baseline["threads"] if t.get("tid") in marked}
        got = {t["thread"] for t in flagged}
        if not want <= got:
            return "tid_error on %s, expected on the threads of tids %s" % (sorted(got), marked)
        rc, native, err = run(corestack, cap.core, cap.exe, timeout, native=True)
        if native is None:
            return "--native: stdout is not JSON (exit %d): %s" % (rc, err.strip()[:200])
        for t in native["threads"]:
            if t["thread"] in want and t.get("merged"):
                return "--native merged a native stack into thread %s, whose tid is not believed" % (
                    t["thread"])
    return None


def test_names(ruby):
    return ["%s/notes/%s" % (ruby, n) for n, _ in PATCHES]


def run_on(ctx, ruby, cap):
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    names = test_names(ruby)
    try:
        rc, baseline, err = run(corestack, cap.core, cap.exe, timeout)
        if rc != 0 or baseline is None:
            raise RuntimeError("the intact core: exit %d: %s" % (rc, err.strip()[:200]))
        main, other = pick(baseline)
        notes = prstatus_notes(cap.core)
        if main not in notes or other not in notes:
            raise RuntimeError("no NT_PRSTATUS note for tid %d or %d" % (main, other))
    except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as exc:
        for n in names:
            if selected(n):
                rep.result(n, "setup: %s" % exc)
        return
    for (what, patch), name in zip(PATCHES, names):
        if not selected(name):
            continue
        p = elfcore.Patches(cap.core)
        try:
            marked = patch(p, notes, main, other)
            rep.result(name, check(corestack, cap, baseline, timeout, marked, main))
        except (OSError, subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
        finally:
            p.restore()
