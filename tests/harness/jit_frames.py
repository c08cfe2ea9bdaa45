"""ZJIT's JIT frame records, on the core of fixtures/scenarios/jit.rb.

While ZJIT is on, a frame it runs keeps its pc and iseq in a JIT frame
record, and its control frame's own iseq slot holds whatever an older frame
left there (docs/backtrace-rules.md). The scenario's oracle test compares
every frame's label with Ruby's own; these tests make sure that comparison
is about records, and that a damaged record is caught. On a Ruby run as
NAME-zjit whose layout has struct zjit_jit_frame (else SKIP: its ZJIT keeps
pc and iseq in the control frame):

    RUBY/jit/jit-frames       corestack --json on the core: frames read from a
                              record (jit_frame) include Ruby frames and a C
                              method's, and at least one of them has a nonzero
                              iseq in its control frame's own slot other than
                              the record's: a reader that trusted the control
                              frame would have named another method there, with
                              nothing to tell it (the oracle test would fail)
    RUBY/jit/corrupt-record   the native-stack slot that holds a Ruby frame's
                              record address aimed outside every mapping: that
                              frame is kept as "?" with the reason, exit 1, the
                              other frames unchanged
    RUBY/jit/corrupt-jit-return  the frame's jit_return made misaligned: the same
"""

import struct
import subprocess

from . import corrupt, variants

SCENARIO = "jit"
TESTS = ("jit-frames", "corrupt-record", "corrupt-jit-return")


def test_names(ruby):
    v = variants.variant_of(ruby)
    if not v or v.oracle_key != "zjit" or not v.spin:   # threshold 1: compiled
        return []
    return ["%s/%s/%s" % (ruby, SCENARIO, t) for t in TESTS]


def record_frames(report):
    """(thread index, frame index, frame) of every frame read from a record,
    the oracle's thread left out."""
    out = []
    for ti, t in enumerate(report.get("threads", [])):
        if t.get("name") == "corestack-oracle":
            continue
        for fi, f in enumerate(t.get("frames", [])):
            if f.get("jit_frame") is True:
                out.append((ti, fi, f))
    return out


def check_records(cf, layout, report):
    found = record_frames(report)
    ruby = [f for _, _, f in found if f.get("kind") == "ruby"]
    cfuncs = [f for _, _, f in found if f.get("kind") == "cfunc"]
    if not ruby or not cfuncs:
        return "frames read from JIT frame records: %d Ruby, %d C; expected both " \
               "(jit.rb no longer parks in ZJIT's code?)" % (len(ruby), len(cfuncs))
    slot = layout.get("cfp_iseq", layout.get("cfp_iseq_master"))
    if slot is None:
        return "corestack --layout names no control frame iseq member"
    stale = []
    for _, _, f in found:
        own = cf.u64(int(f["cfp"], 16) + slot[0])
        if own and own != int(f.get("iseq") or "0", 16):
            stale.append("%s (its control frame: 0x%x)" % (f.get("label"), own))
    if not stale:
        return "no frame read from a record has another iseq in its control frame: " \
               "the scenario would not catch a reader that trusts the control frame"
    return None


def target(report):
    """A Ruby frame read from a record of a method of jit.rb."""
    for ti, fi, f in record_frames(report):
        if f.get("kind") == "ruby" and (f.get("path") or "").endswith("jit.rb"):
            return ti, fi, f
    raise RuntimeError("no Ruby frame of jit.rb read from a JIT frame record")


def patch_record(cf, layout, frame):
    jit_return = cf.u64(int(frame["cfp"], 16) + layout["cfp_jit_return"][0])
    cf.write(jit_return - 8, struct.pack("<Q", corrupt.UNMAPPED))
    return r"JIT frame"


def patch_jit_return(cf, layout, frame):
    at = int(frame["cfp"], 16) + layout["cfp_jit_return"][0]
    cf.write(at, struct.pack("<Q", cf.u64(at) + 3))
    return r"jit_return 0x[0-9a-f]+ is neither"


def no_core(ctx, ruby, names, failure):
    for n in names:
        ctx.rep.result(n, "setup: no %s/%s core: %s" % (ruby, SCENARIO, failure))


def run_on(ctx, ruby, cap):
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    names = [n for n in test_names(ruby) if selected(n)]
    try:
        baseline, layout = corrupt.baseline_and_layout(corestack, cap, timeout)
    except (RuntimeError, KeyError, OSError, subprocess.SubprocessError) as exc:
        for n in names:
            rep.result(n, "setup: %s" % exc)
        return
    if "zjit_frame_pc" not in layout:
        for n in names:
            rep.skip(n, "no struct zjit_jit_frame in this Ruby's debug info: its ZJIT keeps "
                     "pc and iseq in the control frame (4.0)")
        return
    for name in names:
        test = name.rsplit("/", 1)[1]
        cf = corrupt.CoreFile(cap.core)
        try:
            if test == "jit-frames":
                rep.result(name, check_records(cf, layout, baseline))
                continue
            ti, fi, frame = target(baseline)
            patch = patch_record if test == "corrupt-record" else patch_jit_return
            reason = patch(cf, layout, frame)
            rep.result(name, corrupt.check_marked(corestack, cap.core, cap.exe, timeout,
                                                  baseline, (ti, fi), reason))
        except (RuntimeError, LookupError, KeyError, OSError,
                subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
        finally:
            cf.restore()
