"""gdbext tests: ruby-bt and ruby-sample inside gdb (and lldb) against what
Ruby says about itself (fixtures/oracle.rb), on every fixture Ruby.

    gdbext/RUBY/SCEN/MODE/json      ruby-bt --json all, MODE live (gdb -p on the
                                    parked scenario) or core (gdb RUBY CORE): same
                                    threads and frames as the oracle
    gdbext/RUBY/SCEN/MODE/text      ruby-bt all: byte for byte corestack's text for
                                    the same state (corestack CORE EXE, corestack
                                    --pid --nonblocking), every oracle label in it,
                                    and printed by a plain `-ex ruby-bt all`
    gdbext/RUBY/SCEN/MODE/threads   ruby-bt N for every gdb thread N: that LWP's Ruby
                                    thread alone, or one error line when it runs
                                    none; ruby-bt alone = gdb's selected thread;
                                    every Ruby thread reachable
    gdbext/RUBY/SCEN/MODE/via-debugger  ruby-bt --json --via-debugger all (memory,
                                    mappings and auxv through gdb): as the oracle
    gdbext/RUBY/SCEN/live/detached  no thread of the scenario left stopped after gdb
    gdbext/RUBY/sample              ruby-sample 2 --out F on fixtures/profile/shares.rb:
                                    heavy ranked over light (summary and collapsed
                                    stacks), every thread stopped again afterwards,
                                    and `continue` then runs the program to a
                                    normal exit (the SIGINT was not passed on)
    gdbext/bad/...                  no Ruby in the inferior (live and core, also
                                    --via-debugger), no inferior, ruby-sample on a
                                    core, bad arguments, unreadable memory (a real
                                    core's VM pointer aimed at the zero page; every
                                    read path, and corestack on it says the thread
                                    list is incomplete, no sanitizer report): each
                                    command, run twice around `print 6*7`, prints the
                                    same one error line, no Python traceback, and 42
    lldb/bad/not-ruby-core, lldb/bad/unreadable-vm  the same in lldb (ruby-bt all,
                                    expression 6*7, ruby-bt all)
    gdbext/3.3-static/no-debug-info the static Ruby stripped of DWARF: one line naming
                                    the file and gdb's debug-file-directory (not the
                                    CLI's --debug-dir), on its core (also
                                    --via-debugger) and live
    gdbext/3.3-static/debug-file-directory  the advice followed (the DWARF in a
                                    build-id tree named by set debug-file-directory):
                                    the oracle's stacks
    lldb/3.3-static/no-debug-info   the same in lldb (target.debug-file-search-paths),
                                    both the error line and the stacks once set
    gdbext/RUBY/threads/remote      ruby-bt --json all through gdbserver --attach (target
                                    remote: memory, mappings, auxv over the protocol): as
                                    the oracle; ruby-sample there says it needs a local
                                    process
    lldb/RUBY/threads/MODE          the same ruby-bt --json all in lldb (live, core)
    lldb/RUBY/sample                ruby-sample 2 --out F in lldb on shares.rb: heavy
                                    ranked over light, the process stopped again
    gdbext/install                  make install PREFIX=TMP SYSCONFDIR=TMP/etc RUBY_FOR_GDB=
                                    3.3's ruby, then gdb -nx on a 3.3 core reading only the
                                    installed gdbinit.d snippet (-iex source, as gdb reads
                                    its system gdbinit dir): ruby-bt --json all as the oracle
    gdbext/install-destdir          make install DESTDIR=TMP (default PREFIX, SYSCONFDIR):
                                    every file under TMP, naming the final paths only
    gdbext/install-system-gdbinit   that staged tree laid over /usr/local and
                                    /etc/gdb/gdbinit.d in a private mount namespace
                                    (unshare -m): a plain gdb (no -nx, HOME empty) gets
                                    ruby-bt with no `source`; SKIP where mounting is not
                                    allowed
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

from . import compare, corrupt, procs, requires

ROOT = procs.ROOT
SHARES = procs.SHARES
GDB_TIMEOUT = 120
LLDB_RUBIES = ("3.3", "3.4")
REMOTE_RUBIES = ("3.3",)   # gdbserver: slow to start (it ships every library)
MODES = ("live", "core")


def scenario_tests(ruby, scen, crash):
    names = []
    for mode in (("core",) if crash else MODES):
        names += ["gdbext/%s/%s/%s/%s" % (ruby, scen, mode, t)
                  for t in ("json", "text", "threads", "via-debugger")]
    if not crash:
        names.append("gdbext/%s/%s/live/detached" % (ruby, scen))
    return names


def ruby_tests(ruby, scenarios):
    names = []
    for scen in scenarios:
        names += scenario_tests(ruby, scen, scen.startswith("crash"))
    names.append("gdbext/%s/sample" % ruby)
    if ruby in LLDB_RUBIES:
        names += ["lldb/%s/threads/%s" % (ruby, m) for m in MODES] + ["lldb/%s/sample" % ruby]
    if ruby in REMOTE_RUBIES:
        names.append("gdbext/%s/threads/remote" % ruby)
    if ruby == NO_DEBUG_RUBY:
        names += NO_DEBUG_TESTS
    return names


INSTALL_RUBY = "3.3"

BAD_TESTS = ("gdbext/bad/not-ruby-live", "gdbext/bad/not-ruby-core", "gdbext/bad/no-inferior",
             "gdbext/bad/sample-on-core", "gdbext/bad/unreadable-vm", "gdbext/bad/usage",
             "lldb/bad/not-ruby-core", "lldb/bad/unreadable-vm")


def wanted(selected, rubies, scenarios):
    """Does any gdbext test run? (so run.py builds the Rubies)"""
    return any(selected(n) for r in rubies for n in ruby_tests(r, scenarios)) or \
        any(selected(n) for n in BAD_TESTS) or \
        (INSTALL_RUBY in rubies and any(selected(n) for n in INSTALL_TESTS))


# --- running gdb -------------------------------------------------------------

# Runs inside gdb: every ruby-bt variant, results to a JSON file.
GDB_SCRIPT = r'''
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
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''


def gdb_env(gdbext_dir, extra=None):
    env = procs.quiet_env(extra)
    env["CORESTACK_GDBEXT_DIR"] = gdbext_dir
    return env


def run_gdb(gdbext_dir, target_args, commands, workdir, tag, timeout=GDB_TIMEOUT,
            script=None, env=None):
    """gdb -batch on target_args running commands (and GDB_SCRIPT if script)
    -> (returncode, stdout, stderr, result dict or None, reason)"""
    loader = os.path.join(gdbext_dir, "ruby-gdb.py")
    result = os.path.join(workdir, "%s.result.json" % tag)
    argv = ["gdb", "-nx", "-q", "-batch"]
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


def check_json(run, oracle, source, signal_number, bad_out=None):
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
            or compare.check_process(report, oracle, signal_number)
            or compare.compare_threads(report, oracle))


def check_text(run, cli, oracle, stdout):
    if "error" in run:
        return "ruby-bt failed: %s" % run["error"].strip()
    rc, out, err, reason = cli
    if reason:
        return "corestack: " + reason
    if rc != 0:
        return "corestack exited %d: %s" % (rc, compare.show(err[:200]))
    if run["out"] != out:
        a, b = run["out"].splitlines(), out.splitlines()
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return "line %d: ruby-bt %s, corestack %s" % (i + 1, compare.show(x), compare.show(y))
        return "ruby-bt prints %d lines, corestack %d" % (len(a), len(b))
    if run["out"] not in stdout:
        return "a plain `-ex ruby-bt all` did not print the same text"
    return compare.check_text(run["out"], oracle)


def check_threads(data):
    """ruby-bt N for each gdb thread, and ruby-bt alone."""
    report, reason = parse_json_run(data["runs"]["json"])
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
    reason = check_json(data["runs"]["debugger"], oracle, source, signal_number)
    if reason:
        return reason
    fast, _ = parse_json_run(data["runs"]["json"])
    slow, _ = parse_json_run(data["runs"]["debugger"])
    if fast and slow and fast["threads"] != slow["threads"]:
        return "threads differ from the direct read's"
    return None


# --- scenario runs -------------------------------------------------------------

def check_session(rep, names, mode, gdb_run, cli, oracle, signal_number, selected):
    rc, stdout, stderr, data, reason = gdb_run
    prefix = names["prefix"] + "/" + mode + "/"
    for key in ("json", "text", "threads", "via-debugger"):
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
                r = check_text(data["runs"]["text"], cli, oracle, stdout)
            elif key == "threads":
                r = check_threads(data)
            else:
                r = check_via_debugger(data, oracle, mode, signal_number)
        except (KeyError, TypeError) as exc:
            r = "malformed gdb result: %r" % exc
        rep.result(name, r)


def scenario_runs(rep, selected, args, ruby, exe, scenarios, workdir):
    running = []
    try:
        for scen in scenarios:
            if not any(selected(n) for n in scenario_tests(ruby, scen, scen.startswith("crash"))):
                continue
            script = os.path.join(procs.SCENARIOS, scen + ".rb")
            why = requires.missing(script, ruby.split("-")[0])
            if why:   # e.g. Ractor on 2.7: said, not left out silently
                for n in scenario_tests(ruby, scen, scen.startswith("crash")):
                    if selected(n):
                        rep.skip(n, why)
                continue
            running.append((scen, procs.Scenario(exe, script, os.path.join(workdir, scen),
                                                 scen.startswith("crash"))))
        for scen, run in running:
            crash = scen.startswith("crash")
            names = {"prefix": "gdbext/%s/%s" % (ruby, scen)}
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
                else:
                    time.sleep(0.2)
                    cli = procs.run_tool([args.corestack, "--pid", str(run.pid)], args.timeout)
                    live = run_gdb(args.gdbext, ["-p", str(run.pid)], ["ruby-bt all"],
                                   run.workdir, "live", script=GDB_SCRIPT)
                    check_session(rep, names, "live", live, cli, oracle, None, selected)
                    name = names["prefix"] + "/live/detached"
                    if selected(name):
                        left = procs.stopped_threads(run.pid) if not run.poll() else ["(exited)"]
                        rep.result(name, "threads left stopped: %s" % left if left else None)
                    core = procs.gcore(run.pid, os.path.join(run.workdir, "core"), 120)
                cli = procs.run_tool([args.corestack, core, exe], args.timeout)
                res = run_gdb(args.gdbext, [exe, core], ["ruby-bt all"], run.workdir, "core",
                              script=GDB_SCRIPT)
                check_session(rep, names, "core", res, cli, oracle, signal_number, selected)
                if not args.keep:
                    os.unlink(core)
            except (procs.Failure, OSError, ValueError) as exc:
                fail_all(rep, selected, tests, "capture failed: %s" % exc)
            finally:
                run.kill()
    finally:
        for _, run in running:
            run.kill()


# --- ruby-sample ---------------------------------------------------------------

SAMPLE_SCRIPT = r'''
import gdb, json, os
gdb.execute("source " + os.environ["GDBEXT_LOADER"])
pid = gdb.selected_inferior().pid
res = {}
try:
    res["summary"] = gdb.execute("ruby-sample 2 --out " + os.environ["GDBEXT_FOLDED"], to_string=True)
except gdb.error as exc:
    res["error"] = str(exc)
states = []
for tid in os.listdir("/proc/%d/task" % pid):
    with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
        states.append(f.read().rsplit(")", 1)[1].split()[0])
res["states"] = states
res["running"] = [t.num for t in gdb.selected_inferior().threads() if t.is_running()]
gdb.execute("continue", to_string=True)
res["exitcode"] = int(gdb.parse_and_eval("$_exitcode")) if str(gdb.parse_and_eval("$_exitcode")) != "void" else None
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''


def summary_totals(summary):
    """frame -> total samples, from the summary table."""
    totals = {}
    for line in summary.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+%\s+(\d+)\s+(.*)$", line)
        if m:
            totals[m.group(3)] = int(m.group(2))
    return totals


def check_sample(data, folded):
    if "error" in data:
        return "ruby-sample failed: %s" % data["error"].strip()
    totals = summary_totals(data["summary"])
    heavy, light = totals.get("Object#heavy", 0), totals.get("Object#light", 0)
    if heavy + light < 50 or heavy < 1.5 * light:
        return "summary: Object#heavy %d, Object#light %d samples: heavy does 3x the work" % (
            heavy, light)
    try:
        with open(folded) as f:
            text = f.read()
    except OSError as exc:
        return "no collapsed stacks: %s" % exc
    fh, fl = procs.shares_of(text)
    if (fh, fl) != (heavy, light):
        return "collapsed stacks count heavy %d light %d, the summary %d %d" % (fh, fl, heavy, light)
    if "stopped again" not in data["summary"]:
        return "summary does not say the inferior is stopped again: %s" % compare.show(
            data["summary"][-200:])
    if any(s not in ("t", "T") for s in data["states"]) or data["running"]:
        return "after ruby-sample: thread states %s, gdb running threads %s" % (
            data["states"], data["running"])
    if data.get("exitcode") != 0:
        return "resumed after ruby-sample, the program exited %s, expected 0" % data.get("exitcode")
    return None


def sample_test(rep, args, ruby, exe, workdir):
    name = "gdbext/%s/sample" % ruby
    folded = os.path.join(workdir, "sample.folded")
    # It ends 15 s after its start (wall clock): long enough for a slow
    # attach on a loaded machine plus the 2 s of sampling, so that the
    # `continue` after ruby-sample sees it run on to its normal exit.
    target = subprocess.Popen([exe, SHARES, "15"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        loader = os.path.join(args.gdbext, "ruby-gdb.py")
        path = os.path.join(workdir, "sample.script.py")
        result = os.path.join(workdir, "sample.result.json")
        with open(path, "w") as f:
            f.write(SAMPLE_SCRIPT)
        try:
            res = subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", "source " + path,
                                  "-p", str(target.pid)], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 timeout=GDB_TIMEOUT,
                                 env=gdb_env(args.gdbext, {"GDBEXT_LOADER": loader,
                                                           "GDBEXT_RESULT": result,
                                                           "GDBEXT_FOLDED": folded}))
        except subprocess.TimeoutExpired:
            rep.result(name, "gdb hung")
            return
        if procs.sanitizer_report(res.stderr):
            rep.result(name, "sanitizer report: %s" % procs.sanitizer_report(res.stderr))
            return
        try:
            with open(result) as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            rep.result(name, "gdb wrote no result (%s): %s" % (exc, compare.show(res.stderr[-300:])))
            return
        rep.result(name, check_sample(data, folded))
    finally:
        target.kill()
        target.wait()


# --- bad input -----------------------------------------------------------------

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


def vm_pointer_address(gdbext_dir, exe, core, workdir):
    """Where the core keeps the pointer to the Ruby VM, as gdb resolves the
    symbol (the tests' own view, not corestack's)."""
    run = run_gdb(gdbext_dir, [exe, core], ["print/x (unsigned long)&ruby_current_vm_ptr"],
                  workdir, "vm-pointer")
    m = re.search(r"^\$1 = (0x[0-9a-f]+)$", run[1], re.M)
    if not m:
        raise procs.Failure("gdb cannot tell where ruby_current_vm_ptr is: %s" % compare.show(
            (run[4] or run[2])[-300:]))
    return int(m.group(1), 16)


def unreadable_vm_test(rep, args, exe, core, workdir):
    """The VM pointer of a real core aimed at the zero page: every read
    path (the core reader, gdb's own reads) gives one line, in gdb and in
    lldb, and corestack itself reports the thread list as incomplete."""
    g = args.gdbext
    try:
        where = vm_pointer_address(g, exe, core, workdir)
    except procs.Failure as exc:
        for n in ("gdbext/bad/unreadable-vm", "lldb/bad/unreadable-vm"):
            rep.result(n, "setup: %s" % exc)
        return
    patched = corrupt.CoreFile(core)
    try:
        try:
            patched.write(where, struct.pack("<Q", corrupt.UNMAPPED))
        except LookupError as exc:
            for n in ("gdbext/bad/unreadable-vm", "lldb/bad/unreadable-vm"):
                rep.result(n, "setup: %s" % exc)
            return
        reason = None
        for i, cmd in enumerate(("ruby-bt all", "ruby-bt", "ruby-bt --json --via-debugger all")):
            run = run_gdb(g, [exe, core], twice(cmd), workdir, "unreadable%d" % i)
            reason = one_error(run, r"no Ruby thread could be read: .*cannot read .*"
                                    r"is the core complete")
            if reason:
                reason = "%s: %s" % (cmd, reason)
                break
        if not reason:
            rc, out, err, why = procs.run_tool([args.corestack, core, exe], args.timeout)
            reason = why or (procs.sanitizer_report(err) and
                             "corestack: sanitizer report: %s" % procs.sanitizer_report(err))
            if not reason and (rc != 1 or "thread list incomplete" not in out):
                reason = "corestack exited %d, expected 1 with 'thread list incomplete': %s" % (
                    rc, compare.show((out + err)[-300:]))
        rep.result("gdbext/bad/unreadable-vm", reason)
        rep.result("lldb/bad/unreadable-vm", lldb_one_error(
            args, [exe, "-c", core], r"no Ruby thread could be read: .*cannot read", workdir,
            "lldb-unreadable"))
    finally:
        patched.restore()


def bad_tests(rep, selected, args, workdir, some_ruby):
    os.makedirs(workdir, exist_ok=True)
    g = args.gdbext
    sleeper = None
    try:
        if selected("gdbext/bad/not-ruby-live") or selected("gdbext/bad/not-ruby-core"):
            sleeper = subprocess.Popen(["sleep", "100"], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.2)
        if selected("gdbext/bad/not-ruby-live"):
            run = run_gdb(g, ["-p", str(sleeper.pid)], twice("ruby-bt all"), workdir, "bad1")
            rep.result("gdbext/bad/not-ruby-live", one_error(run, "not a Ruby process"))
        if selected("gdbext/bad/not-ruby-core"):
            core = procs.gcore(sleeper.pid, os.path.join(workdir, "sleep.core"), 120)
            run = run_gdb(g, [shutil.which("sleep"), core], twice("ruby-bt"), workdir, "bad2")
            reason = one_error(run, "not a Ruby process")
            if not reason:
                run = run_gdb(g, [shutil.which("sleep"), core],
                              twice("ruby-bt --via-debugger all"), workdir, "bad2d")
                reason = one_error(run, "not a Ruby process")
            rep.result("gdbext/bad/not-ruby-core", reason)
            if selected("lldb/bad/not-ruby-core"):
                rep.result("lldb/bad/not-ruby-core", lldb_one_error(
                    args, [shutil.which("sleep"), "-c", core], "not a Ruby process", workdir,
                    "lldb-not-ruby"))
            os.unlink(core)
        if selected("gdbext/bad/no-inferior"):
            run = run_gdb(g, [], twice("ruby-bt all"), workdir, "bad3")
            rep.result("gdbext/bad/no-inferior", one_error(run, "no process and no core"))
        if selected("gdbext/bad/sample-on-core"):
            if not some_ruby:
                rep.result("gdbext/bad/sample-on-core", "needs a fixture Ruby")
            else:
                exe, core = some_ruby
                run = run_gdb(g, [exe, core], twice("ruby-sample 1"), workdir, "bad4")
                rep.result("gdbext/bad/sample-on-core", one_error(run, "needs a live"))
        if selected("gdbext/bad/unreadable-vm") or selected("lldb/bad/unreadable-vm"):
            if not some_ruby:
                for n in ("gdbext/bad/unreadable-vm", "lldb/bad/unreadable-vm"):
                    if selected(n):
                        rep.result(n, "needs a fixture Ruby")
            else:
                unreadable_vm_test(rep, args, some_ruby[0], some_ruby[1], workdir)
        if selected("gdbext/bad/usage"):
            run = run_gdb(g, [], twice("ruby-bt --bogus"), workdir, "bad5")
            reason = one_error(run, r"usage: ruby-bt")
            if not reason:
                run = run_gdb(g, [], twice("ruby-sample -3"), workdir, "bad6")
                reason = one_error(run, r"usage: ruby-sample")
            rep.result("gdbext/bad/usage", reason)
    except procs.Failure as exc:
        fail_all(rep, selected, BAD_TESTS, str(exc))
    finally:
        if sleeper:
            sleeper.kill()
            sleeper.wait()


# --- no debug info ------------------------------------------------------------------

NO_DEBUG_RUBY = "3.3-static"   # the Ruby is one file: strip it, and the core still fits
NO_DEBUG_TESTS = ("gdbext/%s/no-debug-info" % NO_DEBUG_RUBY,
                  "gdbext/%s/debug-file-directory" % NO_DEBUG_RUBY,
                  "lldb/%s/no-debug-info" % NO_DEBUG_RUBY)


def build_id_of(path):
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise procs.Failure("no build-id in %s" % path)
    return m.group(1)


def no_debug_tests(rep, selected, args, exe, workdir):
    """The static Ruby stripped of its DWARF (no debuglink either): ruby-bt
    says so in one line that names the file and gdb's way to add a debug
    directory, on a core and on a live process; following that advice (the
    DWARF under a build-id tree named by debug-file-directory) gives the
    oracle's stacks."""
    names = [n for n in NO_DEBUG_TESTS if selected(n)]
    if not names:
        return
    g = args.gdbext
    base = os.path.join(workdir, "no-debug")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    stripped = os.path.join(base, "ruby")
    # The layout cache is keyed by build-id, which strip keeps: a fresh one.
    env = {"XDG_CACHE_HOME": os.path.join(base, "xdg-cache")}
    sc = live = None
    try:
        res = subprocess.run(["strip", "--strip-debug", "-o", stripped, exe],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=300)
        if res.returncode != 0:
            raise procs.Failure("strip: %s" % res.stdout.strip())
        # The DWARF where the advice says to put it: a build-id tree.
        build_id = build_id_of(stripped)
        tree = os.path.join(base, "debug-tree")
        debug = os.path.join(tree, ".build-id", build_id[:2], build_id[2:] + ".debug")
        os.makedirs(os.path.dirname(debug))
        res = subprocess.run(["objcopy", "--only-keep-debug", exe, debug],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=300)
        if res.returncode != 0:
            raise procs.Failure("objcopy: %s" % res.stdout.strip())
        sc, oracle = parked(exe, base, "threads")
        core = procs.gcore(sc.pid, os.path.join(sc.workdir, "core"), 120)
        sc.kill()
        said = r"%s: no DWARF debug info .*set debug-file-directory" % re.escape(stripped)
        name = "gdbext/%s/no-debug-info" % NO_DEBUG_RUBY
        if selected(name):
            reason = None
            for cmd in ("ruby-bt all", "ruby-bt --via-debugger"):
                run = run_gdb(g, [stripped, core], twice(cmd), base, "core", env=env)
                reason = one_error(run, said)
                if not reason and "--debug-dir" in run[2]:
                    reason = "the advice names corestack's --debug-dir, not gdb's setting"
                if reason:
                    reason = "core, %s: %s" % (cmd, reason)
                    break
            if not reason:
                live = subprocess.Popen([stripped, "-e", "sleep"], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.3)
                run = run_gdb(g, ["-p", str(live.pid)], twice("ruby-bt all"), base, "live",
                              env=env)
                reason = one_error(run, said)
                reason = reason and "live: " + reason
            rep.result(name, reason)
        name = "gdbext/%s/debug-file-directory" % NO_DEBUG_RUBY
        if selected(name):
            run = run_gdb(g, [stripped, core], [
                "set debug-file-directory %s:/usr/lib/debug" % tree, "ruby-bt --json all"],
                base, "debug-dir",   # a cache of its own: the layout it finds goes there
                env={"XDG_CACHE_HOME": os.path.join(base, "xdg-cache-with-debug")})
            rc, out, err, _, reason = run
            report = json_in(out) if not reason else None
            if not reason and report is None:
                reason = "no report with debug-file-directory set: %s" % compare.show(err[-300:])
            rep.result(name, reason or check_json({"out": report}, oracle, "core", None))
        name = "lldb/%s/no-debug-info" % NO_DEBUG_RUBY
        if selected(name):
            reason = lldb_one_error(args, [stripped, "-c", core], r"%s: no DWARF debug info .*"
                                    r"settings append target.debug-file-search-paths" %
                                    re.escape(stripped), base, "lldb-no-debug", env)
            if not reason:   # the advice works: the DWARF found there
                runs, output, reason = run_lldb_commands(args, [stripped, "-c", core], [
                    "settings append target.debug-file-search-paths " + tree,
                    "ruby-bt --json all"], base, "lldb-debug-dir",
                    {"XDG_CACHE_HOME": os.path.join(base, "xdg-cache-lldb-debug")})
                if not reason:
                    reason = check_json({"out": runs[1]["out"]} if runs[1]["ok"]
                                        else {"error": runs[1]["error"]}, oracle, "core", None)
            rep.result(name, reason)
    except (procs.Failure, OSError, ValueError, subprocess.SubprocessError) as exc:
        fail_all(rep, selected, names, "setup: %s" % exc)
    finally:
        for p in (sc, live):
            if p:
                p.kill()
        if live:
            live.wait()
        if not args.keep:   # a core and two copies of the Ruby: free the disk
            shutil.rmtree(base, ignore_errors=True)


# --- lldb ------------------------------------------------------------------------

LLDB_SCRIPT = r'''
import json, os, lldb
def run(debugger, name, cmd, res):
    ret = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(cmd, ret)
    res[name] = {"out": ret.GetOutput()} if ret.Succeeded() else {"error": ret.GetError()}
'''


def lldb_env(gdbext_dir):
    """Debian's lldb-14 points its Python at a directory that lacks the lldb
    package (lldb-14 -P): name the one python3-lldb-14 installs."""
    import glob
    env = gdb_env(gdbext_dir)
    found = sorted(glob.glob("/usr/lib/llvm-14/lib/python3*/dist-packages"))
    found += ["/usr/lib/python3/dist-packages"]   # six, which lldb imports
    if found:
        env["PYTHONPATH"] = os.pathsep.join(found + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


# Runs inside lldb (script exec): each command through lldb's interpreter,
# as typed, results to a JSON file; lldb -b would stop at the first error.
LLDB_COMMANDS_SCRIPT = r'''
import json, os, lldb
res = []
for cmd in json.loads(os.environ["GDBEXT_COMMANDS"]):
    ret = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(cmd, ret)
    res.append({"ok": ret.Succeeded(), "out": ret.GetOutput() or "", "error": ret.GetError() or ""})
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''


def run_lldb_commands(args, target_args, commands, workdir, tag, env=None):
    """lldb -b on target_args running commands one by one (LLDB_COMMANDS_SCRIPT)
    -> (results [{ok, out, error}], lldb's own output, reason)"""
    lldb = shutil.which("lldb-14") or shutil.which("lldb")
    if not lldb:
        return None, "", "lldb-14 is not installed (.ci/install-deps)"
    script = os.path.join(workdir, tag + ".py")
    result = os.path.join(workdir, tag + ".json")
    with open(script, "w") as f:
        f.write(LLDB_COMMANDS_SCRIPT)
    full_env = lldb_env(args.gdbext)
    full_env.update(env or {})
    full_env.update(GDBEXT_RESULT=result, GDBEXT_COMMANDS=json.dumps(commands))
    try:
        res = subprocess.run([lldb, "-b", "-o", "command script import " +
                              os.path.join(args.gdbext, "ruby_lldb.py"),
                              "-o", "script exec(open(%r).read())" % script] + target_args,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=GDB_TIMEOUT,
                             env=full_env)
    except subprocess.TimeoutExpired:
        return None, "", "lldb hung"
    output = res.stdout + res.stderr
    if procs.sanitizer_report(res.stderr):
        return None, output, "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    try:
        with open(result) as f:
            return json.load(f), output, None
    except (OSError, ValueError) as exc:
        return None, output, "lldb wrote no result (%s): %s" % (exc, compare.show(output[-300:]))


def lldb_one_error(args, target_args, pattern, workdir, tag, env=None):
    """In lldb: ruby-bt all, expression 6*7, ruby-bt all: each ruby-bt one
    error line, the same, matching pattern; 42; no Python traceback."""
    runs, output, reason = run_lldb_commands(
        args, target_args, ["ruby-bt all", "expression 6*7", "ruby-bt all"], workdir, tag, env)
    if reason:
        return reason
    for mark in PYTHON_ERROR_MARKS:
        if mark in output + json.dumps(runs):
            return "a Python error reached lldb (%s): %s" % (mark, compare.show(output[-300:]))
    errors = [runs[0]["error"], runs[2]["error"]]
    if runs[0]["ok"] or runs[2]["ok"] or errors[0] != errors[1] or \
            len(errors[0].strip().splitlines()) != 1:
        return "expected the same one error line twice, got %s" % compare.show(errors)
    if not re.search(pattern, errors[0]):
        return "error line does not say /%s/: %s" % (pattern, compare.show(errors[0]))
    if "42" not in runs[1]["out"]:
        return "lldb not usable afterwards (expression 6*7: %s)" % compare.show(runs[1])
    return None


def lldb_sample_test(rep, args, lldb, ruby, exe, workdir):
    name = "lldb/%s/sample" % ruby
    folded = os.path.join(workdir, "lldb-sample.folded")
    # lldb takes seconds to attach (it reads libruby's DWARF): a long run.
    target = subprocess.Popen([exe, SHARES, "60"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        res = subprocess.run([lldb, "-b", "-o", "command script import " +
                              os.path.join(args.gdbext, "ruby_lldb.py"),
                              "-o", "ruby-sample 2 --out " + folded,
                              "-o", "script print('STATE', lldb.process.GetState() == lldb.eStateStopped)",
                              "-p", str(target.pid)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=GDB_TIMEOUT, env=lldb_env(args.gdbext))
        summary = res.stdout
        data = {"summary": summary, "states": ["t"], "running": [], "exitcode": 0}
        reason = check_sample(data, folded)
        if procs.sanitizer_report(res.stderr):
            reason = "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
        if not reason and "STATE True" not in summary:
            reason = "the process is not stopped after ruby-sample: %s" % compare.show(
                summary[-300:])
        if not reason and "stopped again" not in summary:
            reason = "summary does not say the process is stopped again"
        rep.result(name, reason)
    except subprocess.TimeoutExpired:
        rep.result(name, "lldb hung")
    finally:
        target.kill()
        target.wait()


def lldb_test(rep, selected, args, ruby, exe, workdir):
    names = ["lldb/%s/threads/%s" % (ruby, m) for m in MODES] + ["lldb/%s/sample" % ruby]
    if not any(selected(n) for n in names):
        return
    lldb = shutil.which("lldb-14") or shutil.which("lldb")
    if not lldb:
        for n in names:
            if selected(n):
                rep.result(n, "lldb-14 is not installed (.ci/install-deps)")
        return
    if selected("lldb/%s/sample" % ruby):
        lldb_sample_test(rep, args, lldb, ruby, exe, workdir)
    if not any(selected(n) for n in names[:-1]):
        return
    loader = os.path.join(args.gdbext, "ruby_lldb.py")
    run = None
    try:
        run, oracle = parked(exe, workdir, "lldb-threads")
        time.sleep(0.2)
        for mode in MODES:
            name = "lldb/%s/threads/%s" % (ruby, mode)
            if mode == "live":
                target = ["-p", str(run.pid)]
            else:
                core = procs.gcore(run.pid, os.path.join(run.workdir, "core"), 120)
                target = [exe, "-c", core]
            argv = [lldb, "-b", "-o", "command script import " + loader,
                    "-o", "ruby-bt --json all"] + target
            try:
                res = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, timeout=GDB_TIMEOUT,
                                     env=lldb_env(args.gdbext))
            except subprocess.TimeoutExpired:
                rep.result(name, "lldb hung")
                continue
            if procs.sanitizer_report(res.stderr):
                rep.result(name, "sanitizer report: %s" % procs.sanitizer_report(res.stderr))
                continue
            report = json_in(res.stdout)
            if report is None:
                rep.result(name, "no JSON report in lldb's output: %s / %s" % (
                    compare.show(res.stdout[-300:]), compare.show(res.stderr[-300:])))
                continue
            r = check_json({"out": report}, oracle, mode, None)
            if not r and mode == "live":
                time.sleep(0.2)
                left = procs.stopped_threads(run.pid)
                r = "threads left stopped: %s" % left if left else None
            rep.result(name, r)
    except (procs.Failure, OSError, ValueError) as exc:
        fail_all(rep, selected, names, "capture failed: %s" % exc)
    finally:
        if run:
            run.kill()


# --- a remote target ---------------------------------------------------------------

def remote_test(rep, args, ruby, exe, workdir):
    name = "gdbext/%s/threads/remote" % ruby
    gdbserver = shutil.which("gdbserver")
    if not gdbserver:
        rep.result(name, "gdbserver is not installed (.ci/install-deps)")
        return
    run = None
    try:
        run, oracle = parked(exe, workdir, "remote-threads")
        time.sleep(0.2)
        # A pipe: no port to pick, nothing listening on the network.
        res = run_gdb(args.gdbext, [exe], [
            "target remote | exec %s --attach - %d" % (gdbserver, run.pid),
            "ruby-bt --json all"] + twice("ruby-sample 1"), run.workdir, "remote")
        rc, out, err, _, reason = res
        if reason:
            rep.result(name, reason)
            return
        report = json_in(out)
        if report is None:
            rep.result(name, "no JSON report through gdbserver: %s" % compare.show(err[-300:]))
            return
        r = check_json({"out": report}, oracle, "live", None)
        if not r:
            r = one_error(res, "needs a live local process")
        rep.result(name, r)
    except (procs.Failure, OSError, ValueError) as exc:
        rep.result(name, "capture failed: %s" % exc)
    finally:
        if run:
            run.kill()


# --- make install ------------------------------------------------------------------

INSTALL_TESTS = ("gdbext/install", "gdbext/install-destdir", "gdbext/install-system-gdbinit")
SNIPPET = os.path.join("gdb", "gdbinit.d", "corestack.gdb")   # under SYSCONFDIR


def make_install(variables):
    """make install with variables -> None or why it failed."""
    try:
        res = subprocess.run(["make", "-C", ROOT, "install"] + variables,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "make install hung"
    if res.returncode != 0:
        return "make install exited %d: %s" % (res.returncode, compare.show(res.stdout[-300:]))
    return None


def installed_files(root, prefix, sysconfdir, exe):
    """Where make install must have written (under root, DESTDIR or /)."""
    autoload = os.path.join(prefix, "share", "gdb", "auto-load")
    return [root + os.path.join(prefix, p) for p in (
        "bin/corestack", "lib/corestack/_corestack.abi3.so",
        "lib/corestack/ruby-gdb.py", "lib/corestack/ruby_lldb.py",
        "share/man/man1/corestack.1")] + [
        root + os.path.join(sysconfdir, SNIPPET),
        root + autoload + os.path.realpath(exe) + "-gdb.py"]


def check_installed(root, prefix, sysconfdir, exe):
    for path in installed_files(root, prefix, sysconfdir, exe):
        if not os.path.isfile(path):
            return "make install did not write %s" % path
    return None


def check_destdir(dest, exe):
    """DESTDIR: every file under it, each naming the final paths only."""
    reason = check_installed(dest, "/usr/local", "/etc", exe)
    if reason:
        return reason
    snippet, autoload = installed_files(dest, "/usr/local", "/etc", exe)[-2:]
    for path, final in ((snippet, "/usr/local/share/gdb/auto-load"),
                        (autoload, "/usr/local/lib/corestack/ruby-gdb.py")):
        with open(path) as f:
            text = f.read()
        if dest in text:
            return "%s names the DESTDIR %s" % (path, dest)
        if final not in text:
            return "%s does not name %s: %s" % (path, final, compare.show(text[-300:]))
    return None


def check_autoloaded(res, oracle):
    report = json_in(res.stdout)
    if report is None:
        return "no ruby-bt report from the auto-loaded commands: %s" % compare.show(
            (res.stdout + res.stderr)[-300:])
    return check_json({"out": report}, oracle, "core", None)


def mount_namespace_works():
    """Can the tests mount inside a private mount namespace (root, and a
    container that allows it)? -> None or why not."""
    unshare = shutil.which("unshare")
    if not unshare:
        return "no unshare(1)"
    try:
        res = subprocess.run([unshare, "-m", "sh", "-c", "mount -t tmpfs none /mnt"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "unshare -m: %s" % exc
    return None if res.returncode == 0 else "cannot mount in a private mount namespace: %s" % (
        res.stdout.strip()[:200])


def system_gdbinit_run(dest, exe, core, workdir):
    """gdb as a user runs it (no -nx), in a private mount namespace where
    the DESTDIR tree is laid over /usr/local and /etc/gdb/gdbinit.d: what
    the installed tree does once in place, without touching the real /."""
    home = os.path.join(workdir, "home")   # no ~/.gdbinit of the user's
    os.makedirs(home, exist_ok=True)
    gdbinit_d = "/etc/gdb/gdbinit.d"
    script = ('set -e; mount --bind %(dest)s%(gd)s %(gd)s; '
              'mount -t overlay overlay -o lowerdir=%(dest)s/usr/local:/usr/local /usr/local; '
              'exec gdb -q -batch -ex "ruby-bt --json all" %(exe)s %(core)s') % {
                  "gd": gdbinit_d, "dest": dest, "exe": exe, "core": core}
    env = procs.quiet_env({"HOME": home})
    env.pop("CORESTACK_GDBEXT_DIR", None)
    return subprocess.run(["unshare", "-m", "sh", "-c", script], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=GDB_TIMEOUT, env=env)


def install_test(rep, selected, args, exe, workdir):
    """make install into temporary trees; gdb gets the commands from what it
    wrote, with no `source` and no auto-load settings of its own."""
    base = os.path.join(workdir, "install")
    shutil.rmtree(base, ignore_errors=True)
    prefix, etc = os.path.join(base, "prefix"), os.path.join(base, "etc")
    dest = os.path.join(base, "dest")
    sc = core = None
    try:
        sc, oracle = parked(exe, workdir, "install-threads")
        core = procs.gcore(sc.pid, os.path.join(sc.workdir, "core"), 120)
    except (procs.Failure, OSError, ValueError) as exc:
        fail_all(rep, selected, INSTALL_TESTS, "capture failed: %s" % exc)
        return
    finally:
        if sc:
            sc.kill()
    env = procs.quiet_env()
    env.pop("CORESTACK_GDBEXT_DIR", None)
    if selected("gdbext/install"):
        # PREFIX and SYSCONFDIR in a temporary tree; gdb -nx skips the system
        # gdbinit directory, so it reads the snippet as it would read that.
        reason = make_install(["PREFIX=" + prefix, "SYSCONFDIR=" + etc,
                                     "RUBY_FOR_GDB=" + exe]) or \
            check_installed("", prefix, etc, exe)
        if not reason:
            try:
                res = subprocess.run(["gdb", "-nx", "-q", "-batch",
                                      "-iex", "source " + os.path.join(etc, SNIPPET),
                                      "-ex", "ruby-bt --json all", exe, core],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, timeout=GDB_TIMEOUT,
                                     env=env)
                reason = check_autoloaded(res, oracle)
            except subprocess.TimeoutExpired:
                reason = "gdb hung"
        rep.result("gdbext/install", reason)
    if selected("gdbext/install-destdir") or selected("gdbext/install-system-gdbinit"):
        # The default PREFIX (/usr/local) and SYSCONFDIR (/etc), staged.
        reason = make_install(["DESTDIR=" + dest, "RUBY_FOR_GDB=" + exe]) or \
            check_destdir(dest, exe)
        if selected("gdbext/install-destdir"):
            rep.result("gdbext/install-destdir", reason)
        if selected("gdbext/install-system-gdbinit"):
            why_not = None if reason else mount_namespace_works()
            if why_not:
                rep.skip("gdbext/install-system-gdbinit", why_not)
            elif reason:
                rep.result("gdbext/install-system-gdbinit", reason)
            else:
                try:
                    res = system_gdbinit_run(dest, exe, core, base)
                    rep.result("gdbext/install-system-gdbinit", check_autoloaded(res, oracle))
                except subprocess.TimeoutExpired:
                    rep.result("gdbext/install-system-gdbinit", "gdb hung")
    os.unlink(core)


# --- entry point -------------------------------------------------------------------

def gdbext_tests(rep, selected, args, prefixes, scenarios, workdir):
    """All gdbext tests of the selected Rubies (run.py main)."""
    if not wanted(selected, args.rubies, scenarios):
        return
    if not os.path.exists(os.path.join(args.gdbext, "_corestack.abi3.so")):
        fail_all(rep, selected, [n for r in args.rubies for n in ruby_tests(r, scenarios)]
                 + list(BAD_TESTS) + list(INSTALL_TESTS),
                 "no gdbext module in %s (make gdbext)" % args.gdbext)
        return
    some_ruby = None
    for ruby in args.rubies:
        prefix = prefixes.get(ruby)
        if not isinstance(prefix, str):
            continue
        exe = os.path.join(prefix, "bin", "ruby")
        rwork = os.path.join(workdir, "gdbext", ruby)
        os.makedirs(rwork, exist_ok=True)
        procs_progress("gdbext: %s" % ruby)
        scenario_runs(rep, selected, args, ruby, exe, scenarios, rwork)
        if selected("gdbext/%s/sample" % ruby):
            sample_test(rep, args, ruby, exe, rwork)
        if ruby in LLDB_RUBIES:
            lldb_test(rep, selected, args, ruby, exe, rwork)
        if ruby in REMOTE_RUBIES and selected("gdbext/%s/threads/remote" % ruby):
            remote_test(rep, args, ruby, exe, rwork)
        if ruby == INSTALL_RUBY and any(selected(n) for n in INSTALL_TESTS):
            install_test(rep, selected, args, exe, rwork)
        if ruby == NO_DEBUG_RUBY:
            no_debug_tests(rep, selected, args, exe, rwork)
        if some_ruby is None and any(selected(n) for n in (
                "gdbext/bad/sample-on-core", "gdbext/bad/unreadable-vm", "lldb/bad/unreadable-vm")):
            sleeper = procs.Scenario(exe, os.path.join(procs.SCENARIOS, "threads.rb"),
                                     os.path.join(rwork, "bad-core"), False)
            try:
                sleeper.wait_oracle(60)
                some_ruby = (exe, procs.gcore(sleeper.pid, os.path.join(sleeper.workdir, "core"),
                                              120))
            except procs.Failure:
                pass
            finally:
                sleeper.kill()
    bad_tests(rep, selected, args, os.path.join(workdir, "gdbext", "bad"), some_ruby)


def procs_progress(msg):
    print("run.py: " + msg, file=sys.stderr, flush=True)
