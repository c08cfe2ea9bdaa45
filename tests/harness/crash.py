"""Crash cores written by the kernel (fixtures/crash/): a C extension that
faults through a bad pointer (with Ruby's SIGSEGV handler, and with it put
aside), faults in a dmark function during GC, calls rb_bug, calls abort.
Each core is checked against what Ruby printed in its own crash report
(the [BUG] line, the fault address, the RIP of its machine register
context, the C-level and Ruby-level backtraces) and what the program did.
Called from run.py's main(); names are listed in run.py's docstring.
"""

import json
import os
import re
import shutil
import subprocess

from . import compare, native, procs, yjit

CRASH_DIR = os.path.join(procs.ROOT, "fixtures", "crash")
MODES = ("segv", "raw_segv", "gc_mark", "bug", "abort")
CHECKS = ("capture", "stacks")

# What each C method of crashtest.c does.
EXPECT = {
    "segv": {"fault": True, "address": 0x1008, "function": "ct_segv", "handler": True},
    "raw_segv": {"fault": True, "address": 0x2010, "function": "ct_raw_segv",
                 "handler": False},
    "gc_mark": {"fault": True, "address": 0x3018, "function": "ct_bad_mark", "handler": True},
    "bug": {"fault": False, "outer_function": "rb_bug", "handler": False,
            "bug": "crashtest: deliberate bug 42"},
    "abort": {"fault": False, "function": "ct_abort", "handler": False},
}


def test_names(ruby):
    return ["%s/crash/%s/%s" % (ruby, m, c) for m in MODES for c in CHECKS]


