"""corestack top in a terminal: a detached tmux session on a private server,
read with capture-pane, driven with send-keys. The target is
fixtures/profile/hot.rb, which prints where Ruby places its hot line
(Object#hot, nearly all of its time) before it loops.

    RUBY/top          top --pid (paused): the first row is the method and
                      location Ruby printed, with a self share over 80 %; t
                      shows one thread with it still first; q ends top with
                      exit 0, the alternate screen left and the terminal's
                      echo and line mode back; the target runs on, no thread
                      of it stopped
    RUBY/top-sigterm  top --pid --nonblocking on the same target, ended by
                      SIGTERM once it shows the method: exit 0, the terminal
                      given back, the target running
    RUBY/top-target-exits  top --pid --nonblocking, the target killed once it
                      shows the method: top ends by itself, exit 0, the
                      terminal given back, it says the process exited, and
                      its last table stays on the screen: the header says
                      "(exited)" and the method is still in the first row
    RUBY/top-on-cpu   top --pid --nonblocking --on-cpu (the state filter
                      record has, parsed by the same code) on hot.rb run with
                      two idle threads (Object#idle_pop in Thread::Queue#pop,
                      Object#idle_sleep in sleep): the method Ruby printed
                      first, as its thread runs, and no row of the idle
                      threads' methods, nor a thread count above 1; q ends top
                      cleanly
    RUBY/top-state    top --pid --nonblocking --state blocked on that target:
                      rows for both idle methods, none for the hot one (so the
                      idle threads are there to be left out); q ends top
                      cleanly
    RUBY/top-narrow   top --pid --nonblocking in a window 60 columns wide:
                      the first row cut at the window's edge, ending in "…",
                      what it shows before the mark a prefix of the hot
                      method and location Ruby printed
    RUBY/top-subprocesses  top --pid --nonblocking --subprocesses on
                      fixtures/profile/forks.rb (the parent, two forked
                      workers, one forked a grandchild, each spinning in a
                      method of its own, which the program writes down): a
                      row for each of the four methods, and the header
                      counting the three descendants; q ends top cleanly,
                      the program running on

The first four and top-narrow run at once on one target (only RUBY/top
stops it), top-on-cpu and top-state on the target with idle threads.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from . import procs
from .subprocesses import FORKS, read_truth

HOT = os.path.join(procs.ROOT, "fixtures", "profile", "hot.rb")
TESTS = ("top", "top-sigterm", "top-target-exits", "top-on-cpu", "top-state", "top-narrow",
         "top-subprocesses")
IDLE = ("Object#idle_pop", "Object#idle_sleep")
ROW = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\S+) \((.*)\)\s*$")
# tmux takes a session name that begins another's as ambiguous: none does
SESSION = {"top": "quit", "top-sigterm": "sigterm", "top-target-exits": "exits",
           "top-on-cpu": "oncpu", "top-state": "state", "top-narrow": "narrow",
           "top-subprocesses": "forks"}
NARROW = 60  # columns of RUBY/top-narrow's window
WAIT = 15   # seconds for top to show the method, or to end


def test_names(ruby):
    return ["%s/%s" % (ruby, t) for t in TESTS]


class Tmux:
    """One tmux server of our own (-L), so no user's session is touched."""

    def __init__(self, work):
        self.socket = "corestack-top-%d" % os.getpid()
        self.work = work

    def run(self, *args):
        # -u: UTF-8 whatever the locale, so that "…" reads back as itself
        return subprocess.run(["tmux", "-u", "-L", self.socket, "-f", "/dev/null"] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=10)

    def start(self, name, argv, width=250):
        """argv in a window of width columns and 40 rows; its exit status,
        then `stty -a` of the terminal it leaves, go to files; the pane
        stays open."""
        files = {k: os.path.join(self.work, "%s.%s" % (name, k)) for k in ("rc", "stty", "err")}
        for path in files.values():
            if os.path.exists(path):
                os.unlink(path)
        cmd = "%s 2>%s; echo $? >%s.tmp; stty -a >%s; mv %s.tmp %s; sleep 600" % (
            " ".join(argv), files["err"], files["rc"], files["stty"], files["rc"], files["rc"])
        res = self.run("new-session", "-d", "-s", name, "-x", str(width), "-y", "40", cmd)
        if res.returncode != 0:
            raise procs.Failure("tmux new-session: %s" % res.stderr.strip())
        return files

    def screen(self, name):
        return self.run("capture-pane", "-p", "-t", name).stdout

    def value(self, name, fmt):
        return self.run("display-message", "-p", "-t", name, fmt).stdout.strip()

    def kill(self):
        self.run("kill-server")


