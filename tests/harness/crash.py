"""Crash cores written by the kernel (fixtures/crash/): a C extension that
faults through a bad pointer (with Ruby's SIGSEGV handler, and with it put
aside), faults in a dmark function during GC, calls rb_bug, calls abort,
calls through a NULL pointer or into a heap buffer (each with and without
Ruby's handler), fails an assert, corrupts the heap, overflows its stack,
sends itself SIGSEGV, faults inside a Fiber (with and without Ruby's
handler).
Each core is checked against what Ruby printed in its own crash report
(the [BUG] line, the fault address, the RIP of its machine register
context, the C-level and Ruby-level backtraces), what the program told on
stderr before it crashed (where it jumps, its thread's stack, glibc's
abort message) and what the program did.

    RUBY/crash/MODE/CHECK    MODE: segv (a bad pointer with Ruby's SIGSEGV handler),
                             raw_segv (without it), gc_mark (in a dmark function
                             during GC), bug (rb_bug), abort (abort), null_call and
                             raw_null_call (a call through a NULL function pointer,
                             with and without the handler), jump_data and
                             raw_jump_data (a call into a heap buffer), assert (a
                             failed assert), heap_corruption (free() of a pointer
                             malloc never gave), stack_overflow (C recursion into the
                             guard page, without the handler), raw_raise_segv
                             (raise(SIGSEGV) without the handler: sent, no fault),
                             fiber_segv (segv called in a Fiber), raw_fiber_segv
                             (raw_segv called in a Fiber: the fiber's Ruby frames
                             are those the program recorded in it), segv_copy (segv, the
                             extension loaded from a copy deleted before the crash,
                             as Ruby::Box loads one), raw_raise_off_thread and
                             raise_off_thread (rb_raise on a thread Ruby did not
                             create, without and with the handler; where the
                             process raises in the GVL holder instead of crashing
                             (2.7), each check reads it live, parked after its
                             rescue, against what it recorded: capture, stacks,
                             fault (no crash), summary-text, exception, gc,
                             native: live and on a core gcore takes of it, the
                             parked thread's Ruby frames merged with the native
                             stack of the thread that raised, which runs them on
                             its stack), null_call_copy (null_call so:
                             the code before the return address it left is read
                             from the file found by the build-id, since the core
                             holds no text of the deleted copy). CHECK:
                             capture: Ruby's own crash report and the program's
                             stderr say what the program did; stacks: the crashed
                             thread's Ruby frames are the report's; fault: the JSON
                             crash summary names the crash kind, the report's fault
                             address, its RIP as the faulting pc, the function and
                             module (for a call to no code, the function that made
                             it at the line of its call), its innermost Ruby method
                             (for rb_bug, abort, assert and heap corruption: no
                             fault, SIGABRT sent from rb_bug, ct_abort..., with
                             glibc's abort message as it printed it), the stack a
                             stack overflow hit the guard of as glibc knows it, and
                             the thread by its Thread#name; summary-text: the same
                             at the top of the text; native: with --native the
                             crashed thread's frames inside the signal frame are
                             marked the handler's, the first outside it is the
                             faulting function at Ruby's RIP (for a call to no
                             code: a frame that is not code, then its caller found
                             by the return address, merged as the C method; for a
                             stack overflow: the recursion to the frame limit, then
                             every Ruby frame, unmatched, and exit 0; for a
                             fault in a fiber without the handler: the faulting
                             function first, unwound on the fiber's stack to
                             rb_fiber_start, every Ruby frame merged in order);
                             gc: in GC and marking only for the dmark fault,
                             GC.count at least what the program saw (one more unless a
                             GC was marking then); exception: the
                             thread parked in a rescue clause handles Job::Failed,
                             whose message (JSON) and inspect (its thread's text
                             line) are what the program's $!.message gave;
                             found (segv_copy only): the copy the core names is
                             found by its build-id as the extension in its
                             $LOAD_PATH directory, in JSON's modules_found and
                             the text's "Module" line; every module found so
                             a deleted file and the file found of its build-id;
                             found-lib-dir (segv_copy only): with a renamed copy
                             in a directory given by --lib-search-path, that file
                             is the one found, in that directory;
                             damaged-signal-frame (null_call, jump_data): with the
                             signal number in the handler's siginfo made invalid,
                             the kind is unknown (JSON fault null), never "no
                             fault";
                             no-libc-debug (abort, assert, heap_corruption): read
                             with libc's debug info out of reach (/usr/lib/debug
                             hidden in a mount namespace of its own, no debuginfod):
                             the abort message is still the line glibc printed on
                             stderr (none for abort), in JSON and in the summary's
                             text, with no abort_message_error, and the summary is
                             the fault check's (no fault, sent from the function
                             that aborted, as with the debug info);
                             no-libc-debug-damaged (assert): the same, with the size
                             word of glibc's record in the core made no size glibc
                             gives: no message, and abort_message_error and the
                             text's one "abort message not read" line say why and
                             name libc6-dbg
    RUBY/crash/dir/CHECK     core_dir.py: a directory of those cores grouped by
                             crash signature (JSON, Markdown, JUnit)
"""

import json
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from . import compare, core_dir, corrupt, native, procs, variants
from .checks import first_line

CRASH_DIR = os.path.join(procs.ROOT, "fixtures", "crash")
MODES = ("segv", "raw_segv", "gc_mark", "bug", "abort", "null_call", "raw_null_call",
         "jump_data", "raw_jump_data", "assert", "heap_corruption", "stack_overflow",
         "raw_raise_segv", "fiber_segv", "segv_copy", "null_call_copy", "killed",
         "raw_killed", "raw_raise_off_thread", "raise_off_thread", "raw_fiber_segv")
CHECKS = ("capture", "stacks", "fault", "summary-text", "native", "gc", "exception")
COPY = "_copy"  # a mode loading the extension from a deleted copy
# Checks of some modes only: the core with its signal frame damaged.
MODE_CHECKS = {"null_call": ("damaged-signal-frame",), "jump_data": ("damaged-signal-frame",),
               "segv_copy": ("found", "found-lib-dir"), "abort": ("no-libc-debug",),
               "assert": ("no-libc-debug", "no-libc-debug-damaged"),
               "heap_corruption": ("no-libc-debug",)}

# What each C method of crashtest.c does: the crash kind the summary must
# say, the fault's address ("jump": the heap buffer the program told on
# stderr; "stack": just below the stack it told) and code, the function
# that faulted or sent the signal, or (an execution at a pc that is not
# code) the function whose call went there, and the message glibc printed
# before it aborted.
EXPECT = {
    "segv": {"fault": True, "kind": "memory_access", "address": 0x1008,
             "code": "SEGV_MAPERR", "function": "ct_segv", "handler": True},
    "raw_segv": {"fault": True, "kind": "memory_access", "address": 0x2010,
                 "code": "SEGV_MAPERR", "function": "ct_raw_segv", "handler": False},
    "gc_mark": {"fault": True, "kind": "memory_access", "address": 0x3018,
                "code": "SEGV_MAPERR", "function": "ct_bad_mark", "handler": True},
    # rb_bug aborts, from rb_bug itself or (4.1-dev) from die(), which
    # rb_bug calls and which resets SIGABRT to its default first
    "bug": {"fault": False, "kind": "sent", "outer_function": ("rb_bug", "die"),
            "handler": False, "bug": "crashtest: deliberate bug 42", "abort_message": None},
    "abort": {"fault": False, "kind": "sent", "function": "ct_abort", "handler": False,
              "abort_message": None},
    "null_call": {"fault": True, "kind": "execute", "address": 0, "code": "SEGV_MAPERR",
                  "called_from": "ct_null_call", "handler": True},
    "raw_null_call": {"fault": True, "kind": "execute", "address": 0, "code": "SEGV_MAPERR",
                      "called_from": "ct_raw_null_call", "handler": False},
    "jump_data": {"fault": True, "kind": "execute", "address": "jump", "code": "SEGV_ACCERR",
                  "called_from": "ct_jump_data", "handler": True},
    "raw_jump_data": {"fault": True, "kind": "execute", "address": "jump",
                      "code": "SEGV_ACCERR", "called_from": "ct_raw_jump_data",
                      "handler": False},
    "assert": {"fault": False, "kind": "sent", "function": "ct_assert", "handler": False,
               "abort_message": re.compile(r".*crashtest\.c:\d+: ct_assert: "
                                           r"Assertion `jobs == 0' failed\.")},
    "heap_corruption": {"fault": False, "kind": "sent", "function": "ct_heap_corruption",
                        "handler": False,
                        "abort_message": re.compile(r"free\(\): invalid pointer")},
    # a C stack overflow under Ruby's handler raises SystemStackError
    "stack_overflow": {"fault": True, "kind": "stack_overflow", "address": "stack",
                       "function": "recurse", "handler": False},
    # a fault's signal sent, not a fault: the whole stack holds no signal
    # frame
    "raw_raise_segv": {"fault": False, "kind": "sent", "signal": "SIGSEGV",
                       "function": "ct_raw_raise_segv", "handler": False},
    # SIGSEGV sent to the thread by a child process the program forked
    # (it told the child's pid): no fault, and sent by that child
    "killed": {"fault": False, "kind": "sent", "signal": "SIGSEGV",
               "function": "killed_by_child", "handler": True, "sender": "child"},
    "raw_killed": {"fault": False, "kind": "sent", "signal": "SIGSEGV",
                   "function": "killed_by_child", "handler": False, "sender": "child"},
    # rb_raise on a thread Ruby did not create: Ruby faults in libruby,
    # on a thread that runs no Ruby (the program told its tid); a NULL
    # execution context's field, so an address in the first page
    "raw_raise_off_thread": {"fault": True, "kind": "memory_access", "handler": False,
                             "off_thread": True, "code": "SEGV_MAPERR"},
    # the same with Ruby's SIGSEGV handler, which then runs on that
    # thread
    "raise_off_thread": {"fault": True, "kind": "memory_access", "handler": True,
                         "off_thread": True, "code": "SEGV_MAPERR"},
    # ct_segv called from a Fiber: the crashed thread's Ruby frames are
    # the fiber's, as Ruby's report gives them
    "fiber_segv": {"fault": True, "kind": "memory_access", "address": 0x1008,
                   "code": "SEGV_MAPERR", "function": "ct_segv", "handler": True,
                   "fiber": True},
    # ct_raw_segv called from a Fiber, without Ruby's handler: no report,
    # the fiber's Ruby frames are those the program recorded in it
    "raw_fiber_segv": {"fault": True, "kind": "memory_access", "address": 0x2010,
                       "code": "SEGV_MAPERR", "function": "ct_raw_segv", "handler": False,
                       "fiber": True, "method": "raw_segv", "call": "# in a fiber"},
}
# ct_segv's fault under a SIGSEGV handler of the extension's own that
# blocks no signal (SA_NODEFER): read live (crash_live.py) while that
# handler hangs, the fault is its signal frame's
EXPECT["nodefer_segv"] = {"fault": True, "kind": "memory_access", "address": 0x4020,
                          "code": "SEGV_MAPERR", "function": "ct_nodefer_segv",
                          "handler": False, "own_handler": True}
