"""ruby-sample's sharp edges in gdb and lldb, on one long run of
fixtures/profile/shares.rb (gdbext/RUBY/sample-killed, gdbext/RUBY/sample-args,
lldb/RUBY/sample-killed; the test names and what they check are in gdbext.py).
"""

import os
import re
import shutil
import signal
import subprocess
import time

from . import compare, procs
from .gdbext_gdb import (GDB_TIMEOUT, SHARES, check_json, debugger_named, fail_all, gdb_env,
                         json_in, parked, run_gdb, unnumbered)
from .gdbext_lldb import lldb_env


EDGE_RUBY = "3.3-static"   # one file: gdb attaches fastest
EDGE_TESTS = ("gdbext/%s/sample-killed" % EDGE_RUBY, "gdbext/%s/sample-args" % EDGE_RUBY,
              "lldb/%s/sample-killed" % EDGE_RUBY)
SHARED_RUBY = "3.1"        # a libruby.so to move
SHARED_TESTS = ("gdbext/%s/thread-numbers" % SHARED_RUBY,
                "gdbext/%s/moved-libruby/solib-search-path" % SHARED_RUBY,
                "gdbext/%s/moved-libruby/sysroot" % SHARED_RUBY,
                "lldb/%s/as-installed" % SHARED_RUBY, "lldb/%s/core-text" % SHARED_RUBY,
                "lldb/%s/help" % SHARED_RUBY)
# gdb's own failures, and a Python error through the loader (gdb 13 itself
# may print a KeyboardInterrupt from its flush as it quits on SIGTERM)
GDB_ERRORS = ("Recursive internal problem", "internal-error", 'ruby-gdb.py", line',
              "Python Exception")


def proc_status(pid):
    """(state of the main thread, tracer pid) or None once pid is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            text = f.read()
    except OSError:
        return None
    state = re.search(r"^State:\s+(\S)", text, re.M).group(1)
    return state, int(re.search(r"^TracerPid:\s+(\d+)", text, re.M).group(1))


def wait_for(pid, want, timeout=30, step=0.01):
    """Poll until want(state, tracer) -> True, or False at the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = proc_status(pid)
        if st and want(*st):
            return True
        time.sleep(step)
    return False


def sampling(state, tracer):
    # shares.rb spins: running under a tracer is ruby-sample's `continue`
    return tracer != 0 and state == "R"


