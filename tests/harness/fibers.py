"""Fiber tests: corestack's fibers against what Ruby said about them.

fixtures/scenarios/fibers.rb registers every fiber it makes with
CorestackOracle.track; the oracle records each one's address, owning
thread, status, blocking flag (3.0+) and, for suspended fibers,
Fiber#backtrace_locations (3.1+). Ruby 2.7 has no Fiber#backtrace_locations:
there the stacks come from fixtures/scenarios/fibers.fibers, written from
the program's call structure and checked against Ruby's own on 3.1+.

    RUBY/fibers/fiber-sidecar  fixture self-check (3.1+): every suspended
                               fiber's Fiber#backtrace_locations equals the
                               sidecar's stack for its tag; on 2.7 every
                               suspended fiber's tag has a sidecar stack
    RUBY/fibers/fibers         corestack --json CORE: every tracked fiber under
                               its owning thread with Ruby's status, blocking
                               flag and stack (label, path, lineno); one root
                               and one current (resumed, stack not repeated)
                               fiber per thread; no fiber the scenario did not
                               make; found by the heap walk, heap pages
                               scanned; the GC library corestack names
                               (gc.library) the one the process mapped (the
                               oracle's, from /proc/self/maps: none on the
                               fixtures; NAME-gcdefault must have one);
                               the scenario's emptied heap pages (the
                               GC's pool of empty pages, kept on 4.x)
                               passed over without a complaint
    RUBY/fibers/fibers-live    the same from corestack --json --pid
    RUBY/fibers/fibers-scan    corestack --json --fibers-by-scan CORE: the
                               same checks, found by the memory scan (bytes
                               read, the note saying why), and exactly the
                               fibers (thread, object, status, frames) the
                               heap walk found in the same core
    RUBY/fibers/fibers-scan-live  the same from corestack --json --fibers-by-scan
                               --pid (the live target's writable mappings),
                               against fibers-live's heap walk
    RUBY-gcdefault/fibers/fibers-gc-nodebug  (a Ruby run with RUBY_GC_LIBRARY=default
                               only) the core read with --sysroot where the GC
                               library is a copy without debug info: its heap
                               cannot be walked, so the fibers are found by the
                               memory scan on its own, the note naming the
                               library; the fibers checks, and exactly the
                               heap walk's fibers
    RUBY/fibers/fibers-text    the text output has a "Fiber 0x..." line with
                               Ruby's status for every tracked fiber, and
                               every frame of a suspended one printed as
                               Location#to_s prints it (3.1+: a C method
                               with no Ruby frame below, as Enumerator#next's
                               fibers have, at the program's name)
    RUBY/fibers/no-fibers      --no-fibers: fibers and heap null, thread
                               stacks still as the oracle's
"""

import os
import re
import subprocess

from . import compare, procs, variants

SCENARIO = "fibers"
SIDECAR = os.path.join(procs.SCENARIOS, SCENARIO + ".fibers")
TESTS = ("fiber-sidecar", "fibers", "fibers-live", "fibers-scan", "fibers-scan-live",
         "fibers-text", "no-fibers")
show = compare.show


NODEBUG = "fibers-gc-nodebug"


def test_names(ruby, scenario):
    if scenario != SCENARIO:
        return []
    extra = (NODEBUG,) if ruby.endswith("-" + variants.GC_VARIANT) else ()
    return ["%s/%s/%s" % (ruby, scenario, t) for t in TESTS + extra]


