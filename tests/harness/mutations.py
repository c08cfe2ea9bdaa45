"""Seeded mutations of a real core, each checked against the intact core.

For every mutation of the threads scenario's core, corestack (under
ASan/UBSan) must: not crash or report a sanitizer error, end within
TIME_LIMIT seconds and MEMORY_FACTOR times the intact run's memory, and
never print a report that differs from the intact core's while exiting 0
(a silent wrong answer). Exiting 1 (something marked unreliable) or 2
(unusable input) is a right answer to a damaged core.

    RUBY/mutations/CLASS   SEEDED mutations of that class, seeds 0.., on
                           every fixture Ruby

Classes (all places found from corestack's own --json and --layout output
and the core's ELF headers, never from CRuby offsets written here):

    frame-word     a word of a control frame (iseq, ep) or of its env
                   (flags, specval, me/cref) rewritten with garbage: 0, an
                   odd or non-canonical value, another frame's address
    list           the thread list: a node's next aimed at itself or at a
                   later node, or the head aimed past the first threads
    registers      two threads' NT_PRSTATUS register sets swapped, read
                   with --native
    notes          a thread's NT_PRSTATUS tid set to 0, to another thread's,
                   or to a tid no thread has
    truncated      the core cut at a random length

tests/mutate.py runs many more (1,000+ per Ruby) and sums them up by class.
"""

import json
import os
import random
import shutil
import struct
import subprocess
import tempfile
import time

from . import corrupt, elfcore, thread_notes

TIME_LIMIT = 10
MEMORY_FACTOR = 4
SEEDED = 12   # per class and Ruby in the suite


def run(corestack, core, exe, native, timeout):
    """corestack --json [--native] CORE EXE -> (exit status, or None when
    it took over timeout s; report or None; stderr; seconds; max RSS in
    KiB)."""
    cmd = [corestack, "--json"] + (["--native"] if native else []) + [core, exe]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        timed_out = False
        while True:   # wait4, not wait: the child's own peak memory
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.005)
        took = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read().decode("utf-8", "replace")
    try:
        report = json.loads(stdout.decode("utf-8"))
    except ValueError:
        report = None
    return (None if timed_out else proc.returncode), report, stderr, took, usage.ru_maxrss


def projection(report, native):
    """What a reader takes from a report: every thread's identity, state
    and frames (and native pcs with --native), fibers' frames."""
    def frames(fs):
        return [(f.get("label"), f.get("path"), f.get("lineno")) for f in fs]
    threads = []
    for t in report.get("threads", []):
        entry = (t.get("thread"), t.get("tid"), t.get("name"), t.get("status"),
                 t.get("main"), frames(t.get("frames", [])),
                 [frames(f.get("frames", [])) for f in t.get("fibers") or []])
        if native:
            entry += (tuple(f.get("pc") for f in t.get("native") or []),)
        threads.append(entry)
    return threads


class Context:
    """The intact core and what mutators need to know of it."""

    def __init__(self, corestack, cap, timeout):
        self.corestack, self.cap, self.timeout = corestack, cap, timeout
        status, self.report, err, self.seconds, self.rss = run(
            corestack, cap.core, cap.exe, False, timeout)
        if status != 0 or self.report is None:
            raise RuntimeError("the intact core: exit %s: %s" % (status, err.strip()[:200]))
        status, self.native, err, _, self.native_rss = run(corestack, cap.core, cap.exe, True,
                                                          timeout)
        if self.native is None:
            raise RuntimeError("the intact core with --native: exit %s: %s" % (
                status, err.strip()[:200]))
        self.native_status = status
        self.layout = corrupt.layout_of(corestack, self.report["process"]["ruby_module"],
                                        timeout)
        self.notes = thread_notes.prstatus_notes(cap.core)
        self.frames = [(t, f) for t in self.report["threads"] for f in t["frames"]
                       if f.get("cfp")]
        if not self.frames:
            raise RuntimeError("no frame with a control frame address")


def garbage(rng, ctx):
    other = rng.choice(ctx.frames)[1]
    return rng.choice([0, 1, 0x4141414141414141, 0xdead0000beef, int(other["cfp"], 16),
                       rng.getrandbits(64), int(rng.choice(ctx.report["threads"])["thread"], 16)])


def mutate_frame_word(rng, ctx, cf):
    t, f = rng.choice(ctx.frames)
    cfp = int(f["cfp"], 16)
    lay = ctx.layout
    place = rng.choice(["iseq", "ep", "flags", "specval", "me_cref"])
    if place in ("iseq", "ep"):
        # iseq is _iseq on a Ruby that renamed the member
        at = cfp + (lay.get("cfp_" + place) or lay["cfp_" + place + "_master"])[0]
    else:
        ep = cf.u64(cfp + lay["cfp_ep"][0])
        at = ep + lay["env_index_" + place][0] * 8
    value = garbage(rng, ctx)
    cf.write(at, struct.pack("<Q", value))
    return "thread %s frame %s: %s := 0x%x" % (t.get("tid"), f.get("label"), place, value)