def build_extension(outdir):
    """crashtest.so, at -O0 so that every function faults in its own body
    (see crashtest.c)."""
    os.makedirs(outdir, exist_ok=True)
    so = os.path.join(outdir, "crashtest.so")
    res = subprocess.run(["cc", "-shared", "-fPIC", "-g", "-O0",
                          os.path.join(CRASH_DIR, "crashtest.c"), "-o", so],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if res.returncode != 0:
        raise procs.Failure("building crashtest.so: %s" % res.stdout.strip()[-300:])
    return outdir


class RubyReport:
    """What Ruby printed in its crash report on stderr (None: no report,
    as for abort and a fault without Ruby's handler)."""

    def __init__(self, text):
        self.bug = self.address = self.rip = None
        self.ruby_frames = []    # innermost first: [label, path, lineno]
        self.c_names = {}        # pc -> function name, where Ruby named it
        m = re.search(r"^\S*?:\d+: \[BUG\] (.*)$", text, re.M)
        if m:
            self.bug = m.group(1)
        m = re.search(r"\[BUG\] Segmentation fault at 0x([0-9a-f]+)", text)
        if m:
            self.address = int(m.group(1), 16)
        m = re.search(r"^ RIP: 0x([0-9a-f]+)", text, re.M)
        if m:
            self.rip = int(m.group(1), 16)
        section = None
        for line in text.splitlines():
            if line.startswith("-- "):
                section = line
                continue
            if section and "Ruby level backtrace" in section:
                m = re.match(r"(.*):(\d+):in [`'](.*)'$", line)
                if m:
                    self.ruby_frames.insert(0, [m.group(3), m.group(1), int(m.group(2))])
            elif section and "C level backtrace" in section:
                m = re.search(r"\(([A-Za-z_][\w.]*)\+0x[0-9a-f]+\) \[0x([0-9a-f]+)\]", line)
                if m:
                    self.c_names[int(m.group(2), 16)] = m.group(1)


class CrashRun:
    def __init__(self, mode, core, status, oracle, report):
        self.mode, self.core, self.status = mode, core, status
        self.oracle, self.report = oracle, report


def run_crash(ruby, exe, mode, extdir, workdir, timeout):
    with native.extra_env({"CRASH_MODE": mode, "CRASH_EXT": extdir}):
        run = procs.Scenario(exe, os.path.join(CRASH_DIR, "crash.rb"), workdir, True,
                             yjit.scenario_env(ruby))
    try:
        run.wait_oracle(timeout)
        run.wait_exit(timeout)
        if not os.WIFSIGNALED(run.status):
            raise procs.Failure("crash.rb %s %s instead of dying of a signal; stderr: %s" % (
                mode, run.describe_exit(), procs.tail(run.stderr_path)))
        core = procs.kernel_core(run)
        with open(run.oracle_path) as f:
            oracle = json.load(f)
        with open(run.stderr_path, errors="replace") as f:
            report = RubyReport(f.read())
    finally:
        run.kill()
    return CrashRun(mode, core, os.WTERMSIG(run.status), oracle, report)


def call_line(mode):
    """The line of crash.rb that calls CrashTest.MODE."""
    with open(os.path.join(CRASH_DIR, "crash.rb")) as f:
        for number, line in enumerate(f, 1):
            if line.rstrip().endswith("CrashTest.%s" % mode):
                return number
    raise procs.Failure("crash.rb has no call of CrashTest.%s" % mode)


def expected_frames(cr):
    """The crashed thread's Ruby frames: Ruby's own report's, else the
    program's record (its caller at the call of the C method, and the C
    method as this Ruby labels it)."""
    if cr.report.ruby_frames:
        return cr.report.ruby_frames
    frames = cr.oracle["frames"]
    line = call_line(cr.mode)
    return [[cr.oracle["c_label"], frames[0][1], line],
            [frames[0][0], frames[0][1], line]] + frames[1:]


def crashed_thread(res):
    """A corestack --json run -> (report, its one crashed thread, None) or
    (None, None, why not)."""
    report, reason = native.run_json(res)
    if reason:
        return None, None, reason
    crashed = [t for t in report.get("threads", []) if t.get("crashed")]
    if len(crashed) != 1:
        return None, None, "%d threads marked crashed, expected 1" % len(crashed)
    return report, crashed[0], None


def check_capture(cr):
    exp = EXPECT[cr.mode]
    r = cr.report
    handled = exp["handler"] or cr.mode == "bug"
    if handled and not r.ruby_frames:
        return "Ruby printed no crash report with a Ruby-level backtrace"
    if exp["fault"] and exp["handler"]:
        if r.address != exp["address"] or r.rip is None:
            return "Ruby's report: fault address %s, RIP %s; expected 0x%x and a RIP" % (
                r.address and hex(r.address), r.rip and hex(r.rip), exp["address"])
    if exp.get("bug") and r.bug != exp["bug"]:
        return "Ruby's [BUG] line says %r, expected %r" % (r.bug, exp["bug"])
    return None


def check_stacks(cr, res):
    _, t, reason = crashed_thread(res)
    if reason:
        return reason
    got = [[f.get("label"), f.get("path"), f.get("lineno")] for f in t["frames"]]
    want = expected_frames(cr)
    if got != want:
        return "crashed thread's frames %s, Ruby's %s" % (compare.show(got), compare.show(want))
    return None


def crash_tests(rep, selected, args, prefixes, workdir):
    cs, timeout = args.corestack, args.timeout
    for ruby in args.rubies:
        names = [n for n in test_names(ruby) if selected(n)]
        if not names:
            continue
        prefix = procs.built_prefix(rep, prefixes, ruby, names)
        if not prefix:
            continue
        base = os.path.join(workdir, ruby, "crash")
        shutil.rmtree(base, ignore_errors=True)
        try:
            ext = build_extension(os.path.join(base, "ext"))
        except (procs.Failure, OSError, subprocess.SubprocessError) as exc:
            for n in names:
                rep.result(n, "setup: %s" % exc)
            continue
        for mode in MODES:
            mine = [n for n in names if n.split("/")[-2] == mode]
            if not mine:
                continue
            try:
                cr = run_crash(ruby, os.path.join(prefix, "bin", "ruby"), mode, ext, os.path.join(base, mode), timeout)
            except (procs.Failure, OSError, ValueError, subprocess.SubprocessError) as exc:
                for n in mine:
                    rep.result(n, "setup: %s" % exc)
                continue
            runs = {}

            def run(*argv):
                if argv not in runs:
                    runs[argv] = procs.run_tool([cs] + list(argv) + [cr.core], timeout)
                return runs[argv]
            for n in mine:
                check = n.rsplit("/", 1)[1]
                if check == "capture":
                    reason = check_capture(cr)
                else:
                    reason = check_stacks(cr, run("--json"))
                rep.result(n, reason)
            if not args.keep:
                os.unlink(cr.core)
