"""The check of RUBY/record-firefox (record.py): record --format firefox
against the Firefox Profiler's documented Gecko profile format.

The file must have the format's top-level fields (meta, libs, threads,
pausedRanges, processes) and meta's (version, interval: the sampling
period, startTime: the wall clock in milliseconds, product, categories,
markerSchema). Each thread has its name, tid, pid, processType and
registerTime, and its tables: samples, markers, stackTable and frameTable
each a schema (column -> index, the indexes 0..n-1, with the format's
columns) and rows of the schema's length, and a stringTable of strings.
Every index points inside its table (a stack's prefix to an earlier row),
every category and subcategory into meta.categories, sample times never
go back, the samples add up to what record reported, one thread is the
process's main thread (its tid the pid, where the tids are known: not on
2.7), and the stacks resolve to what
shares.rb ran: Object#heavy and Object#light in shares.rb at the line
Ruby gives them, inside Kernel#loop, heavy over light. The markers are
ThreadState intervals (meta.markerSchema has the type) named by a state,
in time order, not overlapping, every sample inside one; shares.rb's one
thread holds the GVL all along: "running" covers at least 80% of its
samples.
"""

import json
import re

from .checks import first_line
from . import procs

STATES = {"running", "waiting for GVL", "blocked", "gc"}

COLUMNS = {
    "samples": {"stack", "time"},
    "markers": {"name", "startTime", "endTime", "phase", "category", "data"},
    "stackTable": {"prefix", "frame"},
    "frameTable": {"location", "relevantForJS", "innerWindowID", "implementation",
                   "line", "column", "category", "subcategory"},
}


def table(thread, name):
    """A thread's table as a list of {column: value}."""
    tab = thread[name]
    schema = tab["schema"]
    if sorted(schema.values()) != list(range(len(schema))):
        raise ValueError("%s's schema indexes are not 0..%d: %s" % (name, len(schema) - 1,
                                                                  schema))
    missing = COLUMNS[name] - set(schema)
    if missing:
        raise ValueError("%s has no column %s" % (name, ", ".join(sorted(missing))))
    rows = []
    for row in tab["data"]:
        if len(row) != len(schema):
            raise ValueError("a row of %s has %d columns, its schema %d" % (
                name, len(row), len(schema)))
        rows.append({col: row[i] for col, i in schema.items()})
    return rows


def index_in(value, length, what, nullable=False):
    if value is None and nullable:
        return
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < length:
        raise ValueError("%s %r is not an index below %d" % (what, value, length))


def check_meta(doc, rate):
    for key in ("meta", "libs", "threads", "pausedRanges", "processes"):
        if key not in doc:
            raise ValueError("no %s" % key)
    meta = doc["meta"]
    for key in ("version", "interval", "startTime", "product", "categories", "markerSchema",
                "processType", "stackwalk"):
        if key not in meta:
            raise ValueError("meta has no %s" % key)
    if not isinstance(meta["version"], int) or meta["version"] < 1:
        raise ValueError("meta.version %r" % meta["version"])
    if abs(meta["interval"] - 1000.0 / rate) > 1e-6:
        raise ValueError("meta.interval %r ms at %d Hz" % (meta["interval"], rate))
    if not 1.5e12 < meta["startTime"] < 1e13:
        raise ValueError("meta.startTime %r is no time in milliseconds" % meta["startTime"])
    for cat in meta["categories"]:
        if not {"name", "color", "subcategories"} <= set(cat) or not cat["subcategories"]:
            raise ValueError("category %r" % cat)
    return meta["categories"]


