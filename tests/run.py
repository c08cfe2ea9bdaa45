#!/usr/bin/env python3
"""Oracle tests: corestack against what Ruby says about itself.

    python3 tests/run.py --corestack PATH [--rubies 2.7,3.1,3.3,3.3-static,3.3-yjit,3.4,3.4-yjit]
                         [--ruby NAME=PREFIX] [-k SUBSTRING] [--keep DIR]

--ruby runs every test on a Ruby installed elsewhere (one built from source
with its debug info, say): what corestack reads there is checked against
that Ruby's own backtraces like on the fixtures.

For every fixture Ruby (built on first use by fixtures/build-ruby.sh) and
every program in fixtures/scenarios/, the scenario runs until all its threads
are parked and fixtures/oracle.rb has written Ruby's own view of every
thread; then the harness takes a core (gcore, or the kernel's core for the
crash* scenarios) and checks corestack's reading of it:

    RUBY/SCENARIO/capture    the scenario parked, wrote its oracle, and a core exists
    RUBY/SCENARIO/sidecar    fixture self-check: NAME.qualified names frames Ruby reported
    RUBY/SCENARIO/oracle     corestack --json CORE RUBY: exit 0, empty stderr, same
                             threads (name, main, status, tid) and frames (label, path,
                             lineno) as the oracle
    RUBY/SCENARIO/qualified  the same report carries the qualified names of NAME.qualified
    RUBY/SCENARIO/text       corestack CORE RUBY: exit 0, every oracle label in the output
    RUBY/SCENARIO/live       corestack --json --pid PID on the parked process: as oracle,
                             and no thread of it left stopped afterwards
    RUBY/SCENARIO/live-nonblocking  the same with --nonblocking
    RUBY/SCENARIO/threadstate[-sidecar]  each thread's state, wait reason and
                             ractor as NAME.threadstate says (tests/harness/threadstate.py)
    bad/...                  unusable input: exit 2, one stderr line naming the file
    RUBY/corrupt/...         a real core with a pointer, a line table or a label broken:
                             that frame marked unreliable with the reason, the rest intact;
                             the thread list made cyclic, cut short or one thread unlinked:
                             exit 1 naming the list, no thread twice (tests/harness/corrupt.py);
                             a frame's env off its stack or its type none the VM has: kept, marked
    RUBY/corrupt/native-return-address  a thread's native return address aimed at the
                             heap: --native cuts its stack there and says so, exit 1
                             (tests/harness/native_cut.py)
    RUBY/mutations/CLASS     seeded mutations of the threads core (frame words, the thread
                             list, registers, notes, truncation): no crash, no sanitizer
                             report, no run over 10 s or 4x memory, and no report that
                             differs from the intact core's with exit 0
                             (tests/harness/mutations.py; tests/mutate.py: the long run)
    RUBY/notes/...           a core's thread notes damaged (registers swapped, a tid duplicated or
                             zeroed): no tid changed without the thread saying why, exit 1
                             (tests/harness/thread_notes.py)
    RUBY/limits/max-output   the output budget cuts the walk: partial, marked, prefix intact
    RUBY/stale-pc/...        a real core's innermost frame given a pc just outside its iseq
                             (YJIT's stale pc): pc_stale and the method's first line; the
                             same pc in an older frame is unreliable (tests/harness/stale_pc.py)
    RUBY/frame-reuse         frames the sampler serves from its cache after their pc
                             moved are what a fresh decode gives (tests/harness/frame_reuse.py)
    RUBY/hostile/...         (tests/harness/hostile.py) under strace, with --sysroot and
                             --native: files NT_FILE names opened read-only under the
                             sysroot only, nothing written outside the layout cache, no
                             program run; NT_FILE naming a FIFO, /dev/zero, a directory,
                             a 1 TiB sparse file: exit 2 at once, one line; libc a FIFO:
                             the stacks still the oracle's
    cli/...                  (tests/harness/cli.py) wrong options and values: exit 64, one
                             line naming the option and its range; a core argument that is
                             a FIFO, a device, a directory or a /proc file: exit 2 at once;
                             record -o to an unwritable path: refused before recording
    live/no-cap-sys-ptrace... --pid without CAP_SYS_PTRACE: one line saying so, exit 2
                             (tests/harness/permissions.py)
    RUBY/traced/...          (tests/harness/traced.py) a target whose threads another
                             process traces: --pid and record --pid refused in one line
                             naming the pid and the tracer's, exit 2 (record at once,
                             no profile written); --nonblocking reads it (the oracle's
                             stacks; record takes samples); no thread left stopped
    RUBY/many-threads/live[-nonblocking]  (tests/harness/many_threads.py) a process
                             of more than 8,192 threads (fixtures/many_threads.rb) read
                             with --pid: exit 0, every thread, the oracle's stacks, no
                             thread left stopped
    limits/max-frames        --max-frames cuts every stack, marks it, exits 1 (partial)
    debuginfo/...            the static 3.3 Ruby stripped, its DWARF found by build-id
                             under --debug-dir and by .gnu_debuglink: same stacks
    cache/warm               a second run served from the layout cache: same report
    RUBY/layout-units        resolving the layout reads at most 10 compile units
    RUBY/record...           corestack record on fixtures/profile/shares.rb (known time
                             shares): paused, nonblocking, speedscope with --on-cpu,
                             flame graph SVG,
                             target exiting, SIGINT; record-contention: a paused
                             recording does not starve threads waiting for the GVL
                             (tests/harness/contention.py); record-unreaped-exit:
                             a target that exits and is never reaped ends the
                             recording at once (tests/harness/record_exits.py)
    3.3-yjit/running-jit-code  a thread inside JIT code, read live (tests/harness/yjit.py)
    3.3-yjit/...             every scenario again on Ruby 3.3 built with YJIT, run with
                             --yjit --yjit-call-threshold=1; 3.3-yjit/SCENARIO/yjit: Ruby
                             says YJIT was on and compiled code (tests/harness/yjit.py;
                             SKIP 3.3-yjit/build when no rustc >= 1.58 can build it)
    RUBY/mn-threads/...      (tests/harness/mn_threads.py) waits.rb under RUBY_MN_THREADS=1:
                             the oracle's stacks live, and with --native live and from a
                             core, exit 0, threads parked on no native thread off_native
    RUBY/native/...          (tests/harness/native.py) a C extension built against the Ruby
                             (fixtures/native/): a block a C method yields to calls a C
                             method that blocks in pause() (gcore) or faults at 0x10
                             (kernel core). --native (on the core, and with --pid on the
                             blocked program: pause-live): the Ruby frames are the oracle's,
                             each C method sits on its C function, native frames between;
                             native pcs and names as eu-stack --core; --native-all covers
                             every thread eu-stack sees; the crash: SIGSEGV, SEGV_MAPERR,
                             0x10, the crashed thread marked and first in the text;
                             rb-bug: on the crash scenario's core (Ruby's handler, rb_bug,
                             abort) the crashed thread's native frames show sigsegv and
                             rb_bug_for_fatal_signal
    RUBY/crash/MODE/CHECK    (tests/harness/crash.py) kernel cores of a C extension
                             (fixtures/crash/) that faults through a bad pointer with
                             Ruby's SIGSEGV handler (segv) and without it (raw_segv),
                             in a dmark function during GC (gc_mark), calls rb_bug
                             (bug) and abort (abort). capture: Ruby's own crash report
                             says what the program did; stacks: the crashed thread's
                             Ruby frames are the report's; fault: the JSON crash
                             summary names the report's fault address, its RIP as the
                             faulting pc, the function and module, and its innermost
                             Ruby method (for rb_bug and abort: no fault, SIGABRT
                             sent from rb_bug, ct_abort); summary-text: the same at
                             the top of the text; native: with --native the crashed
                             thread's frames inside the signal frame are marked the
                             handler's, the first outside it is the faulting function
                             at Ruby's RIP; gc: in GC and marking only for the dmark
                             fault, GC.count at least what the program saw; exception:
                             the thread parked in a rescue clause handles Job::Failed
    debuginfo/debuginfod, debuginfo/debug-dir-debuglink, debuginfo/no-debug-message
                             (tests/harness/native.py) the stripped static 3.3 Ruby's DWARF
                             from a local debuginfod server (private db, loopback port),
                             by debuglink under --debug-dir; none: exit 2, one line with
                             the file, its build-id and how to get debug info
    remote/...               (tests/harness/native.py) a core whose files moved to another
                             tree: exit 2 naming --sysroot without it; --sysroot and
                             --lib-search-path give the oracle's stacks; a mismatched
                             library in the root is warned about (exit 1) and not used;
                             the core compressed with zstd, gzip, xz read directly; a
                             cut-off .zst core is a truncated core; --native --sysroot
                             merges every thread and shows Ruby's crash handler
    RUBY/nontfile/...        (tests/harness/nontfile.py) the threads core (gcore) and the
                             crash core (kernel) of a moved copy of the Ruby with their
                             NT_FILE notes hidden: with --sysroot, and with the executable
                             and --lib-search-path, the oracle's stacks; --native: the
                             native pcs eu-stack saw before; many-mappings: a real kernel
                             core without NT_FILE (a Ruby that maps a file ~60,000 times,
                             3.1+), the oracle's stacks; another
                             Ruby's libruby (static: executable) in --lib-search-path:
                             exit 2, one line naming it and its build-id
    unit/NAME                the unit test programs given with --unit
    RUBY/fibers/fiber-sidecar, fibers, fibers-live, fibers-text, no-fibers
                             every fiber of fixtures/scenarios/fibers.rb against the
                             oracle's Fiber#backtrace_locations (tests/harness/fibers.py)
    gdbext/..., lldb/...     ruby-bt and ruby-sample inside gdb and lldb (--gdbext DIR,
                             default build/gdbext; make test: build/gdbext-san, the
                             module under UBSan): see tests/harness/gdbext.py

Prints one line per test (PASS name / FAIL name: reason; SKIP name: reason
for tests whose fixtures are not selected, or whose scenario needs a newer
Ruby: "# corestack-requires: FEATURE (Ruby X.Y)", tests/harness/requires.py), then "N passed, N failed".
Exit status 1 when a test failed (or none ran). Progress goes to stderr.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (cli, compare, contention, corrupt, crash, fibers, mn_threads, record_exits, frame_reuse, gdbext, hostile,  # noqa: E402
                     many_threads, mutations, native, native_cut, nontfile, permissions, procs,
                     requires, stale_pc, thread_notes, threadstate, traced, yjit)

RUBIES = ("2.7", "3.1", "3.3", "3.3-static", "3.3-yjit", "3.4", "3.4-yjit")
ORACLE_TIMEOUT = 60    # scenario start to oracle file
CRASH_TIMEOUT = 60     # oracle file to the crashed process's exit
GCORE_TIMEOUT = 120
BUILD_TIMEOUT = 3600
TRUNCATIONS = (1, 30, 70)   # percent of a real core kept


def progress(msg):
    print("run.py: " + msg, file=sys.stderr, flush=True)


class Reporter:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def result(self, name, reason):
        if reason is None:
            self.passed += 1
            print("PASS " + name, flush=True)
        else:
            self.failed += 1
            print("FAIL %s: %s" % (name, " ".join(str(reason).split("\n"))), flush=True)

    def skip(self, name, reason):
        self.skipped += 1
        print("SKIP %s: %s" % (name, reason), flush=True)


class Capture:
    """A scenario's core with what the oracle said."""

    def __init__(self, ruby, scenario, core, exe, oracle, signal_number):
        self.ruby, self.scenario, self.core, self.exe = ruby, scenario, core, exe
        self.oracle, self.signal_number = oracle, signal_number
        self.live = {}   # "live", "live-nonblocking" -> (run, problem or None)


