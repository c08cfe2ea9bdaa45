"""Errors inside the debuggers: no Ruby in the inferior, no inferior, bad
arguments, unreadable memory (gdbext/bad/..., lldb/bad/...), and a Ruby
without debug info (gdbext/3.3-static/no-debug-info and the advice
followed, lldb/3.3-static/no-debug-info). Every command prints one error
line, twice the same, and leaves the debugger usable.
"""

import os
import re
import shutil
import signal
import struct
import subprocess
import time

from . import compare, corrupt, procs
from .gdbext_gdb import check_json, fail_all, json_in, one_error, parked, run_gdb, twice
from .gdbext_lldb import lldb_one_error, run_lldb_commands, run_lldb_script


BAD_TESTS = ("gdbext/bad/not-ruby-live", "gdbext/bad/not-ruby-core", "gdbext/bad/no-inferior",
             "gdbext/bad/sample-on-core", "gdbext/bad/unreadable-vm", "gdbext/bad/usage",
             "gdbext/bad/error-classes", "lldb/bad/not-ruby-core", "lldb/bad/unreadable-vm",
             "lldb/bad/thread-numbers", "lldb/bad/two-signals")


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


# Runs inside gdb: the module's backtrace on the loader's facts, read
# directly and through gdb; what it raised, and the size of the VM struct.
ERROR_CLASSES_SCRIPT = r'''
import gdb, json, os, runpy
loader = runpy.run_path(os.environ["GDBEXT_LOADER"])   # its functions, in this script
_corestack, facts = loader["_corestack"], loader["_facts"]
inf = gdb.selected_inferior()
res = {"sizeof_vm": int(gdb.parse_and_eval("sizeof(rb_vm_t)"))}
for via in (False, True):
    try:
        _corestack.backtrace(tids=TIDS, thread_name="gdb thread 1", **facts(inf, via))
        res[str(via)] = {"class": None}
    except Exception as exc:
        res[str(via)] = {"class": type(exc).__name__, "message": str(exc),
                         "module_error": isinstance(exc, _corestack.Error),
                         "address": getattr(exc, "address", "none")}
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''


def raised_reason(run, check):
    """check(what one read raised, the VM's size) -> reason, for both the
    direct read and the read through gdb."""
    reason = run[4]
    if reason:
        return reason
    for via in ("False", "True"):
        got = run[3].get(via, {})
        reason = check(got, run[3]["sizeof_vm"])
        if reason:
            return "%s: %s" % ("through gdb" if via == "True" else "read directly", reason)
    return None


def error_classes_test(exe, core, workdir, gdbext):
    """Errors keep their kind in Python: a thread no Ruby thread runs on is
    NoRubyThreadError naming gdb's thread; on the core whose VM pointer is
    aimed at the zero page, FaultError whose address is inside the VM
    struct there (gdb's sizeof) and is the one its message names."""
    def no_thread(got, _):
        if got.get("class") != "NoRubyThreadError" or not got.get("module_error"):
            return "expected NoRubyThreadError, got %s" % compare.show(got)
        if "gdb thread 1 (LWP 1) runs no Ruby thread" not in got["message"]:
            return "message does not name gdb's thread: %s" % compare.show(got["message"])
        return None

    def fault(got, size):
        address = got.get("address")
        if got.get("class") != "FaultError" or not got.get("module_error"):
            return "expected FaultError, got %s" % compare.show(got)
        if not isinstance(address, int) or \
                not corrupt.UNMAPPED <= address < corrupt.UNMAPPED + size:
            return "address %s is not inside the VM at %#x (%d bytes)" % (
                address, corrupt.UNMAPPED, size)
        if "%#x" % address not in got["message"]:
            return "message does not name %#x: %s" % (address, compare.show(got["message"]))
        return None

    # tid 1 is init's, never a thread of the Ruby
    reason = raised_reason(run_gdb(gdbext, [exe, core], [], workdir, "classes-thread",
                                   script=ERROR_CLASSES_SCRIPT.replace("TIDS", "[1]")),
                           no_thread)
    if reason:
        return "no Ruby thread: " + reason
    where = vm_pointer_address(gdbext, exe, core, workdir)
    patched = corrupt.CoreFile(core)
    try:
        patched.write(where, struct.pack("<Q", corrupt.UNMAPPED))
        reason = raised_reason(run_gdb(gdbext, [exe, core], [], workdir, "classes-fault",
                                       script=ERROR_CLASSES_SCRIPT.replace("TIDS", "None")),
                               fault)
    except LookupError as exc:
        return "setup: %s" % exc
    finally:
        patched.restore()
    return reason and "fault: " + reason


# Runs inside lldb: ruby-bt --json all, then ruby-bt N for every lldb thread.
LLDB_THREADS_SCRIPT = r'''
import json, os, lldb
def run(cmd):
    ret = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(cmd, ret)
    return {"ok": ret.Succeeded(), "out": ret.GetOutput() or "", "error": ret.GetError() or ""}
