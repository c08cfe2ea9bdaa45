"""corestack record ends when its target does, however the target ends.

    RUBY/record-unreaped-exit[-nonblocking]  the target is another process's
                          child that exits and is never reaped (a zombie):
                          record --pid --duration 20 ends within 10 s of the
                          exit, writes the profile with the samples taken,
                          exits 0 (before, it recorded lost samples until
                          --duration, or exited 2 without the profile)
    RUBY/record-command-outlives  record --duration 1 -- COMMAND whose command
                          runs on: record ends after --duration, sends the
                          command SIGTERM and says so on stderr, naming it and
                          its pid
    record/own-child-ends-early  record -- COMMAND whose command ends before the
                          first sample: one line saying it ended, with its exit
                          status, not that corestack's own child is "a zombie"
"""

import os
import subprocess
import time

from . import procs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARES = os.path.join(ROOT, "fixtures", "profile", "shares.rb")
RUNS_FOR = 2.0      # seconds the target runs
PROMPT = 10.0       # seconds after its exit that record may take to notice


def test_names(ruby):
    return ["%s/record-unreaped-exit" % ruby, "%s/record-unreaped-exit-nonblocking" % ruby,
            "%s/record-command-outlives" % ruby]


def command_outlives(corestack, exe, out, timeout):
    """record --duration 1 -- ruby shares.rb 60: the command still runs when
    the recording ends; record ends it with SIGTERM and says so."""
    marker = out + ".pid"
    script = "File.write(%r, Process.pid.to_s); load %r" % (marker, SHARES)
    try:
        res = subprocess.run([corestack, "record", "--duration", "1", "-o", out, "--",
                              exe, "-e", script, "60"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "record hung"
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, res.stderr.strip()[-300:])
    try:
        with open(marker) as f:
            pid = int(f.read())
    except (OSError, ValueError) as exc:
        return "the command wrote no pid: %s" % exc
    said = [l for l in res.stderr.splitlines() if "SIGTERM" in l]
    if len(said) != 1 or str(pid) not in said[0] or exe not in said[0]:
        return "stderr does not say once that %s (pid %d) got SIGTERM: %r" % (
            exe, pid, res.stderr)
    return procs.profile_has_samples(out)


def unreaped_exit(corestack, exe, out, extra, timeout):
    # Popen makes this test process the target's parent; it waits for the
    # target only after record is done, so the target stays a zombie.
    target = subprocess.Popen([exe, SHARES, str(RUNS_FOR)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        started = time.monotonic()
        res = subprocess.run([corestack, "record", "--pid", str(target.pid), "--duration", "20",
                              "-o", out] + extra, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=timeout)
        took = time.monotonic() - started
    except subprocess.TimeoutExpired:
        return "record hung"
    finally:
        target.kill()
        target.wait()
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, res.stderr.strip()[-300:])
    if took > RUNS_FOR + PROMPT:
        return "record went on %.1f s after its target exited (ran %.1f s)" % (
            took - RUNS_FOR, took)
    return procs.profile_has_samples(out)


def record_exit_tests(rep, selected, corestack, ruby, exe, workdir, timeout):
    for name, extra in zip(test_names(ruby), ([], ["--nonblocking"])):
        if selected(name):
            out = os.path.join(workdir, "unreaped-%s%s.folded" % (ruby, "-nb" if extra else ""))
            rep.result(name, unreaped_exit(corestack, exe, out, extra, timeout))
    name = "%s/record-command-outlives" % ruby
    if selected(name):
        out = os.path.join(workdir, "outlives-%s.folded" % ruby)
        rep.result(name, command_outlives(corestack, exe, out, timeout))


def names(ctx):
    """record/own-child-ends-early; the RUBY/record-unreaped-exit tests are
    record.py's (test_names, record_exit_tests)."""
    return ["record/own-child-ends-early"]


def run_tests(ctx):
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    name = "record/own-child-ends-early"
    if not selected(name):
        return
    res = subprocess.run([corestack, "record", "--", "sh", "-c", "exit 3"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=timeout)
    lines = res.stderr.strip().splitlines()
    if res.returncode != 2 or len(lines) != 1 or "exit status 3" not in lines[0] \
            or "zombie" in lines[0]:
        rep.result(name, "exit %d, stderr %r: expected 2 and one line with its exit status" % (
            res.returncode, res.stderr))
    else:
        rep.result(name, None)