def ruby_spec(spec):
    version, _, variant = spec.partition("-")
    return version, variant or "shared"


def scenario_names():
    return sorted(f[:-3] for f in os.listdir(procs.SCENARIOS) if f.endswith(".rb"))


def sidecar_path(scenario):
    return os.path.join(procs.SCENARIOS, scenario + ".qualified")


def scenario_tests(ruby, scenario):
    names = ["capture"]
    if os.path.exists(sidecar_path(scenario)):
        names.append("sidecar")
    names += ["oracle"]
    if os.path.exists(sidecar_path(scenario)):
        names.append("qualified")
    names.append("text")
    if not is_crash(scenario):
        names += ["live", "live-nonblocking"]
    return (["%s/%s/%s" % (ruby, scenario, n) for n in names]
            + fibers.test_names(ruby, scenario)
            + threadstate.test_names(procs.SCENARIOS, ruby, scenario)
            + yjit.test_names(ruby, scenario))


def is_crash(scenario):
    return scenario.startswith("crash")


# --- capture ---------------------------------------------------------------

stopped_threads = procs.stopped_threads


def live_runs(corestack, pid, timeout):
    """corestack --pid on the parked scenario, paused and not; afterwards no
    thread of it may be left stopped. -> {name: (run, problem)}"""
    out = {}
    for name, extra in (("live", []), ("live-nonblocking", ["--nonblocking"])):
        run = procs.run_tool([corestack, "--json", "--pid", str(pid)] + extra, timeout)
        left = stopped_threads(pid)
        out[name] = (run, "threads left stopped: %s" % ", ".join(left) if left else None)
    return out


