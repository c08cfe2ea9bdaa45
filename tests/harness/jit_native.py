"""--native while JIT code (YJIT, ZJIT) is on the machine stack: its frames
have no CFI, and the unwind must go on past them (docs/native-frames.md).

Run on every Ruby whose name ends in -yjit or -zjit (the fixtures 3.3-yjit
and 3.4-yjit; --ruby NAME-zjit=PREFIX for a Ruby with ZJIT), with
fixtures/jit/stacks.rb under that JIT at call threshold 2:

    RUBY/jit-native/live   its threads parked in JIT code (a C method, sleep,
                           called by JIT code; JIT code called by an
                           interpreted method; JIT code calling Hash#each and
                           Hash#each_value that yield to blocks compiled
                           again), read with --native --pid: exit 0, every
                           thread's frames the oracle's and merged with the
                           Ruby frames in Ruby's order, every C method of the
                           parked threads called by a JIT frame (the next
                           native frame outward is JIT code, named by the
                           JIT) but where eu-stack shows its C function
                           called from a module (a Ruby's YJIT may leave a
                           call to the interpreter: 3.2's calls sleep from
                           vm_call_cfunc_with_frame; where eu-stack's unwind
                           ended before, in JIT code, which has no CFI, the
                           fixture's design stands), and at least one so,
                           every JIT frame's pc in memory that
                           /proc/PID/maps shows executable and mapping no file,
                           inside the region the frame names, and the native
                           frames outside the Ruby ones reaching rb_vm_exec
                           and the thread's start (start_thread; main for
                           the main thread)
    RUBY/jit-native/core   the same on its core (gcore): the pcs against the
                           core's own segments (executable, no NT_FILE
                           mapping); the text output shows the JIT frames
    RUBY/jit-native/spin   JIT_MODE=spin: a thread that loops in JIT code (a
                           compiled method the interpreted driver calls again
                           and again), read live SPIN_SAMPLES times: exit 0,
                           merged, its Ruby frames leaf < drive < block as
                           the fixture has them (or drive < block, drive at
                           its call of leaf: a sample between two calls),
                           and its innermost frame JIT
                           code in at least one sample (the others may catch
                           it in the interpreter, after an interrupt made the
                           JIT code leave)
"""

import collections
import json
import os
import re
import struct
import subprocess
import time

from . import checks, compare, elfcore, native, procs

FIXTURE = os.path.join(procs.ROOT, "fixtures", "jit", "stacks.rb")
CHECKS = ("live", "core", "spin")
SPIN_SAMPLES = 10
SPIN_SETTLE_SECONDS = 20
PARKED = ("mixed", "through")
# Where each JIT is turned on (the call threshold: see the fixture).
RUBYOPT = {"yjit": "--yjit --yjit-call-threshold=2",
           "zjit": "--zjit --zjit-call-threshold=2"}

Capture = collections.namedtuple("Capture", "oracle signal_number")


def jit_of(ruby):
    for name in RUBYOPT:
        if ruby.endswith("-" + name):
            return name
    return None


def test_names(ruby):
    return ["%s/jit-native/%s" % (ruby, c) for c in CHECKS] if jit_of(ruby) else []


# --- ground truth: which memory holds code and no file --------------------

def maps_regions(pid):
    """/proc/PID/maps -> [(start, end, executable, has_file)]."""
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            start, end = (int(x, 16) for x in parts[0].split("-"))
            out.append((start, end, "x" in parts[1], parts[4] != "0"))
    return out


def core_regions(core):
    """A core's PT_LOAD segments -> [(start, end, executable, has_file)],
    a file being a range of its NT_FILE note."""
    files = []
    for _, ntype, _, desc in elfcore.notes(core):
        if ntype == elfcore.NT_FILE:
            count, = struct.unpack_from("<Q", desc, 0)
            for i in range(count):
                start, end, _ = struct.unpack_from("<QQQ", desc, 16 + 24 * i)
                files.append((start, end))
    out = []
    with open(core, "rb") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, p_flags, _, vaddr, _, _, memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", table, i * phentsize)
        if p_type == elfcore.PT_LOAD:
            end = vaddr + memsz
            out.append((vaddr, end, bool(p_flags & 1),
                        any(s < end and vaddr < e for s, e in files)))
    return out