EXPECT["segv_copy"] = EXPECT["segv"]
EXPECT["null_call_copy"] = EXPECT["null_call"]


def method_of(mode):
    """The C method of CrashTest a mode calls."""
    mode = mode[:-len(COPY)] if mode.endswith(COPY) else mode
    return EXPECT[mode].get("method", mode)

# How far below its stack a stack overflow may fault (crash.c's reach).
GUARD_REACH = 1 << 20


def ruby_handled(cr):
    """Whether Ruby's own signal handler ran, as its report says: always for
    the modes EXPECT says so; for SIGABRT where the Ruby handles it (4.0 and
    later) and its report says "[BUG] Aborted"."""
    return EXPECT[cr.mode]["handler"] or bool(cr.report.aborted)


def handler_name(cr):
    """Ruby's handler of the signal the mode raises (or has sent)."""
    exp = EXPECT[cr.mode]
    return "sigsegv" if exp["fault"] or exp.get("signal") == "SIGSEGV" else "sigabrt"


def test_names(ruby):
    return ["%s/crash/%s/%s" % (ruby, m, c) for m in MODES
            for c in CHECKS + MODE_CHECKS.get(m, ())] + core_dir.test_names(ruby)


def build_extension(outdir, ruby_exe):
    """crashtest.so for that Ruby, at -O0 so that every function faults in
    its own body (see crashtest.c)."""
    procs.build_extension(os.path.join(CRASH_DIR, "crashtest.c"), outdir, "-O0", ruby_exe)
    return outdir


class RubyReport:
    """What Ruby printed in its crash report on stderr (None: no report,
    as for abort and a fault without Ruby's handler)."""

    def __init__(self, text):
        self.bug = self.address = self.rip = None
        # what crashtest.c told before it crashed: where it jumps, the
        # thread's stack
        m = re.search(r"^crashtest: jump to 0x([0-9a-f]+)$", text, re.M)
        self.jump = int(m.group(1), 16) if m else None
        m = re.search(r"^crashtest: off-thread tid (\d+)$", text, re.M)
        self.off_tid = int(m.group(1)) if m else None
        m = re.search(r"^crashtest: sender (\d+)$", text, re.M)
        self.sender = int(m.group(1)) if m else None
        m = re.search(r"^crashtest: stack 0x([0-9a-f]+)-0x([0-9a-f]+)$", text, re.M)
        self.stack = (int(m.group(1), 16), int(m.group(2), 16)) if m else None
        # the Fiber the crash happened in, as crash.rb told it
        m = re.search(r"^crash\.rb: in #<Fiber:0x([0-9a-f]+)", text, re.M)
        self.fiber = int(m.group(1), 16) if m else None
        self.lines = text.splitlines()
        # Ruby's SIGABRT handler reported the abort (4.0 and later)
        self.aborted = re.search(r"\[BUG\] Aborted\b", text) is not None
        self.ruby_frames = []    # innermost first: [label, path, lineno]
        self.c_names = {}        # pc -> function name, where Ruby named it
        self.c_pcs = []          # every pc of the C-level backtrace, in order
        # the [BUG] line without a source position: Ruby found no
        # execution context on the thread that crashed
        self.bug_unplaced = re.search(r"^\[BUG\] ", text, re.M) is not None
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
                m = re.search(r"\[0x([0-9a-f]+)\]", line)
                if m:
                    self.c_pcs.append(int(m.group(1), 16))
                m = re.search(r"\(([A-Za-z_][\w.]*)\+0x[0-9a-f]+\) \[0x([0-9a-f]+)\]", line)
                if m:
                    self.c_names[int(m.group(2), 16)] = m.group(1)


class CrashRun:
    """A crash: its core (None: read live, while the process hung in
    Ruby's crash handler, crash_live.py), the signal it died of, the
    program's oracle and Ruby's report."""

    def __init__(self, mode, core, status, oracle, report, live=False, at_fault=False):
        self.mode, self.core, self.status = mode, core, status
        self.oracle, self.report, self.live = oracle, report, live
        # no crash: what the program recorded of the exception it got
        # instead (CORESTACK_ORACLE.raised), and corestack --pid's runs of
        # it parked after (argv tuple -> run_tool's result)
        self.raised, self.runs = None, {}
        # read live while a debugger holds it stopped at the fault, before
        # any handler ran
        self.at_fault = at_fault
        # live: read from a core gcore took of the process (still in its
        # handler, or writing its bug report), not from the process
        self.gcore = False


def run_crash(ruby, exe, mode, extdir, workdir, timeout, cs=None):
    with native.extra_env({"CRASH_MODE": mode, "CRASH_EXT": extdir}):
        run = procs.Scenario(exe, os.path.join(CRASH_DIR, "crash.rb"), workdir, True,
                             variants.scenario_env(ruby))
    try:
        run.wait_oracle(timeout)
        raised = run.oracle_path + ".raised"
        if EXPECT[mode].get("off_thread"):
            # dead of the crash, or (2.7) raised in the GVL holder instead
            # and parked: then read live
            deadline = time.monotonic() + timeout
            while not run.poll() and not os.path.exists(raised):
                if time.monotonic() > deadline:
                    raise procs.Failure("crash.rb %s neither died nor parked within %d s" % (
                        mode, timeout))
                time.sleep(0.02)
            if not run.poll():
                return parked_run(run, mode, raised, cs, timeout)
        run.wait_exit(timeout)
        if not os.WIFSIGNALED(run.status):
            raise procs.Failure("crash.rb %s %s instead of dying of a signal; stderr: %s" % (
                mode, run.describe_exit(), procs.tail(run.stderr_path)))
        core = procs.kernel_core(run)
        with open(run.oracle_path) as f:
            oracle = json.load(f)
        report = RubyReport(told(run))
    finally:
        run.kill()
    return CrashRun(mode, core, os.WTERMSIG(run.status), oracle, report)


def told(run):
    """What a crash.rb run wrote on stderr (Ruby's report), then on
    stdout (what crashtest.c tells there)."""
    text = ""
    for path in (run.stderr_path, run.stdout_path):
        with open(path, errors="replace") as f:
            text += f.read() + "\n"
    return text


def parked_run(run, mode, raised, cs, timeout):
    """A CrashRun of a process that did not crash but parked after it
    recorded what it raised instead: corestack --pid's runs of it, with
    and without --json and --native, and --json --native on a core gcore
    took of it (key ("gcore", "--json", "--native"))."""
    with open(run.oracle_path) as f:
        oracle = json.load(f)
    with open(raised) as f:
        got = json.load(f)
    cr = CrashRun(mode, None, None, oracle, None, live=True)
    cr.raised = got
    for argv in (("--json",), (), ("--json", "--native")):
        cr.runs[argv] = procs.run_tool([cs] + list(argv) + ["--pid", str(run.pid)], timeout)
    core = procs.gcore(run.pid, os.path.join(run.workdir, "parked"), timeout)
    try:
        cr.runs[("gcore", "--json", "--native")] = procs.run_tool(
            [cs, "--json", "--native", core], timeout)
    finally:
        os.unlink(core)
    cr.report = RubyReport(told(run))
    if run.poll():
        raise procs.Failure("crash.rb %s %s while read, parked after it raised %s" % (
            mode, run.describe_exit(), got.get("class")))
    return cr