def capture_all(ruby, exe, scenarios, workdir, keep, corestack=None, timeout=60):
    """Run a Ruby's scenarios side by side, then take their cores one by one.
    -> {scenario: Capture or procs.Failure}"""
    results, running = {}, []
    try:
        for scen in scenarios:
            script = os.path.join(procs.SCENARIOS, scen + ".rb")
            try:
                running.append(procs.Scenario(exe, script, os.path.join(workdir, scen), is_crash(scen),
                                              yjit.scenario_env(ruby)))
            except OSError as exc:
                results[scen] = procs.Failure("cannot start %s: %s" % (exe, exc))
        for run in running:
            scen = os.path.basename(run.script)[:-3]
            started = time.monotonic()
            try:
                run.wait_oracle(ORACLE_TIMEOUT)
                try:
                    with open(run.oracle_path) as f:
                        oracle = json.load(f)
                except ValueError as exc:
                    raise procs.Failure("oracle %s is not JSON: %s" % (run.oracle_path, exc))
                signal_number = None
                if run.crash:
                    run.wait_exit(CRASH_TIMEOUT)
                    if not os.WIFSIGNALED(run.status):
                        raise procs.Failure("%s.rb %s instead of dying of a signal; stderr: %s" % (
                            scen, run.describe_exit(), procs.tail(run.stderr_path)))
                    signal_number = os.WTERMSIG(run.status)
                    core = procs.kernel_core(run)
                else:
                    if run.poll():
                        raise procs.Failure("%s.rb %s after writing its oracle; stderr: %s" % (
                            scen, run.describe_exit(), procs.tail(run.stderr_path)))
                    live = live_runs(corestack, run.pid, timeout) if corestack else {}
                    if run.poll():
                        raise procs.Failure("%s.rb %s after corestack --pid; stderr: %s" % (
                            scen, run.describe_exit(), procs.tail(run.stderr_path)))
                    core = procs.gcore(run.pid, os.path.join(run.workdir, "core"), GCORE_TIMEOUT)
                    if keep:
                        procs.dig_holes(core)
                results[scen] = Capture(ruby, scen, core, exe, oracle, signal_number)
                if not run.crash:
                    results[scen].live = live
                progress("%s/%s: core %s (%.1f MB, %.1f s)%s" % (
                    ruby, scen, core, os.path.getsize(core) / 1e6, time.monotonic() - started,
                    "; the process was " + run.describe_exit() if run.crash else ""))
            except procs.Failure as exc:
                results[scen] = exc
            finally:
                run.kill()
    finally:
        for run in running:
            run.kill()
    return results


# --- corestack runs and checks --------------------------------------------

def corestack_runs(corestack, cap, timeout):
    """Both runs of one core: (json_run, text_run), each (rc, out, err, reason)."""
    return (procs.run_tool([corestack, "--json", cap.core, cap.exe], timeout),
            procs.run_tool([corestack, cap.core, cap.exe], timeout))


def first_line(text):
    lines = text.strip().splitlines()
    return compare.show(lines[0][:200]) if lines else "(empty)"


def json_report(run):
    """-> (report, None) or (None, reason) for a run that must exit 0."""
    rc, out, err, reason = run
    if reason:
        return None, reason
    san = procs.sanitizer_report(err)
    if san:
        return None, "sanitizer report on stderr: %s" % san
    if rc != 0:
        return None, "exit status %d, expected 0; stderr: %s" % (rc, first_line(err))
    report, reason = compare.parse_report(out)
    return report, reason


def check_oracle(run, cap, live=False):
    report, reason = json_report(run)
    if reason:
        return reason
    if run[2]:
        return "stderr is not empty: %s" % first_line(run[2])
    if live and report.get("process", {}).get("source") != "live":
        return "process.source is %s, expected \"live\"" % compare.show(
            report.get("process", {}).get("source"))
    return (compare.check_shape(report)
            or compare.check_process(report, cap.oracle, cap.signal_number)
            or compare.compare_threads(report, cap.oracle))


def check_qualified(run, expectations, oracle):
    report, reason = json_report(run)
    if reason:
        return reason
    if not isinstance(report.get("threads"), list):
        return "no threads list"
    return compare.check_qualified(expectations, report, oracle)


def check_text(run, cap):
    rc, out, err, reason = run
    if reason:
        return reason
    san = procs.sanitizer_report(err)
    if san:
        return "sanitizer report on stderr: %s" % san
    if rc != 0:
        return "exit status %d, expected 0; stderr: %s" % (rc, first_line(err))
    return compare.check_text(out, cap.oracle)