def check_jit_frame(f, regions, jit):
    """A native frame marked as JIT code: named by the JIT, its pc in memory
    that holds code and no file, inside the region it names."""
    info = f.get("jit") or {}
    if info.get("name") != jit:
        return "JIT frame at %s named %s, expected %s" % (f.get("pc"), compare.show(info), jit)
    pc = int(f["pc"], 16)
    lo, hi = int(info.get("region_start", "0"), 16), int(info.get("region_end", "0"), 16)
    if not lo <= pc < hi:
        return "JIT frame pc %s outside its region %s" % (f["pc"], compare.show(info))
    holder = [r for r in regions if r[0] <= pc < r[1]]
    if not holder or not holder[0][2] or holder[0][3]:
        return "JIT frame pc %s is not in memory that holds code and no file: %s" % (
            f["pc"], [(hex(a), hex(b), x, fl) for a, b, x, fl in holder])
    if f.get("function") or f.get("module"):
        return "JIT frame at %s has a function or module: %s" % (f["pc"], compare.show(f))
    return None


# --- one report ---------------------------------------------------------------

def in_jit_code(pc, regions):
    return any(lo <= pc < hi and x and not fl for lo, hi, x, fl in regions)


def jit_called(eu, pc, regions):
    """Whether the native frame at pc is called from JIT code as eu-stack
    unwinds the thread (eu: [(pc, name)]): its caller's pc in memory that
    holds code and no file. True also where eu-stack's unwind met JIT code
    before reaching pc (which has no CFI: eu-stack's frames past it are
    guesses, and the fixture's design stands there); None when eu-stack
    has no such frame and met no JIT code."""
    pcs = []
    for p, _ in eu:   # past JIT code eu-stack guesses: not believed
        pcs.append(p)
        if len(pcs) > 1 and in_jit_code(p - 1, regions):
            break
    if pc in pcs and pcs.index(pc) + 1 < len(pcs):
        return in_jit_code(pcs[pcs.index(pc) + 1] - 1, regions)
    if pc not in pcs and pcs and in_jit_code(pcs[-1] - 1, regions):
        return True
    return None


def check_thread(t, regions, jit, eu=None):
    """Thread t (from --json --native) merged in Ruby's order, its JIT
    frames checked; eu (a parked thread's eu-stack frames): each C method
    is called by JIT code exactly where eu-stack's caller of its C function
    is JIT code. -> (why not, or None; how many C methods JIT code called)."""
    title = t.get("name") or "tid %s" % t.get("tid")
    if t.get("merge_error") or t.get("native_error"):
        return "thread %s: merge_error %s, native_error %s" % (
            title, compare.show(t.get("merge_error")), compare.show(t.get("native_error"))), 0
    merged = t.get("merged") or []
    order = [e["frame"] for e in merged if "frame" in e]
    if order != list(range(len(t["frames"]))):
        return "thread %s: Ruby frames in merged in order %s, expected 0..%d" % (
            title, order, len(t["frames"]) - 1), 0
    for e in merged:
        if e.get("kind") == "native" and e.get("jit") is not None:
            reason = check_jit_frame(e, regions, jit)
            if reason:
                return "thread %s: %s" % (title, reason), 0
    from_jit = 0
    for i, e in enumerate(merged if eu is not None else []):
        if e.get("kind") != "cfunc":
            continue
        want = jit_called(eu, int(e.get("pc") or "0", 16), regions)
        if want is None:
            return "thread %s: eu-stack has no frame at %s (%s) with a caller" % (
                title, e.get("pc"), e.get("function")), 0
        outer = next((x for x in merged[i + 1:] if x.get("kind") == "native"), None)
        if bool(outer and outer.get("jit")) != want:
            return "thread %s: the C method %s is %scalled by JIT code as eu-stack " \
                   "unwinds it, but the next native frame outward is %s" % (
                       title, compare.show(e.get("label")), "" if want else "not ",
                       compare.show(outer)), 0
        from_jit += want
    last_ruby = max(i for i, e in enumerate(merged) if "frame" in e)
    outside = [e.get("function") for e in merged[last_ruby + 1:]]
    want = ("rb_vm_exec", "main") if t.get("main") else ("rb_vm_exec", "start_thread")
    for name in want:
        if name not in outside:
            return "thread %s: no %s among the native frames outside the Ruby ones: %s" % (
                title, name, outside), 0
    return None, from_jit


