"""A live process crashing: corestack --pid on a Ruby that hangs inside
its crash handler. fixtures/crash/crash.rb with CRASH_HANG makes its stderr
a FIFO nobody reads and fills it right before the crash, so Ruby's SIGSEGV
handler blocks on the first line of its report, as a process whose report
cannot be written does; the FIFO is read afterwards, and the report it
gets is the oracle, as for a core (crash.py).

    RUBY/crash/MODE/live     MODE: segv, null_call, fiber_segv, nodefer_segv
                             (a fault under the extension's own handler that
                             blocks no signal, SA_NODEFER: seen only by the
                             signal trampoline's address on the stack top;
                             the oracle is the address and function the
                             program faults at), bug (rb_bug, hung writing its
                             report before any signal: the summary says Ruby is
                             writing a bug report, in rb_bug, called from
                             ct_bug at the line of its call, from the Ruby
                             method Ruby's report names, whose [BUG] line is
                             the program's),
                             raise_off_thread (rb_raise on a thread Ruby did not
                             create: Ruby's handler hangs on that thread, which
                             the summary names; where the Ruby raises in the GVL
                             holder instead (2.7), the process parked after it
                             is held to crash.py's checks of that case). While the
                             process hangs in the handler, corestack --json
                             --pid: the crashed thread's Ruby frames are
                             Ruby's report's, the crash summary names the
                             thread, fault kind, address, RIP, function and
                             Ruby method as crash.py requires of the core,
                             with no core signal and handler_running true;
                             the text summary the same, and says the handler
                             is still running
    RUBY/crash/MODE/gcore    MODE: segv, nodefer_segv, bug: the same checks
                             of a core gcore took of the hung process (no
                             fatal signal, no blocked mask to go by), which
                             says the handler was still running, or the report
                             still being written, when the core was taken
    gdbext/RUBY/crash/MODE/attach-gdb, lldb/RUBY/crash/MODE/attach-lldb
                             MODE: segv, nodefer_segv, bug: gdb -p and lldb -p
                             attached to the hung process (stopped with
                             SIGSTOP, no fatal signal; corestack is not its
                             tracer and cannot ask the threads' masks): ruby-bt
                             all --json held to the same checks of its crash
                             summary, the threads' registers the debugger's
    gdbext/RUBY/crash/MODE/live-gdb, lldb/RUBY/crash/MODE/live-lldb
                             MODE: segv, null_call, raw_jump_data, abort, bug,
                             assert, heap_corruption, stack_overflow, killed,
                             raw_fiber_segv (a memory access, a call to no code
                             with and without Ruby's handler, an abort, rb_bug,
                             a failed assert() and glibc's free(): invalid
                             pointer with its message, a guard page, a signal
                             another process sent, a memory access in a Fiber
                             without the handler: the fiber's frames are those
                             the program recorded in it). The
                             program run under gdb with the module loaded: at the
                             stop on the fatal signal (before any handler runs),
                             ruby-bt --json's crash summary is the one a core
                             without the handler gives (no signal frame, no core
                             signal, the registers gdb shows); where Ruby's
                             handler runs, continued to the stop on the signal it
                             sends, the summary is a handled core's (the fault
                             from the signal frame, the signal it stopped at as
                             the core signal); both held to crash.py's checks
                             against Ruby's report and what the program told
                             (under lldb the first stop only: lldb 14 now and
                             then gives the second's siginfo as SI_USER)
    RUBY/crash/live-no-crash a thread parked inside a SIGUSR1 handler that
                             blocks every signal (SIGSEGV too, as a fault's
                             handler does): "crash" null, no thread marked
                             crashed, exit 0
"""

import json
import os
import re
import select
import shutil
import subprocess
import time

from . import compare, crash, gdbext_lldb, native, procs, variants

MODES = ("segv", "null_call", "fiber_segv", "nodefer_segv", "bug", "raise_off_thread")
# also read from a core gcore takes of the hung process
GCORE_MODES = ("segv", "nodefer_segv", "bug")
# one mode of each kind of crash, with Ruby's handler and without; rb_bug,
# a failed assert() and glibc's heap-corruption abort stop on their SIGABRT
GDB_MODES = ("segv", "null_call", "raw_jump_data", "abort", "bug", "assert", "heap_corruption",
             "stack_overflow", "killed", "raw_fiber_segv")
