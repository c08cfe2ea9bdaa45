"""ruby-bt and ruby-sample inside lldb (lldb/RUBY/threads/MODE,
lldb/RUBY/sample), ruby-bt full, ruby-locals and ruby-print on the frames
scenario gdbext_gdb.py runs (lldb/RUBY/frames/MODE/locals), and running
lldb for the lldb/bad tests.
"""

import json
import os
import re
import shutil
import subprocess
import time

from . import compare, frame_locals, locks, procs
from .gdbext_gdb import (GDB_TIMEOUT, MODES, PYTHON_ERROR_MARKS, SHARES, check_json,
                         check_locks_text, fail_all, gdb_env, json_in, parked)
from .gdbext_frames import (LLDB_PART, WALK_SCRIPT, check_frames, check_list, frames_env,
                            make_sysroot, newer_within_second)
from .gdbext_sample import check_sample, check_speedscope, check_state


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


def run_lldb_script(args, target_args, script_text, workdir, tag, env=None):
    """lldb -b on target_args running script_text (which writes a JSON result
    to $GDBEXT_RESULT) -> (result, lldb's own output, reason)"""
    lldb = shutil.which("lldb-14") or shutil.which("lldb")
    if not lldb:
        return None, "", "lldb-14 is not installed (.ci/install-deps)"
    script = os.path.join(workdir, tag + ".py")
    result = os.path.join(workdir, tag + ".json")
    with open(script, "w") as f:
        f.write(script_text)
    full_env = lldb_env(args.gdbext)
    full_env.update(env or {})
    full_env.update(GDBEXT_RESULT=result)
    try:
        stdout, stderr = procs.run_debugger(
            [lldb, "-b", "-o", "command script import " + os.path.join(args.gdbext, "ruby_lldb.py"),
             "-o", "script exec(open(%r).read())" % script] + target_args,
            full_env, None, GDB_TIMEOUT, os.path.join(workdir, tag + ".out"), [result])
    except procs.Failure as exc:
        return None, "", str(exc)
    output = stdout + stderr
    if procs.sanitizer_report(stderr):
        return None, output, "sanitizer report: %s" % procs.sanitizer_report(stderr)
    try:
        with open(result) as f:
            return json.load(f), output, None
    except (OSError, ValueError) as exc:
        return None, output, "lldb wrote no result (%s): %s" % (exc, compare.show(output[-300:]))


def run_lldb_commands(args, target_args, commands, workdir, tag, env=None):
    """lldb -b on target_args running commands one by one (LLDB_COMMANDS_SCRIPT)
    -> (results [{ok, out, error}], lldb's own output, reason)"""
    return run_lldb_script(args, target_args, LLDB_COMMANDS_SCRIPT, workdir, tag,
                           dict(env or {}, GDBEXT_COMMANDS=json.dumps(commands)))


