"""Each sample's thread state against what the threads measured of themselves.

    RUBY/record-states   corestack record --rate 200 --format summary -- ruby
                         fixtures/profile/states.rb (one recording, ~3.5 s):
                         per thread, the summary's shares of running, waiting for
                         GVL, blocked and gc against the program's own figures,
                         as shares of the thread's wall time (within 5 points):
                         each thread is blocked while it waits for its turn and
                         once done; "solo" (spinning alone) runs the time it
                         spun; "holder" runs while GvlHold.hold keeps the GVL in
                         C, and "waiter", spinning in Ruby meanwhile, waits for
                         the GVL that long; "gc" is in gc the time it spent in
                         GC.start (and, of its work, the share of its CPU time
                         GC::Profiler counts, on a machine quiet enough) and
                         runs the time it spun; "sleeper" is blocked, on sleep,
                         throughout.

Each share holds by how the program is built: a thread in C keeping the GVL
holds it also while the kernel runs something else (and corestack says
running then too), one spinning in Ruby meanwhile waits for it all that time,
and GC.start's wall time is in gc. What the program cannot measure is a
thread handed the GVL while the kernel keeps it off a CPU: it owns the GVL
(running) and the others wait for it, in spans no thread's figures count.
The program reports its threads' run delay (the kernel's schedstat), and
every bound widens by that share of its wall time, up to 5 points more: a
quiet machine is held to 5 points, a busy one to at most 10. The gc thread alternates
spins of random length with GC.start, so that its cycle cannot keep step
with the sampling period. Ruby leaves two moments open, and either state is
accepted there: a thread before its first line waits for the GVL its creator
holds, and one woken from its turn's Queue is asleep until the kernel runs
it, then waits for the GVL. On a machine so busy that the gc thread ran a
small part of its work, its bound widens by up to 5 points; GC's own figure,
CPU time, is compared (within 12 points) only when the thread ran on a CPU
for 80% of its work. A state read wrong is caught, even at 10 points: the
waiter as running or blocked (waiting 0% against 25-30%), the holder as
waiting (running 0% against 25-30%), GC missed (gc 0% against 15% or more),
a GVL holder counted as in gc or waiting (solo running 0% against 15%).
"""

import os
import re
import subprocess

from . import procs
from .checks import first_line

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "fixtures", "profile", "states.rb")
EXTENSION = os.path.join(ROOT, "fixtures", "profile", "gvl_hold.c")
TOLERANCE = 0.05
LOAD_SLACK = 0.05          # at most, for the threads' run delay
ON_CPU = 0.8               # GC's own (CPU) time is compared when the thread ran this share
GC_OWN_TOLERANCE = 0.12

STATES = ("running", "waiting", "blocked", "gc")
SHARE_LINE = re.compile(r"^\s+" + r"\s+".join([r"([\d.]+)%"] * 4)
                        + r"\s+(.*) \((\d+) samples(?:; blocked on ([^)]*))?\)$")
RUBY_LINE = re.compile(r"^thread (\S+) (.*)$")
LOAD_LINE = re.compile(r"^process run_delay=([\d.]+)$")


def test_name(ruby):
    return "%s/record-states" % ruby


def parse_summary(text):
    """{thread label: ({state: samples}, {wait kinds})}, threads of one label
    summed (a thread's first sample may come before its tid is known)."""
    threads = {}
    for line in text.split("\n"):
        m = SHARE_LINE.match(line)
        if not m or m.group(5).startswith("(all threads"):
            continue
        n = int(m.group(6))
        counts, waits = threads.setdefault(m.group(5), ({s: 0.0 for s in STATES}, set()))
        for i, s in enumerate(STATES):
            counts[s] += float(m.group(i + 1)) / 100 * n
        if m.group(7):
            waits.update(w.strip() for w in m.group(7).split(","))
    return {label: ({s: c / max(1.0, sum(counts.values())) for s, c in counts.items()}, waits)
            for label, (counts, waits) in threads.items()}


def parse_ruby(text):
    figures = {}
    for line in text.split("\n"):
        m = RUBY_LINE.match(line)
        if m:
            figures[m.group(1)] = {k: float(v) for k, v in
                                   (kv.split("=") for kv in m.group(2).split())}
        m = LOAD_LINE.match(line)
        if m:
            figures[None] = float(m.group(1))
    return figures


def within(what, got, low, high, tolerance=TOLERANCE):
    """got in [low, high], widened by the tolerance."""
    if got < low - tolerance or got > high + tolerance:
        span = "%.0f%%" % (100 * low) if round(100 * low) == round(100 * high) else \
            "%.0f-%.0f%%" % (100 * low, 100 * high)
        return "%s %.0f%%, the program measured %s (within %.0f points)" % (
            what, 100 * got, span, 100 * tolerance)
    return None