def nodebug_sysroot(root, library):
    """A sysroot under root in which library is a copy without its debug
    info and every other path is this machine's (symlinked). -> reason or None"""
    parts = [p for p in library.split("/") if p]
    real, fake = "/", root
    for i, name in enumerate(parts):
        os.makedirs(fake, exist_ok=True)
        for entry in os.listdir(real):
            if entry != name and not os.path.lexists(os.path.join(fake, entry)):
                os.symlink(os.path.join(real, entry), os.path.join(fake, entry))
        real, fake = os.path.join(real, name), os.path.join(fake, name)
        if i == len(parts) - 1:
            res = subprocess.run(["objcopy", "--strip-debug", real, fake],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if res.returncode:
                return "objcopy --strip-debug %s: %s" % (real, res.stdout[-300:])
    return None


def check_nodebug(report, walked, oracle, stacks, ruby):
    library = oracle.get("gc_library") or "?"
    note = (report.get("heap") or {}).get("note") or ""
    if library not in note or "debug info" not in note:
        return "heap.note %s does not say the GC library %s has no debug info" % (
            show(note), library)
    return check_fibers(report, oracle, stacks, ruby, "memory-scan") or \
        check_same_fibers(report, walked)


def live_scan_run(corestack, pid, timeout):
    """corestack --pid with the memory scan, on the parked scenario."""
    return procs.run_tool([corestack, "--json", "--fibers-by-scan", "--pid", str(pid)], timeout)


def load_sidecar(path=SIDECAR):
    """-> ({tag: [(label, path basename or None, lineno)]}, None) or (None, reason)."""
    stacks = {}
    for number, line, cols in compare.sidecar_rows(path):
        if len(cols) != 4 or not cols[3].isdigit():
            return None, "%s:%d: not tag, label, path, lineno: %s" % (
                os.path.basename(path), number, show(line))
        tag, label, fpath, lineno = cols
        stacks.setdefault(tag, []).append(
            (label, None if fpath == "-" else fpath, int(lineno)))
    return stacks, None


def short(frames):
    """Frames as (label, basename or None, lineno), the sidecar's terms."""
    return [(compare.plain_label(f.get("label")),
             os.path.basename(f["path"]) if f.get("path") else None,
             f.get("lineno")) for f in frames]


def check_sidecar(oracle, stacks):
    fibers = oracle.get("fibers")
    if not isinstance(fibers, list) or not fibers:
        return "the oracle has no fibers"
    checked = 0
    for f in fibers:
        if f["frames"] is None:
            continue
        want = stacks.get(f["tag"])
        if want is None:
            return "fiber %s %s: tag not in the sidecar" % (show(f["tag"]), f["object"])
        if short(f["frames"]) != want:
            return "fiber %s %s: Ruby %s, sidecar %s" % (
                show(f["tag"]), f["object"], show(short(f["frames"])), show(want))
        checked += 1
    if not checked:
        return "no suspended fiber with Fiber#backtrace_locations in the oracle"
    return None


def frame_diff(want, got, exact):
    """First difference of two stacks, or None. exact: full Location values
    (oracle); else the sidecar's (label, basename, lineno) tuples."""
    if not exact:
        got_short = short(got)
        if got_short != want:
            return "sidecar %s, corestack %s" % (show(want), show(got_short))
        return None
    for i, (a, b) in enumerate(zip(want, got)):
        for key in ("label", "path", "lineno"):
            if a.get(key) != b.get(key):
                return "frame %d: %s: Ruby %s, corestack %s" % (
                    i, key, show(a.get(key)), show(b.get(key)))
    if len(want) != len(got):
        return "frame count: Ruby %d, corestack %d" % (len(want), len(got))
    return None


def check_thread_fibers(ti, thread):
    fibers = thread.get("fibers")
    title = compare.thread_title(ti, thread)
    if not isinstance(fibers, list):
        return "%s: fibers is %s, not a list" % (title, show(fibers))
    roots = [f for f in fibers if f.get("root")]
    current = [f for f in fibers if f.get("current")]
    if len(roots) != 1 or len(current) != 1:
        return "%s: %d root and %d current fibers, expected one of each" % (
            title, len(roots), len(current))
    if current[0].get("status") != "resumed" or current[0].get("frames") != []:
        return "%s: current fiber %s is %s with %d frames; expected resumed, " \
               "its stack being the thread's" % (
                   title, current[0].get("object"), show(current[0].get("status")),
                   len(current[0].get("frames") or []))
    for f in fibers:
        if f.get("error") is not None:
            return "%s: fiber %s: error %s" % (title, f.get("object"), show(f["error"]))
    return None


def check_gc_library(report, oracle, ruby):
    """The GC library corestack read is the one the process mapped."""
    want = oracle.get("gc_library")
    if ruby.endswith("-" + variants.GC_VARIANT) and not want:
        return "the process mapped no GC library (RUBY_GC_LIBRARY=default did not load one)"
    got = (report.get("gc") or {}).get("library")
    if got != want:
        return "gc.library: process mapped %s, corestack says %s" % (show(want), show(got))
    return None


def check_heap(report, found_by):
    heap = report.get("heap")
    if not isinstance(heap, dict) or heap.get("found_by") != found_by:
        return "heap is %s, expected fibers found by %s" % (show(heap), found_by)
    if found_by == "heap-walk" and (not heap.get("pages") or not heap.get("bytes")):
        return "heap is %s, expected pages and bytes scanned" % show(heap)
    if found_by == "memory-scan" and (heap.get("pages") != 0 or not heap.get("bytes")
                                      or not heap.get("note")):
        return "heap is %s, expected no pages, bytes read and a note" % show(heap)
    return None


def fiber_set(report):
    """{(thread index, object, fiber, status, frames)} of a report."""
    return set((ti, f.get("object"), f.get("fiber"), f.get("status"),
                tuple((x.get("label"), x.get("path"), x.get("lineno"))
                      for x in f.get("frames") or []))
               for ti, t in enumerate(compare.scenario_threads(report["threads"]))
               for f in t.get("fibers") or [])


def check_same_fibers(scanned, walked):
    a, b = fiber_set(scanned), fiber_set(walked)
    if a != b:
        return "memory scan and heap walk differ: only scanned %s; only walked %s" % (
            show(sorted(a - b, key=str)[:3]), show(sorted(b - a, key=str)[:3]))
    return None


def check_fibers(report, oracle, stacks, ruby, found_by="heap-walk"):
    """corestack's fibers against the oracle's (and the sidecar on 2.7)."""
    reason = compare.check_shape(report) or check_gc_library(report, oracle, ruby) \
        or check_heap(report, found_by)
    if reason:
        return reason
    threads = compare.scenario_threads(report["threads"])
    found = {}   # object address -> (thread index, fiber)
    for ti, thread in enumerate(threads):
        reason = check_thread_fibers(ti, thread)
        if reason:
            return reason
        for f in thread["fibers"]:
            if f.get("object"):
                found[int(f["object"], 16)] = (ti, f)
    if report.get("orphan_fibers") != []:
        return "orphan_fibers is %s, expected [] (every owner is alive)" % show(
            report.get("orphan_fibers"))[:300]
    # The scenario's burst of garbage leaves empty pages in the page list
    # where the GC keeps them after a sweep (4.0, 4.1-dev: GC.stat's
    # heap_empty_pages, in the oracle); 3.4.5 frees its emptied pages at
    # the end of the sweep, so there the case is only unit-tested
    # (tests/unit/test_heap.c). Where they exist, the checks above (exit 0,
    # heap pages scanned) fail if a walk stumbles on them.
    tracked = {}
    for want in oracle.get("fibers") or []:
        obj = int(want["object"], 16)
        tracked[obj] = want
        where = "fiber %s %s" % (show(want["tag"]), want["object"])
        if obj not in found:
            return "%s (%s, thread %s) not in corestack's report" % (
                where, want["status"], want["thread"])
        ti, got = found[obj]
        if ti != want["thread"]:
            return "%s: under thread %d, Ruby says thread %s" % (where, ti, want["thread"])
        if got.get("status") != want["status"]:
            return "%s: status: Ruby %s, corestack %s" % (
                where, show(want["status"]), show(got.get("status")))
        if got.get("root") != want["tag"].endswith("-root"):
            return "%s: root is %s" % (where, show(got.get("root")))
        if got.get("blocking") != want["blocking"]:
            return "%s: blocking: Ruby %s, corestack %s" % (
                where, show(want["blocking"]), show(got.get("blocking")))
        if want["status"] != "suspended":
            if got.get("frames") != []:
                return "%s: %d frames for a %s fiber" % (
                    where, len(got.get("frames") or []), want["status"])
            continue
        if want["frames"] is not None:
            diff = frame_diff(want["frames"], got["frames"], True)
        elif want["tag"] in stacks:
            diff = frame_diff(stacks[want["tag"]], got["frames"], False)
        else:
            diff = "no expected stack (no Fiber#backtrace_locations, tag not in sidecar)"
        if diff:
            return "%s: %s" % (where, diff)
    for ti, thread in enumerate(threads):
        for f in thread["fibers"]:
            obj = int(f["object"], 16) if f.get("object") else 0
            if not f.get("root") and obj not in tracked:
                return "%s: fiber %s (%s) that the scenario did not make" % (
                    compare.thread_title(ti, thread), f.get("object"), f.get("status"))
    return None


FIBER_LINE = re.compile(r"^  Fiber (0x[0-9a-f]+)(?: \(root\))? (\w+)", re.M)


def check_text(stdout, oracle):
    seen = {int(m.group(1), 16): m.group(2) for m in FIBER_LINE.finditer(stdout)}
    lines = set(l.strip().split("  ")[0] for l in stdout.splitlines())
    for want in oracle.get("fibers") or []:
        got = seen.get(int(want["object"], 16))
        if got != want["status"]:
            return "fiber %s %s: text line says %s, Ruby %s" % (
                show(want["tag"]), want["object"], show(got), show(want["status"]))
        for frame in want.get("frames") or []:
            if frame["text"] not in lines:
                return "fiber %s %s: frame %s not printed as Ruby prints it" % (
                    show(want["tag"]), want["object"], show(frame["text"]))
    return None


def check_no_fibers(report, oracle):
    reason = compare.check_shape(report)
    if reason:
        return reason
    if report.get("heap") is not None or report.get("orphan_fibers") is not None:
        return "heap/orphan_fibers not null with --no-fibers"
    for ti, thread in enumerate(report["threads"]):
        if thread.get("fibers") is not None:
            return "%s: fibers is not null with --no-fibers" % compare.thread_title(ti, thread)
    return compare.compare_threads(report, oracle)


def report(rep, selected, ruby, scen, cap, runs, corestack, timeout, json_of):
    """The fiber tests of one capture of fibers.rb (runs: the json and text
    runs of its core, scenarios.corestack_runs; json_of: checks.json_report,
    for a run that must exit 0 with JSON -> (report, None) or (None, reason))."""
    names = dict((n.rsplit("/", 1)[1], n) for n in test_names(ruby, scen))
    want = lambda key: key in names and selected(names[key])
    if not names:
        return
    if isinstance(cap, procs.Failure):
        for key in TESTS:
            if want(key):
                rep.result(names[key], "no core: capture failed")
        return
    stacks, reason = load_sidecar()
    if want("fiber-sidecar"):
        if ruby.startswith("2.7"):
            # No Ruby stacks to check it with: every suspended fiber needs one.
            missing = sorted(set(f["tag"] for f in cap.oracle.get("fibers") or []
                                 if f["status"] == "suspended" and f["tag"] not in stacks))
            rep.result(names["fiber-sidecar"], reason or (
                "suspended fibers without a sidecar stack: %s" % show(missing)
                if missing else None))
        else:
            rep.result(names["fiber-sidecar"], reason or check_sidecar(cap.oracle, stacks))
    if want("fibers"):
        got, why = json_of(runs[0])
        rep.result(names["fibers"], reason or why or check_fibers(got, cap.oracle, stacks, ruby))
    if want("fibers-live"):
        if "live" not in cap.live:
            rep.result(names["fibers-live"], "corestack --pid did not run")
        else:
            got, why = json_of(cap.live["live"][0])
            rep.result(names["fibers-live"], reason or why or cap.live["live"][1]
                       or check_fibers(got, cap.oracle, stacks, ruby))
    if want("fibers-scan"):
        run = procs.run_tool([corestack, "--json", "--fibers-by-scan", cap.core, cap.exe], timeout)
        got, why = json_of(run)
        walked, why_walked = json_of(runs[0])
        rep.result(names["fibers-scan"], reason or why or why_walked
                   or check_fibers(got, cap.oracle, stacks, ruby, "memory-scan")
                   or check_same_fibers(got, walked))
    if want("fibers-scan-live"):
        if "live" not in cap.live or "scan-live" not in cap.live:
            rep.result(names["fibers-scan-live"], "corestack --pid did not run")
        else:
            got, why = json_of(cap.live["scan-live"])
            walked, why_walked = json_of(cap.live["live"][0])
            rep.result(names["fibers-scan-live"], reason or why or why_walked
                       or check_fibers(got, cap.oracle, stacks, ruby, "memory-scan")
                       or check_same_fibers(got, walked))
    if want(NODEBUG):
        walked, why = json_of(runs[0])
        root = os.path.join(os.path.dirname(cap.core), "nodebug-root")
        why = why or (None if cap.oracle.get("gc_library") else "the process mapped no GC library")
        why = why or nodebug_sysroot(root, cap.oracle["gc_library"])
        if not why:
            # --no-cache: the library's layout is cached by its build-id,
            # which the stripped copy shares
            run = procs.run_tool([corestack, "--json", "--no-cache", "--sysroot", root,
                                  cap.core, cap.exe], timeout)
            got, why = json_of(run)
        rep.result(names[NODEBUG], reason or why or check_nodebug(got, walked, cap.oracle,
                                                                   stacks, ruby))
    if want("fibers-text"):
        rc, out, err, why = runs[1]
        rep.result(names["fibers-text"], why or (
            "exit status %d" % rc if rc else check_text(out, cap.oracle)))
    if want("no-fibers"):
        run = procs.run_tool([corestack, "--json", "--no-fibers", cap.core, cap.exe], timeout)
        got, why = json_of(run)
        rep.result(names["no-fibers"], why or check_no_fibers(got, cap.oracle))