# lldb -b ends its -o commands at a stop it calls a crash ("unknown crash
# reason": the SIGSEGV another process sends); debugger_argv gives the
# killed mode the same commands through -k. When the sender's SIGCHLD
# stops another thread at that stop, lldb 14 would show that SIGCHLD's
# siginfo for every thread but for ruby_lldb.py's _siginfo_of
LLDB_MODES = GDB_MODES
GDB_TIMEOUT = 120


def attach_names(ruby, mode):
    return ["gdbext/%s/crash/%s/attach-gdb" % (ruby, mode),
            "lldb/%s/crash/%s/attach-lldb" % (ruby, mode)]


def test_names(ruby):
    return ["%s/crash/%s/live" % (ruby, m) for m in MODES] + \
        ["%s/crash/%s/gcore" % (ruby, m) for m in GCORE_MODES] + \
        [n for m in GCORE_MODES for n in attach_names(ruby, m)] + \
        ["gdbext/%s/crash/%s/live-gdb" % (ruby, m) for m in GDB_MODES] + \
        ["lldb/%s/crash/%s/live-lldb" % (ruby, m) for m in LLDB_MODES] + \
        ["%s/crash/live-no-crash" % ruby]


def names(ctx):
    return [n for r in ctx.rubies for n in test_names(r)]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.any_selected(test_names(r))}


def writing_to_pipe(pid):
    """Is a thread of pid asleep writing to a full pipe?"""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                if "pipe_write" in f.read():
                    return True
        except OSError:
            pass
    return False


def drain(fifo, run, timeout):
    """Everything written to fifo until the process is gone (every writer
    closed), NULs (the filling) left out."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                raise procs.Failure("Ruby's crash report did not end within %d s" % timeout)
            if not select.select([fd], [], [], 0.1)[0]:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    run.wait_exit(timeout)
    return b"".join(chunks).replace(b"\0", b"").decode("utf-8", "replace")


def start(ruby, exe, mode, ext, workdir, fifo):
    env = {"CRASH_MODE": mode, "CRASH_EXT": ext}
    if fifo:
        env["CRASH_HANG"] = fifo
    with native.extra_env(env):
        return procs.Scenario(exe, os.path.join(crash.CRASH_DIR, "crash.rb"), workdir, False,
                              variants.scenario_env(ruby))


def run_attached(debugger, gdbext, pid, workdir):
    """ruby-bt all --json of the debugger attached to pid, then detached ->
    a run's (exit, JSON text, stderr, None)."""
    gdbext = os.path.abspath(gdbext)
    out = os.path.join(workdir, "attach-%s.json" % debugger)
    log = os.path.join(workdir, "attach-%s.out" % debugger)
    cmd = "ruby-bt all --json --out " + out
    if debugger == "gdb":
        argv = ["gdb", "-nx", "-q", "-batch", "-p", str(pid), "-ex",
                "source " + os.path.join(gdbext, "ruby-gdb.py"), "-ex", cmd, "-ex", "detach"]
        env = procs.quiet_env(dict(CORESTACK_GDBEXT_DIR=gdbext))
    else:
        lldb = shutil.which("lldb-14") or shutil.which("lldb")
        if not lldb:
            raise procs.Failure("lldb-14 is not installed (.ci/install-deps)")
        argv = [lldb, "-b", "-p", str(pid), "-o",
                "command script import " + os.path.join(gdbext, "ruby_lldb.py"),
                "-o", cmd, "-o", "process detach"]
        env = gdbext_lldb.lldb_env(gdbext)
    stdout, stderr = procs.run_debugger(argv, env, workdir, GDB_TIMEOUT, log, [out])
    with open(log, "w") as f:
        f.write(stdout + "\n" + stderr)
    san = procs.sanitizer_report(stderr)
    if san:
        raise procs.Failure("sanitizer report: %s" % san)
    if not os.path.exists(out):
        raise procs.Failure("ruby-bt wrote no %s; %s said: %s" % (
            os.path.basename(out), debugger, (stdout + stderr)[-600:]))
    with open(out) as f:
        return 0, f.read(), "", None