res = {"all": run("ruby-bt --json all"), "threads": []}
for t in lldb.process:
    res["threads"].append([t.GetIndexID(), t.GetThreadID(), run("ruby-bt %d" % t.GetIndexID())])
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump(res, f)
'''


def lldb_thread_numbers_test(args, exe, core, workdir):
    """ruby-bt N for every lldb thread: that thread's Ruby thread alone, no
    process header, its line naming "tid T, lldb thread N"; or one line,
    not an error, saying it runs no Ruby thread; every Ruby thread with a
    tid reached, as in gdb's thread-numbers."""
    res, output, reason = run_lldb_script(args, [exe, "-c", core], LLDB_THREADS_SCRIPT,
                                          workdir, "lldb-thread-numbers")
    if reason:
        return reason
    report, reason = compare.parse_report(json_in(res["all"]["out"]) or "")
    if reason:
        return "ruby-bt --json all: " + reason
    ruby_tids = set(t["tid"] for t in report["threads"] if t.get("tid") is not None)
    reached = set()
    for num, tid, run in res["threads"]:
        out = run["out"]
        if not run["ok"]:
            return "ruby-bt %d: an error: %s" % (num, compare.show(run["error"]))
        if tid not in ruby_tids:
            want = "ruby-bt: lldb thread %d (LWP %d) runs no Ruby thread" % (num, tid)
            if not out.startswith(want) or len(out.strip().splitlines()) != 1:
                return "ruby-bt %d (no Ruby thread): expected one line %r, got %s" % (
                    num, want, compare.show(out[:200]))
            continue
        first = out.splitlines()[0] if out else ""
        if not re.match(r"Thread \d+.*\(tid %d, lldb thread %d\)" % (tid, num), first):
            return "ruby-bt %d (tid %d): first line %s, expected its thread naming " \
                "lldb's" % (num, tid, compare.show(first))
        if len(re.findall(r"^Thread \d+", out, re.M)) != 1:
            return "ruby-bt %d: more than its thread: %s" % (num, compare.show(out[:300]))
        reached.add(tid)
    if not reached or reached != ruby_tids:
        return "Ruby threads no lldb thread reaches: %s" % sorted(ruby_tids - reached)
    return None


# Runs inside lldb: two_signals launched again and again; at each first
# stop, every thread's stop and the siginfo lldb gives for it as it is;
# then lldb-server's current thread made the other one (Hg), as lldb
# leaves it when that thread's signal was taken last, so that the SIGSEGV
# thread's siginfo, read as lldb reads it, is the other thread's: what
# ruby_lldb._live_stop makes of the stop then.
LLDB_TWO_SIGNALS_SCRIPT = r'''
import json, os, lldb, ruby_lldb
debugger = lldb.debugger
debugger.SetAsync(False)
target = debugger.CreateTarget(os.environ["TWO_SIGNALS_EXE"])
launches, hits = [], 0
while len(launches) < int(os.environ["TWO_SIGNALS_LAUNCHES"]) and hits < 2:
    error = lldb.SBError()
    process = target.Launch(lldb.SBLaunchInfo([]), error)
    threads = []
    for t in process:
        si = t.GetSiginfo()
        signal = t.GetStopReasonDataAtIndex(0) if t.GetStopReason() == lldb.eStopReasonSignal else 0
        raw = si.GetChildMemberWithName("si_signo").GetValueAsSigned() if si.IsValid() else None
        threads.append({"tid": t.GetThreadID(), "signal": signal, "raw_signo": raw})
    segv = [t for t in process if t.GetStopReason() == lldb.eStopReasonSignal
            and t.GetStopReasonDataAtIndex(0) == 11]
    others = [t for t in process if not segv or t.GetThreadID() != segv[0].GetThreadID()]
    if segv and others:
        ruby_lldb._server_thread(process, others[0].GetThreadID())
        si = segv[0].GetSiginfo()
        # the SIGSEGV thread shown another's siginfo: what the module
        # must see past
        hits += (si.GetChildMemberWithName("si_signo").GetValueAsSigned()
                 if si.IsValid() else None) != 11
    stop = ruby_lldb._live_stop(process)
    launches.append({"error": error.GetCString(), "threads": threads,
                     "stop": list(stop[:4]) if stop else None})
    process.Kill()
with open(os.environ["GDBEXT_RESULT"], "w") as f:
    json.dump({"launches": launches, "hits": hits}, f)
