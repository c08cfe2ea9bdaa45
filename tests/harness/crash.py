"""Crash cores written by the kernel (fixtures/crash/): a C extension that
faults through a bad pointer (with Ruby's SIGSEGV handler, and with it put
aside), faults in a dmark function during GC, calls rb_bug, calls abort.
Each core is checked against what Ruby printed in its own crash report
(the [BUG] line, the fault address, the RIP of its machine register
context, the C-level and Ruby-level backtraces) and what the program did.

    RUBY/crash/MODE/CHECK    MODE: segv (a bad pointer with Ruby's SIGSEGV handler),
                             raw_segv (without it), gc_mark (in a dmark function
                             during GC), bug (rb_bug), abort (abort), segv_copy
                             (segv, the extension loaded from a copy deleted
                             before the crash, as Ruby::Box loads one). CHECK:
                             capture: Ruby's own crash report says what the program
                             did; stacks: the crashed thread's Ruby frames are the
                             report's; fault: the JSON crash summary names the
                             report's fault address, its RIP as the faulting pc, the
                             function and module, and its innermost Ruby method (for
                             rb_bug and abort: no fault, SIGABRT sent from rb_bug,
                             ct_abort), and the thread by its Thread#name;
                             summary-text: the same at the top of the
                             text; native: with --native the crashed thread's frames
                             inside the signal frame are marked the handler's, the
                             first outside it is the faulting function at Ruby's
                             RIP; gc: in GC and marking only for the dmark fault,
                             GC.count at least what the program saw; exception: the
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
                             is the one found, in that directory
"""

import json
import os
import re
import shutil
import subprocess

from . import compare, native, procs, variants

CRASH_DIR = os.path.join(procs.ROOT, "fixtures", "crash")
MODES = ("segv", "raw_segv", "gc_mark", "bug", "abort", "segv_copy")
CHECKS = ("capture", "stacks", "fault", "summary-text", "native", "gc", "exception")
COPY = "_copy"  # a mode loading the extension from a deleted copy

# What each C method of crashtest.c does.
EXPECT = {
    "segv": {"fault": True, "address": 0x1008, "function": "ct_segv", "handler": True},
    "raw_segv": {"fault": True, "address": 0x2010, "function": "ct_raw_segv",
                 "handler": False},
    "gc_mark": {"fault": True, "address": 0x3018, "function": "ct_bad_mark", "handler": True},
    # rb_bug aborts, from rb_bug itself or (4.1-dev) from die(), which
    # rb_bug calls and which resets SIGABRT to its default first
    "bug": {"fault": False, "outer_function": ("rb_bug", "die"), "handler": False,
            "bug": "crashtest: deliberate bug 42"},
    "abort": {"fault": False, "function": "ct_abort", "handler": False},
}
EXPECT["segv_copy"] = EXPECT["segv"]


def method_of(mode):
    """The C method of CrashTest a mode calls."""
    return mode[:-len(COPY)] if mode.endswith(COPY) else mode


def ruby_handled(cr):
    """Whether Ruby's own signal handler ran, as its report says: always for
    the modes EXPECT says so; for SIGABRT where the Ruby handles it (4.0 and
    later) and its report says "[BUG] Aborted"."""
    return EXPECT[cr.mode]["handler"] or bool(cr.report.aborted)


def handler_name(cr):
    """Ruby's handler of the signal the mode raises."""
    return "sigsegv" if EXPECT[cr.mode]["fault"] else "sigabrt"


