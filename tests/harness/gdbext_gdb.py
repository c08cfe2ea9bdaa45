"""ruby-bt inside gdb: running gdb on a target with the module loaded, the
checks of what it printed, every scenario live and from its core, and a
remote target (gdbserver). The tests' names are in gdbext.py.
"""

import json
import os
import re
import shutil
import subprocess
import time

from . import compare, frame_locals, locks, procs, requires
from .gdbext_frames import (GDB_PART, WALK_SCRIPT, check_complete, check_frames, check_list,
                            complete_commands, frames_env, make_sysroot,
                            newer_within_second)


ROOT = procs.ROOT
SHARES = procs.SHARES
GDB_TIMEOUT = 120
MODES = ("live", "core")


# The scenario whose sessions also run ruby-frame, ruby-list and completion.
FRAMES_SCENARIO = "threads"
# fibers.rb parks 5000 suspended fibers for the CLI's tests; read through
# the debugger (--via-debugger) that many take minutes per Ruby, and 300
# take the same paths (the GC heap walked, every fiber's stack read).
SCENARIO_ENV = {"fibers": {"CORESTACK_FIBERS": "300"}}


def session_tests(scen, mode):
    tests = ["json", "text", "threads", "via-debugger"]
    if scen == FRAMES_SCENARIO:
        tests += ["frames", "list"] + (["complete"] if mode == "core" else [])
    if scen == frame_locals.SCENARIO:
        tests.append("locals")
    if locks.uses_locks(scen):
        tests += ["locks", "bt-locks"]
    return tests


def scenario_tests(ruby, scen, crash):
    names = []
    for mode in (("core",) if crash else MODES):
        names += ["gdbext/%s/%s/%s/%s" % (ruby, scen, mode, t)
                  for t in session_tests(scen, mode)]
    if not crash:
        names.append("gdbext/%s/%s/live/detached" % (ruby, scen))
    return names


# --- running gdb -------------------------------------------------------------