def run_live(cs, ruby, exe, mode, ext, workdir, timeout, gcore=False, attach=()):
    """(CrashRun, the JSON run, the text run, the gcore runs, the attached
    runs) of mode read live while the process hung in Ruby's handler (or
    its bug report), the gcore runs (a CrashRun and its JSON and text runs
    of a core gcore took then) None unless gcore, the attached runs
    {debugger: ruby-bt all --json of it attached then, or the Failure it
    met} for each of attach (("gdb", gdbext), ...); or, where it did not
    crash but parked after recording what it raised instead (rb_raise off
    Ruby's threads on 2.7), (CrashRun with its runs, None, None, None,
    {})."""
    fifo = workdir + ".fifo"
    if os.path.lexists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo, 0o600)
    run = start(ruby, exe, mode, ext, workdir, fifo)
    try:
        run.wait_oracle(timeout)
        raised = run.oracle_path + ".raised"
        run.wait_until(lambda: writing_to_pipe(run.pid) or os.path.exists(raised),
                       "hanging in its crash report", timeout)
        if os.path.exists(raised):
            return crash.parked_run(run, mode, raised, cs, timeout), None, None, None, {}
        res_json = procs.run_tool([cs, "--json", "--pid", str(run.pid)], timeout)
        res_text = procs.run_tool([cs, "--pid", str(run.pid)], timeout)
        core_runs = None
        if gcore:
            core = procs.gcore(run.pid, os.path.join(os.path.dirname(workdir),
                                                     mode + ".gcore"), timeout)
            try:
                core_runs = (procs.run_tool([cs, "--json", core, exe], timeout),
                             procs.run_tool([cs, core, exe], timeout))
            finally:
                os.unlink(core)
        attached = {}
        for debugger, gdbext in attach:
            try:
                attached[debugger] = run_attached(debugger, gdbext, run.pid, workdir)
            except (procs.Failure, OSError) as exc:
                attached[debugger] = exc
        report = drain(fifo, run, timeout)
        with open(run.oracle_path) as f:
            oracle = json.load(f)
        told = crash.told(run)
    finally:
        run.kill()
        os.unlink(fifo)
    cr = crash.CrashRun(mode, None, run.status, oracle, crash.RubyReport(told + report),
                        live=True)
    gcore_run = None
    if core_runs:
        from_core = crash.CrashRun(mode, None, run.status, oracle, cr.report, live=True)
        from_core.gcore = True
        gcore_run = (from_core,) + core_runs
    return cr, res_json, res_text, gcore_run, attached