def report_scenario(rep, selected, ruby, scen, cap, runs):
    threadstate.report(rep, selected, procs.SCENARIOS, ruby, scen, cap,
                       runs[0] if runs else None, json_report)
    yjit.report(rep, selected, ruby, scen, cap)
    names = dict((n.rsplit("/", 1)[1], n) for n in scenario_tests(ruby, scen))
    want = lambda key: key in names and selected(names[key])
    if isinstance(cap, procs.Failure):
        for key in ("capture", "sidecar", "oracle", "qualified", "text"):
            if want(key):
                rep.result(names[key], str(cap) if key == "capture" else "no core: capture failed")
        return
    if want("capture"):
        rep.result(names["capture"], None)
    expectations, sidecar_error = None, None
    if "sidecar" in names:
        expectations, sidecar_error = compare.load_sidecar(sidecar_path(scen))
    if want("sidecar"):
        rep.result(names["sidecar"], sidecar_error
                   or compare.check_sidecar_against_oracle(expectations, cap.oracle))
    if want("oracle"):
        rep.result(names["oracle"], check_oracle(runs[0], cap))
    if want("qualified"):
        rep.result(names["qualified"], sidecar_error or check_qualified(runs[0], expectations, cap.oracle))
    if want("text"):
        rep.result(names["text"], check_text(runs[1], cap))
    for key in ("live", "live-nonblocking"):
        if want(key):
            if key not in cap.live:
                rep.result(names[key], "corestack --pid did not run")
                continue
            run, problem = cap.live[key]
            rep.result(names[key], check_oracle(run, cap, live=True) or problem)


# --- unusable input --------------------------------------------------------

def check_unusable(run, paths, allowed=(2,), pattern=None, what=""):
    """exit in allowed, one stderr line naming one of paths, no crash."""
    rc, out, err, reason = run
    if reason:
        return reason
    san = procs.sanitizer_report(err)
    if san:
        return "sanitizer report on stderr: %s" % san
    if rc not in allowed:
        return "exit status %d, expected %s; stderr: %s" % (
            rc, " or ".join(map(str, allowed)), first_line(err))
    lines = err.rstrip("\n").split("\n")
    if not err.strip() or len(lines) != 1:
        return "stderr has %d lines, expected exactly one: %s" % (
            0 if not err.strip() else len(lines), compare.show(err[:300]))
    if not any(p in err for p in paths):
        return "stderr does not name %s: %s" % (" or ".join(paths), first_line(err))
    if pattern and not re.search(pattern, err, re.I):
        return "stderr does not say %s: %s" % (what, first_line(err))
    if rc == 1:
        report, why = compare.parse_report(out)
        if why:
            return "exit status 1 (partial) but " + why
        if report.get("complete") is not False:
            return "exit status 1 (partial) but complete is %s" % compare.show(report.get("complete"))
    return None


def copy_prefix(src, dst, size):
    """The first size bytes of src, sparse where src is zero."""
    zero = bytes(1 << 20)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        left = size
        while left > 0:
            chunk = fin.read(min(left, len(zero)))
            if not chunk:
                break
            if chunk == zero[:len(chunk)]:
                fout.seek(len(chunk), os.SEEK_CUR)
            else:
                fout.write(chunk)
            left -= len(chunk)
        fout.truncate()