# Runs inside lldb: ruby-bt --json all, then the frame commands on every
# thread (gdbext_frames.py), results to a JSON file.
LLDB_FRAMES_SCRIPT = r'''
import json, os, lldb
res = {}
''' + WALK_SCRIPT + LLDB_PART + r'''
res["bt"] = _execute("ruby-bt --json all")
res["threads"] = [[t.GetIndexID(), t.GetThreadID()] for t in lldb.process]
res["frames"] = walk(res["threads"], _execute, _select, _native, _sysroot)
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''

# lldb 14 does not say which core file it reads: ruby-list has no time to
# compare a file with there.
LLDB_NEWER_KNOWN = {"live": True, "core": False}


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


def lldb_sample_test(rep, selected, args, lldb, ruby, exe, workdir):
    name = "lldb/%s/sample" % ruby
    scope_name = "lldb/%s/sample-speedscope" % ruby
    state_name = "lldb/%s/sample-state" % ruby
    folded = os.path.join(workdir, "lldb-sample.folded")
    speedscope = os.path.join(workdir, "lldb-sample.speedscope.json")
    # lldb takes seconds to attach (it reads libruby's DWARF): a long run.
    with procs.started([exe, SHARES, "60"]) as target:
        try:
            res = subprocess.run([lldb, "-b", "-o", "command script import " +
                                  os.path.join(args.gdbext, "ruby_lldb.py"),
                                  "-o", "ruby-sample 2 --out " + folded,
                                  "-o", "script print('STATE', lldb.process.GetState() == lldb.eStateStopped)",
                                  "-o", "script print('SPEEDSCOPE')",
                                  "-o", "ruby-sample 0.5 --out %s --format speedscope" % speedscope,
                                  "-o", "script print('STATE-BLOCKED')",
                                  "-o", "ruby-sample 0.3 --state blocked",
                                  "-o", "script print('STATE-RUNNING')",
                                  "-o", "ruby-sample 0.3 --state running",
                                  "-p", str(target.pid)], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 timeout=GDB_TIMEOUT, env=lldb_env(args.gdbext))
            summary, _, scope_said = res.stdout.partition("\nSPEEDSCOPE\n")
            scope_said, _, blocked = scope_said.partition("\nSTATE-BLOCKED\n")
            blocked, _, running = blocked.partition("\nSTATE-RUNNING\n")
            data = {"summary": summary, "states": ["t"], "running": [], "exitcode": 0}
            reason = check_sample(data, folded)
            if procs.sanitizer_report(res.stderr):
                reason = "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
            if not reason and "STATE True" not in summary:
                reason = "the process is not stopped after ruby-sample: %s" % compare.show(
                    summary[-300:])
            if not reason and "stopped again" not in summary:
                reason = "summary does not say the process is stopped again"
            if selected(name):
                rep.result(name, reason)
            if selected(scope_name):
                rep.result(scope_name, check_speedscope(scope_said, speedscope))
            if selected(state_name):
                rep.result(state_name, check_state({"state-blocked": blocked,
                                                    "state-running": running}))
        except subprocess.TimeoutExpired:
            rep.result(name, "lldb hung")


def lldb_tests(ruby):
    return ["lldb/%s/threads/%s%s" % (ruby, m, t) for m in MODES
            for t in ("", "/frames", "/list")] + [
                "lldb/%s/sample" % ruby, "lldb/%s/sample-speedscope" % ruby,
                "lldb/%s/sample-state" % ruby]


def lldb_session(args, lldb, target, workdir, tag, sysroot, script_path):
    """The ruby-bt and frame commands in lldb on target -> (result, reason)"""
    script = os.path.join(workdir, tag + ".py")
    result = os.path.join(workdir, tag + ".json")
    with open(script, "w") as f:
        f.write(LLDB_FRAMES_SCRIPT)
    env = lldb_env(args.gdbext)
    env.update(frames_env(sysroot, script_path), GDBEXT_RESULT=result)
    argv = [lldb, "-b", "-o", "command script import " +
            os.path.join(args.gdbext, "ruby_lldb.py"),
            "-o", "script exec(open(%r).read())" % script] + target
    try:
        stdout, stderr = procs.run_debugger(argv, env, None, GDB_TIMEOUT,
                                            os.path.join(workdir, tag + ".out"), [result])
    except procs.Failure as exc:
        return None, str(exc)
    if procs.sanitizer_report(stderr):
        return None, "sanitizer report: %s" % procs.sanitizer_report(stderr)
    try:
        with open(result) as f:
            return json.load(f), None
    except (OSError, ValueError) as exc:
        return None, "lldb wrote no result (%s): %s / %s" % (
            exc, compare.show(stdout[-300:]), compare.show(stderr[-300:]))


def lldb_test(rep, selected, args, ruby, exe, workdir):
    names = lldb_tests(ruby)
    if not any(selected(n) for n in names):
        return
    lldb = shutil.which("lldb-14") or shutil.which("lldb")
    if not lldb:
        for n in names:
            if selected(n):
                rep.result(n, "lldb-14 is not installed (.ci/install-deps)")
        return
    if any(selected("lldb/%s/%s" % (ruby, t))
           for t in ("sample", "sample-speedscope", "sample-state")):
        lldb_sample_test(rep, selected, args, lldb, ruby, exe, workdir)
    if not any(selected(n) for n in names[:-2]):
        return
    run = None
    try:
        run, oracle = parked(exe, workdir, "lldb-threads")
        sysroot = make_sysroot(run.workdir, run.script)
        time.sleep(0.2)
        for mode in MODES:
            name = "lldb/%s/threads/%s" % (ruby, mode)
            if mode == "live":
                target = ["-p", str(run.pid)]
            else:
                core = procs.gcore(run.pid, os.path.join(run.workdir, "core"), 120)
                newer_within_second(core, sysroot, run.script)
                target = [exe, "-c", core]
            data, reason = lldb_session(args, lldb, target, run.workdir, "lldb-" + mode,
                                        sysroot, run.script)
            report = None
            if not reason:
                bt = data["bt"]
                report = json_in(bt[0] or "")
                if report is None:
                    reason = "no JSON report in lldb's output: %s" % compare.show(
                        (bt[0] or bt[1] or "")[-300:])
            r = reason or check_json({"out": report}, oracle, mode, None)
            if not r and mode == "live":
                time.sleep(0.2)
                left = procs.stopped_threads(run.pid)
                r = "threads left stopped: %s" % left if left else None
            rep.result(name, r)
            if selected(name + "/frames"):
                rep.result(name + "/frames", reason or check_frames(
                    data, json.loads(report) if report else None, oracle, "lldb", mode))
            if selected(name + "/list"):
                rep.result(name + "/list", reason or check_list(
                    data, sysroot, mode, LLDB_NEWER_KNOWN[mode]))
    except (procs.Failure, OSError, ValueError) as exc:
        fail_all(rep, selected, names, "capture failed: %s" % exc)
    finally:
        if run:
            run.kill()


# --- locals ----------------------------------------------------------------------

# Runs inside lldb: run(name, cmd) keeps each command's output or error.
LLDB_RUNS = r'''
import json, os, lldb
res = {"runs": {}}
def run(name, cmd):
    ret = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(cmd, ret)
    ok = ret.Succeeded()
    res["runs"][name] = {"out": ret.GetOutput() or ""} if ok else {"error": ret.GetError() or "?"}