def first_row(screen):
    """(self %, function, location) of the table's first row, or None."""
    lines = screen.split("\n")
    for i, line in enumerate(lines):
        if "%SELF" in line and i + 1 < len(lines):
            m = ROW.match(lines[i + 1])
            return (float(m.group(1)), m.group(7), m.group(8)) if m else None
    return None


def wait_for_hot(tmux, name, want, files):
    """None once the first row is want's method at its line with a high
    self share, else why not."""
    deadline = time.monotonic() + WAIT
    row = screen = None
    while time.monotonic() < deadline:
        screen = tmux.screen(name)
        row = first_row(screen)
        if row and row[1] == want[1] and row[2] == want[0] and row[0] >= 80:
            return None
        if os.path.exists(files["rc"]):
            return "top ended early: %s" % procs.tail(files["err"])
        time.sleep(0.3)
    return "after %d s the first row is %s, expected %s at %s with self over 80%%; screen: %s" % (
        WAIT, row, want[1], want[0], " | ".join(l for l in (screen or "").split("\n") if l)[:400])


def functions(screen):
    """The FUNCTION column of every row of the table."""
    return [m.group(7) for m in map(ROW.match, screen.split("\n")) if m]


def wait_for_rows(tmux, name, files, want, absent):
    """None once the table has a row for each of want and for none of
    absent, else why not."""
    deadline = time.monotonic() + WAIT
    rows = screen = None
    while time.monotonic() < deadline:
        screen = tmux.screen(name)
        rows = functions(screen)
        if all(f in rows for f in want) and not any(f in rows for f in absent):
            return None
        if os.path.exists(files["rc"]):
            return "top ended early: %s" % procs.tail(files["err"])
        time.sleep(0.3)
    return "after %d s the rows are %s: expected %s, and none of %s; screen: %s" % (
        WAIT, rows, want, absent, " | ".join(l for l in (screen or "").split("\n") if l)[:400])


def wait_for_cut(tmux, name, want, files):
    """None once the first row is cut at the window's edge with a mark,
    the text before it a prefix of want's method and location."""
    full = "%s (%s)" % (want[1], want[0])
    deadline = time.monotonic() + WAIT
    row = None
    while time.monotonic() < deadline:
        lines = tmux.screen(name).split("\n")
        heads = [i for i, l in enumerate(lines) if "%SELF" in l]
        row = lines[heads[0] + 1].rstrip() if heads and heads[0] + 1 < len(lines) else None
        m = re.match(r"^\s*[\d.]+%\s+[\d.]+%\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+(.*)$", row or "")
        if m and len(row) == NARROW and row.endswith("\u2026") and \
                full.startswith(m.group(1)[:-1]) and len(m.group(1)) > 1:
            return None
        if os.path.exists(files["rc"]):
            return "top ended early: %s" % procs.tail(files["err"])
        time.sleep(0.3)
    return "after %d s the first row is %s, expected %d columns ending in the mark, a prefix " \
        "of %s" % (WAIT, row and repr(row), NARROW, full)