def check_report(res, cap, regions, jit, eu):
    """eu: eu-stack's frames of every thread, {tid: [(pc, name)]}."""
    reason = checks.check_oracle(res, cap)
    if reason:
        return reason
    report, _ = compare.parse_report(res[1])
    threads = report["threads"]
    names = [t.get("name") for t in threads]
    for name in PARKED:
        if name not in names:
            return "no thread %s: %s" % (name, names)
    from_jit = 0
    for t in threads:
        parked = t.get("name") in PARKED
        reason, n = check_thread(t, regions, jit, eu.get(t.get("tid"), []) if parked else None)
        if reason:
            return reason
        from_jit += n
    if not from_jit:
        return "eu-stack shows no C method of the parked threads called by JIT code"
    return None


def check_text(res, jit):
    rc, out, err, reason = res
    broken = checks.broken_run(res)
    if broken or rc != 0:
        return broken or "text run: exit %d: %s" % (rc, checks.first_line(err))
    if not re.search(r"^    \[JIT[^]]*\] %s code  \(0x[0-9a-f]+, in 0x" % jit, out, re.M):
        return "no '[JIT] %s code' line in the text output" % jit
    return None


# --- the spinning thread -----------------------------------------------------

def fixture_lines():
    """Line numbers of the spin path, from the fixture itself."""
    with open(FIXTURE) as f:
        text = f.read().splitlines()
    at = lambda pattern: next(i + 1 for i, l in enumerate(text) if re.search(pattern, l))
    leaf = at(r"^def leaf")
    return {"leaf": range(leaf, leaf + 4),   # def to the last line of its body
            "drive": at(r"loop_count \+= leaf"),
            "block in <main>": at(r"^    drive$")}


def check_spin_sample(res, jit, lines, pid):
    report, reason = checks.json_report(res)
    if reason:
        return reason, False
    t = next((x for x in report["threads"] if x.get("name") == "spin"), None)
    if not t:
        return "no thread named spin", False
    got = [(compare.plain_label(f.get("label")), os.path.basename(f.get("path") or ""),
            f.get("lineno")) for f in t["frames"]]
    want_labels = ["leaf", "drive", "block in <main>"]
    # drive adds leaf's result and calls it again: a sample may fall in
    # between, in drive itself at the line that calls leaf
    if [g[0] for g in got] == want_labels[1:] and all(g[1] == "stacks.rb" for g in got) \
            and got[0][2] == lines["drive"] and got[1][2] == lines["block in <main>"]:
        return check_thread(t, maps_regions(pid), jit)[0], False
    if [g[0] for g in got] != want_labels or any(g[1] != "stacks.rb" for g in got):
        return "spin frames %s, expected %s in stacks.rb" % (got, want_labels), False
    if got[0][2] not in lines["leaf"] or got[1][2] != lines["drive"] or \
            got[2][2] != lines["block in <main>"]:
        return "spin lines %s, expected leaf at %s, drive at %d, block at %d" % (
            got, lines["leaf"], lines["drive"], lines["block in <main>"]), False
    reason, _ = check_thread(t, maps_regions(pid), jit)
    merged = t.get("merged") or []
    return reason, bool(merged and merged[0].get("jit"))


