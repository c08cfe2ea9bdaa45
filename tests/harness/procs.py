"""Processes: fixture Rubies, scenarios, cores, and running corestack."""

import contextlib
import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_RUBY = os.path.join(ROOT, "fixtures", "build-ruby.sh")
SCENARIOS = os.path.join(ROOT, "fixtures", "scenarios")
CORE_PATTERN = "/proc/sys/kernel/core_pattern"

SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "MemorySanitizer", "ThreadSanitizer", "runtime error:", "SUMMARY: ")


class Failure(Exception):
    """A setup step failed; the message says why."""


class Unavailable(Failure):
    """A fixture this machine cannot build (no rustc for YJIT): skipped."""


def progress(msg):
    print("run.py: " + msg, file=sys.stderr, flush=True)


@contextlib.contextmanager
def started(argv):
    """argv running without stdio, given half a second to start; killed
    and reaped when the block ends."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        yield proc
    finally:
        proc.kill()
        proc.wait()


def quiet_env(extra=None):
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)   # gdb must not go to the network
    env["LC_ALL"] = "C"
    env.update(extra or {})
    return env


def tail(path, lines=5):
    try:
        with open(path, errors="replace") as f:
            text = f.read().strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def fixture_cache():
    """Where fixtures/build-ruby.sh keeps the fixture Rubies and their
    sources, found the way it finds it."""
    return os.environ.get("CORESTACK_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "corestack")


# The sampler's fixture: heavy does three times the work of light.
SHARES = os.path.join(ROOT, "fixtures", "profile", "shares.rb")


def shares_of(collapsed):
    """Collapsed stacks -> (samples through Object#heavy, through Object#light)."""
    heavy = light = 0
    for line in collapsed.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        heavy += int(n) if "Object#heavy" in frames else 0
        light += int(n) if "Object#light" in frames else 0
    return heavy, light


def profile_has_samples(path):
    """None when the collapsed profile at path counts a sample, else why not."""
    try:
        with open(path) as f:
            samples = sum(int(l.rsplit(" ", 1)[1]) for l in f if l.strip())
    except (OSError, ValueError, IndexError) as exc:
        return "profile unreadable: %s" % exc
    return None if samples > 0 else "the profile has no sample"


# build-ruby.sh's exit status when the machine lacks what the fixture needs
# (rustc for YJIT): the tests say they skipped it, and why.
BUILD_UNAVAILABLE = 3


def build_ruby(version, variant, timeout):
    """fixtures/build-ruby.sh -> install prefix (builds on first use)."""
    try:
        res = subprocess.run([BUILD_RUBY, version, variant], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure("build-ruby.sh %s %s took over %d s" % (version, variant, timeout))
    if res.returncode == BUILD_UNAVAILABLE:
        raise Unavailable("build-ruby.sh %s %s cannot build it here: %s" % (
            version, variant, " | ".join(res.stderr.strip().splitlines()[-2:])))
    if res.returncode != 0:
        raise Failure("build-ruby.sh %s %s exited %d: %s" % (
            version, variant, res.returncode, " | ".join(res.stderr.strip().splitlines()[-5:])))
    prefix = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    ruby = os.path.join(prefix, "bin", "ruby")
    if not os.access(ruby, os.X_OK):
        raise Failure("build-ruby.sh %s %s printed %r, which has no bin/ruby" % (version, variant, prefix))
    return prefix


def ruby_abi_version(ruby_exe):
    """The ABI version a development Ruby wants its extensions to name
    (the "+N" of RbConfig's ruby_version, as in "4.1.0+4"); 0 for a
    release, which does not ask."""
    res = subprocess.run([ruby_exe, "-e", "print RbConfig::CONFIG['ruby_version']"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=60)
    if res.returncode != 0:
        raise Failure("%s: no RbConfig ruby_version: %s" % (ruby_exe, res.stdout.strip()[-300:]))
    _, plus, abi = res.stdout.strip().partition("+")
    return int(abi) if plus and abi.isdigit() else 0


def build_extension(source, outdir, opt="-O1", ruby_exe=None):
    """A fixture C extension (source, a .c that declares the few C API
    functions it calls itself) built as OUTDIR/NAME.so for the Ruby
    ruby_exe; its path. Each defines ruby_abi_version(), which a
    development Ruby calls before it loads an extension: it returns the
    Ruby's own ABI version, passed as FIXTURE_RUBY_ABI_VERSION."""
    os.makedirs(outdir, exist_ok=True)
    name = os.path.splitext(os.path.basename(source))[0] + ".so"
    so = os.path.join(outdir, name)
    abi = ruby_abi_version(ruby_exe) if ruby_exe else 0
    res = subprocess.run(["cc", "-shared", "-fPIC", "-g", opt, "-pthread",
                          "-DFIXTURE_RUBY_ABI_VERSION=%dULL" % abi, source, "-o", so],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if res.returncode != 0:
        raise Failure("building %s: %s" % (name, res.stdout.strip()[-300:]))
    return so


def built_prefix(rep, prefixes, ruby, names):
    """The install prefix of a fixture Ruby, or None after saying SKIP for
    each of names when it is not built."""
    prefix = prefixes.get(ruby)
    if isinstance(prefix, str):
        return prefix
    for n in names:
        rep.skip(n, "the %s fixture Ruby is not built" % ruby)
    return None


def allow_cores():
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def no_cores():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# Scenarios run by a path relative to their working directory, through a
# link there to their folder ("scenarios/deep.rb"): Ruby then reports that
# path as Location#path, and the file's real one as #absolute_path.
RELATIVE_SCRIPTS = {"deep.rb"}


class Scenario:
    """One running scenario program."""

    def __init__(self, ruby, script, workdir, crash, env=None, args=(), relative=False):
        self.script, self.workdir, self.crash = script, workdir, crash
        shutil.rmtree(workdir, ignore_errors=True)   # no stale oracle or core (--keep)
        os.makedirs(workdir)
        self.oracle_path = os.path.join(workdir, "oracle.json")
        self.stdout_path = os.path.join(workdir, "stdout.txt")
        self.stderr_path = os.path.join(workdir, "stderr.txt")
        self.status = None   # raw wait status once reaped
        run = script
        if relative or os.path.basename(script) in RELATIVE_SCRIPTS:
            os.symlink(os.path.dirname(script), os.path.join(workdir, "scenarios"))
            run = os.path.join("scenarios", os.path.basename(script))
        self.shown = run   # the script's path as Ruby reports it
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [ruby, run] + list(args), cwd=workdir, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                env=quiet_env(dict(env or {}, CORESTACK_ORACLE=self.oracle_path)),
                preexec_fn=allow_cores if crash else no_cores)
        self.pid = self.proc.pid

    def poll(self):
        """Reap without blocking; True once the process is gone."""
        if self.status is not None:
            return True
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.status = status
        self.proc.returncode = (os.WEXITSTATUS(status) if os.WIFEXITED(status)
                                else -os.WTERMSIG(status))
        return True

    def describe_exit(self):
        if self.status is None:
            return "still running"
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            return "killed by %s%s" % (signal.Signals(sig).name,
                                       " (core dumped)" if os.WCOREDUMP(self.status) else "")
        return "exited %d" % os.WEXITSTATUS(self.status)

    def wait_oracle(self, timeout):
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.oracle_path):
            if self.poll():
                raise Failure("%s %s before writing its oracle; stderr: %s" % (
                    os.path.basename(self.script), self.describe_exit(), tail(self.stderr_path)))
            if time.monotonic() > deadline:
                raise Failure("%s wrote no oracle within %d s; stderr: %s" % (
                    os.path.basename(self.script), timeout, tail(self.stderr_path)))
            time.sleep(0.02)

    def wait_until(self, ready, what, timeout):
        """Poll ready() until it is true; a Failure naming what when the
        program ends first or timeout passes."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.poll():
                raise Failure("%s %s before %s; stderr: %s" % (
                    os.path.basename(self.script), self.describe_exit(), what,
                    tail(self.stderr_path)))
            if time.monotonic() > deadline:
                raise Failure("%s not %s within %d s; stderr: %s" % (
                    os.path.basename(self.script), what, timeout, tail(self.stderr_path)))
            time.sleep(0.02)

    def wait_exit(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.poll():
            if time.monotonic() > deadline:
                raise Failure("%s still running %d s after its oracle was written; stderr: %s" % (
                    os.path.basename(self.script), timeout, tail(self.stderr_path)))
            time.sleep(0.02)

    def kill(self):
        if self.poll():
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, self.status = os.waitpid(self.pid, 0)
        self.proc.returncode = -signal.SIGKILL


def gcore(pid, prefix, timeout):
    """Core of a live process with gdb's gcore -> core path."""
    core = "%s.%d" % (prefix, pid)
    try:
        res = subprocess.run(["gcore", "-o", prefix, str(pid)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=timeout, env=quiet_env())
    except subprocess.TimeoutExpired:
        raise Failure("gcore of pid %d took over %d s" % (pid, timeout))
    except OSError as exc:
        raise Failure("cannot run gcore: %s" % exc)
    if res.returncode != 0 or not os.path.isfile(core) or os.path.getsize(core) == 0:
        raise Failure("gcore of pid %d exited %d without writing %s: %s" % (
            pid, res.returncode, core, " | ".join(res.stdout.strip().splitlines()[-3:])))
    return core


def stopped_threads(pid):
    """Threads of pid in a stopped or traced state ('T', 't')."""
    stopped = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in ("T", "t"):
            stopped.append("%s (%s)" % (tid, state))
    return stopped


def left_running(target):
    """None when target (a Popen) still runs with no thread stopped, else
    why not."""
    if target.poll() is not None:
        return "the target died (%s)" % target.returncode
    left = stopped_threads(target.pid)
    return "threads left stopped: %s" % ", ".join(left) if left else None


def dig_holes(path):
    """Make a gcore'd core sparse (gcore writes never-touched reservations,
    such as malloc arenas and Ruby 3.3's shape list, as real zeros)."""
    if shutil.which("fallocate"):
        subprocess.run(["fallocate", "--dig-holes", path], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


def kernel_core(scenario):
    """After a crash: the core the kernel wrote into the scenario's cwd."""
    candidates = [os.path.join(scenario.workdir, "core.%d" % scenario.pid),
                  os.path.join(scenario.workdir, "core")]
    candidates += sorted(glob.glob(os.path.join(scenario.workdir, "core*")))
    for path in candidates:
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            return path
    try:
        with open(CORE_PATTERN) as f:
            pattern = f.read().strip()
    except OSError:
        pattern = "(unreadable)"
    raise Failure("%s %s but no core file appeared in %s; %s is %r (the harness needs a plain "
                  "file name such as 'core' or 'core.%%p', and raised RLIMIT_CORE)" % (
                      os.path.basename(scenario.script), scenario.describe_exit(),
                      scenario.workdir, CORE_PATTERN, pattern))


_live = set()              # corestack runs under way (process group leaders)
_live_lock = threading.Lock()
_stopping = False


def kill_live():
    """Interrupted: end every corestack run still going, start no more."""
    global _stopping
    with _live_lock:
        _stopping = True
        for pid in _live:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_tool(argv, timeout):
    """-> (returncode, stdout, stderr, None) or (None, '', '', reason)."""
    start = time.monotonic()
    with _live_lock:
        if _stopping:
            return None, "", "", "interrupted"
    try:
        # Own process group, so a timeout takes down anything it started too.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return None, "", "", "cannot run %s: %s" % (argv[0], exc)
    with _live_lock:
        _live.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return None, "", "", "timed out after %d s (hang): %s" % (timeout, " ".join(argv))
    finally:
        with _live_lock:
            _live.discard(proc.pid)
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    res = proc
    if res.returncode < 0:
        return None, out, err, "killed by %s after %.1f s; stderr: %s" % (
            signal.Signals(-res.returncode).name, time.monotonic() - start,
            " | ".join(err.strip().splitlines()[-3:]))
    return res.returncode, out, err, None


def descendants(pid):
    """pid and every process below it, parents first."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(sorted(children.get(p, [])))
    return out


def where_stuck(pid):
    """What a hung process tree is doing, for the log: each process's
    threads with their state and kernel wait channel, and the user stacks
    of the top process (eu-stack; the others are traced by it)."""
    lines = []
    for p in descendants(pid):
        try:
            with open("/proc/%d/cmdline" % p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        lines.append("process %d: %s" % (p, cmd[:200]))
        for tid in sorted(os.listdir("/proc/%d/task" % p), key=int):
            try:
                with open("/proc/%d/task/%s/stat" % (p, tid)) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                with open("/proc/%d/task/%s/wchan" % (p, tid)) as f:
                    wchan = f.read().strip()
            except (OSError, IndexError):
                continue
            lines.append("  thread %s state %s wchan %s" % (tid, state, wchan or "-"))
    if shutil.which("eu-stack"):
        try:
            res = subprocess.run(["eu-stack", "-p", str(pid)], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, errors="replace", timeout=30)
            lines.append(res.stdout)
        except subprocess.TimeoutExpired:
            lines.append("eu-stack -p %d did not end within 30 s" % pid)
    return "\n".join(lines)


def run_debugger(argv, env, cwd, timeout, log_path, outputs=()):
    """A debugger in batch mode on a program it starts, outputs (files the
    run writes) removed before it -> (stdout, stderr).

    gdb and lldb themselves now and then hang at a stop (about one run in
    several thousand of lldb 14 on a busy machine, never reproduced alone):
    what the tree was doing then goes to log_path.hang1, and the same run is
    made once more. A second hang is a failure that names both logs."""
    for attempt in (1, 2):
        for path in outputs:
            if os.path.exists(path):
                os.unlink(path)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace",
                                env=env, cwd=cwd, start_new_session=True)
        try:
            return proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            where = where_stuck(proc.pid)
            for p in reversed(descendants(proc.pid)):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            out, err = proc.communicate()
            hang_log = "%s.hang%d" % (log_path, attempt)
            with open(hang_log, "w") as f:
                f.write("%s\n--- stdout\n%s\n--- stderr\n%s\n--- where\n%s\n" % (
                    " ".join(argv), out, err, where))
            if attempt == 2:
                raise Failure("%s hung twice for %d s (%s.hang1, %s): last said: %s" % (
                    os.path.basename(argv[0]), timeout, log_path, hang_log,
                    " | ".join((out + err).strip().splitlines()[-3:])))
            progress("%s hung for %d s, running it once more (%s)" % (
                os.path.basename(argv[0]), timeout, hang_log))
    raise AssertionError("unreachable")


def sanitizer_report(stderr):
    """The sanitizer's first line naming what went wrong and, for a report
    with a stack, its first frames: a CI log shows only this line."""
    for mark in SANITIZER_MARKS:
        if mark in stderr:
            lines = stderr.splitlines()
            # "AddressSanitizer:DEADLYSIGNAL" comes before the ERROR line
            line = next((l for l in lines if mark in l and "ERROR" in l),
                        next((l for l in lines if mark in l), mark))
            frames = [l.strip() for l in lines if re.match(r"\s+#\d+ ", l)][:8]
            return " | ".join([line.strip()] + frames)
    return None