def expected_address(cr):
    """The fault address the mode must give, or None (a stack overflow:
    any address just below the stack, see address_ok)."""
    address = EXPECT[cr.mode].get("address")
    if address == "jump":
        return cr.report.jump
    return None if address == "stack" else address


def address_ok(cr, address):
    """Is address the fault the program made?"""
    if EXPECT[cr.mode].get("address") == "stack":
        low = cr.report.stack and cr.report.stack[0]
        return low is not None and low - GUARD_REACH <= address < low
    return address == expected_address(cr)


def c_call_line(function):
    """The line of crashtest.c that makes function's call through a bad
    pointer (marked "CALL: function")."""
    with open(os.path.join(CRASH_DIR, "crashtest.c")) as f:
        for number, line in enumerate(f, 1):
            if line.rstrip().endswith("/* CALL: %s */" % function):
                return number
    raise procs.Failure("crashtest.c has no call marked %s" % function)


def call_line(mode):
    """The line of crash.rb where mode calls its C method: the first
    ending in "CrashTest.METHOD", or in "CrashTest.METHOD # ..." as
    EXPECT's "call" says (a method called in two places)."""
    call = "CrashTest.%s" % method_of(mode)
    if EXPECT[mode].get("call"):
        call += " " + EXPECT[mode]["call"]
    with open(os.path.join(CRASH_DIR, "crash.rb")) as f:
        for number, line in enumerate(f, 1):
            if line.rstrip().endswith(call):
                return number
    raise procs.Failure("crash.rb has no line ending in %r" % call)


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


def plain_frames(frames):
    """Frames with their labels as Ruby's crash report prints them: 3.4's
    report shows "segv" where Thread#backtrace_locations says
    "CrashTest.segv"."""
    return [[compare.plain_label(label), path, line] for label, path, line in frames]


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
    handled = ruby_handled(cr) or cr.mode == "bug"
    if exp.get("off_thread") and handled:
        return check_off_thread_report(cr)
    if handled and not r.ruby_frames:
        return "Ruby printed no crash report with a Ruby-level backtrace"
    if exp.get("address") == "jump" and r.jump is None:
        return "the program did not tell where it jumps"
    if exp.get("address") == "stack" and r.stack is None:
        return "the program did not tell its stack"
    if exp.get("off_thread") and r.off_tid is None:
        return "the program did not tell the tid of its thread Ruby does not know"
    if exp.get("sender") and r.sender is None:
        return "the program did not tell which child sends the signal"
    if exp["fault"] and exp["handler"]:
        if r.address is None or not address_ok(cr, r.address) or r.rip is None:
            return "Ruby's report: fault address %s, RIP %s; expected %s and a RIP" % (
                r.address and hex(r.address), r.rip and hex(r.rip), expected_address(cr))
        if exp["kind"] == "execute" and r.rip != r.address:
            return "Ruby's report: RIP 0x%x, but it faulted executing 0x%x" % (
                r.rip, r.address)
    if exp.get("abort_message") and not any(
            exp["abort_message"].fullmatch(l) for l in r.lines):
        return "glibc printed no line matching %r" % exp["abort_message"].pattern
    if exp.get("bug") and r.bug != exp["bug"]:
        return "Ruby's [BUG] line says %r, expected %r" % (r.bug, exp["bug"])
    return None


def check_stacks(cr, res):
    _, t, reason = crashed_thread(res)
    if reason:
        return reason
    got = plain_frames([[f.get("label"), f.get("path"), f.get("lineno")]
                        for f in t["frames"]])
    want = plain_frames(expected_frames(cr))
    if got != want:
        return "crashed thread's frames %s, Ruby's %s" % (compare.show(got), compare.show(want))
    return None


def check_fault(cr, res):
    """The summary names Ruby's fault address, faulting pc (its RIP),
    function and Ruby method; for rb_bug and abort, who sent the signal."""
    report, t, reason = crashed_thread(res)
    if reason:
        return reason
    exp, r = EXPECT[cr.mode], cr.report
    c = report.get("crash")
    if not c:
        return "no crash summary"
    if c.get("error"):
        return "crash summary incomplete: %s" % c["error"]
    if c.get("tid") != t.get("tid"):
        return "summary names tid %s, the crashed thread is %s" % (c.get("tid"), t.get("tid"))
    if c.get("thread_name") != cr.oracle["thread_name"]:
        return "summary names thread %s, Ruby's Thread#name %s" % (
            compare.show(c.get("thread_name")), compare.show(cr.oracle["thread_name"]))
    fiber = c.get("fiber")
    if exp.get("fiber"):
        if r.fiber is None:
            return "crash.rb did not tell its fiber"
        if fiber is None or int(fiber, 16) != r.fiber:
            return "summary names fiber %s, Fiber#inspect 0x%x" % (fiber, r.fiber)
    elif fiber is not None:
        return "summary names fiber %s, the crash is on the thread's root fiber" % fiber
    at = c.get("at") or {}
    if c.get("fault") != exp["fault"] or c.get("kind") != exp["kind"]:
        return "fault %s, kind %s; expected %s, %s" % (
            c.get("fault"), c.get("kind"), exp["fault"], exp["kind"])
    sig = c.get("signal") or {}
    if exp["fault"]:
        want = {"name": "SIGSEGV"}
        if "code" in exp:
            want["code_name"] = exp["code"]
        got = {k: sig.get(k) for k in want}
        if got != want:
            return "signal %s, expected %s" % (got, want)
        address = int(sig.get("fault_address") or "-1", 16)
        if not address_ok(cr, address):
            return "fault address %s, expected %s" % (
                sig.get("fault_address"), expected_address(cr) if expected_address(cr)
                is not None else "just below the stack %s" % compare.show(r.stack))
        if r.address is not None and address != r.address:
            return "fault address %s, Ruby's report 0x%x" % (sig["fault_address"], r.address)
        if exp["kind"] == "stack_overflow":
            stack = c.get("stack") or {}
            got = (int(stack.get("start", "-1"), 16), int(stack.get("end", "-1"), 16))
            if got != r.stack:
                return "stack %s, the program's 0x%x-0x%x" % (
                    compare.show(stack), r.stack[0], r.stack[1])
        if r.rip is not None:
            rip = (c.get("registers") or {}).get("rip")
            if rip is None or int(rip, 16) != r.rip or int(at.get("pc", "0"), 16) != r.rip:
                return "pc %s (rip %s), Ruby's RIP 0x%x" % (at.get("pc"), rip, r.rip)
            named = r.c_names.get(r.rip)
            if named and named != at.get("function"):
                return "function %s, Ruby's C backtrace %s" % (at.get("function"), named)
    else:
        want = exp.get("signal", "SIGABRT")
        if sig.get("name") != want or sig.get("code_name") != "SI_TKILL":
            return "signal %s, expected %s, SI_TKILL" % (compare.show(sig), want)
    # who sent it: the child the program told, else the process itself
    want = (r.sender if exp.get("sender") else (report.get("process") or {}).get("pid")) \
        if not exp["fault"] else None
    if c.get("sender_pid") != want:
        return "sender_pid %s, expected %s" % (c.get("sender_pid"), want)
    # a handler of the extension's own, seen while it runs
    handled = (ruby_handled(cr) or bool(cr.live and exp.get("own_handler"))) \
        and not cr.at_fault
    if bool(c.get("from_signal_frame")) != handled:
        return "from_signal_frame %s with%s Ruby's handler" % (
            c.get("from_signal_frame"), "" if handled else "out")
    if cr.at_fault and c.get("core_signal") is not None:
        return "core_signal %s at the fault itself" % compare.show(c.get("core_signal"))
    if cr.live:
        # still in the handler: no signal of its own yet
        if c.get("core_signal") is not None or c.get("handler_running") is not True:
            return "core_signal %s, handler_running %s; expected none and true: the " \
                "process hangs in Ruby's handler" % (compare.show(c.get("core_signal")),
                                                     c.get("handler_running"))
    elif handled and (c.get("core_signal") or {}).get("code_name") != "SI_TKILL":
        return "core_signal %s: Ruby's handler sent the core's signal" % (
            compare.show(c.get("core_signal")))
    elif c.get("handler_running") is not False:
        return "handler_running %s in a core, expected false" % c.get("handler_running")
    if "function" in exp and at.get("function") != exp["function"]:
        return "function %s, expected %s" % (at.get("function"), exp["function"])
    if "abort_message" in exp:
        want = exp["abort_message"]
        got = c.get("abort_message")
        if (got is None) != (want is None) or (want and got not in r.lines):
            return "abort message %s, expected %s as glibc printed it" % (
                compare.show(got), want and want.pattern)
    if "called_from" in exp:
        # an execution at a pc that is not code: nothing there, and the
        # caller the return address names, at the line of its call
        cf = c.get("called_from") or {}
        want = {"function": exp["called_from"], "module": "crashtest.so",
                "line": c_call_line(exp["called_from"])}
        got = {k: cf.get(k) for k in want}
        if got != want or not (cf.get("file") or "").endswith("crashtest.c"):
            return "called from %s, expected %s in crashtest.c" % (compare.show(cf), want)
        if at.get("function") or at.get("module"):
            return "faulted in %s, expected no function at a pc that is not code" % (
                compare.show(at))
        at = cf
    if "outer_function" in exp and not set(exp["outer_function"]) & {
            at.get("function"), at.get("outer_function")}:
        return "sent from %s (in %s), expected %s" % (
            at.get("function"), at.get("outer_function"), exp["outer_function"])
    mod = at.get("module") or ""
    if not (mod.startswith("libruby") or mod == "ruby" if cr.mode == "bug"
            else mod == "crashtest.so"):
        return "module %s" % compare.show(mod)
    rf = c.get("ruby_frame") or {}
    want = plain_frames(expected_frames(cr))[0]
    if plain_frames([[rf.get("label"), rf.get("path"), rf.get("lineno")]])[0] != want:
        return "Ruby method %s, Ruby's %s" % (compare.show(rf), compare.show(want))
    return None