def cpu_ticks(pid):
    """utime + stime of pid (clock ticks), or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])


def left_running(target, progress=False):
    """None when the target runs on, untraced, with no thread stopped (and,
    with progress, its CPU time growing: shares.rb spins)."""
    if target.poll() is not None:
        return "the target died (%s)" % target.returncode
    if not wait_for(target.pid, lambda s, t: t == 0 and s != "T", timeout=15):
        return "the target is still traced or stopped: %s" % (proc_status(target.pid),)
    before = cpu_ticks(target.pid)
    time.sleep(0.3)   # the guard's second look
    stopped = procs.stopped_threads(target.pid)
    if stopped:
        return "threads left stopped: %s" % stopped
    if target.poll() is not None:
        return "the target died (%s)" % target.returncode
    if progress and not (cpu_ticks(target.pid) or 0) > (before or 0):
        return "the target does not run: no CPU time in 0.3 s (%s)" % (
            proc_status(target.pid),)
    return None


def gdb_argv(args, target, commands, timeout=None):
    argv = (["timeout", str(timeout)] if timeout else []) + [
        "gdb", "-nx", "-q", "-batch", "-ex", "source " + os.path.join(args.gdbext, "ruby-gdb.py")]
    for c in commands:
        argv += ["-ex", c]
    return argv + ["-p", str(target.pid)]


def lldb_argv(args, target, commands):
    argv = [shutil.which("lldb-14") or "lldb", "-b", "-o", "command script import " +
            os.path.join(args.gdbext, "ruby_lldb.py")]
    for c in commands:
        argv += ["-o", c]
    return argv + ["-p", str(target.pid)]


def killed_run(args, target, when, sig, seconds="10", lldb=False):
    """gdb (or lldb) running ruby-sample on target, sent sig once
    when(target.pid) says so -> (None or what went wrong, what it printed)."""
    if lldb:
        argv = lldb_argv(args, target, ["ruby-sample " + seconds, "script print('AFTER')"])
    else:
        argv = gdb_argv(args, target, ["ruby-sample " + seconds, "echo AFTER\\n"])
    gdb = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           env=lldb_env(args.gdbext) if lldb else gdb_env(args.gdbext))
    try:
        if not when(target.pid):
            return "the moment to send %s never came: %s" % (
                signal.Signals(sig).name, proc_status(target.pid)), ""
        gdb.send_signal(sig)
        out, _ = gdb.communicate(timeout=GDB_TIMEOUT)
    except subprocess.TimeoutExpired:
        gdb.kill()
        gdb.communicate()
        return "%s hung after %s" % ("lldb" if lldb else "gdb", signal.Signals(sig).name), ""
    finally:
        if gdb.poll() is None:
            gdb.kill()
            gdb.wait()
    for mark in GDB_ERRORS + ("Traceback",):
        if mark in out:
            return "the debugger said %s: %s" % (mark, compare.show(out[-300:])), out
    return left_running(target, lldb), out


def held(state, tracer):
    return tracer != 0 and state == "t"


def killed_cases(args, target):
    """SIGTERM and SIGKILL to gdb at several points of ruby-sample (not
    while gdb attaches: gdb 13 killed then may leave its own SIGSTOP
    behind, before any ruby-sample)."""
    def starts(pid):
        # held since the attach, then the first moment it runs
        return wait_for(pid, held) and wait_for(pid, sampling, step=0.002)

    def while_sampling(pid):
        return starts(pid) and (time.sleep(0.4) or wait_for(pid, sampling))


    def at_the_stop(pid):
        # sampling, then the moment the sampler's signal stops it
        return starts(pid) and wait_for(pid, held, step=0.002)

    cases = (("SIGTERM while sampling", while_sampling, signal.SIGTERM, "10"),
             ("SIGKILL while sampling", while_sampling, signal.SIGKILL, "10"),
             ("SIGKILL as the time is up", at_the_stop, signal.SIGKILL, "1"),
             ("SIGTERM as it starts to run", starts, signal.SIGTERM, "10"))
    for what, when, sig, seconds in cases:
        t0 = time.monotonic()
        reason, out = killed_run(args, target, when, sig, seconds)
        if os.environ.get("EDGE_TIMES"):
            print("%s: %.1f s" % (what, time.monotonic() - t0))
        if reason:
            return "%s: %s" % (what, reason)
        if what == "SIGTERM while sampling" and "gdb got SIGTERM while sampling" not in out:
            return "%s: gdb did not say so: %s" % (what, compare.show(out[-300:]))
    return None


def lldb_killed_cases(args, target):
    """SIGTERM and SIGKILL to lldb while ruby-sample samples, and SIGKILL
    as the time is up (lldb stopping the target): the target runs on."""
    def starts(pid):
        return wait_for(pid, held) and wait_for(pid, sampling, step=0.002)

    cases = (("SIGTERM while sampling", signal.SIGTERM, "10",
              lambda pid: starts(pid) and (time.sleep(0.4) or wait_for(pid, sampling))),
             ("SIGKILL while sampling", signal.SIGKILL, "10",
              lambda pid: starts(pid) and (time.sleep(0.4) or wait_for(pid, sampling))),
             ("SIGKILL as the time is up", signal.SIGKILL, "1",
              lambda pid: starts(pid) and wait_for(pid, held, step=0.002)))
    for what, sig, seconds, when in cases:
        reason, _ = killed_run(args, target, when, sig, seconds, lldb=True)
        if reason:
            return "lldb, %s: %s" % (what, reason)
    return None


def interrupted_case(args, target):
    """Ctrl-C (SIGINT to gdb) while sampling: said so, gdb goes on."""
    reason, out = killed_run(args, target, lambda pid: wait_for(pid, held) and wait_for(
        pid, sampling) and (time.sleep(0.3) or True), signal.SIGINT)
    if reason:
        return "SIGINT: " + reason
    if "Interrupted (SIGINT" not in out or "stopped on its own" in out or "AFTER" not in out:
        return "after Ctrl-C ruby-sample said: %s" % compare.show(out[-300:])
    return None


ARG_ERRORS = (("ruby-sample --rate 0", r"--rate 0: must be a number above 0 and at most 10000 Hz"),
              ("ruby-sample --rate 100000", r"--rate 100000: .*at most 10000 Hz"),
              ("ruby-sample 0", r"SECONDS 0: must be a number above 0"),
              ("ruby-sample 1 --state sleeping",
               r"--state takes a comma list of running, waiting, blocked, gc; not 'sleeping'"),
              ("ruby-sample 1 --out /nonexistent-dir/x.folded",
               r"cannot write /nonexistent-dir/x.folded: No such file or directory"))


def args_case(args, target, workdir):
    """Bad arguments: the reason, before the inferior runs; a good run: one
    summary line, and the collapsed stacks written."""
    folded = os.path.join(workdir, "edges.folded")
    commands = [c for c, _ in ARG_ERRORS] + ["ruby-sample 1 --out " + folded]
    res = subprocess.run(gdb_argv(args, target, commands), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=GDB_TIMEOUT, env=gdb_env(args.gdbext))
    if procs.sanitizer_report(res.stderr):
        return "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    errors = [l for l in res.stderr.splitlines() if l.startswith("ruby-sample")]
    if len(errors) != len(ARG_ERRORS):
        return "expected %d ruby-sample error lines, got %s" % (
            len(ARG_ERRORS), compare.show(res.stderr[-500:]))
    for (cmd, pattern), line in zip(ARG_ERRORS, errors):
        if not re.search(pattern, line):
            return "%s said %s, expected /%s/" % (cmd, compare.show(line), pattern)
    # Nothing ran before the good run: one stop by the sampler's signal.
    if res.stdout.count("received signal") > 1:
        return "the inferior ran before a bad command's error: %s" % compare.show(
            res.stdout[-600:])
    if len(re.findall(r"samples in", res.stdout)) != 1:
        return "expected one line of sample counts: %s" % compare.show(res.stdout[-600:])
    if "collapsed stacks written to " + folded not in res.stdout:
        return "no word of the collapsed stacks: %s" % compare.show(res.stdout[-300:])
    if not os.path.getsize(folded):
        return "empty collapsed stacks"
    return left_running(target)


def edge_tests(rep, selected, args, exe, workdir):
    names = [n for n in EDGE_TESTS if selected(n)]
    if not names:
        return
    with procs.started([exe, SHARES, "600"]) as target:
        if selected(EDGE_TESTS[0]):
            rep.result(EDGE_TESTS[0], killed_cases(args, target) or
                       interrupted_case(args, target))
        if selected(EDGE_TESTS[1]):
            rep.result(EDGE_TESTS[1], args_case(args, target, workdir))
        if selected(EDGE_TESTS[2]):
            rep.result(EDGE_TESTS[2], lldb_killed_cases(args, target) if shutil.which(
                "lldb-14") or shutil.which("lldb") else "lldb-14 is not installed (.ci/install-deps)")


# --- two numberings, thread apply; a core's libruby elsewhere ---------------------

def check_thread_apply(run, oracle):
    """`thread apply all ruby-bt`: a block for every gdb thread, the Ruby
    thread's line naming that gdb thread, one line for a thread running no
    Ruby, no process header; `ruby-bt all` after it: one header."""
    rc, out, err, _, reason = run
    if reason:
        return reason
    if "Error occurred" in err or "Traceback" in out + err:
        return "gdb error: %s" % compare.show(err[-300:])
    apply_out, _, all_out = out.partition("==ALL==")
    blocks = re.split(r"^Thread (\d+) \(Thread 0x[0-9a-f]+ \(LWP (\d+)\).*\):$", apply_out,
                      flags=re.M)[1:]
    want = set(t["native_thread_id"] for t in oracle["threads"] if t.get("native_thread_id"))
    seen = set()
    for num, lwp, body in zip(blocks[0::3], blocks[1::3], blocks[2::3]):
        if "ruby-bt: gdb thread %s (LWP %s) runs no Ruby thread" % (num, lwp) in body:
            continue
        if not re.search(r"^Thread \d+.*\(tid %s, gdb thread %s\)" % (lwp, num), body, re.M):
            return "gdb thread %s (LWP %s): %s" % (num, lwp, compare.show(body[:300]))
        seen.add(int(lwp))
    if not blocks or not want <= seen:
        return "thread apply all ruby-bt reached Ruby threads %s, the oracle has %s" % (
            sorted(seen), sorted(want))
    if "Process " in apply_out or all_out.count("\nProcess ") + all_out.startswith(
            "Process ") != 1:
        return "expected the process header once, in ruby-bt all only: %s" % compare.show(
            out[-400:])
    return None


def moved_core(core, workdir):
    """The core with its libruby's directory renamed where it records it
    (same length: .../lib/ -> .../liX/), the library there only in a search
    directory and under a sysroot -> (core, search dir, sysroot)."""
    with open(core, "rb") as f:
        data = f.read()
    old = re.search(rb"/[^\0]*/lib/libruby\.so[0-9.]*", data).group(0).decode()
    libdir = os.path.dirname(old)
    moved = os.path.join(workdir, "moved.core")
    with open(moved, "wb") as f:
        f.write(data.replace(b"/lib/libruby.so", b"/liX/libruby.so"))
    search = os.path.join(workdir, "search")
    sysroot = os.path.join(workdir, "sysroot")
    under_root = sysroot + os.path.dirname(libdir) + "/liX"
    for d in (search, under_root):
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(libdir):
            link = os.path.join(d, name)
            if name.startswith("libruby.so") and not os.path.lexists(link):
                os.symlink(os.path.realpath(os.path.join(libdir, name)), link)
    return moved, search, sysroot


def lldb_installed(args, exe, core, workdir):
    """corestack-lldb as make install writes it, with no PYTHONPATH: lldb's
    Python starts; ruby-bt all on the core prints what corestack prints for
    it (the command line, not "?"); help ruby-bt is real help."""
    names = ["lldb/%s/%s" % (SHARED_RUBY, t) for t in ("as-installed", "core-text", "help")]
    wrapper = os.path.join(workdir, "corestack-lldb")
    with open(os.path.join(procs.ROOT, "gdbext", "corestack-lldb.in")) as f:
        text = f.read().replace("@LIBDIR@", os.path.abspath(args.gdbext))
    with open(wrapper, "w") as f:
        f.write(text)
    os.chmod(wrapper, 0o755)
    env = gdb_env(args.gdbext)
    env.pop("PYTHONPATH", None)
    try:
        res = subprocess.run([wrapper, "-b", "-o", "help ruby-bt", "-o", "ruby-bt all",
                              exe, "-c", core], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=GDB_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return dict((n, "lldb hung") for n in names)
    out = res.stdout
    if "embedded_interpreter" in res.stdout + res.stderr or "(lldb) ruby-bt all" not in out:
        return dict((n, "lldb as installed: %s" % compare.show((out + res.stderr)[-400:]))
                    for n in names)
    results = {names[0]: procs.sanitizer_report(res.stderr) or None}
    rc, cli, err, reason = procs.run_tool([args.corestack, core, exe], args.timeout)
    # ruby-bt numbers the frames (ruby-frame takes the numbers); corestack not
    shown, numbering = unnumbered(out.split("(lldb) ruby-bt all\n", 1)[1])
    if not numbering:
        shown, numbering = debugger_named(shown, "lldb")
    results[names[1]] = reason or numbering or (
        None if shown.strip() == cli.strip() else
        "lldb's ruby-bt all: %s, corestack: %s" % (compare.show(shown[:200]),
                                                   compare.show(cli[:200])))
    helptext = out.split("(lldb) help ruby-bt\n", 1)[1].split("(lldb)", 1)[0]
    results[names[2]] = None if all(w in helptext for w in (
        "ruby-bt all", "--json", "--via-debugger", "lldb thread N")) else \
        "help ruby-bt: %s" % compare.show(helptext)
    return results


def shared_tests(rep, selected, args, exe, workdir):
    names = [n for n in SHARED_TESTS if selected(n)]
    if not names:
        return
    sc = None
    try:
        sc, oracle = parked(exe, workdir, "edges-threads")
        time.sleep(0.2)
        if selected(SHARED_TESTS[0]):
            run = run_gdb(args.gdbext, ["-p", str(sc.pid)], [
                "thread apply all ruby-bt", "echo ==ALL==\\n", "ruby-bt all"],
                workdir, "thread-apply")
            rep.result(SHARED_TESTS[0], check_thread_apply(run, oracle))
        if any(selected(n) for n in SHARED_TESTS[1:]):
            core = procs.gcore(sc.pid, os.path.join(sc.workdir, "core"), 120)
            if any(selected(n) for n in SHARED_TESTS[3:]):
                for name, reason in lldb_installed(args, exe, core, workdir).items():
                    if selected(name):
                        rep.result(name, reason)
            moved, search, sysroot = moved_core(core, workdir)
            os.unlink(core)
            for name, setting in ((SHARED_TESTS[1], "set solib-search-path " + search),
                                  (SHARED_TESTS[2], "set sysroot " + sysroot)):
                if not selected(name):
                    continue
                rc, out, err, _, reason = run_gdb(
                    args.gdbext, ["-iex", setting, exe, moved], ["ruby-bt --json all"],
                    workdir, "moved")
                report = json_in(out) if not reason else None
                rep.result(name, reason or (
                    check_json({"out": report}, oracle, "core", None) if report else
                    "no report: %s" % compare.show(err[-300:])))
            os.unlink(moved)
    except (procs.Failure, OSError, ValueError, AttributeError) as exc:
        fail_all(rep, selected, names, "setup: %s" % exc)
    finally:
        if sc:
            sc.kill()