def test_names(ruby):
    return ["%s/crash/%s/%s" % (ruby, m, c) for m in MODES
            for c in CHECKS + (("found", "found-lib-dir") if m.endswith(COPY) else ())]


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
        # Ruby's SIGABRT handler reported the abort (4.0 and later)
        self.aborted = re.search(r"\[BUG\] Aborted\b", text) is not None
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
                             variants.scenario_env(ruby))
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
    line = call_line(method_of(cr.mode))
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
    at = c.get("at") or {}
    if c.get("fault") != exp["fault"]:
        return "fault %s, expected %s" % (c.get("fault"), exp["fault"])
    sig = c.get("signal") or {}
    if exp["fault"]:
        want = {"name": "SIGSEGV", "code_name": "SEGV_MAPERR",
                "fault_address": "0x%x" % exp["address"]}
        got = {k: sig.get(k) for k in want}
        if got != want:
            return "signal %s, expected %s" % (got, want)
        if r.address is not None and int(sig["fault_address"], 16) != r.address:
            return "fault address %s, Ruby's report 0x%x" % (sig["fault_address"], r.address)
        if r.rip is not None:
            rip = (c.get("registers") or {}).get("rip")
            if rip is None or int(rip, 16) != r.rip or int(at.get("pc", "0"), 16) != r.rip:
                return "pc %s (rip %s), Ruby's RIP 0x%x" % (at.get("pc"), rip, r.rip)
            named = r.c_names.get(r.rip)
            if named and named != at.get("function"):
                return "function %s, Ruby's C backtrace %s" % (at.get("function"), named)
    else:
        if sig.get("name") != "SIGABRT" or sig.get("code_name") != "SI_TKILL":
            return "signal %s, expected SIGABRT, SI_TKILL" % compare.show(sig)
    if bool(c.get("from_signal_frame")) != ruby_handled(cr):
        return "from_signal_frame %s with%s Ruby's handler" % (
            c.get("from_signal_frame"), "" if ruby_handled(cr) else "out")
    if ruby_handled(cr) and (c.get("core_signal") or {}).get("code_name") != "SI_TKILL":
        return "core_signal %s: Ruby's handler sent the core's signal" % (
            compare.show(c.get("core_signal")))
    if "function" in exp and at.get("function") != exp["function"]:
        return "function %s, expected %s" % (at.get("function"), exp["function"])
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
    if not re.match(r'Crash: thread \d+ "%s" \(tid \d+\)' % re.escape(
            cr.oracle["thread_name"]), crash[0]):
        return "the summary does not name the thread %r: %s" % (
            cr.oracle["thread_name"], crash[0])
    wants = []
    if exp["fault"]:
        wants += ["at address 0x%x" % exp["address"], "crashtest.so: %s" % exp["function"]]
    else:
        wants += ["no fault: SIGABRT (SI_TKILL)"]
    for want in wants:
        if want not in head:
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
    _, t, reason = crashed_thread(res)
    if reason:
        return reason
    frames = t.get("native") or []
    exp = EXPECT[cr.mode]
    handler = [f for f in frames if f.get("handler")]
    if not ruby_handled(cr):
        return "frames marked as a handler's: %s" % compare.show(handler[:3]) if handler else None
    names = [native.plain_name(f.get("function") or "") for f in handler]
    if handler_name(cr) not in names:
        return "Ruby's handler (%s) not among the handler's frames: %s" % (
            handler_name(cr), names)
    rest = frames[len(handler):]
    if cr.report.rip is not None and (not rest or int(rest[0]["pc"], 16) != cr.report.rip):
        return "the interrupted frame's pc %s, Ruby's RIP 0x%x" % (
            rest[0]["pc"] if rest else None, cr.report.rip)
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


def check_gc(cr, res_json, res_text):
    """In GC, marking, only for the dmark fault; GC.count at least what
    the program saw before the crash (one more for the GC it started);
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
    least = cr.oracle["gc_count"] + (1 if in_gc else 0)
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
        base = os.path.join(workdir, ruby, "crash")
        shutil.rmtree(base, ignore_errors=True)
        try:
            ext = build_extension(os.path.join(base, "ext"),
                                  os.path.join(prefix, "bin", "ruby"))
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
                else:
                    reason = check_native(cr, run("--json", "--native"))
                rep.result(n, reason)
            if not args.keep:
                os.unlink(cr.core)