# What the summary says of a process still in a fault's handler, live and
# in a core gcore took then.
RUNNING_LIVE = "\n    the handler is still running: the process has not ended\n"
RUNNING_GCORE = "\n    the handler was still running when the core was taken\n"


def check_summary_text(cr, res):
    rc, out, err, reason = res
    if reason or rc != 0:
        return reason or "exit %d: %s" % (rc, err.strip()[:200])
    lines = out.split("\nThread ")[0].splitlines()
    crash = [l for l in lines if l.startswith("Crash: ")]
    if not crash:
        return "no 'Crash:' line before the threads: %s" % compare.show(lines)
    exp = EXPECT[cr.mode]
    head = "\n".join(lines[lines.index(crash[0]):])
    label = compare.plain_label(expected_frames(cr)[0][0])
    if not re.search(r"called from Ruby: .*:in [`'](\S*[.#])?%s'" % re.escape(label), head):
        return "the summary does not name the Ruby method %r: %s" % (label, compare.show(head))
    fiber = " in fiber 0x%x" % cr.report.fiber if exp.get("fiber") else ""
    if not re.match(r'Crash: thread \d+ "%s" \(tid \d+\)%s,' % (re.escape(
            cr.oracle["thread_name"]), fiber), crash[0]):
        return "the summary does not name the thread %r%s: %s" % (
            cr.oracle["thread_name"], fiber, crash[0])
    wants = []
    if exp["kind"] == "execute":
        wants += [r"at address 0x%x\b" % expected_address(cr),
                  r"executed 0x%x, which is not code, called from crashtest\.so: %s at "
                  r"\S*crashtest\.c:%d," % (expected_address(cr), exp["called_from"],
                                          c_call_line(exp["called_from"]))]
    elif exp["kind"] == "stack_overflow":
        wants += [r"at address 0x[0-9a-f]+: stack overflow, \d+ bytes below the thread's "
                  r"stack 0x%x-0x%x" % cr.report.stack,
                  re.escape("crashtest.so: %s" % exp["function"])]
    elif exp["fault"]:
        wants += [r"at address 0x%x\b" % exp["address"],
                  re.escape("crashtest.so: %s" % exp["function"])]
    else:
        sender = ("process %d" % cr.report.sender if exp.get("sender")
                  else "the process itself")
        wants += [re.escape("no fault: %s (SI_TKILL) sent by %s" % (
            exp.get("signal", "SIGABRT"), sender))]
    if exp.get("abort_message"):
        wants += [r"\n    abort message: %s\n" % exp["abort_message"].pattern]
    running = RUNNING_GCORE if cr.gcore else RUNNING_LIVE
    if cr.live:
        wants += [re.escape(running)]
    elif RUNNING_LIVE in head + "\n" or RUNNING_GCORE in head + "\n":
        return "a core's summary says the handler is still running: %s" % compare.show(head)
    for want in wants:
        if not re.search(want, head + "\n"):
            return "the summary lacks %r: %s" % (want, compare.show(head))
    return None


def build_id(path):
    """The build-id of the file at path, as readelf reads it; None: none."""
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, timeout=60).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def check_found(ext, res_json, res_text):
    """The deleted copy of crashtest.so the core names is found by its
    build-id as crashtest.so in the extension's directory (on $LOAD_PATH),
    in JSON and in the text's header; no module whose file is where the
    process mapped it is among those found (under Ruby::Box every
    extension is a deleted copy: they are), and each file found has the
    build-id said."""
    report, reason = native.run_json(res_json)
    if reason:
        return reason
    found = (report.get("process") or {}).get("modules_found")
    want = os.path.join(ext, "crashtest.so")
    if not isinstance(found, list):
        return "modules_found %s, expected a list" % compare.show(found)
    # under Ruby::Box every extension is a deleted copy, found so too
    for f in found:
        if not (f.get("mapped") or "").endswith(" (deleted)") or \
                build_id(f.get("file") or "") != f.get("build_id"):
            return "found %s: not a deleted file, or the build-id is not the file's" % (
                compare.show(f))
    ours = [f for f in found if (f.get("mapped") or "").endswith("crashtest.so (deleted)")]
    if len(ours) != 1:
        return "modules_found %s, expected the copy of crashtest.so once" % compare.show(found)
    f = ours[0]
    if os.path.realpath(f.get("file") or "") != os.path.realpath(want) or \
            os.path.realpath(f.get("found_in") or "") != os.path.realpath(ext):
        return "found %s in %s, expected %s" % (
            compare.show(f.get("file")), compare.show(f.get("found_in")), want)
    if f.get("found_by") != "build_id" or f.get("build_id") != build_id(want):
        return "found by %s, build-id %s; expected build_id %s" % (
            f.get("found_by"), f.get("build_id"), build_id(want))
    rc, out, err, reason = res_text
    if reason or rc != 0:
        return reason or "text run exit %d" % rc
    line = "Module %s: found by build-id in %s as crashtest.so" % (f["mapped"], f["found_in"])
    if line not in out.split("\nThread ")[0].splitlines():
        return "the header lacks %r" % line
    return None


def check_found_lib_dir(ext, workdir, run):
    """A copy of crashtest.so under another name in a --lib-search-path
    directory: found there by its build-id (every file of the directory
    is read), before the $LOAD_PATH one."""
    libdir = os.path.join(workdir, "libdir")
    os.makedirs(libdir, exist_ok=True)
    renamed = os.path.join(libdir, "renamed-extension.so")
    shutil.copyfile(os.path.join(ext, "crashtest.so"), renamed)
    report, reason = native.run_json(run("--json", "--lib-search-path", libdir))
    if reason:
        return reason
    found = [f for f in (report.get("process") or {}).get("modules_found") or []
             if (f.get("mapped") or "").endswith("crashtest.so (deleted)")]
    if len(found) != 1 or found[0].get("file") != renamed or \
            found[0].get("found_in") != libdir:
        return "modules_found %s, expected %s in %s" % (compare.show(found), renamed, libdir)
    c = report.get("crash") or {}
    if (c.get("at") or {}).get("function") != "ct_segv":
        return "the summary names %s, expected ct_segv" % compare.show(c.get("at"))
    return None


def check_native(cr, res):
    """--native: the crashed thread's frames inside the signal frame are
    the handler's, the first outside it the faulting function."""
    if EXPECT[cr.mode]["kind"] == "stack_overflow":
        return check_overflow_native(cr, res)
    _, t, reason = crashed_thread(res)
    if reason:
        return reason
    frames = t.get("native") or []
    exp = EXPECT[cr.mode]
    handler = [f for f in frames if f.get("handler")]
    if not ruby_handled(cr):
        if handler:
            return "frames marked as a handler's: %s" % compare.show(handler[:3])
        if exp["kind"] == "execute":
            return check_past_not_code(cr, t, frames)
        return check_fiber_native(cr, t, frames) if exp.get("fiber") else None
    names = [native.plain_name(f.get("function") or "") for f in handler]
    if handler_name(cr) not in names:
        return "Ruby's handler (%s) not among the handler's frames: %s" % (
            handler_name(cr), names)
    rest = frames[len(handler):]
    if cr.report.rip is not None and (not rest or int(rest[0]["pc"], 16) != cr.report.rip):
        return "the interrupted frame's pc %s, Ruby's RIP 0x%x" % (
            rest[0]["pc"] if rest else None, cr.report.rip)
    if exp["kind"] == "execute":
        return check_past_not_code(cr, t, rest)
    # a sent signal (abort) interrupted the C library that sent it
    if not exp["fault"]:
        rest = [f for f in rest if not (f.get("module") or "").startswith(
            ("libc.so", "libc-", "libpthread"))]
    want = exp.get("function") or exp["outer_function"]
    if not rest or native.plain_name(rest[0].get("function") or "") not in (
            want if isinstance(want, tuple) else (want,)):
        return "the first frame outside the handler is %s, expected %s" % (
            compare.show(rest[:1]), want)
    return None