def check_bug(cr, res_json, res_text):
    """rb_bug hung writing its report, before any signal: the crash is a
    bug report on the crashed thread, in rb_bug, called from ct_bug at
    the line of its call, from the Ruby method Ruby's report names; the
    text says so, and that the report is still being written (or was,
    when gcore took the core)."""
    report, t, reason = crash.crashed_thread(res_json)
    if reason:
        return reason
    c = report.get("crash") or {}
    want = {"tid": t.get("tid"), "thread_name": cr.oracle["thread_name"], "kind": "bug",
            "fault": False, "signal": None, "from_signal_frame": False,
            "reporting_bug": True, "handler_running": False, "core_signal": None,
            "error": None}
    got = {k: c.get(k) for k in want}
    if got != want:
        return "crash %s, expected %s" % (compare.show(got), compare.show(want))
    at, cf = c.get("at") or {}, c.get("called_from") or {}
    mod = at.get("module") or ""
    if at.get("outer_function") != "rb_bug" or not (mod.startswith("libruby") or mod == "ruby"):
        return "in %s, expected rb_bug in Ruby's module" % compare.show(at)
    want = {"function": "ct_bug", "module": "crashtest.so", "line": crash.c_call_line("ct_bug")}
    if {k: cf.get(k) for k in want} != want or \
            not (cf.get("file") or "").endswith("crashtest.c"):
        return "called from %s, expected %s in crashtest.c" % (compare.show(cf), want)
    rf = c.get("ruby_frame") or {}
    want = crash.plain_frames(crash.expected_frames(cr))[0]
    if crash.plain_frames([[rf.get("label"), rf.get("path"), rf.get("lineno")]])[0] != want:
        return "Ruby method %s, Ruby's %s" % (compare.show(rf), compare.show(want))
    if res_text is None:
        return None
    rc, out, err, reason = res_text
    if reason or rc != 0:
        return reason or "text run exit %d: %s" % (rc, err.strip()[:200])
    head = out.split("\nThread ")[0]
    wants = [r'\nCrash: thread \d+ "%s" \(tid %d\), Ruby is writing a bug report, no '
             r"signal yet\n" % (re.escape(cr.oracle["thread_name"]), t["tid"]),
             r"\n    in (libruby\S*|ruby): rb_bug at \S+\n",
             r"\n    called from crashtest\.so: ct_bug at \S*crashtest\.c:%d\n"
             % crash.c_call_line("ct_bug"),
             r"\n    called from Ruby: ",
             re.escape("\n    the report was still being written when the core was taken\n")
             if cr.gcore else
             re.escape("\n    the report is still being written: the process has not ended\n")]
    for w in wants:
        if not re.search(w, "\n" + head + "\n"):
            return "the summary lacks %r: %s" % (w, compare.show(head))
    if not re.search(r'\nThread \d+ "%s" \(tid %d\) [^\n]*, writing a bug report' % (
            re.escape(cr.oracle["thread_name"]), t["tid"]), out):
        return "the crashed thread's header does not say it writes a bug report"
    return None


def check_live(cr, res_json, res_text):
    if cr.raised is not None:
        # no crash: what the process did instead, as the core test reads it
        return next(filter(None, (crash.RAISED_CHECKS[c](cr) for c in (
            "capture", "stacks", "fault", "summary-text", "exception"))), None)
    if crash.EXPECT[cr.mode].get("off_thread"):
        runs = {("--json",): res_json, (): res_text}
        return next(filter(None, (check(cr, lambda *argv: runs[argv]) for check in (
            lambda cr, run: crash.check_capture(cr), crash.check_off_thread_stacks,
            crash.check_off_thread_fault, crash.check_off_thread_text))), None)
    if cr.mode == "bug":
        return crash.check_capture(cr) or crash.check_stacks(cr, res_json) or \
            check_bug(cr, res_json, res_text)
    return (crash.check_capture(cr) or crash.check_stacks(cr, res_json)
            or crash.check_fault(cr, res_json)
            or (crash.check_summary_text(cr, res_text) if res_text is not None else None))


def debugger_argv(debugger, gdbext, exe, outs, mode=None):
    """(the command line that runs crash.rb under the debugger, with
    ruby-bt --json into outs[0] at its first stop and outs[1] at the next,
    what it needs in its environment)."""
    script = os.path.join(crash.CRASH_DIR, "crash.rb")
    if debugger == "gdb":
        return ["gdb", "-nx", "-q", "-batch", "-ex",
                "source " + os.path.join(gdbext, "ruby-gdb.py"), "-ex", "run",
                "-ex", "ruby-bt --json --out " + outs[0], "-ex", "continue",
                "-ex", "ruby-bt --json --out " + outs[1], "-ex", "kill", "--args", exe,
                script], {}
    lldb = shutil.which("lldb-14") or shutil.which("lldb")
    if not lldb:
        raise procs.Failure("lldb-14 is not installed (.ci/install-deps)")
    after = ["ruby-bt --json --out " + outs[0], "process continue",
             "ruby-bt --json --out " + outs[1], "process kill"]
    argv = [lldb, "-b", "-o", "command script import " + os.path.join(gdbext, "ruby_lldb.py"),
            "-o", "process launch"]
    for cmd in after:
        argv += ["-o", cmd]
    if mode == "killed":
        # lldb -b takes the stop on a SIGSEGV another process sent for a
        # crash of its own ("unknown crash reason") and drops the rest of
        # its -o commands there; -k (--one-line-on-crash) runs the same
        # commands at that stop instead. Only for this mode: in the others
        # the crash lldb sees, if any, is the handler's signal at the
        # second stop, where -k would write the first stop's file again
        for cmd in after:
            argv += ["-k", cmd]
    return argv + ["--", exe, script], {}