def bad_tests(rep, selected, args, prefixes, captures, workdir):
    """Each entry: name, function building (argv, paths, allowed, pattern, what)
    or raising procs.Failure, and what it needs."""
    bad = os.path.join(workdir, "bad")
    os.makedirs(bad, exist_ok=True)
    cs, timeout = args.corestack, args.timeout
    built = [r for r in args.rubies if isinstance(prefixes.get(r), str)]
    exe_of = lambda r: os.path.join(prefixes[r], "bin", "ruby")

    def core_of(ruby, scen="threads"):
        cap = captures.get((ruby, scen))
        if cap is None:
            raise SkipTest("needs the %s/%s core (%s)" % (
                ruby, scen, "not in --rubies" if ruby not in args.rubies else "not taken"))
        if isinstance(cap, procs.Failure):
            raise procs.Failure("no %s/%s core: %s" % (ruby, scen, cap))
        return cap

    def truncation_source():
        for ruby in ["3.3-static"] + list(args.rubies):
            if (ruby, "threads") in captures:
                return core_of(ruby)
        raise SkipTest("needs a threads core of a selected Ruby")

    def not_a_core():
        if not built:
            raise SkipTest("needs a built fixture Ruby")
        path = os.path.join(bad, "ruby-executable.not-a-core")
        shutil.copyfile(exe_of(built[0]), path)
        return [cs, "--json", path, exe_of(built[0])], [path], (2,), None, ""

    def empty():
        path = os.path.join(bad, "empty.core")
        open(path, "wb").close()
        return [cs, "--json", path] + ([exe_of(built[0])] if built else []), [path], (2,), None, ""

    def truncated(pct):
        def make():
            cap = truncation_source()
            size = os.path.getsize(cap.core)
            path = os.path.join(bad, "%s-%s.truncated-%dpct.core" % (cap.ruby, cap.scenario, pct))
            copy_prefix(cap.core, path, max(64, size * pct // 100))
            return [cs, "--json", path, cap.exe], [path], (1, 2), None, ""
        return make

    def non_ruby():
        sleeper = subprocess.Popen(["sleep", "100"], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            core = procs.gcore(sleeper.pid, os.path.join(bad, "sleep.core"), GCORE_TIMEOUT)
        finally:
            sleeper.kill()
            sleeper.wait()
        sleep_exe = shutil.which("sleep") or "/usr/bin/sleep"
        return [cs, "--json", core], [core, sleep_exe, os.path.realpath(sleep_exe)], (2,), None, ""

    def no_debug():
        cap = core_of("3.3-static")
        path = os.path.join(bad, "ruby-3.3-static.no-debug")
        res = subprocess.run(["strip", "--strip-debug", "-o", path, cap.exe],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        if res.returncode != 0:
            raise procs.Failure("strip --strip-debug failed: %s" % res.stdout.strip())
        # --no-cache: the layout cache is keyed by build-id, which strip keeps.
        return [cs, "--json", "--no-cache", cap.core, path], [path], (2,), r"debug", "'debug'"

    def mismatch():
        cap = core_of("3.3-static")
        if not isinstance(prefixes.get("3.1"), str):
            raise SkipTest("needs the 3.1 Ruby (%s)" % (
                "not in --rubies" if "3.1" not in args.rubies else "not built"))
        exe = exe_of("3.1")
        return ([cs, "--json", cap.core, exe], [cap.core, exe], (2,),
                r"build-id|does not match", "'build-id' or 'does not match'")

    tests = [("bad/not-a-core", not_a_core), ("bad/empty", empty)]
    tests += [("bad/truncated-%dpct" % pct, truncated(pct)) for pct in TRUNCATIONS]
    tests += [("bad/non-ruby", non_ruby), ("bad/no-debug-info", no_debug),
              ("bad/build-id-mismatch", mismatch)]
    for name, make in tests:
        if not selected(name):
            continue
        try:
            argv, paths, allowed, pattern, what = make()
        except SkipTest as exc:
            rep.skip(name, str(exc))
            continue
        except (procs.Failure, OSError, subprocess.SubprocessError) as exc:
            rep.result(name, "setup: %s" % exc)
            continue
        rep.result(name, check_unusable(procs.run_tool(argv, timeout), paths, allowed, pattern, what))


class SkipTest(Exception):
    pass


def split_debug(exe, outdir):
    """objcopy --only-keep-debug + strip: -> (stripped exe, debug file, build-id)."""
    os.makedirs(outdir, exist_ok=True)
    debug = os.path.join(outdir, "ruby.debug")
    stripped = os.path.join(outdir, "ruby")
    for argv in (["objcopy", "--only-keep-debug", exe, debug],
                 ["objcopy", "--strip-debug", "--add-gnu-debuglink=" + debug, exe, stripped]):
        res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=300)
        if res.returncode != 0:
            raise procs.Failure("%s failed: %s" % (argv[0], res.stdout.strip()))
    out = subprocess.run(["readelf", "-n", stripped], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise procs.Failure("no build-id in %s" % stripped)
    return stripped, debug, m.group(1)


def debuginfo_tests(rep, selected, args, captures, workdir):
    """Split debug info: found by build-id under --debug-dir, and by
    .gnu_debuglink next to the binary; then the layout cache."""
    names = ("debuginfo/build-id-dir", "debuginfo/debuglink", "cache/warm", "limits/max-frames")
    if not any(selected(n) for n in names):
        return
    cap = captures.get(("3.3-static", "threads"))
    if not isinstance(cap, Capture):
        for n in filter(selected, names):
            rep.skip(n, "needs the 3.3-static/threads core")
        return
    cs = args.corestack
    try:
        stripped, debug, build_id = split_debug(cap.exe, os.path.join(workdir, "split"))
    except (procs.Failure, OSError, subprocess.SubprocessError) as exc:
        for n in filter(selected, names):
            rep.result(n, "setup: %s" % exc)
        return
    if selected("debuginfo/build-id-dir"):
        # Only the build-id tree: the debuglink target is moved away.
        tree = os.path.join(workdir, "debug-tree")
        target = os.path.join(tree, ".build-id", build_id[:2], build_id[2:] + ".debug")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(debug, target)
        hidden = debug + ".hidden"
        os.rename(debug, hidden)
        try:
            run = procs.run_tool([cs, "--json", "--no-cache", "--debug-dir", tree,
                                  cap.core, stripped], args.timeout)
        finally:
            os.rename(hidden, debug)
        rep.result("debuginfo/build-id-dir", check_oracle(run, cap))
    if selected("debuginfo/debuglink"):
        run = procs.run_tool([cs, "--json", "--no-cache", cap.core, stripped], args.timeout)
        rep.result("debuginfo/debuglink", check_oracle(run, cap))
    if selected("cache/warm"):
        cache = os.path.join(workdir, "layout-cache")
        runs = [procs.run_tool([cs, "--json", "--cache-dir", cache, cap.core, cap.exe],
                               args.timeout) for _ in range(2)]
        reason = check_oracle(runs[1], cap)
        if not reason and not os.listdir(cache):
            reason = "nothing was written to the layout cache %s" % cache
        if not reason and runs[0][1] != runs[1][1]:
            reason = "the cached run's report differs from the first run's"
        rep.result("cache/warm", reason)
    if selected("limits/max-frames"):
        rep.result("limits/max-frames", check_max_frames(
            procs.run_tool([cs, "--json", "--max-frames", "3", cap.core, cap.exe], args.timeout),
            cap, 3))


def check_max_frames(run, cap, limit):
    """Exit 1 (partial), each stack cut to the limit and marked truncated,
    the frames kept equal to the oracle's innermost ones."""
    rc, out, err, reason = run
    if reason:
        return reason
    if procs.sanitizer_report(err):
        return "sanitizer report: %s" % procs.sanitizer_report(err)
    if rc != 1:
        return "exit status %d, expected 1 (partial)" % rc
    report, why = compare.parse_report(out)
    if why:
        return why
    if report.get("complete") is not False:
        return "complete is %s, expected false" % compare.show(report.get("complete"))
    threads = [t for t in report["threads"] if t.get("name") != "corestack-oracle"]
    for got, want in zip(threads, cap.oracle["threads"]):
        frames, expected = got.get("frames", []), want["frames"]
        if len(expected) > limit and not (got.get("truncated") and len(frames) == limit):
            return "thread %s: %d frames, truncated=%s; expected %d and truncated" % (
                compare.show(got.get("name")), len(frames), got.get("truncated"), limit)
        for f, w in zip(frames, expected):
            if (f.get("label"), f.get("lineno")) != (w["label"], w["lineno"]):
                return "thread %s: frame %s, oracle %s" % (
                    compare.show(got.get("name")), compare.show(f.get("label")),
                    compare.show(w["label"]))
    return None


SHARES = procs.SHARES


def check_profile(res, path, target=None):
    """A profile ranks heavy (3x the work) over light, the target is left
    running and not stopped."""
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    if procs.sanitizer_report(res.stderr):
        return "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    try:
        with open(path) as f:
            heavy, light = procs.shares_of(f.read())
    except (OSError, ValueError) as exc:
        return "no readable profile: %s" % exc
    if heavy + light < 50:
        return "only %d samples in heavy or light" % (heavy + light)
    if heavy < 1.5 * light:
        return "heavy %d samples, light %d: heavy does 3x the work" % (heavy, light)
    if target is not None:
        if target.poll() is not None:
            return "the target died during recording (%s)" % target.returncode
        left = stopped_threads(target.pid)
        if left:
            return "threads left stopped: %s" % ", ".join(left)
    return None


def check_speedscope(res, path):
    """A speedscope file whose indexes hold, heavy ranked over light."""
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    try:
        with open(path) as f:
            doc = json.load(f)
        frames = [fr["name"] for fr in doc["shared"]["frames"]]
        heavy = light = 0
        for prof in doc["profiles"]:
            if prof["type"] != "sampled" or len(prof["samples"]) != len(prof["weights"]):
                return "profile %s: samples and weights differ" % prof.get("name")
            if sum(prof["weights"]) != prof["endValue"]:
                return "profile %s: weights do not add up to endValue" % prof.get("name")
            for stack, w in zip(prof["samples"], prof["weights"]):
                names = [frames[i] for i in stack]
                heavy += w if "Object#heavy" in names else 0
                light += w if "Object#light" in names else 0
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        return "not a valid speedscope file: %s" % exc
    if heavy + light < 50 or heavy < 1.5 * light:
        return "heavy %d samples, light %d: heavy does 3x the work" % (heavy, light)
    return None


def check_flamegraph(res, path):
    """A well-formed SVG whose boxes give heavy more samples than light."""
    import xml.etree.ElementTree as ET
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        return "not a well-formed SVG: %s" % exc
    samples = {}
    for title in root.iter("{http://www.w3.org/2000/svg}title"):
        m = re.match(r"(.*) \((\d+) samples\)$", title.text or "")
        if m:
            samples[m.group(1)] = samples.get(m.group(1), 0) + int(m.group(2))
    heavy, light = samples.get("Object#heavy", 0), samples.get("Object#light", 0)
    if heavy + light < 50 or heavy < 1.5 * light:
        return "heavy %d samples, light %d: heavy does 3x the work" % (heavy, light)
    return None


def record_tests(rep, selected, args, prefixes, workdir):
    """corestack record on a program with known time shares."""
    for ruby in args.rubies:
        prefix = prefixes.get(ruby)
        if not isinstance(prefix, str):
            continue
        exe = os.path.join(prefix, "bin", "ruby")
        out = os.path.join(workdir, "profile-%s.folded" % ruby)
        for mode, extra in (("record", []), ("record-nonblocking", ["--nonblocking"])):
            name = "%s/%s" % (ruby, mode)
            if not selected(name):
                continue
            target = subprocess.Popen([exe, SHARES], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                time.sleep(0.5)
                res = subprocess.run([args.corestack, "record", "--pid", str(target.pid),
                                      "--duration", "2", "-o", out] + extra,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     timeout=args.timeout)
                rep.result(name, check_profile(res, out, target))
            except subprocess.TimeoutExpired:
                rep.result(name, "record hung")
            finally:
                target.kill()
                target.wait()
        name = "%s/record-speedscope" % ruby
        if selected(name):
            js = out + ".speedscope.json"
            try:
                res = subprocess.run([args.corestack, "record", "--duration", "20", "--on-cpu",
                                      "--format", "speedscope", "-o", js, "--", exe, SHARES, "1.5"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     timeout=args.timeout)
                rep.result(name, check_speedscope(res, js))
            except subprocess.TimeoutExpired:
                rep.result(name, "record hung")
        name = "%s/record-flamegraph" % ruby
        if selected(name):
            svg = out + ".svg"
            try:
                res = subprocess.run([args.corestack, "record", "--duration", "20",
                                      "--format", "flamegraph", "-o", svg, "--", exe, SHARES,
                                      "1.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, timeout=args.timeout)
                rep.result(name, check_flamegraph(res, svg))
            except subprocess.TimeoutExpired:
                rep.result(name, "record hung")
        contention.contention_test(rep, selected, args.corestack, ruby, exe, args.timeout)
        mn_threads.mn_tests(rep, selected, args.corestack, ruby, exe, workdir, args.timeout)
        record_exits.record_exit_tests(rep, selected, args.corestack, ruby, exe, workdir,
                                       args.timeout)
        traced.traced_tests(rep, selected, args.corestack, ruby, exe, workdir, args.timeout,
                            sys.modules[__name__])
        many_threads.many_threads_tests(rep, selected, args.corestack, ruby, exe, workdir,
                                        args.timeout, sys.modules[__name__])
        name = "%s/record-target-exits" % ruby
        if selected(name):
            started = time.monotonic()
            try:
                res = subprocess.run([args.corestack, "record", "--duration", "20", "-o", out,
                                      "--", exe, SHARES, "1.5"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     timeout=args.timeout)
                took = time.monotonic() - started
                reason = check_profile(res, out)
                if not reason and took > 10:
                    reason = "record went on %.1f s after its target exited" % took
                rep.result(name, reason)
            except subprocess.TimeoutExpired:
                rep.result(name, "record hung after its target exited")
        name = "%s/record-interrupted" % ruby
        if selected(name):
            target = subprocess.Popen([exe, SHARES], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                time.sleep(0.5)
                rec = subprocess.Popen([args.corestack, "record", "--pid", str(target.pid),
                                        "-o", out], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
                time.sleep(2)
                rec.send_signal(signal.SIGINT)
                stdout, stderr = rec.communicate(timeout=args.timeout)
                rep.result(name, check_profile(
                    subprocess.CompletedProcess(rec.args, rec.returncode, stdout, stderr),
                    out, target))
            except subprocess.TimeoutExpired:
                rec.kill()
                rep.result(name, "record did not stop on SIGINT")
            finally:
                target.kill()
                target.wait()


MAX_UNITS_READ = 10   # compile units the layout resolver may index


def layout_tests(rep, selected, args, prefixes):
    """The resolver reads only the compile units layout.def names: a missing
    version-specific item must not turn into a scan of every unit."""
    for ruby in args.rubies:
        name = "%s/layout-units" % ruby
        prefix = prefixes.get(ruby)
        if not selected(name) or not isinstance(prefix, str):
            continue
        libdir = os.path.join(prefix, "lib")
        libs = sorted(f for f in os.listdir(libdir) if re.match(r"libruby\.so\.\d+\.\d+\.\d+$", f))
        module = os.path.join(libdir, libs[0]) if libs else os.path.join(prefix, "bin", "ruby")
        res = subprocess.run([args.corestack, "--layout", module, "--no-cache"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout)
        m = re.search(r"indexed (\d+) of (\d+) compile units", res.stdout)
        if res.returncode != 0 or not m:
            rep.result(name, "corestack --layout exited %d: %s" % (res.returncode, first_line(res.stderr)))
        elif int(m.group(1)) > MAX_UNITS_READ:
            rep.result(name, "indexed %s of %s compile units, more than %d" % (
                m.group(1), m.group(2), MAX_UNITS_READ))
        else:
            rep.result(name, None)


def unit_tests(rep, selected, programs, extra_args, timeout):
    """Each unit test program is one test; its own summary line is shown."""
    for prog in programs:
        name = "unit/" + os.path.basename(prog).replace("test_", "")
        if not selected(name):
            continue
        rc, out, err, reason = procs.run_tool([prog] + extra_args, timeout)
        lines = out.strip().splitlines()
        summary = lines[-1] if lines else "(no output)"
        if reason is None and rc != 0:
            fails = [l for l in lines if l.startswith("FAIL")]
            reason = "exit %d: %s" % (rc, "; ".join(fails[:3]) or summary)
        if reason is None and procs.sanitizer_report(err):
            reason = "sanitizer report: %s" % procs.sanitizer_report(err)
        rep.result(name, reason)
        progress("%s: %s" % (name, summary))


def bad_needs(selected, rubies):
    """(ruby, scenario) cores the selected bad/ tests use."""
    needs = set()
    if any(selected("bad/truncated-%dpct" % p) for p in TRUNCATIONS):
        source = next((r for r in ["3.3-static"] + list(rubies) if r in rubies), None)
        if source:
            needs.add((source, "threads"))
    if (selected("bad/no-debug-info") or selected("bad/build-id-mismatch")) and "3.3-static" in rubies:
        needs.add(("3.3-static", "threads"))
    for r in rubies:
        if selected("%s/limits/max-output" % r) or \
                any(selected("%s/corrupt/%s" % (r, n)) for n in corrupt.test_names()) or \
                any(selected("%s/notes/%s" % (r, n)) for n, _ in thread_notes.PATCHES) or \
                selected("%s/corrupt/native-return-address" % r) or \
                any(selected(n) for n in mutations.test_names(r)) or \
                any(selected(n) for n in stale_pc.test_names(r)) or \
                selected(frame_reuse.test_name(r)):
            needs.add((r, "threads"))
    for r in rubies:
        if any(selected(n) for n in hostile.test_names(r)):
            needs.add((r, "threads"))
    if any(selected(n) for n in native.DEBUGINFO_TESTS) and "3.3-static" in rubies:
        needs.add(("3.3-static", "threads"))
    needs |= {(r, "crash") for r in rubies if selected("%s/native/rb-bug" % r)}
    return needs


def patient_result(future):
    """future.result(), waking up often: signals only reach Python code in
    the main thread, and a worker thread may be the one that caught them."""
    while not future.done():
        concurrent.futures.wait([future], timeout=0.2)
    return future.result()


# --- main ----------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corestack", required=True, help="the corestack executable under test")
    ap.add_argument("--rubies", default=",".join(RUBIES),
                    help="fixture Rubies, comma-separated (default %(default)s)")
    ap.add_argument("--ruby", action="append", default=[], metavar="NAME=PREFIX",
                    help="also run every test on a Ruby already installed under PREFIX "
                    "(with debug info), named NAME in the test names; NAME ending in "
                    "-yjit runs it with --yjit (repeatable)")
    ap.add_argument("-k", dest="keys", action="append", default=[], metavar="SUBSTRING",
                    help="only tests whose name contains SUBSTRING (repeatable)")
    ap.add_argument("--keep", metavar="DIR", help="keep cores and oracles in DIR")
    ap.add_argument("--mutations", type=int, default=mutations.SEEDED, metavar="N",
                    help="seeded mutations per class and Ruby (default %(default)s; "
                         "tests/mutate.py runs 1,000)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per corestack run (default 60)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel corestack runs")
    ap.add_argument("--unit", default="", help="unit test programs, space-separated")
    ap.add_argument("--frame-reuse-check", metavar="PROGRAM",
                    help="build/check-frame-reuse, for the RUBY/frame-reuse tests")
    ap.add_argument("--unit-arg", action="append", default=[],
                    help="argument passed to every unit test program")
    ap.add_argument("--gdbext", default=os.path.join(procs.ROOT, "build", "gdbext"),
                    help="directory of the gdb/lldb module and loaders (default %(default)s)")
    args = ap.parse_args()
    # SIGTERM unwinds like ^C: scenario processes killed, temporary cores removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    args.rubies = [r.strip() for r in args.rubies.split(",") if r.strip()]
    for r in args.rubies:
        if r not in RUBIES:
            ap.error("unknown Ruby %r (known: %s)" % (r, ", ".join(RUBIES)))
    installed = {}   # NAME -> PREFIX of --ruby
    for spec in args.ruby:
        name, _, prefix = spec.partition("=")
        if not name or not os.path.isfile(os.path.join(prefix, "bin", "ruby")):
            ap.error("--ruby %r: expected NAME=PREFIX with PREFIX/bin/ruby" % spec)
        installed[name] = os.path.abspath(prefix)
        args.rubies.append(name)
    if os.sep in args.corestack:
        args.corestack = os.path.abspath(args.corestack)
    else:
        args.corestack = shutil.which(args.corestack) or args.corestack

    selected = lambda name: not args.keys or any(k in name for k in args.keys)
    scenarios = scenario_names()
    wanted_bad = bad_needs(selected, args.rubies)
    plan = {r: [s for s in scenarios
                if any(selected(t) for t in scenario_tests(r, s)) or (r, s) in wanted_bad]
            for r in args.rubies}
    rep = Reporter()
    for r in args.rubies:   # scenarios a fixture Ruby lacks the feature for
        for s in list(plan[r]):
            why = requires.missing(os.path.join(procs.SCENARIOS, s + ".rb"), ruby_spec(r)[0])
            if why:
                plan[r].remove(s)
                for t in scenario_tests(r, s):
                    if selected(t):
                        rep.skip(t, why)
    build_anyway = set()    # Rubies whose executable a bad/ test uses
    if selected("bad/not-a-core") and args.rubies and not any(plan.values()):
        build_anyway.add(args.rubies[0])
    if selected("bad/build-id-mismatch") and "3.1" in args.rubies:
        build_anyway.add("3.1")
    for r in args.rubies:
        if any(selected(n) for n in native.native_test_names(r) + nontfile.test_names(r)
               + crash.test_names(r)):
            build_anyway.add(r)
    if any(selected(n) for n in native.REMOTE_TESTS) and native.REMOTE_RUBY in args.rubies:
        build_anyway.add(native.REMOTE_RUBY)
    for r in args.rubies:   # tests on a fixture Ruby without its scenarios
        if any(selected("%s/%s" % (r, t)) for t in (
                "layout-units", "running-jit-code", "record", "record-nonblocking", "record-target-exits",
                "record-speedscope", "record-flamegraph", "record-contention",
                "record-unreaped-exit", "record-unreaped-exit-nonblocking",
                "mn-threads/oracle", "mn-threads/native", "mn-threads/native-core",
                "record-interrupted")) or \
                any(selected(n) for n in traced.test_names(r) + many_threads.test_names(r)):
            build_anyway.add(r)
        if gdbext.wanted(selected, [r], scenarios):
            build_anyway.add(r)

    if args.keep:
        workdir = os.path.abspath(args.keep)
        os.makedirs(workdir, exist_ok=True)
    else:
        workdir = tempfile.mkdtemp(prefix="corestack-oracle-")
    # The fixture Rubies stay where they are; corestack's layout cache goes
    # to the work directory, so every run starts cold and leaves nothing.
    os.environ.setdefault("CORESTACK_CACHE", procs.fixture_cache())
    os.environ["XDG_CACHE_HOME"] = os.path.join(workdir, "xdg-cache")
    os.environ.pop("DEBUGINFOD_URLS", None)   # only the local server of debuginfo/debuginfod
    started = time.monotonic()
    unit_tests(rep, selected, args.unit.split(), args.unit_arg, args.timeout)
    prefixes, captures = {}, {}
    try:
        for ruby in args.rubies:
            if not plan[ruby] and ruby not in build_anyway:
                continue
            t0 = time.monotonic()
            progress("%s: fixture Ruby" % ruby)
            try:
                prefixes[ruby] = installed.get(ruby) or \
                    procs.build_ruby(*ruby_spec(ruby), timeout=BUILD_TIMEOUT)
            except procs.Unavailable as exc:   # e.g. YJIT without rustc
                prefixes[ruby] = exc
                rep.skip("%s/build" % ruby, str(exc))
                continue
            except procs.Failure as exc:
                prefixes[ruby] = exc
                rep.result("%s/build" % ruby, str(exc))
                continue
            if not plan[ruby]:
                continue
            exe = os.path.join(prefixes[ruby], "bin", "ruby")
            rwork = os.path.join(workdir, ruby)
            results = capture_all(ruby, exe, plan[ruby], rwork, bool(args.keep),
                                  args.corestack, args.timeout)
            for scen, cap in results.items():
                captures[(ruby, scen)] = cap
            t1 = time.monotonic()
            progress("%s: cores taken in %.1f s" % (ruby, t1 - t0))
            with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
                futures = {scen: pool.submit(corestack_runs, args.corestack, cap, args.timeout)
                           for scen, cap in results.items() if isinstance(cap, Capture)}
                try:
                    for scen in plan[ruby]:
                        runs = patient_result(futures[scen]) if scen in futures else None
                        report_scenario(rep, selected, ruby, scen, results[scen], runs)
                        fibers.report(rep, selected, ruby, scen, results[scen], runs,
                                      args.corestack, args.timeout, json_report)
                except BaseException:   # ^C or SIGTERM: do not wait for the pool
                    for future in futures.values():
                        future.cancel()
                    procs.kill_live()
                    raise
            progress("%s: corestack checked in %.1f s" % (ruby, time.monotonic() - t1))
            if not args.keep:   # gcore writes every mapping out: free the disk early
                for scen, cap in results.items():
                    if isinstance(cap, Capture) and (ruby, scen) not in wanted_bad \
                            and (ruby, scen) != ("3.3-static", "threads"):
                        os.unlink(cap.core)
        bad_tests(rep, selected, args, prefixes, captures, workdir)
        cli.cli_tests(rep, selected, args.corestack, procs.run_tool, procs.sanitizer_report,
                      args.timeout)
        record_exits.own_child_test(rep, selected, args.corestack, args.timeout)
        permissions.permission_tests(rep, selected, args.corestack, check_unusable,
                                     procs.run_tool, args.timeout)
        for ruby in args.rubies:
            cap = captures.get((ruby, "threads"))
            if isinstance(cap, Capture):
                corrupt.corrupt_tests(rep, selected, ruby, cap, args.corestack, args.timeout)
                thread_notes.notes_tests(rep, selected, ruby, cap, args.corestack, args.timeout)
                native_cut.native_cut_test(rep, selected, ruby, cap, args.corestack, args.timeout)
                mutations.mutation_tests(rep, selected, ruby, cap, args.corestack, args.timeout,
                                         args.mutations)
                stale_pc.stale_pc_tests(rep, selected, ruby, cap, args.corestack, args.timeout)
                frame_reuse.frame_reuse_test(rep, selected, ruby, cap, args.frame_reuse_check,
                                             args.timeout)
                hostile.hostile_tests(rep, selected, ruby, cap, args.corestack, args.timeout,
                                      sys.modules[__name__])
        debuginfo_tests(rep, selected, args, captures, workdir)
        layout_tests(rep, selected, args, prefixes)
        yjit.running_test(rep, selected, args.corestack, prefixes, args.timeout)
        record_tests(rep, selected, args, prefixes, workdir)
        native.remote_tests(rep, selected, args, prefixes, workdir, sys.modules[__name__])
        nontfile.nontfile_tests(rep, selected, args, prefixes, workdir, sys.modules[__name__])
        native.debuginfo_tests(rep, selected, args, captures, workdir, sys.modules[__name__])
        native.native_tests(rep, selected, args, prefixes, workdir, captures)
        crash.crash_tests(rep, selected, args, prefixes, workdir)
        gdbext.gdbext_tests(rep, selected, args, prefixes, scenarios, workdir)
    finally:
        if args.keep:
            progress("cores and oracles kept in %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    progress("finished in %.1f s" % (time.monotonic() - started))
    total = rep.passed + rep.failed
    print("%d passed, %d failed" % (rep.passed, rep.failed), flush=True)
    if total == 0:
        progress("no test ran (check -k and --rubies)")
        return 1
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