'''

LLDB_LOCALS_SCRIPT = frame_locals.DEBUGGER_STEPS + LLDB_RUNS + r'''
def select(tid):
    process = lldb.debugger.GetSelectedTarget().GetProcess()
    for t in process:
        if t.GetThreadID() == tid:
            process.SetSelectedThread(t)
run("full", "ruby-bt full --json all")
if "out" in res["runs"]["full"]:
    addr = locals_steps(run, select, res["runs"]["full"]["out"])
    if addr:
        run("rp expr", "rp (unsigned long)0x%x" % addr)
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''


LLDB_LOCKS_SCRIPT = LLDB_RUNS + r'''
run("locks", "ruby-locks")
run("bt", "ruby-bt all")
res["threads"] = [[t.GetIndexID(), t.GetThreadID()]
                  for t in lldb.debugger.GetSelectedTarget().GetProcess()]
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''


def locals_test_names(ruby, scenarios=()):
    return ["lldb/%s/%s/%s/%s" % (ruby, scen, m, test)
            for scen, test in [(frame_locals.SCENARIO, "locals")]
            + [(s, "locks") for s in scenarios if locks.uses_locks(s)] for m in MODES]


def locks_in_lldb(rep, args, name, target_args, oracle, workdir, mode):
    """ruby-locks in lldb: who holds what as the program recorded it, and
    ruby-bt all's deadlock section."""
    data, _, reason = run_lldb_script(args, target_args, LLDB_LOCKS_SCRIPT, workdir,
                                      "lldb-locks-%s" % mode)
    if not reason:
        reason = check_locks_text(data["runs"]["locks"], oracle, "lldb", data["threads"]) \
            or check_locks_text(data["runs"]["bt"], oracle, "lldb", data["threads"],
                                bare=False)
    if not reason and mode == "live":
        left = procs.stopped_threads(int(target_args[1]))
        reason = "threads left stopped: %s" % left if left else None
    rep.result(name, reason)


def locals_hook(rep, selected, args, ruby):
    """For gdbext_gdb.scenario_runs: lldb's ruby-bt full, ruby-locals and
    ruby-print on the process and core gdb just read (the locals fixture's
    scenario), its ruby-locks (a locks scenario)."""
    def hook(scen, target_args, mode, records, oracle, env, workdir):
        if locks.uses_locks(scen):
            name = "lldb/%s/%s/%s/locks" % (ruby, scen, mode)
            if selected(name):
                locks_in_lldb(rep, args, name, target_args, oracle, workdir, mode)
        name = "lldb/%s/%s/%s/locals" % (ruby, frame_locals.SCENARIO, mode)
        if records is None or not selected(name):
            return
        data, _, reason = run_lldb_script(args, target_args, LLDB_LOCALS_SCRIPT, workdir,
                                          "lldb-locals-%s" % mode, env)
        if reason:
            rep.result(name, reason)
            return
        r = frame_locals.check_debugger(data["runs"], records, compare.parse_report)
        if not r and mode == "live":
            left = procs.stopped_threads(int(target_args[1]))
            r = "threads left stopped: %s" % left if left else None
        rep.result(name, r)
    return hook