def check(shares, ruby):
    """Each share is of the thread's samples, its whole life: compared with
    the program's figures as shares of the thread's wall time."""
    for name in ("solo", "waiter", "holder", "gc", "sleeper"):
        if name not in shares or name not in ruby:
            return "thread %s missing: summary has %s, the program printed %s" % (
                name, sorted(shares), sorted(ruby))
    if None not in ruby:
        return "the program printed no run delay"
    # the threads' time off a CPU while they could run, as a share of the
    # program's time
    tol = TOLERANCE + min(LOAD_SLACK, ruby[None] / max(r["wall"] for k, r in ruby.items() if k))
    f = {}
    for name in ("solo", "waiter", "holder", "gc"):
        r = ruby[name]
        f[name] = {k: v / r["wall"] for k, v in r.items()}
        f[name]["work"] = 1 - (r["startup"] + r["waited"] + r["woke"] + r["slept"]) / r["wall"]
        s, t = shares[name][0], f[name]
        # asleep for its turn and once done; from its turn until the kernel
        # ran it too, or waiting for the GVL then
        why = within("%s blocked" % name, s["blocked"], t["waited"] + t["slept"],
                     t["waited"] + t["woke"] + t["slept"], tol)
        if why:
            return why
        if s["running"] + s["waiting"] + s["gc"] < t["work"] - tol:
            return "%s awake %.0f%% of its samples, it worked %.0f%% of its wall time" % (
                name, 100 * (s["running"] + s["waiting"] + s["gc"]), 100 * t["work"])
    s, t = shares["solo"][0], f["solo"]
    why = within("solo running", s["running"], t["spun"], t["spun"], tol)
    if why:
        return why
    # The waiter spun throughout its work: it waited while the holder was
    # in C, and ran the rest but for the GVL's handovers.
    s, t = shares["waiter"][0], f["waiter"]
    why = within("waiter waiting for GVL", s["waiting"], t["hold"],
                 t["startup"] + t["woke"] + t["hold"], tol)
    if why:
        return why
    # The holder ran while in C; else it waited for the GVL or ran.
    s, t = shares["holder"][0], f["holder"]
    why = (within("holder running", s["running"], t["hold"],
                  t["startup"] + t["woke"] + t["work"], tol)
           or within("holder waiting for GVL", s["waiting"], 0,
                     t["startup"] + t["woke"] + t["work"] - t["hold"], tol))
    if why:
        return why
    # On a machine so busy that the thread ran a small part of its work,
    # its samples and its clock drift apart: the bound widens by half its
    # share of time off the CPU, up to 5 points, or by the run delay (solo, holding the GVL out
    # of GC, already tells a GVL holder counted as in gc).
    s, t, r = shares["gc"][0], f["gc"], ruby["gc"]
    work = t["work"] * r["wall"]
    slack = max(tol, TOLERANCE + min(0.05, max(0.0, 1 - r["cpu"] / work) / 2 * t["work"]))
    why = (within("gc in gc", s["gc"], t["in_gc"], t["in_gc"], slack)
           or within("gc running", s["running"], t["spun"], t["spun"], slack))
    if not why and r["cpu"] >= ON_CPU * work:
        why = within("gc in gc, of its work, against GC's own time", s["gc"] / t["work"],
                     r["gc"] / r["cpu"], r["gc"] / r["cpu"], GC_OWN_TOLERANCE)
    if why:
        return why
    s, waits = shares["sleeper"]
    if s["blocked"] < 1 - TOLERANCE / 2:
        return "sleeper blocked %.0f%% of its samples, it slept throughout" % (
            100 * s["blocked"])
    if waits != {"sleep"}:
        return "sleeper blocked on %s, not sleep" % ", ".join(sorted(waits))
    return None


def record_states(corestack, exe, extension, out, timeout):
    """The reason the recording fails the test, or None."""
    try:
        res = subprocess.run([corestack, "record", "--rate", "200", "--format", "summary",
                              "-o", out, "--", exe, SCRIPT, extension],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return "record hung"
    san = procs.sanitizer_report(res.stderr)
    if res.returncode != 0 or san:
        return "exit %d: %s" % (res.returncode, san or first_line(res.stderr))
    try:
        with open(out) as f:
            shares = parse_summary(f.read())
    except OSError as exc:
        return "no summary: %s" % exc
    why = check({k: (dict(v[0]), v[1]) for k, v in shares.items()}, parse_ruby(res.stdout))
    if why:
        # the whole split, for telling a wrong state from a skewed share
        why += "; summary: " + ", ".join(
            "%s %s" % (t, "/".join("%.0f" % (100 * c[st]) for st in STATES))
            for t, (c, _) in sorted(shares.items())) + " (running/waiting/blocked/gc %)"
    return why


def states_test(rep, selected, corestack, ruby, exe, workdir, timeout):
    name = test_name(ruby)
    if not selected(name):
        return
    try:
        extension = procs.build_extension(EXTENSION, os.path.join(workdir, "states-ext"),
                                          ruby_exe=exe)
    except procs.Failure as exc:
        rep.result(name, str(exc))
        return
    rep.result(name, record_states(corestack, exe, extension,
                                   os.path.join(workdir, "states-%s.txt" % ruby), timeout))
