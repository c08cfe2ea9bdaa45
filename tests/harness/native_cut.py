"""A native stack that leads out of code: corestack --native cuts it there
and says so, instead of printing what follows as frames.

    RUBY/corrupt/native-return-address  on a real core, every copy of one
                          thread's third native return address near its
                          stack pointer is overwritten with a heap address
                          (its rb_thread_t): that thread's native stack is
                          the intact one's first two frames, its
                          native_error says the unwind was cut at a return
                          address that is not code, the exit status is 1,
                          and every other thread's native stack is unchanged

The stack pointer comes from the thread's NT_PRSTATUS (x86-64 Linux
struct user_regs_struct: rsp is register 19).
"""

import json
import re
import struct
import subprocess

from . import corrupt, thread_notes

SEARCH = 64 * 1024   # bytes above the stack pointer searched for the slot
KEEP = 2             # native frames before the broken return address


def run_native(corestack, cap, timeout):
    res = subprocess.run([corestack, "--json", "--native", cap.core, cap.exe],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    try:
        return res.returncode, json.loads(res.stdout.decode("utf-8")), res.stderr.decode()
    except ValueError:
        return res.returncode, None, res.stderr.decode("utf-8", "replace")


def pcs(thread):
    return [f["pc"] for f in thread.get("native") or [] if not f.get("inlined")]


def patch(cf, notes, thread):
    """Overwrite the return address of native frame KEEP wherever it lies
    in the SEARCH bytes above the thread's stack pointer."""
    ret = int(pcs(thread)[KEEP], 16)
    regs = cf.read_at(notes[thread["tid"]] + thread_notes.PR_REG, thread_notes.PR_REG_SIZE)
    sp, = struct.unpack_from("<Q", regs, thread_notes.RSP * 8)
    data = b""
    while len(data) < SEARCH:   # up to the end of the stack's segment
        try:
            data += cf.read(sp + len(data), 4096 - (sp + len(data)) % 4096)
        except LookupError:
            break
    slots = [sp + i for i in range(0, len(data) - 7, 8)
             if struct.unpack_from("<Q", data, i)[0] == ret]
    if not slots:
        raise RuntimeError("return address 0x%x not found above sp 0x%x" % (ret, sp))
    for at in slots:
        cf.write(at, struct.pack("<Q", int(thread["thread"], 16)))


def check(corestack, cap, timeout, baseline, victim):
    rc, report, err = run_native(corestack, cap, timeout)
    if "Sanitizer" in err or "runtime error" in err:
        return "sanitizer report: %s" % err.strip()[:200]
    if report is None:
        return "stdout is not JSON (exit %d): %s" % (rc, err.strip()[:200])
    if rc != 1 or report.get("complete") is not False:
        return "exit %d, complete %s: expected 1 and false" % (rc, report.get("complete"))
    before = {t["thread"]: t for t in baseline["threads"]}
    for t in report["threads"]:
        want = pcs(before[t["thread"]])
        if t["thread"] != victim["thread"]:
            if pcs(t) != want:
                return "thread %s's native stack changed" % t.get("tid")
            continue
        why = t.get("native_error") or ""
        if not re.match(r"unwinding cut after %d frames: return address 0x[0-9a-f]+ is not "
                        r"in code" % KEEP, why):
            return "native_error is %r" % why
        if pcs(t) != want[:KEEP]:
            return "native pcs %s, expected the intact %s" % (pcs(t), want[:KEEP])
    return None


def test_names(ruby):
    return ["%s/corrupt/native-return-address" % ruby]


def run_on(ctx, ruby, cap):
    rep, corestack, timeout = ctx.rep, ctx.corestack, ctx.timeout
    name, = test_names(ruby)
    cf = corrupt.CoreFile(cap.core)
    try:
        rc, baseline, err = run_native(corestack, cap, timeout)
        if baseline is None:
            raise RuntimeError("the intact core: exit %d: %s" % (rc, err.strip()[:200]))
        notes = thread_notes.prstatus_notes(cap.core)
        victims = [t for t in baseline["threads"]
                   if t.get("tid") in notes and len(pcs(t)) > KEEP + 2 and
                   not t.get("native_error")]
        if not victims:
            raise RuntimeError("no thread with %d native frames" % (KEEP + 3))
        patch(cf, notes, victims[0])
        rep.result(name, check(corestack, cap, timeout, baseline, victims[0]))
    except (RuntimeError, LookupError, OSError, subprocess.SubprocessError) as exc:
        rep.result(name, "setup: %s" % exc)
    finally:
        cf.restore()