def check_thread(thread, categories):
    """The thread's samples as lists of (location, line), outermost first."""
    for key in ("name", "tid", "pid", "processType", "registerTime", "unregisterTime",
                "stringTable"):
        if key not in thread:
            raise ValueError("thread %s has no %s" % (thread.get("name"), key))
    strings = thread["stringTable"]
    if not all(isinstance(s, str) for s in strings):
        raise ValueError("stringTable holds a non-string")
    frames = table(thread, "frameTable")
    for f in frames:
        index_in(f["location"], len(strings), "frame location")
        index_in(f["category"], len(categories), "frame category")
        index_in(f["subcategory"], len(categories[f["category"]]["subcategories"]),
                 "frame subcategory")
    stacks = table(thread, "stackTable")
    for i, s in enumerate(stacks):
        index_in(s["prefix"], i, "stack prefix", nullable=True)
        index_in(s["frame"], len(frames), "stack frame")
    markers = table(thread, "markers")
    end = None
    for m in markers:
        index_in(m["name"], len(strings), "marker name")
        if strings[m["name"]] not in STATES or m["phase"] != 1 or \
                (m["data"] or {}).get("type") != "ThreadState" or \
                not m["startTime"] <= m["endTime"] or \
                (end is not None and m["startTime"] < end):
            raise ValueError("marker %r is no ThreadState interval after the last" % (m,))
        end = m["endTime"]
    resolved, last, times = [], None, []
    for sample in table(thread, "samples"):
        if last is not None and sample["time"] < last:
            raise ValueError("sample time %r after %r" % (sample["time"], last))
        last = sample["time"]
        times.append((last, [strings[m["name"]] for m in markers
                             if m["startTime"] <= last <= m["endTime"]]))
        index_in(sample["stack"], len(stacks), "sample stack", nullable=True)
        stack, row = [], sample["stack"]
        while row is not None:
            frame = frames[stacks[row]["frame"]]
            stack.append((strings[frame["location"]], frame["line"]))
            row = stacks[row]["prefix"]
        resolved.append(stack[::-1])
    outside = [t for t, states in times if not states]
    if outside:
        raise ValueError("sample at %r ms in no state marker" % outside[0])
    return resolved, times


def function_name(location):
    """A frame location's function: without its file ("NAME (FILE)")."""
    if location.endswith(")") and " (" in location:
        return location[:location.rindex(" (")]
    return location


def check_firefox(res, path, method_lines, wrong_lines, rate=100):
    """A Gecko profile whose structure holds and whose stacks are what
    shares.rb ran (method_lines(method)[0]: the line Ruby gives it while it
    runs; wrong_lines(method, lines): why lines are not where Ruby places
    it)."""
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    if procs.sanitizer_report(res.stderr):
        return "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    reported = re.search(r"(\d+) samples in", res.stderr)
    try:
        with open(path) as f:
            doc = json.load(f)
        categories = check_meta(doc, rate)
        samples, pids, main, tids, times = [], set(), False, False, []
        if not any(k.get("name") == "ThreadState" for k in doc["meta"]["markerSchema"]):
            raise ValueError("meta.markerSchema has no ThreadState")
        for thread in doc["threads"]:
            stacks, thread_times = check_thread(thread, categories)
            samples += stacks
            times += thread_times
            pids.add(thread["pid"])
            main = main or thread["tid"] == thread["pid"]
            # labelled by its tid: corestack knew the threads' tids
            tids = tids or thread["name"] == "thread %d" % thread["tid"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        return "not a Gecko profile as documented: %s" % exc
    if len(pids) != 1 or (tids and not main):
        return "threads of pids %s, the main thread %s" % (sorted(pids), main)
    if not reported or not int(reported.group(1)) - 2 <= len(samples) <= int(reported.group(1)):
        return "%d samples, record reported %s" % (len(samples),
                                                   reported.group(1) if reported else "none")
    running = sum(1 for _, states in times if "running" in states)
    if running < 0.8 * len(times):
        return "only %d of %d samples in a running marker" % (running, len(times))
    counts = {}
    for method in ("heavy", "light"):
        name = "Object#%s" % method
        want = ("%s (%s)" % (name, procs.SHARES), method_lines(method)[0])
        found = {f for stack in samples for f in stack if function_name(f[0]) == name}
        wrong = wrong_lines(method, {f[1] for f in found})
        if wrong or any(f[0] != want[0] for f in found):
            return "%s as %s: %s" % (name, sorted(found), wrong or "expected %s" % want[0])
        inside = [s for s in samples if want in s]
        if not all(any(function_name(f[0]) == "Kernel#loop" for f in s[:s.index(want)])
                   for s in inside):
            return "%s not called from Kernel#loop" % name
        counts[method] = len(inside)
    if counts["heavy"] + counts["light"] < 50 or counts["heavy"] < 1.5 * counts["light"]:
        return "heavy %d samples, light %d: heavy does 3x the work" % (
            counts["heavy"], counts["light"])
    return None