def run_gdb(gdbext, ruby, exe, mode, ext, workdir, debugger="gdb"):
    """crash.rb under gdb (or lldb), ruby-bt --json at the stop on the
    fault and at the next stop -> (CrashRun at the fault, the first JSON
    run, CrashRun at the handler's signal, the second JSON run or None)."""
    gdbext = os.path.abspath(gdbext)
    os.makedirs(workdir, exist_ok=True)
    oracle_path = os.path.join(workdir, "oracle.json")
    outs = [os.path.join(workdir, "stop%d.json" % i) for i in (1, 2)]
    env = gdbext_lldb.lldb_env(gdbext) if debugger == "lldb" else \
        procs.quiet_env(dict(CORESTACK_GDBEXT_DIR=gdbext))
    env.update(variants.scenario_env(ruby), CRASH_MODE=mode, CRASH_EXT=ext,
               CORESTACK_ORACLE=oracle_path)
    argv, extra = debugger_argv(debugger, gdbext, exe, outs, mode)
    env.update(extra)
    log_path = os.path.join(workdir, debugger + ".out")
    stdout, stderr = procs.run_debugger(argv, env, workdir, GDB_TIMEOUT, log_path,
                                        outs + [oracle_path])
    with open(log_path, "w") as f:
        f.write(stdout + "\n" + stderr)
    san = procs.sanitizer_report(stderr)
    if san:
        raise procs.Failure("sanitizer report: %s" % san)
    with open(oracle_path) as f:
        oracle = json.load(f)
    report = crash.RubyReport(stdout + "\n" + stderr)
    runs = []
    for path in outs:   # no second stop when no handler runs: the process ends
        text = ""
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
        runs.append((0, text, "", None) if text.strip() else None)
    if runs[0] is None:
        raise procs.Failure("ruby-bt wrote no %s; %s said: %s" % (
            os.path.basename(outs[0]), debugger, (stdout + stderr)[-600:]))
    at_fault = crash.CrashRun(mode, None, None, oracle, report, at_fault=True)
    at_signal = crash.CrashRun(mode, None, None, oracle, report)
    return at_fault, runs[0], at_signal, runs[1]


def check_gdb(gdbext, ruby, exe, mode, ext, workdir, debugger="gdb"):
    at_fault, first, at_signal, second = run_gdb(gdbext, ruby, exe, mode, ext, workdir,
                                                 debugger)
    reason = crash.check_capture(at_fault) or crash.check_stacks(at_fault, first) or \
        crash.check_fault(at_fault, first)
    if reason:
        return "at the fault: %s" % reason
    if not crash.ruby_handled(at_signal):
        return None if second is None else \
            "a second stop after a signal no handler took: %s" % second[1][:200]
    if second is None:
        return "no stop on the signal Ruby's handler sends"
    if debugger == "lldb":
        # lldb 14 now and then gives that stop's siginfo as SI_USER, not
        # the SI_TKILL of the raise() Ruby's handler calls: the first stop
        # alone is held to the checks under lldb
        return None
    reason = crash.check_stacks(at_signal, second) or crash.check_fault(at_signal, second)
    return reason and "at the handler's signal: %s" % reason