def check_fiber_native(cr, t, frames):
    """A fault in a fiber without Ruby's handler: the native frames, from
    the faulting function (merged as the C method), unwind on the fiber's
    own stack to Ruby's fiber start, never the thread's start, with every
    Ruby frame of the fiber merged in order."""
    want = EXPECT[cr.mode]["function"]
    names = [native.plain_name(f.get("function") or "") for f in frames]
    if not names or names[0] != want or t.get("native_error") or t.get("merge_error"):
        return "native frames %s (errors %s, %s), expected %s first" % (
            compare.show(names[:3]), t.get("native_error"), t.get("merge_error"), want)
    if "rb_fiber_start" not in names or "start_thread" in names:
        return "native frames %s, expected them to end at the fiber's start " \
            "(rb_fiber_start), not the thread's" % compare.show(names)
    merged = t.get("merged") or []
    cfunc = [m for m in merged if m.get("kind") == "cfunc"]
    if not cfunc or native.plain_name(cfunc[0].get("function") or "") != want:
        return "the merged C method's native function %s, expected %s" % (
            compare.show(cfunc[:1]), want)
    got = [m.get("frame") for m in merged if m.get("kind") != "native"]
    if got != list(range(len(t.get("frames") or []))) or not got:
        return "Ruby frames merged %s, expected each of the fiber's %d in order" % (
            compare.show(got), len(t.get("frames") or []))
    return None


def check_overflow_native(cr, res):
    """A stack overflow: the recursion fills the native frames, unwound
    from the guard (their stack pointers below the stack, then in it) to
    the frame limit. Nothing shown is undecoded (exit 0): the merged stack
    is those native frames, then, from merge_cut, every Ruby frame in
    order (all are outside the cut: the recursion is C's)."""
    rc, out, err, reason = res
    if reason or rc != 0:
        return reason or "exit %d, expected 0 (native frames cut at the limit, then " \
            "the Ruby frames): %s" % (rc, err.strip()[:200])
    report, reason = compare.parse_report(out)
    if reason:
        return reason
    crashed = [t for t in report.get("threads", []) if t.get("crashed")]
    if len(crashed) != 1:
        return "%d threads marked crashed, expected 1" % len(crashed)
    t = crashed[0]
    frames = t.get("native") or []
    names = {native.plain_name(f.get("function") or "") for f in frames}
    if len(frames) < 2 or names != {EXPECT[cr.mode]["function"]} or t.get("native_error"):
        return "native frames %s (error %s), expected only %s to the limit" % (
            compare.show(sorted(names)), t.get("native_error"), EXPECT[cr.mode]["function"])
    if t.get("merge_error") is not None:
        return "merge_error %s, expected none" % compare.show(t.get("merge_error"))
    merged, cut = t.get("merged") or [], t.get("merge_cut")
    if cut != len(frames):
        return "merge_cut %s, expected %d (after the native frames)" % (
            compare.show(cut), len(frames))
    inside, outside = merged[:cut], merged[cut:]
    if any(m.get("kind") != "native" for m in inside):
        return "Ruby frames merged into the recursion: %s" % compare.show(
            [m for m in inside if m.get("kind") != "native"][:2])
    want = list(range(len(t.get("frames") or [])))
    got = [m.get("frame") for m in outside]
    if got != want or any(m.get("function") for m in outside):
        return "after merge_cut: frames %s, expected %s without native fields" % (
            compare.show(got), want)
    return None


def check_past_not_code(cr, t, frames):
    """An execution at a pc that is not code: frames (from the faulting
    one) start there, marked not code, then the function that made the
    call (found by the return address it left), and the unwind goes on to
    the thread's start; the merged stack gives the C method that
    function."""
    exp = EXPECT[cr.mode]
    if not frames or int(frames[0]["pc"], 16) != expected_address(cr) or \
            not frames[0].get("not_code") or frames[0].get("function"):
        return "the faulting frame %s, expected pc 0x%x, not code" % (
            compare.show(frames[:1]), expected_address(cr))
    caller = frames[1] if len(frames) > 1 else {}
    if native.plain_name(caller.get("function") or "") != exp["called_from"] or \
            caller.get("found_by") != "return_address" or \
            caller.get("line") != c_call_line(exp["called_from"]):
        return "the frame after it %s, expected %s at its call, found by return address" % (
            compare.show(caller), exp["called_from"])
    if t.get("native_error"):
        return "native unwind stopped: %s" % t["native_error"]
    cfuncs = [m for m in t.get("merged") or [] if m.get("kind") == "cfunc"]
    if not cfuncs or native.plain_name(cfuncs[0].get("function") or "") != exp["called_from"]:
        return "the merged C method's native function %s, expected %s" % (
            compare.show(cfuncs[:1]), exp["called_from"])
    return None


