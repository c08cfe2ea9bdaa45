"""Run-time variants: one Ruby build run another way, named by the suffix of
the Ruby's name (the 3.3-yjit and 3.4-yjit fixtures, `--ruby 4.1-zjit=PREFIX`).

Every scenario runs with the variant's environment, and the oracle and
every other check then apply as on any Ruby. The table VARIANTS has one
entry per variant:

    -yjit      RUBYOPT="--yjit --yjit-call-threshold=1": every method compiled
               by YJIT on its first call, the parked stacks made of its frames
    -yjit-env  RUBY_YJIT_ENABLE=1, YJIT switched on by the environment alone
               (its default call threshold)
    -zjit      RUBYOPT="--zjit --zjit-call-threshold=1": the same with ZJIT
    -zjit-env  RUBY_ZJIT_ENABLE=1
    -box       RUBY_BOX=1: Ruby::Box enabled (4.0+)

One more test per scenario proves the variant really was on:

    RUBY/SCENARIO/VARIANT    the oracle (Ruby itself, right before the dump) says
                             so: RubyVM::YJIT.enabled? (RubyVM::ZJIT.enabled?) and,
                             with call threshold 1, that it compiled iseqs
                             (compiled_iseq_count, or where Ruby does not count
                             them, 3.2, the code it generated; at the default threshold a
                             scenario that calls each method once or twice may
                             compile none), or Ruby::Box.enabled?
    RUBY/running-jit-code    (-yjit, -zjit) fixtures/yjit/spin.rb, a thread that
                             never leaves JIT code, read live 10 times: its frames as
                             the program has them, a stale pc read as Ruby reads a
                             missing one

Without a usable rustc (>= 1.58) build-ruby.sh exits 3 and the harness
prints SKIP lines for the -yjit fixtures, with build-ruby.sh's reason.
"""

import json
import os
import subprocess
import sys
import time

from . import compare


GC_VARIANT = "gcdefault"


class Variant:
    """suffix: what the Ruby's name ends in after a dash (and the name of
    its test); env: the environment its processes run with; oracle_key:
    the oracle's record of it (fixtures/oracle.rb); jit: it runs JIT code
    (whose frames --native cannot unwind); spin: RUBY/running-jit-code
    runs on it (every method compiled on its first call)."""

    def __init__(self, suffix, env, oracle_key, describe, jit, spin):
        self.suffix, self.env, self.oracle_key = suffix, env, oracle_key
        self.describe, self.jit, self.spin = describe, jit, spin


VARIANTS = (
    Variant("yjit", {"RUBYOPT": "--yjit --yjit-call-threshold=1"}, "yjit",
            "RubyVM::YJIT", jit=True, spin=True),
    Variant("yjit-env", {"RUBY_YJIT_ENABLE": "1"}, "yjit", "RubyVM::YJIT", jit=True, spin=False),
    Variant("zjit", {"RUBYOPT": "--zjit --zjit-call-threshold=1"}, "zjit",
            "RubyVM::ZJIT", jit=True, spin=True),
    Variant("zjit-env", {"RUBY_ZJIT_ENABLE": "1"}, "zjit", "RubyVM::ZJIT", jit=True, spin=False),
    Variant("box", {"RUBY_BOX": "1"}, "box", "Ruby::Box", jit=False, spin=False),
    # A Ruby built --with-modular-gc, its default GC loaded from the
    # library make install-modular-gc put beside it, whose own debug info
    # describes the heap (fibers.py checks the process mapped it and that
    # corestack read it there).
    Variant(GC_VARIANT, {"RUBY_GC_LIBRARY": "default"}, "gc_library",
            "RUBY_GC_LIBRARY", jit=False, spin=False),
)


def variant_of(ruby):
    """The variant a Ruby's name asks for, or None (plain). The longest
    matching suffix wins: 4.1-zjit-env is -zjit-env, not -env."""
    found = [v for v in VARIANTS if ruby.endswith("-" + v.suffix)]
    return max(found, key=lambda v: len(v.suffix)) if found else None


def is_jit(ruby):
    """Whether the Ruby runs its scenarios with a JIT on."""
    v = variant_of(ruby)
    return bool(v and v.jit)


def is_yjit(ruby):
    v = variant_of(ruby)
    return bool(v and v.oracle_key == "yjit")


def scenario_env(ruby):
    """Environment a scenario runs with on this Ruby."""
    v = variant_of(ruby)
    return dict(v.env) if v else {}


def test_names(ruby, scenario):
    v = variant_of(ruby)
    return ["%s/%s/%s" % (ruby, scenario, v.suffix)] if v else []