def check_no_crash(cs, ruby, exe, ext, workdir, timeout):
    run = start(ruby, exe, "usr1_wait", ext, workdir, None)
    try:
        run.wait_oracle(timeout)

        def parked():
            with open(run.stderr_path, errors="replace") as f:
                return "crashtest: in the SIGUSR1 handler" in f.read()
        run.wait_until(parked, "in its SIGUSR1 handler", timeout)
        report, reason = native.run_json(
            procs.run_tool([cs, "--json", "--pid", str(run.pid)], timeout))
    finally:
        run.kill()
    if reason:
        return reason
    if report.get("crash") is not None:
        return "crash %s, but the process only runs a SIGUSR1 handler" % (
            json.dumps(report["crash"])[:300])
    marked = [t.get("tid") for t in report.get("threads", []) if t.get("crashed")]
    if marked:
        return "threads %s marked crashed" % marked
    return None


def run_tests(ctx):
    rep, cs, timeout = ctx.rep, ctx.args.corestack, ctx.args.timeout
    for ruby in ctx.rubies:
        names_here = [n for n in test_names(ruby) if ctx.selected(n)]
        if not names_here:
            continue
        prefix = procs.built_prefix(rep, ctx.prefixes, ruby, names_here)
        if not prefix:
            continue
        exe = os.path.join(prefix, "bin", "ruby")
        base = os.path.join(ctx.workdir, ruby, "crash-live")
        try:
            ext = crash.build_extension(os.path.join(base, "ext"), exe)
        except (procs.Failure, OSError) as exc:
            for n in names_here:
                rep.result(n, "setup: %s" % exc)
            continue
        for mode in MODES:
            n = "%s/crash/%s/live" % (ruby, mode)
            g = "%s/crash/%s/gcore" % (ruby, mode)
            want_live = n in names_here
            want_gcore = mode in GCORE_MODES and g in names_here
            attach_here = [a for a in attach_names(ruby, mode) if a in names_here] \
                if mode in GCORE_MODES else []
            if not (want_live or want_gcore or attach_here):
                continue
            gdbext = ctx.args.gdbext
            if attach_here and not os.path.exists(os.path.join(gdbext, "_corestack.abi3.so")):
                for a in attach_here:
                    rep.result(a, "setup: no gdb module in %s (make gdbext)" % gdbext)
                attach_here = []
            attach = [(a.rsplit("-", 1)[1], gdbext) for a in attach_here]
            try:
                cr, res_json, res_text, gcore_run, attached = run_live(
                    cs, ruby, exe, mode, ext, os.path.join(base, mode), timeout, want_gcore,
                    attach)
            except (procs.Failure, OSError, ValueError) as exc:
                for name in (n,) * want_live + (g,) * want_gcore + tuple(attach_here):
                    rep.result(name, "setup: %s" % exc)
                continue
            for a in attach_here:
                got = attached.get(a.rsplit("-", 1)[1])
                rep.result(a, "setup: %s" % got if isinstance(got, Exception) else
                           "no attached run: the process did not hang" if got is None else
                           check_live(cr, got, None))
            if want_live:
                rep.result(n, check_live(cr, res_json, res_text))
            if want_gcore:
                rep.result(g, check_live(*gcore_run) if gcore_run else
                           "no core taken: the process did not hang")
        for debugger, prefix in (("gdb", "gdbext"), ("lldb", "lldb")):
            for mode in GDB_MODES if debugger == "gdb" else LLDB_MODES:
                n = "%s/%s/crash/%s/live-%s" % (prefix, ruby, mode, debugger)
                if n not in names_here:
                    continue
                if not os.path.exists(os.path.join(ctx.args.gdbext, "_corestack.abi3.so")):
                    rep.result(n, "no gdbext module in %s (make gdbext)" % ctx.args.gdbext)
                    continue
                try:
                    reason = check_gdb(ctx.args.gdbext, ruby, exe, mode, ext,
                                       os.path.join(base, "%s-%s" % (mode, debugger)), debugger)
                except (procs.Failure, OSError, ValueError, subprocess.SubprocessError) as exc:
                    reason = "setup: %s" % exc
                rep.result(n, reason)
        n = "%s/crash/live-no-crash" % ruby
        if n in names_here:
            try:
                reason = check_no_crash(cs, ruby, exe, ext, os.path.join(base, "no-crash"),
                                        timeout)
            except (procs.Failure, OSError, ValueError) as exc:
                reason = "setup: %s" % exc
            rep.result(n, reason)
