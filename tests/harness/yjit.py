"""The YJIT fixture: Ruby 3.3 built with YJIT, every scenario run under it.

The scenarios run with RUBYOPT="--yjit --yjit-call-threshold=1", so every
method is compiled on its first call and the parked stacks are made of
JIT-compiled frames; the oracle and every other check then apply as on
any fixture Ruby. One more test per scenario proves YJIT really ran:

    3.3-yjit/SCENARIO/yjit   the oracle (Ruby itself, right before the dump) says
                             RubyVM::YJIT.enabled? and that it compiled iseqs
    3.3-yjit/running-jit-code  fixtures/yjit/spin.rb, a thread that never leaves
                             JIT code, read live 10 times: its frames as the program
                             has them, a stale pc read as Ruby reads a missing one

Without a usable rustc (>= 1.58) build-ruby.sh exits 3 and the harness
prints SKIP lines for the fixture, with build-ruby.sh's reason.
"""

import json
import os
import subprocess
import sys
import time

from . import compare

VARIANT = "yjit"
RUBYOPT = "--yjit --yjit-call-threshold=1"


def is_yjit(ruby):
    return ruby.endswith("-" + VARIANT)


def scenario_env(ruby):
    """Environment a scenario runs with on this fixture Ruby."""
    env = {"RUBYOPT": RUBYOPT} if is_yjit(ruby) else {}
    env.update(gc_library_env(ruby))
    return env


GC_VARIANT = "gcdefault"


def gc_library_env(ruby):
    """A Ruby built --with-modular-gc given as --ruby NAME-gcdefault=PREFIX
    runs its scenarios with RUBY_GC_LIBRARY=default: the default GC loaded
    from the library make install-modular-gc put beside it, whose own
    debug info describes the heap (fibers.py checks that the process
    mapped it and that corestack read it)."""
    return {"RUBY_GC_LIBRARY": "default"} if ruby.endswith("-" + GC_VARIANT) else {}


def test_names(ruby, scenario):
    return ["%s/%s/yjit" % (ruby, scenario)] if is_yjit(ruby) else []


def check(oracle):
    stats = oracle.get("yjit")
    if not isinstance(stats, dict):
        return "the oracle has no \"yjit\" record: RubyVM::YJIT is not defined"
    if stats.get("enabled") is not True:
        return "RubyVM::YJIT.enabled? is %r: RUBYOPT=%r did not enable YJIT" % (
            stats.get("enabled"), RUBYOPT)
    if not isinstance(stats.get("compiled_iseq_count"), int) or stats["compiled_iseq_count"] < 1:
        return "YJIT compiled no iseq (compiled_iseq_count %r)" % stats.get("compiled_iseq_count")
    return None


def report(rep, selected, ruby, scenario, cap):
    for name in test_names(ruby, scenario):
        if selected(name):
            oracle = getattr(cap, "oracle", None)
            rep.result(name, check(oracle) if oracle is not None else "no oracle: capture failed")


# --- a thread inside JIT code --------------------------------------------

SPIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "fixtures", "yjit", "spin.rb")
SPIN_SAMPLES = 10
# How long the main thread gets to fall asleep and leave the GVL to spin.
SPIN_SETTLE_SECONDS = 20
# From spin.rb, by hand: the spinning thread's frames, innermost first, as
# (label, line or the lines it may be at). spin's pc is stale (outside its
# iseq) unless an interrupt made YJIT leave to the interpreter, which saves
# it: stale, Ruby's rule for a frame without a pc gives spin's first line
# (12, "def spin"); saved, the loop's lines.
SPIN_FIRST_LINE = 12
SPIN_LOOP_LINES = (14, 15, 16)
SPIN_BLOCK_LINE = 21


def spin_holds_gvl(report):
    return any(t.get("gvl") is True and t.get("frames") and
               compare.plain_label(t["frames"][0].get("label")) == "spin"
               for t in report.get("threads") or [])


def check_spin_sample(report):
    threads = report.get("threads") or []
    spinning = [t for t in threads if t.get("frames") and
                compare.plain_label(t["frames"][0].get("label")) == "spin"]
    if len(spinning) != 1:
        return "%d threads have spin on top, expected 1: %s" % (
            len(spinning), [[f.get("label") for f in t.get("frames", [])][:3] for t in threads])
    if spinning[0].get("state") != "runnable" or spinning[0].get("gvl") is not True:
        return "spinning thread: state %s, gvl %s; expected runnable, holding the GVL" % (
            spinning[0].get("state"), spinning[0].get("gvl"))
    frames = spinning[0]["frames"]
    got = [(f.get("label"), os.path.basename(f.get("path") or ""), f.get("lineno")) for f in frames]
    if len(frames) != 2 or got[1] != ("block in <main>", "spin.rb", SPIN_BLOCK_LINE):
        return "frames %s, expected spin over block in <main> at spin.rb:%d" % (got, SPIN_BLOCK_LINE)
    top = frames[0]
    if any(f.get("error") for f in frames):
        return "frame error: %s" % [f.get("error") for f in frames]
    if top.get("pc_stale") is True:
        if top.get("lineno") != SPIN_FIRST_LINE:
            return "stale pc but line %s, expected spin's first line %d" % (
                top.get("lineno"), SPIN_FIRST_LINE)
    elif top.get("lineno") not in SPIN_LOOP_LINES:
        return "pc not stale but line %s, expected one of the loop's %s" % (
            top.get("lineno"), SPIN_LOOP_LINES)
    return None


def running_test(rep, selected, corestack, prefixes, timeout):
    """RUBY/running-jit-code: a thread that never leaves YJIT code, read
    with --pid SPIN_SAMPLES times: no frame invented, garbled or in error,
    its line as Ruby's rule for a stale pc gives it, and the thread runnable
    and holding the GVL (the only thread that is not asleep)."""
    for ruby, prefix in prefixes.items():
        name = "%s/running-jit-code" % ruby
        if not is_yjit(ruby) or not selected(name) or not isinstance(prefix, str):
            continue
        proc = subprocess.Popen([os.path.join(prefix, "bin", "ruby"), SPIN],
                                env=dict(os.environ, RUBYOPT=RUBYOPT),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        reason, stale, taken = None, 0, 0
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
                stale += any(t.get("frames") and t["frames"][0].get("pc_stale")
                             for t in report["threads"])
        except (subprocess.TimeoutExpired, ValueError) as exc:
            reason = "corestack --pid: %s" % exc
        finally:
            proc.kill()
            proc.wait()
        rep.result(name, reason)
        if not reason:
            print("run.py: %s: %d of %d samples had spin's pc stale" % (name, stale, SPIN_SAMPLES),
                  file=sys.stderr, flush=True)