def check(variant, oracle):
    """None when the oracle says the variant was on, else why not."""
    how = " ".join("%s=%s" % kv for kv in variant.env.items())
    rec = oracle.get(variant.oracle_key)
    if variant.suffix == GC_VARIANT:   # the path of the library it mapped
        return None if rec else "the oracle's gc_library is %r: %s loaded no GC library" % (
            rec, how)
    if not isinstance(rec, dict):
        return "the oracle has no \"%s\" record: %s is not defined" % (
            variant.oracle_key, variant.describe)
    if rec.get("enabled") is not True:
        return "%s.enabled? is %r: %s did not enable it" % (
            variant.describe, rec.get("enabled"), how)
    if variant.spin:   # every method compiled on its first call
        count, code = rec.get("compiled_iseq_count"), rec.get("inline_code_size")
        # where Ruby does not count iseqs (3.2 without --yjit-stats), the
        # code it generated says it compiled
        if not (isinstance(count, int) and count >= 1 or
                count is None and isinstance(code, int) and code > 0):
            return "%s compiled no iseq (compiled_iseq_count %r, inline_code_size %r)" % (
                variant.describe, count, code)
    return None


def report(rep, selected, ruby, scenario, cap):
    v = variant_of(ruby)
    for name in test_names(ruby, scenario):
        if selected(name):
            oracle = getattr(cap, "oracle", None)
            rep.result(name, check(v, oracle) if oracle is not None else "no oracle: capture failed")


# --- a thread inside JIT code --------------------------------------------

SPIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "fixtures", "yjit", "spin.rb")
SPIN_SAMPLES = 10
# How long the main thread gets to fall asleep and leave the GVL to spin.
SPIN_SETTLE_SECONDS = 20
# From spin.rb, by hand: the spinning thread's frames, innermost first, as
# (label, line or the lines it may be at). spin's pc in its control frame
# (YJIT; ZJIT without JIT frame records) is stale (outside its iseq) unless
# an interrupt made the JIT leave to the interpreter, which saves it:
# stale, Ruby's rule for a frame without a pc gives spin's first line (19,
# "def spin"); saved, the loop's lines. A pc from ZJIT's JIT frame record is
# never stale: the pc spin's code was entered at (20, its first line of
# code) or a loop line.
SPIN_FIRST_LINE = 19
SPIN_ENTRY_LINE = 20
SPIN_LOOP_LINES = (21, 22, 23)
SPIN_BLOCK_LINE = 33


def running_test_names(ruby):
    v = variant_of(ruby)
    return ["%s/running-jit-code" % ruby] if v and v.spin else []


# The C methods spin's loop calls where a JIT calls them as methods (4.0's
# ZJIT at call threshold 1, which compiles without type profiles): a
# sample may catch one of them on top of spin.
SPIN_LOOP_CALLS = ("!=", "+")


def spin_frames(thread):
    """The thread's frames from spin's on, when spin is on top or just under
    a C method of its loop; else None."""
    frames = thread.get("frames") or []
    labels = [compare.plain_label(f.get("label")) for f in frames[:2]]
    if labels[:1] == ["spin"]:
        return frames
    if len(labels) == 2 and labels[1] == "spin" and labels[0] in SPIN_LOOP_CALLS and \
            frames[0].get("kind") == "cfunc":
        return frames[1:]
    return None


def spin_holds_gvl(report):
    return any(t.get("gvl") is True and spin_frames(t)
               for t in report.get("threads") or [])


def check_spin_sample(report):
    threads = report.get("threads") or []
    spinning = [t for t in threads if spin_frames(t)]
    if len(spinning) != 1:
        return "%d threads have spin on top, expected 1: %s" % (
            len(spinning), [[f.get("label") for f in t.get("frames", [])][:3] for t in threads])
    if spinning[0].get("state") != "runnable" or spinning[0].get("gvl") is not True:
        return "spinning thread: state %s, gvl %s; expected runnable, holding the GVL" % (
            spinning[0].get("state"), spinning[0].get("gvl"))
    if any(f.get("error") for f in spinning[0]["frames"]):
        return "frame error: %s" % [f.get("error") for f in spinning[0]["frames"]]
    frames = spin_frames(spinning[0])
    got = [(f.get("label"), os.path.basename(f.get("path") or ""), f.get("lineno")) for f in frames]
    if len(frames) != 2 or got[1] != ("block in <main>", "spin.rb", SPIN_BLOCK_LINE):
        return "frames %s, expected spin over block in <main> at spin.rb:%d" % (got, SPIN_BLOCK_LINE)
    top = frames[0]
    if frames is not spinning[0]["frames"]:
        # under a C method: spin called it, and saved its pc first
        called = spinning[0]["frames"][0]
        if (called.get("path"), called.get("lineno")) != (top.get("path"), top.get("lineno")):
            return "C method %s at %s:%s, not at spin's place %s:%s" % (
                called.get("label"), called.get("path"), called.get("lineno"),
                top.get("path"), top.get("lineno"))
        if top.get("pc_stale") or top.get("lineno") not in SPIN_LOOP_LINES:
            return "spin under %s: line %s (pc_stale %r), expected one of the loop's %s" % (
                called.get("label"), top.get("lineno"), top.get("pc_stale"), SPIN_LOOP_LINES)
    elif top.get("jit_frame") is True:
        if top.get("pc_stale") is not False:
            return "pc from a JIT frame record, yet pc_stale is %r" % top.get("pc_stale")
        if top.get("lineno") not in (SPIN_ENTRY_LINE,) + SPIN_LOOP_LINES:
            return "pc from a JIT frame record but line %s, expected %d or one of the " \
                   "loop's %s" % (top.get("lineno"), SPIN_ENTRY_LINE, SPIN_LOOP_LINES)
    elif top.get("pc_stale") is True:
        if top.get("lineno") != SPIN_FIRST_LINE:
            return "stale pc but line %s, expected spin's first line %d" % (
                top.get("lineno"), SPIN_FIRST_LINE)
    elif top.get("lineno") not in SPIN_LOOP_LINES:
        return "pc not stale but line %s, expected one of the loop's %s" % (
            top.get("lineno"), SPIN_LOOP_LINES)
    return None