def subprocess_tests(rep, selected, corestack, ruby, exe, tmux, result):
    """RUBY/top-subprocesses on forks.rb."""
    name = "%s/top-subprocesses" % ruby
    if not selected(name):
        return
    truth = os.path.join(tmux.work, "forks.truth")
    target = subprocess.Popen([exe, FORKS, "30", truth], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and (
                not os.path.exists(truth) or len(read_truth(truth)) < 4):
            time.sleep(0.1)
        methods = sorted("Object#%s" % m for m in read_truth(truth).values()) \
            if os.path.exists(truth) else []
        if len(methods) < 4:
            result(name, "forks.rb wrote %s, expected 4 processes" % methods)
            return
        files = tmux.start(SESSION["top-subprocesses"],
                           [corestack, "top", "--pid", str(target.pid), "--nonblocking",
                            "--subprocesses"])
        session = SESSION["top-subprocesses"]
        why = wait_for_rows(tmux, session, files, methods, [])
        if not why and "and %d descendants" % (len(methods) - 1) not in tmux.screen(session):
            why = "the header does not count %d descendants: %s" % (
                len(methods) - 1, tmux.screen(session).split("\n")[:1])
        tmux.run("send-keys", "-t", session, "q")
        result(name, why or ended(tmux, session, files, target))
    finally:
        target.kill()
        target.wait()


def idle_tests(rep, selected, corestack, ruby, exe, tmux, result):
    """RUBY/top-on-cpu and RUBY/top-state on hot.rb with idle threads."""
    target = subprocess.Popen([exe, HOT, "idle"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        path, _, method = target.stdout.readline().strip().partition(" ")
        top = [corestack, "top", "--pid", str(target.pid), "--nonblocking"]
        sessions = {}
        for test, extra in (("top-on-cpu", ["--on-cpu"]), ("top-state", ["--state", "blocked"])):
            if selected("%s/%s" % (ruby, test)):
                sessions[test] = tmux.start(SESSION[test], top + extra)
        if "top-on-cpu" in sessions:
            name, files = SESSION["top-on-cpu"], sessions["top-on-cpu"]
            why = wait_for_hot(tmux, name, (path, method), files) or wait_for_rows(
                tmux, name, files, [method], IDLE + ("Thread::Queue#pop", "Kernel#sleep"))
            if not why and "threads: all (1)" not in tmux.screen(name):
                why = "not one thread counted: %s" % tmux.screen(name).split("\n")[2:3]
            tmux.run("send-keys", "-t", name, "q")
            result("%s/top-on-cpu" % ruby, why or ended(tmux, name, files, target))
        if "top-state" in sessions:
            name, files = SESSION["top-state"], sessions["top-state"]
            why = wait_for_rows(tmux, name, files, IDLE, [method])
            tmux.run("send-keys", "-t", name, "q")
            result("%s/top-state" % ruby, why or ended(tmux, name, files, target))
    finally:
        target.kill()
        target.wait()


def ended(tmux, name, files, target):
    """None when top exited 0 with the terminal given back and the target
    (unless None) running, unstopped; else why not."""
    deadline = time.monotonic() + WAIT
    while not os.path.exists(files["rc"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not os.path.exists(files["rc"]):
        return "top did not end within %d s" % WAIT
    with open(files["rc"]) as f:
        rc = f.read().strip()
    with open(files["err"], errors="replace") as f:
        err = f.read()
    if rc != "0":
        return "exit %s: %s" % (rc, err.strip()[:300])
    if procs.sanitizer_report(err):
        return "sanitizer report: %s" % procs.sanitizer_report(err)
    if tmux.value(name, "#{alternate_on}") != "0":
        return "the alternate screen is still on"
    with open(files["stty"]) as f:
        modes = f.read().split()
    lost = [m for m in ("icanon", "echo", "isig") if m not in modes]
    if lost:
        return "terminal modes not restored: %s off" % ", ".join(lost)
    return procs.left_running(target) if target is not None else None


def top_pid(tmux, name):
    """The pid of top: the child of the pane's shell."""
    shell = tmux.value(name, "#{pane_pid}")
    try:
        with open("/proc/%s/task/%s/children" % (shell, shell)) as f:
            children = f.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def names(ctx):
    return [n for r in ctx.rubies for n in test_names(r)]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.any_selected(test_names(r))}


def run_tests(ctx):
    for ruby in ctx.rubies:
        if ctx.exe(ruby):
            ruby_tests(ctx, ruby, ctx.exe(ruby))


def ruby_tests(ctx, ruby, exe):
    rep, selected, corestack = ctx.rep, ctx.selected, ctx.corestack
    names = test_names(ruby)
    if not any(selected(n) for n in names):
        return
    if not shutil.which("tmux"):
        for n in names:
            if selected(n):
                rep.result(n, "tmux is not installed (.ci/install-deps installs it)")
        return
    work = tempfile.mkdtemp(prefix="corestack-top-")
    tmux = Tmux(work)
    target = subprocess.Popen([exe, HOT], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    done = set()

    def result(n, why):
        done.add(n)
        rep.result(n, why)
    try:
        path, _, method = target.stdout.readline().strip().partition(" ")
        want = (path, method)
        top = [corestack, "top", "--pid", str(target.pid)]
        # All three watch the one target at once: only the first stops it.
        sessions = {}
        for test, extra in (("top", []), ("top-sigterm", ["--nonblocking"]),
                            ("top-target-exits", ["--nonblocking"]),
                            ("top-narrow", ["--nonblocking"])):
            if selected("%s/%s" % (ruby, test)):
                sessions[test] = tmux.start(SESSION[test], top + extra,
                                            NARROW if test == "top-narrow" else 250)
        if "top" in sessions:
            files = sessions["top"]
            why = wait_for_hot(tmux, SESSION["top"], want, files)
            if not why:
                tmux.run("send-keys", "-t", SESSION["top"], "t")
                time.sleep(1.2)
                screen = tmux.screen(SESSION["top"])
                row = first_row(screen)
                if "thread 1 of 1" not in screen or not row or row[1] != method:
                    why = "after t: no single thread's view with %s first: %s" % (
                        method, " | ".join(l for l in screen.split("\n") if l)[:400])
            tmux.run("send-keys", "-t", SESSION["top"], "q")
            result("%s/top" % ruby, why or ended(tmux, SESSION["top"], files, target))
        # after the paused top has quit: until then it stops the target's
        # threads now and then, which the check that top-narrow left them
        # running would see
        if "top-narrow" in sessions:
            files = sessions["top-narrow"]
            why = wait_for_cut(tmux, SESSION["top-narrow"], want, files)
            tmux.run("send-keys", "-t", SESSION["top-narrow"], "q")
            result("%s/top-narrow" % ruby,
                   why or ended(tmux, SESSION["top-narrow"], files, target))
        if "top-sigterm" in sessions:
            files = sessions["top-sigterm"]
            why = wait_for_hot(tmux, SESSION["top-sigterm"], want, files)
            pid = top_pid(tmux, SESSION["top-sigterm"])
            if pid:
                os.kill(pid, signal.SIGTERM)
            result("%s/top-sigterm" % ruby, why or (
                "no top process in the pane" if not pid else
                ended(tmux, SESSION["top-sigterm"], files, target)))
        if "top-target-exits" in sessions:
            files = sessions["top-target-exits"]
            why = wait_for_hot(tmux, SESSION["top-target-exits"], want, files)
            target.kill()
            target.wait()
            why = why or ended(tmux, SESSION["top-target-exits"], files, None)
            if not why and "the process exited" not in procs.tail(files["err"]):
                why = "top did not say the process exited: %s" % procs.tail(files["err"])
            if not why:
                screen = tmux.screen(SESSION["top-target-exits"])
                row = first_row(screen)
                if "(exited)" not in screen or not row or row[1:] != (method, path):
                    why = "the last table is not on the screen, with (exited) and %s first: " \
                          "%s" % (method, " | ".join(l for l in screen.split("\n") if l)[:400])
            result("%s/top-target-exits" % ruby, why)
        idle_tests(rep, selected, corestack, ruby, exe, tmux, result)
        subprocess_tests(rep, selected, corestack, ruby, exe, tmux, result)
    except (procs.Failure, subprocess.TimeoutExpired) as exc:
        for n in names:
            if selected(n) and n not in done:
                result(n, str(exc))
    finally:
        tmux.kill()
        target.kill()
        target.wait()
        shutil.rmtree(work, ignore_errors=True)