def check_damaged_signal_frame(cr, cs, timeout):
    """The signal number in the siginfo Ruby's handler got (found in the
    core by its bytes, next to the saved %rsp and %rip) made invalid: no
    signal frame holds the original fault any more, and the core's own
    signal (SIGSEGV sent by the handler) must not be taken for a sent one:
    the kind is unknown, "fault" null, the text says so, exit 0."""
    res = procs.run_tool([cs, "--json", cr.core], timeout)
    report, t, reason = crashed_thread(res)
    if reason:
        return "intact core: %s" % reason
    c = report.get("crash") or {}
    regs = c.get("registers") or {}
    if c.get("kind") != "execute" or not regs.get("rsp"):
        return "intact core: kind %s, registers %s" % (c.get("kind"), compare.show(regs))
    rsp, rip = int(regs["rsp"], 16), int(regs["rip"], 16)
    address = expected_address(cr)
    # the ucontext's gregs hold ... rsp, rip ...; the siginfo after it
    # starts with si_signo, si_errno, si_code and, at 16, si_addr
    siginfo = struct.pack("<iii", 11, 0, 1 if address == 0 else 2)
    core = corrupt.CoreFile(cr.core)
    with open(cr.core, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = data.find(struct.pack("<QQ", rsp, rip))
        info = data.find(siginfo, at, at + 1024) if at >= 0 else -1
        if info < 0 or data[info + 16:info + 24] != struct.pack("<Q", address):
            return "no saved context with rsp 0x%x, rip 0x%x and its siginfo in the core" % (
                rsp, rip)
    core.write_at(info, struct.pack("<i", 200))
    try:
        res = procs.run_tool([cs, "--json", cr.core], timeout)
        res_text = procs.run_tool([cs, cr.core], timeout)
    finally:
        core.restore()
    report, t, reason = crashed_thread(res)
    if reason:
        return reason
    c = report.get("crash") or {}
    if c.get("kind") != "unknown" or c.get("fault") is not None or not c.get("error"):
        return "kind %s, fault %s, error %s; expected unknown, null and why" % (
            c.get("kind"), c.get("fault"), compare.show(c.get("error")))
    rc, out, err, reason = res_text
    if reason or rc != 0:
        return reason or "text run exit %d: %s" % (rc, err.strip()[:200])
    crash = [l for l in out.splitlines() if l.startswith("Crash: ")]
    if not crash or "no fault" in crash[0] or \
            not crash[0].endswith("; the original fault is unknown"):
        return "the summary says %s" % compare.show(crash[:1])
    return None


def without_libc_debug(argv, empty):
    """argv run with libc's debug info out of reach: /usr/lib/debug, where
    libc6-dbg puts it (by build-id and debug link), covered by the empty
    directory empty in a mount namespace of its own, and no debuginfod ->
    (argv, None), or (None, why it cannot be)."""
    argv = ["env", "-u", "DEBUGINFOD_URLS"] + argv
    if not os.path.isdir("/usr/lib/debug"):
        return argv, None
    unshare = shutil.which("unshare")
    if not unshare:
        return None, "hiding /usr/lib/debug needs unshare (util-linux)"
    flags = ["--mount"] if os.geteuid() == 0 else ["--mount", "--map-root-user"]
    script = 'mount --bind "$0" /usr/lib/debug && [ ! -e /usr/lib/debug/.build-id ] && exec "$@"'
    return [unshare] + flags + ["sh", "-c", script, empty] + argv, None


def hidden_run(cs, core, empty, timeout, *opts):
    """corestack [opts] core without libc's debug info -> (run, None), or
    (None, why it cannot run so here)."""
    argv, why = without_libc_debug([cs] + list(opts) + [core], empty)
    if why:
        return None, why
    res = procs.run_tool(argv, timeout)
    if res[0] not in (0, 1) and ("unshare" in res[2] or "mount" in res[2]):
        return None, "cannot hide /usr/lib/debug here: %s" % first_line(res[2])
    return res, None


def abort_message_summary(cr, res, res_text, want):
    """The crash summary's abort message, JSON and text, is want (None:
    no message) with no abort_message_error."""
    report, _, reason = crashed_thread(res)
    if reason:
        return reason
    c = report.get("crash") or {}
    got, err = c.get("abort_message"), c.get("abort_message_error")
    if got != want or err is not None:
        return "abort message %s (error %s), glibc printed %s" % (
            compare.show(got), compare.show(err), compare.show(want))
    rc, out, _, reason = res_text
    if reason or rc not in (0, 1):
        return reason or "text run exit %d" % rc
    head = out.split("\nThread ")[0]
    lines = [l for l in head.splitlines() if l.startswith("    abort message")]
    if lines != (["    abort message: %s" % want] if want else []):
        return "the summary's text says %s" % compare.show(lines)
    return None


def glibc_line(cr):
    """The line glibc printed on stderr before it aborted, or None."""
    pattern = EXPECT[cr.mode]["abort_message"]
    lines = [l for l in cr.report.lines if pattern and pattern.fullmatch(l)]
    return lines[0] if lines else None


def check_no_libc_debug(cr, cs, empty, timeout):
    res, why = hidden_run(cs, cr.core, empty, timeout, "--json")
    if why:
        return None, why
    res_text, why = hidden_run(cs, cr.core, empty, timeout)
    if why:
        return None, why
    want = glibc_line(cr)
    if EXPECT[cr.mode]["abort_message"] and want is None:
        return "glibc printed no abort message on stderr", None
    # the whole summary as with libc's debug info: the libc frames are
    # unwound by its CFI, the thread's end told by it too
    return abort_message_summary(cr, res, res_text, want) or check_fault(cr, res), None


def check_no_libc_debug_damaged(cr, cs, empty, timeout):
    """glibc's record (a page of its own: the size word, the text, a NUL)
    found in the core by its text, its size word made one glibc never
    writes."""
    want = glibc_line(cr)
    if want is None:
        return "glibc printed no abort message on stderr", None
    text = (want + "\n").encode() + b"\0"
    core = corrupt.CoreFile(cr.core)
    at = None
    with open(cr.core, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        i = data.find(text)
        while i >= 0 and at is None:
            size = struct.unpack("<I", data[i - 4:i])[0] if i >= 4 else 0
            if i % 4096 == 4 and size and size % 4096 == 0:
                at, word = i - 4, size
            i = data.find(text, i + 1)
    if at is None:
        return "no page in the core starts with glibc's record of %r" % want, None
    core.write_at(at, struct.pack("<I", word + 8))
    try:
        res, why = hidden_run(cs, cr.core, empty, timeout, "--json")
        res_text, why2 = hidden_run(cs, cr.core, empty, timeout)
    finally:
        core.restore()
    if why or why2:
        return None, why or why2
    report, _, reason = crashed_thread(res)
    if reason:
        return reason, None
    c = report.get("crash") or {}
    err = c.get("abort_message_error") or ""
    if c.get("abort_message") is not None or "libc6-dbg" not in err or "\n" in err:
        return "abort message %s, error %s; expected none and one line naming libc6-dbg" % (
            compare.show(c.get("abort_message")), compare.show(err)), None
    rc, out, _, reason = res_text
    if reason:
        return reason, None
    head = out.split("\nThread ")[0]
    lines = [l for l in head.splitlines() if l.startswith("    abort message")]
    if lines != ["    abort message not read: %s" % err]:
        return "the summary's text says %s" % compare.show(lines), None
    return None, None


def check_gc(cr, res_json, res_text):
    """In GC, marking, only for the dmark fault; GC.count at least what
    the program saw before the crash (one more for the GC it started,
    unless a GC was marking when it looked);
    the header and the summary say the same."""
    report, reason = native.run_json(res_json)
    if reason:
        return reason
    g, c = report.get("gc") or {}, report.get("crash") or {}
    in_gc = cr.mode == "gc_mark"
    if g.get("error") or g.get("in_gc") != in_gc or c.get("in_gc") != in_gc:
        return "gc %s, crash in_gc %s; expected in_gc %s" % (
            compare.show(g), c.get("in_gc"), in_gc)
    if in_gc and g.get("phase") != "marking":
        return "phase %s, expected marking" % g.get("phase")
    # the dmark fault is in the GC rb_gc starts, one more than the program
    # saw, unless a GC was marking then: rb_gc finishes that one first
    # and may fault in it, which the program counted already
    started = in_gc and cr.oracle.get("gc_state") != "marking"
    least = cr.oracle["gc_count"] + (1 if started else 0)
    if not isinstance(g.get("count"), int) or g["count"] < least:
        return "GC count %s, the program saw %d before" % (g.get("count"), least)
    rc, out, err, reason = res_text
    if reason or rc != 0:
        return reason or "text run exit %d" % rc
    want = "GC: running, marking" if in_gc else "GC: not running"
    if not any(l.startswith(want) for l in out.split("\nThread ")[0].splitlines()):
        return "the header does not say %r" % want
    return None


def check_exception(cr, res, res_text):
    """The thread parked in Job.handle's rescue clause handles Job::Failed
    ($!) with the message the program saw, in JSON and (as
    String#inspect shows it) on its text line; the main thread, in
    Thread#join, none."""
    report, reason = native.run_json(res)
    if reason:
        return reason
    threads = report.get("threads", [])
    handler = [t for t in threads
               if any(compare.plain_label(f.get("label")) in ("handle", "rescue in handle")
                      for f in t.get("frames", []))]
    if len(handler) != 1:
        return "%d threads in Job.handle, expected 1" % len(handler)
    exc = handler[0].get("exception") or {}
    if exc.get("class") != "Job::Failed" or not exc.get("object"):
        return "the thread in Job.handle's rescue: exception %s, expected Job::Failed" % (
            compare.show(handler[0].get("exception")))
    want = cr.oracle["exception_message"]
    if exc.get("message") != want or exc.get("message_error") is not None:
        return "its message %r (error %s), the program's %r" % (
            exc.get("message"), exc.get("message_error"), want)
    main = [t for t in threads if t.get("main")]
    if not main or main[0].get("exception") is not None:
        return "the main thread: exception %s, expected null" % (
            compare.show(main[0].get("exception") if main else "no main thread"))
    rc, out, err, reason = res_text
    if reason or rc != 0:
        return reason or "text run exit %d" % rc
    line = "; exception Job::Failed (%s): %s" % (exc["object"], cr.oracle["exception_inspect"])
    if not any(l.startswith("Thread ") and l.endswith(line) for l in out.splitlines()):
        return "no thread line ends with %r" % line
    return None


def check_off_thread_report(cr):
    """What Ruby's handler reports on a thread it does not know: the
    [BUG] line with no Ruby source position before it, the fault in the
    first page, its RIP, a C-level backtrace through rb_raise and no
    Ruby-level backtrace (no execution context to take one from)."""
    r = cr.report
    if r.off_tid is None:
        return "the program did not tell the tid of its thread Ruby does not know"
    if not r.bug_unplaced or r.bug is not None:
        return "Ruby's [BUG] line has a source position (%r): it found an execution " \
            "context" % r.bug
    if r.address is None or not 0 <= r.address < 4096 or r.rip is None:
        return "Ruby's report: fault address %s, RIP %s; expected one in the first page " \
            "and a RIP" % (r.address, r.rip)
    if r.ruby_frames or "rb_raise" not in r.c_names.values() or r.rip not in r.c_pcs:
        return "Ruby's report: Ruby frames %s, C backtrace %s; expected none, and rb_raise " \
            "and the RIP in C" % (compare.show(r.ruby_frames), compare.show(r.c_names))
    return None


def check_off_thread_stacks(cr, run):
    """A crash on a thread Ruby does not know: no Ruby thread is marked
    crashed, and the thread that started it (waiting in pthread_join
    inside the C method) has the frames the program recorded."""
    report, reason = native.run_json(run("--json"))
    if reason:
        return reason
    threads = report.get("threads", [])
    if any(t.get("crashed") for t in threads):
        return "a Ruby thread is marked crashed: %s" % [
            t.get("tid") for t in threads if t.get("crashed")]
    named = [t for t in threads if t.get("name") == cr.oracle["thread_name"]]
    if len(named) != 1:
        return "%d threads named %r" % (len(named), cr.oracle["thread_name"])
    got = plain_frames([[f.get("label"), f.get("path"), f.get("lineno")]
                        for f in named[0]["frames"]])
    want = plain_frames(expected_frames(cr))
    if got != want:
        return "its frames %s, recorded %s" % (compare.show(got), compare.show(want))
    return None


def check_off_thread_fault(cr, run):
    """The summary names the thread the program told, no Ruby thread or
    frame, a memory access in the first page (a field of the execution
    context Ruby did not find) in the Ruby VM's module, from the core's own
    signal (no handler ran), with no sender."""
    report, reason = native.run_json(run("--json"))
    if reason:
        return reason
    c = report.get("crash") or {}
    if c.get("error"):
        return "crash summary incomplete: %s" % c["error"]
    handled, r = ruby_handled(cr), cr.report
    want = {"tid": r.off_tid, "thread_index": None, "thread_name": None,
            "fault": True, "kind": "memory_access", "from_signal_frame": handled,
            "sender_pid": None, "ruby_frame": None, "fiber": None,
            "handler_running": cr.live}
    got = {k: c.get(k) for k in want}
    if got != want:
        return "summary %s, expected %s" % (compare.show(got), compare.show(want))
    sig = c.get("signal") or {}
    address = int(sig.get("fault_address") or "-1", 16)
    if sig.get("name") != "SIGSEGV" or sig.get("code_name") != "SEGV_MAPERR" or \
            not 0 <= address < 4096 or (handled and address != r.address):
        return "signal %s, expected SIGSEGV (SEGV_MAPERR) in the first page%s" % (
            compare.show(sig), ", at Ruby's 0x%x" % r.address if handled else "")
    at = c.get("at") or {}
    mod = at.get("module") or ""
    if not (mod.startswith("libruby") or mod == "ruby") or not at.get("function"):
        return "faulted in %s, expected a function of the Ruby VM's module" % compare.show(at)
    if handled:
        # Ruby's RIP, the function its C backtrace names there (dladdr's
        # is the outer function of an inlined one), and the signal the
        # process died of sent by the handler, on that thread
        rip = (c.get("registers") or {}).get("rip")
        if rip is None or int(rip, 16) != r.rip or int(at.get("pc", "0"), 16) != r.rip:
            return "pc %s (rip %s), Ruby's RIP 0x%x" % (at.get("pc"), rip, r.rip)
        named = r.c_names.get(r.rip)
        if named and named not in (at.get("function"), at.get("outer_function")):
            return "function %s (in %s), Ruby's C backtrace %s" % (
                at.get("function"), at.get("outer_function"), named)
        core = c.get("core_signal") or {}
        if cr.live:
            # still in the handler: no signal of its own yet
            if c.get("core_signal") is not None:
                return "core_signal %s in a process hanging in Ruby's handler" % (
                    compare.show(core))
        elif core.get("number") != cr.status or core.get("code_name") != "SI_TKILL":
            return "core_signal %s, expected signal %d (SI_TKILL), which the process died " \
                "of" % (compare.show(core), cr.status)
    # who called into it: the extension's thread function, at its call
    ef = c.get("entered_from") or {}
    want = {"function": "raise_off_thread", "module": "crashtest.so",
            "line": c_call_line("raise_off_thread")}
    if {k: ef.get(k) for k in want} != want:
        return "entered from %s, expected %s" % (compare.show(ef), want)
    return None


def check_off_thread_text(cr, run):
    """The summary's lines for a crash on a thread Ruby did not create, and
    its crash group (--format junit): the caller into libruby in place of
    the Ruby frames it has none of. Read live, hanging in Ruby's handler:
    the summary says the handler is still running, and no group."""
    rc, out, err, reason = run()
    if reason or rc != 0:
        return reason or "exit %d: %s" % (rc, err.strip()[:200])
    lines = out.split("\nThread ")[0].splitlines()
    handled = ruby_handled(cr)
    want = re.compile(r"Crash: tid %d, which runs no Ruby, SIGSEGV \(SEGV_MAPERR\) at "
                      r"address %s%s$" % (cr.report.off_tid, "0x%x" % cr.report.address
                                          if handled else "0x[0-9a-f]{1,3}",
                                          re.escape(" (from the signal frame on its stack)")
                                          if handled else ""))
    if not any(want.match(l) for l in lines):
        return "no line matching %r: %s" % (want.pattern, compare.show(lines))
    want = re.compile(r"    called into (libruby\S*|ruby) from crashtest\.so: raise_off_thread "
                      r"at \S*crashtest\.c:%d$" % c_call_line("raise_off_thread"))
    if not any(want.match(l) for l in lines):
        return "no line matching %r: %s" % (want.pattern, compare.show(lines))
    if any(l.strip().startswith("called from Ruby") for l in lines):
        return "the summary names a Ruby caller on a thread that runs no Ruby"
    sent = re.compile(r"    then SIG[A-Z]+ \(SI_TKILL\), the core's signal, sent by the "
                      r"handler from ")
    if (handled and not cr.live) != any(sent.match(l) for l in lines):
        return "the summary %s the signal Ruby's handler sent: %s" % (
            "lacks" if handled and not cr.live else "names", compare.show(lines))
    if cr.live != ("    the handler is still running: the process has not ended" in lines):
        return "the summary %s the handler is still running: %s" % (
            "does not say" if cr.live else "says", compare.show(lines))
    if cr.live:
        return None     # a live process: no crash group to check
    # its crash group: no Ruby frame, the caller into libruby instead
    rc, out, err, reason = run("--format", "junit")
    if reason or rc != 3:
        return reason or "--format junit: exit %s, expected 3: %s" % (rc, err.strip()[:200])
    try:
        names = [t.get("name") for t in ET.fromstring(out).iter("testcase")]
    except ET.ParseError as exc:
        return "--format junit: not XML (%s)" % exc
    if len(names) != 1 or not re.match(r"memory_access in \S+ <- crashtest\.so: "
                                       r"raise_off_thread$", names[0]):
        return "crash group %s, expected memory_access in a libruby function " \
               "<- crashtest.so: raise_off_thread" % compare.show(names)
    return None


def check_off_thread_native(cr, run):
    """--native-all: the crashed thread's native frames, as eu-stack would
    give them, run from the fault through rb_raise to the extension's
    thread function and the thread's start."""
    report, reason = native.run_json(run("--json", "--native-all"))
    if reason:
        return reason
    mine = [t for t in report.get("native_threads", []) if t.get("tid") == cr.report.off_tid]
    if len(mine) != 1:
        return "the thread told (tid %s) is not among native_threads once" % cr.report.off_tid
    frames = mine[0].get("native", [])
    names = [native.plain_name(f.get("function") or "") for f in frames]
    order = [names.index(n) if n in names else -1
             for n in ("rb_raise", "raise_off_thread", "start_thread")]
    if -1 in order or order != sorted(order):
        return "native frames %s, expected rb_raise, raise_off_thread, start_thread in order" % (
            names)
    handler = [f for f in frames if f.get("handler")]
    if not ruby_handled(cr):
        return "frames marked as a handler's: %s" % compare.show(handler[:3]) \
            if handler else None
    # with Ruby's handler: its frames first, then the frames it
    # interrupted, whose pcs are those of Ruby's own C-level backtrace
    # from its RIP on (an inlined function's frames share their pc)
    if handler_name(cr) not in [native.plain_name(f.get("function") or "") for f in handler]:
        return "Ruby's handler (sigsegv) not among the handler's frames: %s" % compare.show(
            names[:len(handler)])
    pcs = []
    for f in frames[len(handler):]:
        pc = int(f.get("pc") or "0", 16)
        if not pcs or pcs[-1] != pc:
            pcs.append(pc)
    r = cr.report
    ruby = r.c_pcs[r.c_pcs.index(r.rip):]
    if pcs[:len(ruby)] != ruby:
        return "the interrupted frames' pcs %s, Ruby's C backtrace %s" % (
            [hex(p) for p in pcs], [hex(p) for p in ruby])
    return None


def parked_line():
    """The line of crash.rb where park_raised sleeps."""
    with open(os.path.join(CRASH_DIR, "crash.rb")) as f:
        for number, line in enumerate(f, 1):
            if line.rstrip().endswith("sleep # parked"):
                return number
    raise procs.Failure("crash.rb has no line ending in 'sleep # parked'")


def raised_thread(cr, argv=("--json",)):
    """(report, the thread named as the crashing one, None) of a parked
    process's corestack --pid run, or (None, None, why not)."""
    report, reason = native.run_json(cr.runs[argv])
    if reason:
        return None, None, reason
    named = [t for t in report.get("threads", []) if t.get("name") == cr.oracle["thread_name"]]
    if len(named) != 1:
        return None, None, "%d threads named %r" % (len(named), cr.oracle["thread_name"])
    return report, named[0], None


def check_raised_capture(cr):
    """What the program recorded: the exception raised in the C method
    at its call (the frames recorded before it), in the thread named,
    its rescue run on the thread that called rb_raise (the tid that
    thread told), not the one the Ruby thread started on."""
    r = cr.raised
    got = plain_frames(r["backtrace"])
    want = plain_frames(expected_frames(cr))
    if got != want:
        return "%s raised at %s, expected at the call of the C method %s" % (
            r["class"], compare.show(got), compare.show(want))
    if r["thread_name"] != cr.oracle["thread_name"]:
        return "raised in thread %r, expected %r" % (r["thread_name"], cr.oracle["thread_name"])
    if cr.report.off_tid is None or r["tid"] != cr.report.off_tid or r["tid"] == cr.oracle["tid"]:
        return "the rescue ran on tid %s; the thread that called rb_raise told %s, the Ruby " \
            "thread started on %s" % (r["tid"], cr.report.off_tid, cr.oracle["tid"])
    return None


def check_raised_stacks(cr):
    """The thread's frames: parked in the rescue as the program recorded
    them; its tid the one Ruby started it on (Ruby's own record of it),
    though its code now runs on another."""
    _, t, reason = raised_thread(cr)
    if reason:
        return reason
    line = parked_line()
    frames = cr.raised["frames"]
    want = plain_frames([["sleep", frames[0][1], line], [frames[0][0], frames[0][1], line]] +
                        frames[1:])
    got = plain_frames([[f.get("label"), f.get("path"), f.get("lineno")] for f in t["frames"]])
    if got != want:
        return "its frames %s, recorded %s" % (compare.show(got), compare.show(want))
    if t.get("tid") != cr.oracle["tid"]:
        return "its tid %s, the program's thread started on %s" % (t.get("tid"), cr.oracle["tid"])
    return None


def check_raised_fault(cr):
    """No crash: no summary, no thread marked crashed, exit 0."""
    report, reason = native.run_json(cr.runs[("--json",)])
    if reason:
        return reason
    marked = [t.get("tid") for t in report.get("threads", []) if t.get("crashed")]
    if report.get("crash") is not None or marked:
        return "crash %s, threads %s marked crashed; the process did not crash" % (
            compare.show(report.get("crash")), marked)
    return None


def check_raised_text(cr):
    rc, out, err, reason = cr.runs[()]
    if reason or rc != 0:
        return reason or "exit %d: %s" % (rc, err.strip()[:200])
    head = out.split("\nThread ")[0].splitlines()
    if any(l.startswith("Crash") for l in head):
        return "the header names a crash: %s" % compare.show(head)
    return None


def check_raised_exception(cr):
    """The thread handles the exception the program rescued, with its
    message; the other thread still its Job::Failed."""
    _, t, reason = raised_thread(cr)
    if reason:
        return reason
    exc, r = t.get("exception") or {}, cr.raised
    if exc.get("class") != r["class"] or exc.get("message") != r["message"]:
        return "its exception %s, the program rescued %s: %r" % (
            compare.show(t.get("exception")), r["class"], r["message"])
    return check_exception(cr, cr.runs[("--json",)], cr.runs[()])


def check_raised_native(cr):
    """--native, live and on a core gcore took: exit 0, every thread
    merged. The parked thread's code runs on the thread that called
    rb_raise (on the Ruby thread's stack, since the raise): its Ruby
    frames merged with that kernel thread's native stack ("native_tid",
    the tid that thread told), every one in order, under the tid Ruby
    started it on."""
    for key, what in ((("--json", "--native"), "live"),
                      (("gcore", "--json", "--native"), "gcore")):
        reason = check_raised_native_run(cr, cr.runs[key])
        if reason:
            return "%s: %s" % (what, reason)
    return None


def check_raised_native_run(cr, res):
    rc, out, err, reason = res
    if reason or rc != 0:
        return reason or "exit %d: %s" % (rc, err.strip()[:200])
    report, reason = compare.parse_report(out)
    if reason:
        return reason
    unmerged = [(m.get("tid"), m.get("merge_error")) for m in report.get("threads", [])
                if m.get("merge_error") or not m.get("merged")]
    if unmerged:
        return "threads not merged: %s" % compare.show(unmerged)
    t = [t for t in report.get("threads", []) if t.get("name") == cr.oracle["thread_name"]]
    if len(t) != 1:
        return "%d threads named %r" % (len(t), cr.oracle["thread_name"])
    t = t[0]
    if t.get("tid") != cr.oracle["tid"] or t.get("native_tid") != cr.report.off_tid:
        return "its tid %s, its native stack tid %s's; expected %s (Ruby's record), %s (the " \
            "thread that called rb_raise)" % (t.get("tid"), t.get("native_tid"),
                                              cr.oracle["tid"], cr.report.off_tid)
    main = [m for m in report.get("threads", []) if m.get("main")]
    if not main or main[0].get("native_tid") != main[0].get("tid"):
        return "the main thread's native stack not its own: %s" % compare.show(
            main and [main[0].get("tid"), main[0].get("native_tid")])
    _, plain, reason = raised_thread(cr)
    if reason:
        return reason
    if t.get("frames") != plain.get("frames"):
        return "its frames with --native %s, without %s" % (
            compare.show(t.get("frames")), compare.show(plain.get("frames")))
    ruby = [m.get("frame") for m in t["merged"] if m.get("kind") != "native"]
    if ruby != list(range(len(t["frames"]))):
        return "its merged Ruby frames %s, expected every one of its %d frames in order" % (
            ruby, len(t["frames"]))
    return None


def check_raised_gc(cr):
    """GC not running, its count at least what the program saw."""
    report, reason = native.run_json(cr.runs[("--json",)])
    if reason:
        return reason
    g = report.get("gc") or {}
    if g.get("error") or g.get("in_gc") is not False or \
            not isinstance(g.get("count"), int) or g["count"] < cr.oracle["gc_count"]:
        return "gc %s, expected not in GC, count at least %d" % (
            compare.show(g), cr.oracle["gc_count"])
    return None


RAISED_CHECKS = {"capture": check_raised_capture, "stacks": check_raised_stacks,
                 "fault": check_raised_fault, "summary-text": check_raised_text,
                 "exception": check_raised_exception, "native": check_raised_native,
                 "gc": check_raised_gc}


OFF_THREAD_CHECKS = {"stacks": check_off_thread_stacks, "fault": check_off_thread_fault,
                     "summary-text": check_off_thread_text, "native": check_off_thread_native}


def names(ctx):
    return [n for r in ctx.rubies for n in test_names(r)]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.any_selected(test_names(r))}


def cores(ctx):
    """The threads scenario's gcore, the running Ruby of a directory of
    cores."""
    return {(r, "threads") for r in ctx.rubies if ctx.any_selected(core_dir.test_names(r))}


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
        base = os.path.join(workdir, ruby, "crash")
        shutil.rmtree(base, ignore_errors=True)
        try:
            ext = build_extension(os.path.join(base, "ext"),
                                  os.path.join(prefix, "bin", "ruby"))
        except (procs.Failure, OSError, subprocess.SubprocessError) as exc:
            for n in names:
                rep.result(n, "setup: %s" % exc)
            continue
        dir_names = [n for n in names if "/crash/dir/" in n]
        kept = {}   # mode -> CrashRun whose core the directory checks read
        for mode in MODES:
            mine = [n for n in names if n.split("/")[-2] == mode]
            if not mine and not (dir_names and mode in core_dir.DIR_MODES):
                continue
            try:
                cr = run_crash(ruby, os.path.join(prefix, "bin", "ruby"), mode, ext,
                               os.path.join(base, mode), timeout, cs)
            except (procs.Failure, OSError, ValueError, subprocess.SubprocessError) as exc:
                for n in mine:
                    rep.result(n, "setup: %s" % exc)
                continue
            if cr.raised is not None:
                # no crash (2.7's rb_raise off Ruby's threads): what the
                # process did instead, read live
                for n in mine:
                    rep.result(n, RAISED_CHECKS[n.rsplit("/", 1)[1]](cr))
                continue
            runs = {}

            def run(*argv):
                if argv not in runs:
                    runs[argv] = procs.run_tool([cs] + list(argv) + [cr.core], timeout)
                return runs[argv]
            for n in mine:
                check = n.rsplit("/", 1)[1]
                if EXPECT[mode].get("off_thread") and check in OFF_THREAD_CHECKS:
                    reason = OFF_THREAD_CHECKS[check](cr, run)
                elif check == "capture":
                    reason = check_capture(cr)
                elif check == "stacks":
                    reason = check_stacks(cr, run("--json"))
                elif check == "fault":
                    reason = check_fault(cr, run("--json"))
                elif check == "summary-text":
                    reason = check_summary_text(cr, run())
                elif check == "exception":
                    reason = check_exception(cr, run("--json"), run())
                elif check == "gc":
                    reason = check_gc(cr, run("--json"), run())
                elif check == "found":
                    reason = check_found(ext, run("--json"), run())
                elif check == "found-lib-dir":
                    reason = check_found_lib_dir(ext, os.path.join(base, mode), run)
                elif check == "damaged-signal-frame":
                    reason = check_damaged_signal_frame(cr, cs, timeout)
                elif check.startswith("no-libc-debug"):
                    empty = os.path.join(base, "empty-debug-dir")
                    os.makedirs(empty, exist_ok=True)
                    reason, why = (check_no_libc_debug if check == "no-libc-debug"
                                   else check_no_libc_debug_damaged)(cr, cs, empty, timeout)
                    if why:
                        rep.skip(n, why)
                        continue
                else:
                    reason = check_native(cr, run("--json", "--native"))
                rep.result(n, reason)
            if dir_names and mode in core_dir.DIR_MODES:
                kept[mode] = cr
            elif not args.keep:
                os.unlink(cr.core)
        if dir_names:
            cap = ctx.captures.get((ruby, "threads"))
            live = cap.core if cap is not None and not isinstance(cap, procs.Failure) \
                and not cap.signal_number else None
            core_dir.run_dir_checks(sys.modules[__name__], rep, dir_names, cs, timeout,
                                    os.path.join(base, "dir"), kept, live)
        for cr in kept.values():
            if not args.keep:
                os.unlink(cr.core)