def spin_holds_gvl(res):
    report, reason = checks.json_report(res)
    return not reason and any(t.get("name") == "spin" and t.get("gvl") is True
                              for t in report["threads"])


def spin_test(corestack, exe, jit, timeout):
    env = dict(os.environ, RUBYOPT=RUBYOPT[jit], JIT_MODE="spin")
    proc = subprocess.Popen([exe, FIXTURE], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = fixture_lines()
    reason, taken, in_jit = None, 0, 0
    settle_until = time.monotonic() + SPIN_SETTLE_SECONDS
    try:
        if proc.stdout.readline().strip() != "spinning":
            return "stacks.rb did not start spinning: %s" % proc.stderr.read()[-300:]
        while taken < SPIN_SAMPLES:
            time.sleep(0.05)
            res = procs.run_tool([corestack, "--json", "--native", "--pid", str(proc.pid)],
                                 timeout)
            # until the main thread sleeps, spin may wait for the GVL
            if not taken and not spin_holds_gvl(res) and time.monotonic() < settle_until:
                continue
            reason, jit_on_top = check_spin_sample(res, jit, lines, proc.pid)
            if reason:
                return "sample %d: %s" % (taken + 1, reason)
            taken += 1
            in_jit += jit_on_top
    finally:
        proc.kill()
        proc.wait()
    if not in_jit:
        return "no sample of %d caught the thread in JIT code" % SPIN_SAMPLES
    return None


# --- the group ---------------------------------------------------------------

def names(ctx):
    return [n for r in ctx.rubies for n in test_names(r)]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.any_selected(test_names(r))}


def run_tests(ctx):
    rep, selected, args, prefixes, workdir = ctx.rep, ctx.selected, ctx.args, ctx.prefixes, ctx.workdir
    cs, timeout = args.corestack, args.timeout
    for ruby in args.rubies:
        names = [n for n in test_names(ruby) if selected(n)]
        if not names:
            continue
        prefix = procs.built_prefix(rep, prefixes, ruby, names)
        if not prefix:
            continue
        jit = jit_of(ruby)
        exe = os.path.join(prefix, "bin", "ruby")
        name = "%s/jit-native/" % ruby
        if name + "spin" in names:
            rep.result(name + "spin", spin_test(cs, exe, jit, timeout))
        if name + "live" not in names and name + "core" not in names:
            continue
        run = procs.Scenario(exe, FIXTURE, os.path.join(workdir, ruby, "jit-native"), False,
                             env={"RUBYOPT": RUBYOPT[jit], "JIT_MODE": "park"})
        try:
            run.wait_oracle(timeout)
            with open(run.oracle_path) as f:
                cap = Capture(json.load(f), None)
            time.sleep(0.5)   # from writing the oracle into sleep
            if name + "live" in names:
                res = procs.run_tool([cs, "--json", "--native", "--pid", str(run.pid)], timeout)
                rep.result(name + "live", check_report(res, cap, maps_regions(run.pid), jit,
                                                       native.eu_stack(None, run.pid)))
            if name + "core" in names:
                core = procs.gcore(run.pid, os.path.join(run.workdir, "core"), 120)
                run.kill()
                res = procs.run_tool([cs, "--json", "--native", core], timeout)
                reason = check_report(res, cap, core_regions(core), jit,
                                      native.eu_stack(core)) or \
                    check_text(procs.run_tool([cs, "--native", core], timeout), jit)
                rep.result(name + "core", reason)
                if not args.keep:
                    os.unlink(core)
        except (procs.Failure, OSError, ValueError, subprocess.SubprocessError) as exc:
            for n in names:
                if not n.endswith("/spin"):
                    rep.result(n, "setup: %s" % exc)
        finally:
            run.kill()