# Runs inside gdb: every ruby-bt variant, results to a JSON file.
GDB_SCRIPT = frame_locals.DEBUGGER_STEPS + r'''
import gdb, json, os, time
gdb.execute("source " + os.environ["GDBEXT_LOADER"])
inf = gdb.selected_inferior()
res = {"threads": [[t.num, t.ptid[1]] for t in inf.threads()],
       "selected": gdb.selected_thread().num, "runs": {}}
def run(name, cmd, to_file=False):
    """JSON goes through --out FILE: gdb's console also carries what gdb
    says about the machine (a core's .reg-xstate "too small" warning)."""
    t0 = time.monotonic()
    path = "%s.%d.out" % (os.environ["GDBEXT_RESULT"], len(res["runs"]))
    try:
        said = gdb.execute(cmd + (" --out " + path if to_file else ""), to_string=True)
        if to_file:
            with open(path) as f:
                res["runs"][name] = {"out": f.read(), "said": said}
        else:
            res["runs"][name] = {"out": said}
    except gdb.error as exc:
        res["runs"][name] = {"error": str(exc)}
    res["runs"][name]["seconds"] = time.monotonic() - t0
run("json", "ruby-bt --json all", True)
run("text", "ruby-bt all")
run("selected", "ruby-bt --json", True)
run("debugger", "ruby-bt --json --via-debugger all", True)
run("bad out", "ruby-bt --json all --out /nonexistent-dir/stacks.json")
for num, lwp in res["threads"]:
    run("thread %d" % num, "ruby-bt --json %d" % num, True)
if os.environ.get("GDBEXT_LOCKS"):
    run("locks", "ruby-locks")
    run("locks out", "ruby-locks --via-debugger", True)
    run("locks usage", "ruby-locks all")
if os.environ.get("GDBEXT_LOCALS"):
    run("full", "ruby-bt full --json all", True)
    def select(tid):
        for t in inf.threads():
            if t.ptid[1] == tid:
                t.switch()
    if "out" in res["runs"]["full"]:
        addr = locals_steps(lambda name, cmd: run(name, cmd), select,
                            res["runs"]["full"]["out"])
        if addr:
            gdb.execute("set $corestack_point = 0x%x" % addr)
            run("rp expr", "rp $corestack_point")
'''
GDB_WRITE = r'''
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''
GDB_FRAMES_SCRIPT = GDB_SCRIPT + WALK_SCRIPT + GDB_PART + GDB_WRITE
GDB_SCRIPT += GDB_WRITE


def gdb_env(gdbext_dir, extra=None):
    env = procs.quiet_env(extra)
    env["CORESTACK_GDBEXT_DIR"] = gdbext_dir
    return env


def run_gdb(gdbext_dir, target_args, commands, workdir, tag, timeout=GDB_TIMEOUT,
            script=None, env=None, wrapper=()):
    """gdb -batch on target_args running commands (and GDB_SCRIPT if script),
    gdb started by wrapper (a command line before it) if given
    -> (returncode, stdout, stderr, result dict or None, reason)"""
    loader = os.path.join(gdbext_dir, "ruby-gdb.py")
    result = os.path.join(workdir, "%s.result.json" % tag)
    argv = list(wrapper) + ["gdb", "-nx", "-q", "-batch"]
    if script:
        path = os.path.join(workdir, "%s.script.py" % tag)
        with open(path, "w") as f:
            f.write(script)
        argv += ["-ex", "source " + path]
    else:
        argv += ["-ex", "source " + loader]
    for c in commands:
        argv += ["-ex", c]
    argv += target_args
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=timeout,
                             env=gdb_env(gdbext_dir, dict(env or {}, GDBEXT_LOADER=loader,
                                                          GDBEXT_RESULT=result)))
    except subprocess.TimeoutExpired:
        return None, "", "", None, "gdb timed out after %d s" % timeout
    if procs.sanitizer_report(res.stderr):   # the module built with UBSan (make test)
        return res.returncode, res.stdout, res.stderr, None, \
            "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    data = None
    if script:
        try:
            with open(result) as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            return res.returncode, res.stdout, res.stderr, None, \
                "gdb wrote no result (%s); stderr: %s" % (exc, compare.show(res.stderr[-300:]))
    return res.returncode, res.stdout, res.stderr, data, None


# --- checks ------------------------------------------------------------------

def parked(exe, workdir, tag):
    """threads.rb parked, its oracle read -> (Scenario, oracle); the caller
    kills it. Raises procs.Failure, OSError, ValueError."""
    run = procs.Scenario(exe, os.path.join(procs.SCENARIOS, "threads.rb"),
                         os.path.join(workdir, tag), False)
    try:
        run.wait_oracle(60)
        with open(run.oracle_path) as f:
            return run, json.load(f)
    except BaseException:
        run.kill()
        raise


def fail_all(rep, selected, names, reason):
    for n in names:
        if selected(n):
            rep.result(n, reason)


def json_in(output):
    """The JSON report in a debugger's output (between its own lines)."""
    start, end = output.find("{\n"), output.rfind("\n}")
    return output[start:end + 2] if start >= 0 and end >= 0 else None


def parse_json_run(run):
    if "error" in run:
        return None, "ruby-bt failed: %s" % run["error"].strip()
    return compare.parse_report(run["out"])


def check_json(run, oracle, source, signal_number, bad_out=None, cwd_known=True):
    report, reason = parse_json_run(run)
    if reason:
        return reason
    # gdb's own warnings about the machine may come before it
    if "said" in run and not re.fullmatch(r"ruby-bt: written to \S+",
                                          (run["said"].strip().splitlines() or [""])[-1]):
        return "ruby-bt --out said %s, expected a last line naming the file" % (
            compare.show(run["said"]))
    if bad_out is not None and "cannot write /nonexistent-dir/stacks.json" not in \
            bad_out.get("error", ""):
        return "ruby-bt --out to a missing directory: %s" % compare.show(bad_out)
    if report.get("process", {}).get("source") != source:
        return "process.source is %s, expected %s" % (
            compare.show(report.get("process", {}).get("source")), compare.show(source))
    return (compare.check_shape(report)
            or compare.check_process(report, oracle, signal_number, cwd_known)
            or compare.compare_threads(report, oracle))


def unnumbered(text):
    """ruby-bt's text without its frame numbers -> (text, reason): each
    thread's own frames numbered #0, #1, ... in order (fibers' not), a
    folded recursion's "... N levels..." skipping N numbers."""
    lines, due = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("Thread "):
            due = 0
        fold = compare.FOLD.match(line[4:].rstrip("\n")) if line.startswith("    ... ") else None
        if fold and due is not None:
            due += int(fold.group(1))
        m = re.match(r"    #(\d+) +(?=\S)", line)
        if m:
            if due is None or int(m.group(1)) != due:
                return None, "frame number #%s where #%s was due: %s" % (
                    m.group(1), due, compare.show(line))
            due += 1
            line = "    " + line[m.end():]
        lines.append(line)
    return "".join(lines), None


def debugger_named(text, debugger, threads=None):
    """ruby-bt all's text without the debugger's thread numbers -> (text,
    reason): each Ruby thread's line with a tid names the debugger's thread
    of it, "(tid T, gdb thread N)" as ruby-bt N's does, N the debugger's
    number of LWP T when threads ([num, lwp] pairs) is given."""
    lines = []
    for line in text.splitlines(keepends=True):
        m = re.match(r"Thread \d+.*? \(tid (\d+)(, %s thread (\d+))?\)" % debugger, line)
        if m and line.startswith("Thread "):
            if not m.group(2):
                return None, "a thread's line names no %s thread: %s" % (
                    debugger, compare.show(line))
            want = [n for n, lwp in threads or () if lwp == int(m.group(1))]
            if threads is not None and want != [int(m.group(3))]:
                return None, "tid %s is %s thread %s, not %s: %s" % (
                    m.group(1), debugger, want, m.group(3), compare.show(line))
            line = line[:m.start(2)] + line[m.end(2):]
        lines.append(line)
    return "".join(lines), None


def check_text(run, cli, oracle, stdout, threads):
    if "error" in run:
        return "ruby-bt failed: %s" % run["error"].strip()
    rc, out, err, reason = cli
    if reason:
        return "corestack: " + reason
    if rc != 0:
        return "corestack exited %d: %s" % (rc, compare.show(err[:200]))
    if run["out"] not in stdout:
        return "a plain `-ex ruby-bt all` did not print the same text"
    text, reason = unnumbered(run["out"])
    if reason:
        return reason
    text, reason = debugger_named(text, "gdb", threads)
    if reason:
        return reason
    if text != out:
        a, b = text.splitlines(), out.splitlines()
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return "line %d: ruby-bt %s, corestack %s" % (i + 1, compare.show(x), compare.show(y))
        return "ruby-bt prints %d lines, corestack %d" % (len(a), len(b))
    return compare.check_text(text, oracle)


def check_locks_text(run, oracle, debugger, threads=None, bare=True):
    """ruby-locks (ruby-bt all: bare False): who holds what as the program
    recorded it (locks.py's expected graph), each thread line naming the
    debugger's thread of it; bare: no stack, the deadlocks (their threads
    and fibers), then one line per thread."""
    if "error" in run:
        return "the command failed: %s" % run["error"].strip()
    out = run["out"]
    if not out.strip():
        return "the command printed nothing"
    for line in out.splitlines() if bare else ():
        if line and not re.match(r'(Deadlock \d+: |  Thread \d+|  Fiber 0x[0-9a-f]+ of thread \d+|'
                                 r'Thread \d+)', line):
            return "ruby-locks printed a line of neither a deadlock nor a thread: %s" % (
                compare.show(line))
    text, reason = debugger_named(out, debugger, threads)
    return reason or locks.check_text(oracle, text, fibers=not bare)


def check_locks(data, oracle, debugger):
    """ruby-locks (and through the debugger to a file: the same text),
    and its usage line for a thread argument it does not take."""
    runs = data["runs"]
    reason = check_locks_text(runs["locks"], oracle, debugger, data.get("threads"))
    if reason:
        return reason
    through = runs["locks out"]
    if "error" in through or kernel_blind_text(through["out"]) != \
            kernel_blind_text(runs["locks"]["out"]):
        return "ruby-locks --via-debugger --out FILE: %s, not ruby-locks's text" % (
            compare.show(through.get("error") or through["out"][:200]))
    said = runs["locks usage"].get("error", "")
    if "usage: ruby-locks" not in said:
        return "ruby-locks all: %s, expected its usage line" % compare.show(
            said or runs["locks usage"].get("out", ""))
    return None


def crash_index_reason(report):
    """A crash summary's thread_index names the crashed thread's place in
    the threads the report shows, null when it shows none of them."""
    c = report.get("crash")
    if not c:
        return None
    threads = report.get("threads", [])
    at = [i for i, t in enumerate(threads) if t.get("tid") == c.get("tid")]
    if c.get("thread_index") != (at[0] if at else None):
        return "crash.thread_index %s, the crashed thread (tid %s) is at %s of %d shown" % (
            c.get("thread_index"), c.get("tid"), at, len(threads))
    return None


def check_threads(data):
    """ruby-bt N for each gdb thread, and ruby-bt alone; in a crash
    core's report, crash.thread_index indexes the threads shown."""
    report, reason = parse_json_run(data["runs"]["json"])
    if reason:
        return "ruby-bt --json all: " + reason
    reason = crash_index_reason(report)
    if reason:
        return "ruby-bt --json all: " + reason
    # Threads of a non-main ractor on 3.3 run on shared native threads (M:N)
    # and have no kernel tid (Ruby's native_thread_id is nil too, which the
    # json test checks): no gdb thread is theirs, so only threads with a tid
    # must be reachable through ruby-bt N.
    by_tid = dict((t.get("tid"), t) for t in report["threads"] if t.get("tid") is not None)
    if not by_tid:
        return "no Ruby thread has a kernel tid"
    reached = set()
    for num, lwp in data["threads"]:
        run = data["runs"]["thread %d" % num]
        if lwp in by_tid:
            one, reason = parse_json_run(run)
            if reason:
                return "ruby-bt %d (LWP %d): %s" % (num, lwp, reason)
            if one.get("threads") != [by_tid[lwp]]:
                return "ruby-bt %d (LWP %d) shows %s, expected that thread of ruby-bt all" % (
                    num, lwp, compare.show([t.get("tid") for t in one.get("threads", [])]))
            reason = crash_index_reason(one)
            if reason:
                return "ruby-bt %d (LWP %d): %s" % (num, lwp, reason)
            reached.add(lwp)
        else:
            err = run.get("error", "")
            if "runs no Ruby thread" not in err or len(err.strip().splitlines()) != 1:
                return "ruby-bt %d (LWP %d, no Ruby thread): expected one error line, got %s" % (
                    num, lwp, compare.show(run.get("error", run.get("out", ""))[:200]))
    if reached != set(by_tid):
        return "Ruby threads no gdb thread reaches: %s" % sorted(set(by_tid) - reached)
    sel = data["runs"]["selected"]
    want = data["runs"]["thread %d" % data["selected"]]
    if sel.get("out") != want.get("out") or sel.get("error") != want.get("error"):
        return "ruby-bt differs from ruby-bt %d (gdb's selected thread)" % data["selected"]
    return None


def check_via_debugger(data, oracle, source, signal_number):
    reason = check_json(data["runs"]["debugger"], oracle, source, signal_number,
                        cwd_known=False)
    if reason:
        return reason
    fast, _ = parse_json_run(data["runs"]["json"])
    slow, _ = parse_json_run(data["runs"]["debugger"])
    if fast and slow and [kernel_blind(t) for t in fast["threads"]] != slow["threads"]:
        return "threads differ from the direct read's"
    return None


def kernel_blind(thread):
    """A thread of a direct read as a read through the debugger gives it:
    without what only the kernel threads' registers and /proc tell (the
    debugger passes neither): the system call, what a descriptor is, a
    child known only from the call."""
    t = dict(thread, system_call=None)
    waiting = t.get("waiting_on")
    if isinstance(waiting, dict):
        waiting = dict(waiting)
        if isinstance(waiting.get("io"), dict):
            waiting["io"] = dict(waiting["io"], what=None)
            if waiting["io"]["object"] is None:
                waiting["io"] = None
        if (waiting.get("child") or {}).get("from") == "system_call":
            waiting["child"] = None
        t["waiting_on"] = waiting
    return t


def kernel_blind_text(out):
    """ruby-locks's text without what only the kernel tells (kernel_blind):
    a descriptor's name and a child are cut from each line, an fd kept."""
    out = re.sub(r"( on fd \d+)[^;\n]*", r"\1", out)
    out = re.sub(r" for (?:child \d+|any child[^;\n]*)", "", out)
    return re.sub(r"; in system call [^;\n]*", "", out)


# --- scenario runs -------------------------------------------------------------

def check_session(rep, names, mode, gdb_run, cli, oracle, signal_number, selected,
                  records=None):
    rc, stdout, stderr, data, reason = gdb_run
    prefix = names["prefix"] + "/" + mode + "/"
    for key in session_tests(names["scenario"], mode):
        if key == "locals" and records is None:
            continue
        name = prefix + key
        if not selected(name):
            continue
        if reason:
            rep.result(name, reason)
            continue
        try:
            if key == "json":
                r = check_json(data["runs"]["json"], oracle, mode, signal_number,
                               data["runs"].get("bad out", {}))
            elif key == "text":
                r = check_text(data["runs"]["text"], cli, oracle, stdout,
                               data["threads"])
            elif key == "threads":
                r = check_threads(data)
            elif key == "frames":
                r = check_frames(data, parse_json_run(data["runs"]["json"])[0], oracle,
                                 "gdb", mode)
            elif key == "list":
                r = check_list(data, names["sysroot"], mode, script=names["script"])
            elif key == "complete":
                r = check_complete(stdout, data["threads"])
            elif key == "locals":
                r = frame_locals.check_debugger(data["runs"], records, compare.parse_report)
            elif key == "locks":
                r = check_locks(data, oracle, "gdb")
            elif key == "bt-locks":
                r = check_locks_text(data["runs"]["text"], oracle, "gdb", data["threads"],
                                     bare=False)
            else:
                r = check_via_debugger(data, oracle, mode, signal_number)
        except (KeyError, TypeError) as exc:
            r = "malformed gdb result: %r" % exc
        rep.result(name, r)


def scenario_runs(rep, selected, args, ruby, exe, scenarios, workdir, locals_hook=None):
    """Every scenario in gdb, live and from its core; on the locals fixture's
    scenario and a locks scenario also locals_hook(scenario, target_args,
    mode, records, oracle, env, workdir) (lldb's turn on the same process
    and core; records None but on the locals fixture's)."""
    running = []
    try:
        for scen in scenarios:
            hooked = ["lldb/%s/%s/%s/locals" % (ruby, scen, m) for m in MODES] \
                if locals_hook and scen == frame_locals.SCENARIO else []
            hooked += ["lldb/%s/%s/%s/locks" % (ruby, scen, m) for m in MODES] \
                if locals_hook and locks.uses_locks(scen) else []
            if not any(selected(n) for n in scenario_tests(ruby, scen, scen.startswith("crash"))
                       + hooked):
                continue
            script = os.path.join(procs.SCENARIOS, scen + ".rb")
            why = requires.missing(script, ruby.split("-")[0])
            if why:   # e.g. Ractor on 2.7: said, not left out silently
                for n in scenario_tests(ruby, scen, scen.startswith("crash")):
                    if selected(n):
                        rep.skip(n, why)
                continue
            # the scenario ruby-list reads runs by a relative path: gdb, in
            # another directory, must list it from a core all the same
            running.append((scen, procs.Scenario(exe, script, os.path.join(workdir, scen),
                                                 scen.startswith("crash"),
                                                 SCENARIO_ENV.get(scen),
                                                 relative=scen == FRAMES_SCENARIO)))
        for scen, run in running:
            crash = scen.startswith("crash")
            names = {"prefix": "gdbext/%s/%s" % (ruby, scen), "scenario": scen}
            script, env, completions = GDB_SCRIPT, None, []
            if scen == FRAMES_SCENARIO:
                names["sysroot"] = make_sysroot(run.workdir, run.script)
                names["script"] = run.script
                script = GDB_FRAMES_SCRIPT
                env = frames_env(names["sysroot"], run.script, run.shown)
                completions = complete_commands(run.workdir)
            tests = scenario_tests(ruby, scen, crash)
            try:
                run.wait_oracle(60)
                with open(run.oracle_path) as f:
                    oracle = json.load(f)
                signal_number = None
                if crash:
                    run.wait_exit(60)
                    signal_number = os.WTERMSIG(run.status) if os.WIFSIGNALED(run.status) else None
                    core = procs.kernel_core(run)
                records = None
                plan = frame_locals.debugger_plan(frame_locals.read_records(run.oracle_path)) \
                    if scen == frame_locals.SCENARIO else None
                if plan:
                    records = frame_locals.read_records(run.oracle_path)
                    env = {"GDBEXT_LOCALS": json.dumps(plan)}
                elif scen == frame_locals.SCENARIO:
                    records = {}
                if locks.uses_locks(scen):
                    env = dict(env or {}, GDBEXT_LOCKS="1")
                if not crash:
                    time.sleep(0.2)
                    cli = procs.run_tool([args.corestack, "--pid", str(run.pid)], args.timeout)
                    live = run_gdb(args.gdbext, ["-p", str(run.pid)], ["ruby-bt all"],
                                   run.workdir, "live", script=script, env=env)
                    check_session(rep, names, "live", live, cli, oracle, None, selected,
                                  records)
                    if locals_hook and (records is not None or locks.uses_locks(scen)):
                        locals_hook(scen, ["-p", str(run.pid)], "live", records, oracle, env,
                                    run.workdir)
                    name = names["prefix"] + "/live/detached"
                    if selected(name):
                        left = procs.stopped_threads(run.pid) if not run.poll() else ["(exited)"]
                        rep.result(name, "threads left stopped: %s" % left if left else None)
                    core = procs.gcore(run.pid, os.path.join(run.workdir, "core"), 120)
                    if "sysroot" in names:
                        newer_within_second(core, names["sysroot"], run.script)
                cli = procs.run_tool([args.corestack, core, exe], args.timeout)
                res = run_gdb(args.gdbext, [exe, core], ["ruby-bt all"] + completions,
                              run.workdir, "core", script=script, env=env)
                check_session(rep, names, "core", res, cli, oracle, signal_number, selected,
                              records)
                if locals_hook and (records is not None or locks.uses_locks(scen)):
                    locals_hook(scen, [exe, "-c", core], "core", records, oracle, env,
                                run.workdir)
                if not args.keep:
                    os.unlink(core)
            except (procs.Failure, OSError, ValueError) as exc:
                fail_all(rep, selected, tests, "capture failed: %s" % exc)
            finally:
                run.kill()
    finally:
        for _, run in running:
            run.kill()


# --- a command's error ---------------------------------------------------------

PYTHON_ERROR_MARKS = ("Traceback", "Python Exception", "Error occurred in Python")


def twice(command):
    """The command, gdb's arithmetic, the command again: the error must not
    have left the session broken."""
    return [command, "print 6*7", command]


def one_error(run, pattern, count=2):
    """Each of the count ruby-* commands printed one error line, the same
    one, matching pattern; no Python error reached gdb; and `print 6*7`
    (see twice) still printed 42."""
    rc, out, err, _, reason = run
    if reason:
        return reason
    for mark in PYTHON_ERROR_MARKS:
        if mark in out or mark in err:
            return "a Python error reached gdb (%s): %s" % (mark, compare.show(err[-400:]))
    lines = [l for l in err.splitlines() if l.startswith("ruby-")]
    if len(lines) != count:
        return "expected %d ruby-* error lines (one per command), got %s" % (
            count, compare.show(err[-400:]))
    if len(set(lines)) != 1:
        return "the same command said different things: %s" % compare.show(lines)
    if not re.search(pattern, lines[0]):
        return "error line does not say /%s/: %s" % (pattern, compare.show(lines[0]))
    if "$1 = 42" not in out:
        return "gdb not usable afterwards (print 6*7 gave no $1 = 42): %s" % compare.show(
            out[-200:])
    return None


def on_parked(rep, name, exe, workdir, tag, tool, check):
    """check(run, oracle, tool's path) -> reason or None, on threads.rb
    parked (killed after), as test name's result; tool: (program, what
    installs it), the test's reason when it is missing."""
    path = shutil.which(tool[0])
    if not path:
        rep.result(name, "%s is not installed (%s)" % tool)
        return
    run = None
    try:
        run, oracle = parked(exe, workdir, tag)
        rep.result(name, check(run, oracle, path))
    except (procs.Failure, OSError, ValueError) as exc:
        rep.result(name, "capture failed: %s" % exc)
    finally:
        if run:
            run.kill()


# --- gdb in a container ------------------------------------------------------------

def container_test(rep, args, ruby, exe, workdir):
    """gdb in a mount namespace of its own (unshare -m, as in a container)
    names the process's files "target:/..."; ruby-bt reading through gdb
    must read them at their own paths."""
    def check(run, oracle, unshare):
        _, out, err, _, reason = run_gdb(
            args.gdbext, ["-p", str(run.pid)],
            ["info sharedlibrary", "ruby-bt --json --via-debugger all"],
            run.workdir, "container", wrapper=[unshare, "--mount"])
        if reason:
            return reason
        if "Operation not permitted" in err and "unshare" in err:
            return "unshare --mount is not permitted here (it needs root or a user " \
                "namespace): %s" % compare.show(err[-200:])
        if "target:/" not in out:
            return "gdb named no file target:/... in its own mount namespace: the test " \
                "would show nothing"
        report = json_in(out)
        if report is None:
            return "no JSON report: %s" % compare.show(err[-300:])
        return check_json({"out": report}, oracle, "live", None, cwd_known=False)
    on_parked(rep, "gdbext/%s/threads/container" % ruby, exe, workdir, "container-threads",
              ("unshare", "util-linux"), check)


# --- a remote target ---------------------------------------------------------------

def remote_test(rep, args, ruby, exe, workdir):
    def check(run, oracle, gdbserver):
        time.sleep(0.2)
        # A pipe: no port to pick, nothing listening on the network.
        res = run_gdb(args.gdbext, [exe], [
            "target remote | exec %s --attach - %d" % (gdbserver, run.pid),
            "ruby-bt --json all"] + twice("ruby-sample 1"), run.workdir, "remote")
        _, out, err, _, reason = res
        if reason:
            return reason
        report = json_in(out)
        if report is None:
            return "no JSON report through gdbserver: %s" % compare.show(err[-300:])
        return check_json({"out": report}, oracle, "live", None, cwd_known=False) or \
            one_error(res, "needs a live local process")
    on_parked(rep, "gdbext/%s/threads/remote" % ruby, exe, workdir, "remote-threads",
              ("gdbserver", ".ci/install-deps"), check)