def layout_has(corestack, prefix, item, timeout):
    """Whether the Ruby under prefix has the layout item (corestack --layout
    of its libruby, or of its ruby when static): what corestack reads from
    its DWARF, not a version."""
    libdir = os.path.join(prefix, "lib")
    libs = sorted(f for f in os.listdir(libdir) if f.startswith("libruby.so.")) \
        if os.path.isdir(libdir) else []
    module = os.path.join(libdir, libs[-1]) if libs else os.path.join(prefix, "bin", "ruby")
    res = subprocess.run([corestack, "--layout", module, "--no-cache"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=timeout)
    return any(line.split()[:2] in ([item, "dwarf"], [item, "macro"], [item, "elf"])
               for line in res.stdout.splitlines())


def names(ctx):
    """The run-time variants' own group: RUBY/running-jit-code (the rest of
    this module checks the scenarios' captures)."""
    return [n for r in ctx.rubies for n in running_test_names(r)]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.selected("%s/running-jit-code" % r)}


def run_tests(ctx):
    """RUBY/running-jit-code: a thread that never leaves JIT code, read
    with --pid SPIN_SAMPLES times: no frame invented, garbled or in error,
    its line as Ruby's rule for a stale pc gives it (or, from ZJIT's JIT
    frame record, the record's; under a C method of its loop, the line of
    the call), and the thread runnable and holding the GVL (the only thread
    that is not asleep). Under ZJIT on a Ruby with JIT
    frame records, at least one sample must read spin from its record, or
    the test would not be testing them."""
    rep, selected, corestack, prefixes, timeout = (ctx.rep, ctx.selected, ctx.corestack,
                                                   ctx.prefixes, ctx.timeout)
    for ruby, prefix in prefixes.items():
        name = "%s/running-jit-code" % ruby
        v = variant_of(ruby)
        if not v or not v.spin or not selected(name) or not isinstance(prefix, str):
            continue
        want_records = v.oracle_key == "zjit" and \
            layout_has(corestack, prefix, "zjit_frame_pc", timeout)
        proc = subprocess.Popen([os.path.join(prefix, "bin", "ruby"), SPIN],
                                env=dict(os.environ, **v.env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        reason, stale, records, under, taken = None, 0, 0, 0, 0
        # Until the main thread is asleep it may hold the GVL, and spin
        # waits for it (a busy machine can take long to get there): the
        # samples count from the first one with spin holding the GVL;
        # after that no other thread ever takes it.
        settle_until = time.monotonic() + SPIN_SETTLE_SECONDS
        try:
            if proc.stdout.readline().strip() != "spinning":
                reason = "spin.rb did not start: %s" % proc.stderr.read()[-300:]
            while not reason and taken < SPIN_SAMPLES:
                time.sleep(0.05)
                res = subprocess.run([corestack, "--json", "--pid", str(proc.pid)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, timeout=timeout)
                if res.returncode != 0:
                    reason = "corestack --pid exited %d: %s" % (res.returncode, res.stderr[-300:])
                    break
                report = json.loads(res.stdout)
                reason = check_spin_sample(report)
                if reason and not taken and time.monotonic() < settle_until and \
                        not spin_holds_gvl(report):
                    reason = None  # not settled yet
                    continue
                if reason:
                    break
                taken += 1
                tops = [t["frames"][0] for t in report["threads"] if t.get("frames")]
                stale += any(f.get("pc_stale") for f in tops)
                records += any(spin_frames(t)[0].get("jit_frame") is True
                               for t in report["threads"] if spin_frames(t))
                under += any(spin_frames(t) and spin_frames(t) is not t["frames"]
                             for t in report["threads"])
        except (subprocess.TimeoutExpired, ValueError) as exc:
            reason = "corestack --pid: %s" % exc
        finally:
            proc.kill()
            proc.wait()
        if not reason and want_records and not records:
            reason = "no sample read spin from ZJIT's JIT frame record (this Ruby has them): " \
                     "spin.rb no longer runs its loop in ZJIT's code?"
        rep.result(name, reason)
        if not reason:
            print("run.py: %s: %d of %d samples had spin's pc stale, %d read it from a JIT "
                  "frame record, %d caught it in a C method" % (
                      name, stale, SPIN_SAMPLES, records, under),
                  file=sys.stderr, flush=True)