'''


def lldb_two_signals_test(args, workdir):
    """A SIGSEGV another process sent to one thread while a SIGCHLD stops
    another at the same stop: lldb 14 gives one thread's siginfo for both,
    and ruby-bt must still find the SIGSEGV (signo, SI_USER, the thread)
    at every launch. lldb-server is made to have the other thread current
    before the module reads the stop (as lldb leaves it in about one launch
    in four on its own, in none on a loaded machine), so that lldb gives
    the SIGSEGV thread the other's siginfo; launches until it did twice, at
    most 40; fails when it never did: then nothing was tested."""
    exe = os.path.join(workdir, "two_signals")
    src = os.path.join(procs.ROOT, "fixtures", "native", "two_signals.c")
    res = subprocess.run(["cc", "-g", "-O0", "-pthread", src, "-o", exe], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120)
    if res.returncode != 0:
        return "building two_signals: %s" % res.stdout.strip()[-300:]
    res, output, reason = run_lldb_script(
        args, [], LLDB_TWO_SIGNALS_SCRIPT, workdir, "lldb-two-signals",
        dict(TWO_SIGNALS_EXE=exe, TWO_SIGNALS_LAUNCHES="40"))
    if reason:
        return reason
    for n, launch in enumerate(res["launches"]):
        crashers = [t["tid"] for t in launch["threads"] if t["signal"] == signal.SIGSEGV]
        if launch["error"] or len(crashers) != 1:
            return "launch %d: no one thread stopped on SIGSEGV (%s): %s" % (
                n, launch["error"], launch["threads"])
        want = [signal.SIGSEGV, 0, crashers[0]]   # SI_USER: kill() from the child
        got = launch["stop"]
        if got is None or [got[0], got[1], got[3]] != want:
            return "launch %d: the stop found is %s, not SIGSEGV (SI_USER) on tid %d; " \
                "threads %s" % (n, got, crashers[0], launch["threads"])
    if not res["hits"]:
        return "in %d launches lldb never gave the SIGSEGV thread another's siginfo: " \
        "nothing tested" % (
            len(res["launches"]))
    return None


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
        if selected("gdbext/bad/error-classes"):
            rep.result("gdbext/bad/error-classes",
                       error_classes_test(some_ruby[0], some_ruby[1], workdir, g)
                       if some_ruby else "needs a fixture Ruby")
        if selected("lldb/bad/thread-numbers"):
            rep.result("lldb/bad/thread-numbers",
                       lldb_thread_numbers_test(args, some_ruby[0], some_ruby[1], workdir)
                       if some_ruby else "needs a fixture Ruby")
        if selected("lldb/bad/two-signals"):
            rep.result("lldb/bad/two-signals", lldb_two_signals_test(args, workdir))
        if selected("gdbext/bad/usage"):
            run = run_gdb(g, [], twice("ruby-bt --bogus"), workdir, "bad5")
            reason = one_error(run, r"usage: ruby-bt")
            if not reason:
                run = run_gdb(g, [], twice("ruby-sample -3"), workdir, "bad6")
                reason = one_error(run, r"usage: ruby-sample")
            for i, bad in enumerate(("--top 0", "--top", "all", "--retainers",
                                     "--dump x --retainers 0x10")):
                if not reason:
                    run = run_gdb(g, [], twice("ruby-heap " + bad), workdir, "bad-heap%d" % i)
                    reason = one_error(run, r"usage: ruby-heap")
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
                  "gdbext/%s/sample-debug-file-directory" % NO_DEBUG_RUBY,
                  "lldb/%s/no-debug-info" % NO_DEBUG_RUBY)


def build_id_of(path):
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise procs.Failure("no build-id in %s" % path)
    return m.group(1)


def sample_debug_dir(g, stripped, tree, said, base):
    """ruby-sample on the stripped Ruby, live, in a session that never ran
    ruby-bt and with no layout cached: the same one line as ruby-bt's
    without the debug directory, samples with it."""
    live = subprocess.Popen([stripped, "-e", "sleep"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        rc, out, err, _, reason = run_gdb(
            g, ["-p", str(live.pid)], ["ruby-sample 0.3", "set debug-file-directory %s" % tree,
                                       "ruby-sample 0.3"],
            base, "sample-debug-dir", env={"XDG_CACHE_HOME": os.path.join(base, "xdg-sample")})
    finally:
        live.kill()
        live.wait()
    if reason:
        return reason
    lines = [l for l in err.splitlines() if l.startswith("ruby-sample")]
    if len(lines) != 1 or not re.search(said, lines[0]) or "--debug-dir" in lines[0]:
        return "without the debug directory, expected one line like ruby-bt's: %s" % (
            compare.show(err[-400:]))
    if "samples in" not in out:
        return "with set debug-file-directory, no samples: %s" % compare.show(
            (out + err)[-400:])
    return None


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
        name = "gdbext/%s/sample-debug-file-directory" % NO_DEBUG_RUBY
        if selected(name):
            rep.result(name, sample_debug_dir(g, stripped, tree, said, base))
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