def mutate_list(rng, ctx, cf):
    nodes = corrupt.main_ractor_nodes(cf, ctx.layout, ctx.report)
    what, patch = rng.choice(corrupt.LIST_PATCHES)
    patch(cf, ctx.layout, nodes)
    return what


def mutate_registers(rng, ctx, cf):
    tids = sorted(ctx.notes)
    a, b = rng.sample(tids, 2)
    ra = cf.read_at(ctx.notes[a] + thread_notes.PR_REG, thread_notes.PR_REG_SIZE)
    rb = cf.read_at(ctx.notes[b] + thread_notes.PR_REG, thread_notes.PR_REG_SIZE)
    cf.write_at(ctx.notes[a] + thread_notes.PR_REG, rb)
    cf.write_at(ctx.notes[b] + thread_notes.PR_REG, ra)
    return "registers of tids %d and %d swapped" % (a, b)


def mutate_notes(rng, ctx, cf):
    tids = sorted(ctx.notes)
    victim = rng.choice(tids)
    new = rng.choice([0, rng.choice(tids), max(tids) + 1000])
    cf.write_at(ctx.notes[victim] + thread_notes.PR_PID, struct.pack("<i", new))
    return "tid %d's note says tid %d" % (victim, new)


MUTATORS = {
    "frame-word": (mutate_frame_word, False),
    "list": (mutate_list, False),
    "registers": (mutate_registers, True),
    "notes": (mutate_notes, True),
    "truncated": (None, False),
}


def judge(ctx, status, report, err, took, rss, native):
    """None when the run is a right answer to the mutated core."""
    limit = MEMORY_FACTOR * (ctx.native_rss if native else ctx.rss)
    if rss > limit:
        return "max RSS %d KiB, over %d times the intact run's" % (rss, MEMORY_FACTOR)
    if status is None:
        return "no answer within %d s" % (TIME_LIMIT * 3)
    if "Sanitizer" in err or "runtime error" in err:
        return "sanitizer report: %s" % err.strip()[:200]
    if status < 0:
        return "killed by signal %d" % -status
    if took > TIME_LIMIT:
        return "took %.1f s (limit %d)" % (took, TIME_LIMIT)
    if status not in (0, 1, 2):
        return "exit status %d" % status
    if status == 2:
        return None
    if report is None:
        return "exit %d without a JSON report" % status
    if status == 0:
        intact = ctx.native if native else ctx.report
        if native and ctx.native_status != 0:
            return None   # the intact core is partial with --native already
        if projection(report, native) != projection(intact, native):
            return "exit 0 with a report that differs from the intact core's"
    return None


def one(ctx, cls, seed, scratch):
    """Apply mutation (cls, seed) to the core, run, undo -> (what, verdict)."""
    rng = random.Random("%s:%d" % (cls, seed))
    mutate, native = MUTATORS[cls]
    if cls == "truncated":
        size = os.path.getsize(ctx.cap.core)
        cut = rng.randrange(64, size)
        path = os.path.join(scratch, "truncated.core")
        with open(ctx.cap.core, "rb") as src, open(path, "wb") as dst:
            left = cut
            while left:
                chunk = src.read(min(left, 1 << 22))
                if not chunk:
                    break
                dst.write(chunk)
                left -= len(chunk)
        try:
            status, report, err, took, rss = run(ctx.corestack, path, ctx.cap.exe, False,
                                                 TIME_LIMIT * 3)
            return "cut at %d of %d bytes" % (cut, size), judge(ctx, status, report, err,
                                                                 took, rss, False)
        finally:
            os.unlink(path)
    cf = corrupt.CoreFile(ctx.cap.core)
    try:
        what = mutate(rng, ctx, cf)
        status, report, err, took, rss = run(ctx.corestack, ctx.cap.core, ctx.cap.exe, native,
                                             TIME_LIMIT * 3)
        return what, judge(ctx, status, report, err, took, rss, native)
    finally:
        cf.restore()


def test_names(ruby):
    return ["%s/mutations/%s" % (ruby, c) for c in MUTATORS]


def run_on(ctx, ruby, cap):
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    count = ctx.args.mutations
    names = [n for n in test_names(ruby) if selected(n)]
    try:
        ctx = Context(corestack, cap, timeout)
    except (RuntimeError, KeyError, OSError, subprocess.SubprocessError) as exc:
        for n in names:
            rep.result(n, "setup: %s" % exc)
        return
    scratch = tempfile.mkdtemp(prefix="corestack-mutations-")
    try:
        for name in names:
            cls = name.rsplit("/", 1)[1]
            bad = []
            for seed in range(count):
                try:
                    what, verdict = one(ctx, cls, seed, scratch)
                except (RuntimeError, LookupError, KeyError, ValueError) as exc:
                    what, verdict = "setup", str(exc)
                if verdict:
                    bad.append("seed %d (%s): %s" % (seed, what, verdict))
            rep.result(name, "%d of %d: %s" % (len(bad), count, "; ".join(bad[:3]))
                       if bad else None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
