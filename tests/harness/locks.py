"""Who holds what, against what the program recorded itself.

In a scenario whose threads call CorestackOracle.locks before they park
(fixtures/scenarios/locks.rb), each oracle thread carries "locks": the
Mutexes it holds (checked with Mutex#owned?), the Mutex it is about to lock,
the thread it is about to join; the Monitors it has entered and the one it
is about to enter (a Monitor counts as the Mutex it locks inside, which
Ruby does not show: its address is not checked, its holder is). From that and Thread#inspect's status the
expected wait-for graph is built here: an edge from a thread that sleeps
for ever (sleep_forever) to the holder of the mutex it locks or to the
thread it joins, and from a fiber blocked through its scheduler on a mutex
with no timeout (CorestackOracle.fiber_wait's forever) to the holder of
that mutex, a thread or a fiber (by the mutexes each recorded it holds);
a deadlock is a cycle of edges; a thread or fiber in none whose edge
leads to one that waits for ever is stuck behind it. Threads are matched
by name (main by "main"), fibers by their Fiber's address.

    RUBY/SCENARIO/locks        corestack --json on the core: each thread's
                               "holds" (as many as it holds; every object shown
                               one of them, and every one another thread locks
                               shown), its waiting_on's object and waits_for
                               (the holder or the joined thread, by address),
                               "deadlock" and "stuck_behind" as expected, and
                               "deadlocks" each cycle once, no other; a queue
                               waited on: its address, items and max as Ruby's
                               size and max, its waiters (to pop and to push)
                               as num_waiting; the mutex a ConditionVariable#wait
                               takes back, and its holder; the Monitor a
                               thread enters: its address, entries (as the
                               program counted them) and owner, on every
                               Ruby (libruby's Thread::Monitor, or the
                               monitor extension's, read with monitor.so's
                               DWARF); the kind and method of a wait the
                               program names by the method's definition
                               (an alias of a Mutex method made in a
                               subclass); each fiber blocked through its
                               scheduler: "forever", "holds", waits_for (the
                               holder's thread and fiber), "deadlock",
                               "stuck_behind" and "stuck_behind_fiber", and
                               the deadlocks' fiber members
    RUBY/SCENARIO/locks-text   the text report: the "Deadlock N:" blocks before
                               the threads name the expected cycles, each thread
                               line says "held by thread N "holder"" or
                               "of thread N "joined"", "; deadlock N" and
                               "stuck behind thread N "name"" as expected,
                               "entering monitor 0x... (entered N times
                               by thread N "holder")", and "waiting on KIND
                               (Defining#method)" where the program names it;
                               fibers in the "Deadlock N:" blocks ("  Fiber
                               0x... of thread N"), and each fiber's line
                               "held by fiber 0x... of thread N "name"",
                               "; deadlock N", "stuck behind ..."
    RUBY/SCENARIO/locks-live   as RUBY/SCENARIO/locks, from corestack --pid
    RUBY/SCENARIO/monitor-split-debug
                               where the Monitor is the monitor extension's,
                               the core read with --sysroot, every file the
                               core names there as itself but monitor.so, a
                               copy without its debug info, whose debug file
                               is under --debug-dir's .build-id tree: as
                               RUBY/SCENARIO/locks, the Monitor's entries and
                               owner among it
    RUBY/SCENARIO/monitor-no-debug
                               the same sysroot without that debug file, and
                               one without monitor.so: each time exit 0
                               (complete), the thread entering the Monitor
                               still waiting on its holder's mutex, its
                               monitor null, no locks_error
    RUBY/SCENARIO/monitor-owner-damaged
                               where the Monitor is the monitor extension's,
                               its rb_monitor's owner (the place from
                               `corestack --layout` of libruby and of
                               monitor.so) overwritten in the core with the
                               Monitor itself: exit 1, complete false, the
                               entering thread's locks_error says its owner
                               is neither a Thread nor a Fiber, every stack
                               as before
"""

import os
import re
import subprocess

from . import checks, compare, corrupt, native, procs

TESTS = ("locks", "locks-text", "locks-live")
DEBUG_INFO = ("monitor-split-debug", "monitor-no-debug")
DAMAGED = "monitor-owner-damaged"


def test_names(ruby, scenario):
    return checks.scenario_tests(ruby, scenario, "CorestackOracle.locks",
                                 TESTS + DEBUG_INFO + (DAMAGED,))


def uses_locks(scenario):
    return bool(test_names("", scenario))


def key(thread):
    return "main" if thread.get("main") else thread.get("name")


def address(text):
    return int(text, 16) if isinstance(text, str) else None


def fiber_key(fiber):
    """A fiber's node in the expected graph, by its Fiber's address."""
    return "fiber:0x%x" % address(fiber)


def is_fiber(node):
    return isinstance(node, str) and node.startswith("fiber:")


class Expected:
    """The wait-for graph the program's own record gives: its nodes are
    the threads that recorded their locks (by name) and the fibers that
    recorded their scheduler wait (fiber_key)."""

    def __init__(self, oracle):
        self.threads = {key(t): t for t in compare.scenario_threads(oracle["threads"])
                        if "locks" in t}
        self.fibers = {fiber_key(f["fiber"]): f for f in oracle.get("fiber_waits") or []}
        holder = {}
        for name, t in self.threads.items():
            for m in t["locks"]["holds"] + t["locks"].get("monitors", []):
                holder[address(m)] = name
        for name, f in self.fibers.items():
            for m in f.get("holds") or []:
                holder[address(m)] = name
        self.locked = {address(f["object"]) for f in self.fibers.values()
                       if f["kind"] == "mutex"}
        self.waits_for, self.by = {}, {}
        for name, t in self.threads.items():
            locks = t["locks"]
            if locks.get("retake"):
                self.locked.add(address(locks["retake"]))
            if locks.get("lock") or locks.get("monitor"):
                self.locked.add(address(locks.get("lock")))
                self.waits_for[name] = holder.get(address(locks.get("lock") or locks["monitor"]))
                self.by[name] = "mutex_owner"
            elif locks.get("join"):
                self.waits_for[name] = locks["join"]
                self.by[name] = "join"
        for name, f in self.fibers.items():
            if f["kind"] == "mutex":
                self.waits_for[name] = holder.get(address(f["object"]))
                self.by[name] = "mutex_owner"

        def forever(n):
            if is_fiber(n):
                return bool(self.fibers.get(n, {}).get("forever"))
            return self.threads.get(n, {}).get("status_detail") == "sleep_forever"
        self.forever = forever
        self.edge = {n: w for n, w in self.waits_for.items() if w and forever(n) and w != n}
        self.cycles = []
        for start in sorted(self.edge):
            seen, n = [], start
            while n in self.edge and n not in seen:
                seen.append(n)
                n = self.edge[n]
            if n in seen:
                cycle = frozenset(seen[seen.index(n):])
                if cycle not in self.cycles:
                    self.cycles.append(cycle)
        self.in_cycle = set().union(*self.cycles) if self.cycles else set()
        self.stuck = {n: w for n, w in self.edge.items()
                      if n not in self.in_cycle and forever(w)}


def check_report(oracle, report, live=False):
    exp = Expected(oracle)
    if not exp.threads:
        return "the oracle has no thread that recorded its locks"
    if not exp.cycles or not exp.stuck:
        return "the program's record gives no deadlock or no stuck thread: the scenario " \
               "would not test them"
    got = {key(t): t for t in report.get("threads") or []}
    addr = {n: t.get("thread") for n, t in got.items()}
    fibers_in = {fiber_key(f["object"]): (t.get("thread"), f.get("fiber"), f)
                 for t in report.get("threads") or [] for f in t.get("fibers") or []
                 if f.get("object")}

    def thread_of(node):
        """The address of a node's thread (a fiber's: the thread it is listed under)."""
        return fibers_in.get(node, (None,))[0] if is_fiber(node) else addr.get(node)

    def fiber_of(node):
        """A fiber node's rb_fiber_t as corestack lists it; None for a thread."""
        return fibers_in.get(node, (None, None))[1] if is_fiber(node) else None
    for name, t in exp.threads.items():
        title = compare.show(name)
        mine = got.get(name)
        if mine is None:
            return "no thread %s in corestack's report" % title
        holds = [address(m) for m in t["locks"]["holds"]]
        monitors = len(t["locks"].get("monitors", []))  # each its inner Mutex
        theirs = mine.get("holds")
        if not isinstance(theirs, list) or len(theirs) != len(holds) + monitors:
            return "%s holds %d mutexes and %d monitors, corestack says %s" % (
                title, len(holds), monitors, compare.show(theirs))
        shown = {address(h.get("object")) for h in theirs if h.get("object")}
        if len(shown - set(holds)) > monitors:
            return "%s: corestack shows it holding %s, it holds %s" % (
                title, sorted(hex(m) for m in shown - set(holds)), t["locks"]["holds"])
        missing = (set(holds) & exp.locked) - shown
        if missing:
            return "%s: held mutexes another thread locks not shown: %s" % (
                title, sorted(hex(m) for m in missing))
        waiting = mine.get("waiting_on") or {}
        if name in exp.by:
            want_kind = "mutex" if exp.by[name] == "mutex_owner" else "thread_join"
            if waiting.get("kind") != want_kind:
                return "%s: waiting_on %s, expected %s" % (title, compare.show(waiting), want_kind)
            lock = t["locks"].get("lock")
            if lock and address(waiting.get("object")) != address(lock):
                return "%s: waits on mutex %s, corestack %s" % (
                    title, lock, compare.show(waiting.get("object")))
            reason = check_waits_for(title, exp, name, waiting, thread_of, fiber_of)
            if reason:
                return reason
        elif waiting.get("waits_for"):
            return "%s waits for nobody, corestack %s" % (title, compare.show(waiting))
        reason = check_calls(title, t["locks"].get("calls"), waiting) or \
            check_queue(title, t["locks"].get("queue"), waiting.get("queue")) or \
            check_retake(title, t["locks"].get("retake"), waiting.get("retakes"), exp, addr) or \
            check_monitor(title, t["locks"], waiting.get("monitor"), exp, addr) or \
            check_io(title, t["locks"].get("io"), waiting, live) or \
            check_child(title, t["locks"].get("child"), waiting)
        if reason:
            return reason
        in_deadlock = mine.get("deadlock") is not None
        if in_deadlock != (name in exp.in_cycle):
            return "%s: deadlock %s, expected %s" % (
                title, compare.show(mine.get("deadlock")), name in exp.in_cycle)
        reason = check_stuck(title, exp, name, mine, thread_of, fiber_of)
        if reason:
            return reason
    reason = check_fiber_waits(oracle, report, exp, thread_of, fiber_of)
    if reason:
        return reason
    by_addr = {address(t.get("thread")): n for n, t in got.items()}
    listed = []
    for d in report.get("deadlocks") or []:
        names = frozenset(fiber_key(t["fiber_object"]) if t.get("fiber")
                          else by_addr.get(address(t.get("thread")))
                          for t in d.get("threads", []))
        if names in listed:
            return "deadlock %s listed twice" % sorted(names)
        listed.append(names)
        numbers = {n for n in names
                   if (fibers_in.get(n, (0, 0, {}))[2] if is_fiber(n) else got.get(n, {}))
                   .get("deadlock") != d.get("number")}
        if numbers:
            return "members %s of deadlock %s do not say so" % (sorted(numbers), d.get("number"))
    if set(listed) != set(exp.cycles):
        return "deadlocks %s, expected %s" % (
            sorted(sorted(c) for c in listed), sorted(sorted(c) for c in exp.cycles))
    return None


def check_calls(title, want, waiting):
    """The method a thread blocks in, named by its definition as the
    program's Method#inspect gives it (an alias made in a subclass runs
    the method it copies), and the kind of wait that method is."""
    if want and (waiting.get("kind") != want["kind"] or waiting.get("method") != want["method"]):
        return "%s: waits in %s (%s), corestack %s" % (
            title, want["method"], want["kind"], compare.show(waiting))
    return None


def check_queue(title, want, got):
    """The queue a thread pops from or pushes to: its address, items and max
    as Ruby's size and max, its waiters as num_waiting (poppers and pushers
    together)."""
    if not want:
        return "%s waits on no queue, corestack %s" % (title, compare.show(got)) if got else None
    if not isinstance(got, dict):
        return "%s: queue %s, corestack %s" % (title, want["object"], compare.show(got))
    waiting = (got.get("waiting_to_pop") or 0) + (got.get("waiting_to_push") or 0)
    if (address(got.get("object")) != address(want["object"]) or got.get("items") != want["size"]
            or got.get("max") != want["max"] or waiting != want["num_waiting"]):
        return "%s: queue %s (size %d, max %s, num_waiting %d), corestack %s" % (
            title, want["object"], want["size"], want["max"], want["num_waiting"],
            compare.show(got))
    return None


def check_waits_for(title, exp, name, waiting, thread_of, fiber_of):
    """Whom a thread or fiber waits for: the holder of the mutex it locks
    (its thread, and a fiber holder's rb_fiber_t) or the thread it joins."""
    wf = waiting.get("waits_for") or {}
    want = exp.waits_for[name]
    if wf.get("by") != exp.by[name] or address(wf.get("thread")) != address(thread_of(want)) \
            or (is_fiber(want) and address(wf.get("fiber")) != address(fiber_of(want))):
        return "%s: waits for %s (%s, thread %s, fiber %s), corestack %s" % (
            title, compare.show(want), exp.by[name], thread_of(want), fiber_of(want),
            compare.show(wf))
    return None


def check_stuck(title, exp, name, mine, thread_of, fiber_of):
    """What a thread or fiber is stuck behind: the thread, or the fiber and
    its thread, it waits for for ever, when that one waits for ever too."""
    behind = exp.stuck.get(name)
    if address(mine.get("stuck_behind")) != address(thread_of(behind) if behind else None) \
            or address(mine.get("stuck_behind_fiber")) != address(fiber_of(behind)):
        return "%s: stuck_behind %s (fiber %s), expected %s (%s, fiber %s)" % (
            title, compare.show(mine.get("stuck_behind")),
            compare.show(mine.get("stuck_behind_fiber")), compare.show(behind),
            thread_of(behind) if behind else None, fiber_of(behind))
    return None


def check_fiber_waits(oracle, report, exp, thread_of, fiber_of):
    """Each fiber the program blocked through its fiber scheduler: what it
    waits on and the hook it is suspended in, whether it waits for ever,
    the mutexes it holds, the holder of the mutex it locks, its deadlock
    and what it is stuck behind, as it recorded them."""
    fibers = {address(f.get("object")): f for t in report.get("threads") or []
              for f in t.get("fibers") or []}
    for want in oracle.get("fiber_waits") or []:
        f = fibers.get(address(want["fiber"]))
        if f is None:
            return "fiber %s: not in corestack's report" % want["fiber"]
        got = f.get("waiting_on") or {}
        io = got.get("io") or {}
        if (got.get("kind") != want["kind"] or got.get("method") != want["method"]
                or got.get("scheduler") != want["hook"]
                or (want["object"] and address(got.get("object")) != address(want["object"]))
                or (want["fd"] is not None and io.get("fd") != want["fd"])
                or got.get("forever") != want["forever"]):
            return "fiber %s waits on %s %s (%s, object %s, fd %s, forever %s), corestack %s" % (
                want["fiber"], want["kind"], want["method"], want["hook"], want["object"],
                want["fd"], want["forever"], compare.show(got))
        title = "fiber %s" % want["fiber"]
        holds = sorted(address(m) for m in want["holds"])
        theirs = f.get("holds")
        if not isinstance(theirs, list) or sorted(address(h.get("object")) or address(h.get("data"))
                                                  for h in theirs) != holds:
            return "%s holds %s, corestack %s" % (title, want["holds"], compare.show(theirs))
        name = fiber_key(want["fiber"])
        if exp.waits_for.get(name):
            reason = check_waits_for(title, exp, name, got, thread_of, fiber_of)
            if reason:
                return reason
        if (f.get("deadlock") is not None) != (name in exp.in_cycle):
            return "%s: deadlock %s, expected %s" % (
                title, compare.show(f.get("deadlock")), name in exp.in_cycle)
        reason = check_stuck(title, exp, name, f, thread_of, fiber_of)
        if reason:
            return reason
    return None


def check_io(title, want, waiting, live):
    """The IO a thread reads from: the IO object, its descriptor and path
    as the program gave them, and from a live process what /proc said the
    descriptor is, as the program read it from /proc/self/fd."""
    got = waiting.get("io")
    if not want:
        return "%s reads no IO, corestack %s" % (title, compare.show(got)) if got else None
    if waiting.get("kind") != "io" or not isinstance(got, dict):
        return "%s: waiting_on %s, expected an io wait on fd %s" % (
            title, compare.show(waiting), want["fd"])
    if (address(got.get("object")) != address(want["object"]) or got.get("fd") != want["fd"]
            or got.get("path") != want["path"] or (live and got.get("what") != want["what"])
            or (not live and got.get("what") is not None)):
        return "%s: io %s (fd %s, path %s, %s), corestack %s" % (
            title, want["object"], want["fd"], compare.show(want["path"]),
            compare.show(want["what"]) if live else "nothing from /proc in a core",
            compare.show(got))
    return None


def check_child(title, want, waiting):
    """The child a thread waits for: the pid the program spawned, or -1
    for Process.wait with none."""
    got = waiting.get("child")
    if want is None:
        return "%s waits for no child, corestack %s" % (title, compare.show(got)) if got else None
    if waiting.get("kind") != "process_wait" or not isinstance(got, dict) \
            or got.get("pid") != want:
        return "%s: waits for child %s, corestack %s" % (title, want, compare.show(waiting))
    return None


def monitor_entries(exp, monitor):
    """The thread that entered monitor, and how often -> (name, count)."""
    for name, t in exp.threads.items():
        monitors = [address(m) for m in t["locks"].get("monitors", [])]
        if address(monitor) in monitors:
            entries = t["locks"].get("entries") or []
            at = monitors.index(address(monitor))
            return name, entries[at] if at < len(entries) else None
    return None, 0


def check_monitor(title, locks, got, exp, addr):
    """The Monitor a thread enters: its address, its entries and the
    thread that entered it, as the program says, whether libruby defines
    it (Thread::Monitor) or the monitor extension does (monitor.so, whose
    own DWARF describes struct rb_monitor)."""
    want = locks.get("monitor")
    if not want:
        return "%s enters no monitor, corestack %s" % (title, compare.show(got)) if got else None
    holder, count = monitor_entries(exp, want)
    if not isinstance(got, dict) or address(got.get("object")) != address(want) \
            or got.get("count") != count or address(got.get("owner")) != address(addr.get(holder)):
        return "%s enters monitor %s entered %s times by %s (%s), corestack %s" % (
            title, want, count, compare.show(holder), addr.get(holder), compare.show(got))
    return None


def check_retake(title, want, got, exp, addr):
    """The mutex a ConditionVariable#wait takes back, and its holder."""
    if not want:
        return "%s takes back no mutex, corestack %s" % (title, compare.show(got)) if got else None
    holder = next((n for n, t in exp.threads.items()
                   if address(want) in {address(m) for m in t["locks"]["holds"]}), None)
    if not isinstance(got, dict) or address(got.get("mutex")) != address(want) \
            or address(got.get("held_by")) != address(addr.get(holder)):
        return "%s takes back mutex %s held by %s (%s), corestack %s" % (
            title, want, compare.show(holder), addr.get(holder), compare.show(got))
    return None


THREAD_LINE = re.compile(r'^Thread (\d+)(?: "([^"]*)")?')


def check_text(oracle, out, children=True, fibers=True):
    """children: the report was read with the kernel threads' registers,
    or from a Ruby that records the child of a Process.wait itself;
    fibers: the text shows fibers (ruby-locks does not)."""
    exp = Expected(oracle)
    lines = out.splitlines()
    first_thread = next((i for i, l in enumerate(lines) if THREAD_LINE.match(l)), len(lines))
    blocks, number = {}, None
    for l in lines[:first_thread]:
        m = re.match(r"^Deadlock (\d+): ", l)
        if m:
            number = int(m.group(1))
            blocks[number] = set()
            continue
        m = re.match(r'^  Thread \d+(?: "([^"]*)")?', l)
        if m and number is not None:
            blocks[number].add(m.group(1) or "main")
        m = re.match(r'^  Fiber (0x[0-9a-f]+) of thread ', l)
        if m and number is not None:
            blocks[number].add(fiber_key(m.group(1)))
    if sorted(map(sorted, blocks.values())) != sorted(map(sorted, exp.cycles)):
        return "Deadlock blocks before the threads name %s, expected %s" % (
            sorted(map(sorted, blocks.values())), sorted(map(sorted, exp.cycles)))
    numbers = {}
    heads = {}
    for l in lines[first_thread:]:
        m = THREAD_LINE.match(l)
        if m:
            name = m.group(2) or ("main" if ", main" in l else None)
            numbers[name] = int(m.group(1))
            heads[name] = l

    def node_ref(node):
        """thread 3 "a", fiber 0x... of thread 3 "a" """
        if is_fiber(node):
            thread = exp.fibers[node]["thread"]
            return 'fiber 0x%x of thread %d "%s"' % (address(node[6:]), numbers.get(thread, 0),
                                                    thread)
        return 'thread %d "%s"' % (numbers.get(node, 0), node)

    def check_graph_refs(name, line):
        """whom a thread or fiber waits for, its deadlock or what it is
        stuck behind, as its line says them"""
        want = exp.waits_for.get(name)
        if want:
            word = "held by" if exp.by[name] == "mutex_owner" else "of"
            ref = "%s %s" % (word, node_ref(want))
            if ref not in line:
                return "%s: no %s in %s" % (compare.show(name), compare.show(ref), compare.show(line))
        cycle = [n for n, c in blocks.items() if name in c]
        if cycle and "; deadlock %d" % cycle[0] not in line:
            return "%s: no \"; deadlock %d\" in %s" % (compare.show(name), cycle[0], compare.show(line))
        if not cycle and "; deadlock " in line:
            return "%s is in no deadlock: %s" % (compare.show(name), compare.show(line))
        if name in exp.stuck:
            ref = "stuck behind %s" % node_ref(exp.stuck[name])
            if ref not in line:
                return "%s: no %s in %s" % (compare.show(name), compare.show(ref), compare.show(line))
        elif "stuck behind" in line:
            return "%s is stuck behind nobody: %s" % (compare.show(name), compare.show(line))
        return None
    for want in oracle.get("fiber_waits") or [] if fibers else []:
        title = "  Fiber 0x%x " % address(want["fiber"])
        line = next((l for l in lines if l.startswith(title)
                     and not l.startswith(title + "of thread ")), None)
        ref = "waiting on %s (%s)" % (want["kind"].replace("_", " "), want["method"])
        hook = "through the scheduler (%s)" % want["hook"]
        if line is None or ref not in line or hook not in line:
            return "fiber %s: no %s ... %s in %s" % (want["fiber"], compare.show(ref),
                                                   compare.show(hook), compare.show(line))
        reason = check_graph_refs(fiber_key(want["fiber"]), line)
        if reason:
            return reason
    for name in exp.threads:
        line = heads.get(name)
        if line is None:
            return "no thread line for %s" % compare.show(name)
        reason = check_graph_refs(name, line)
        if reason:
            return reason
        monitor = exp.threads[name]["locks"].get("monitor")
        if monitor:
            holder, count = monitor_entries(exp, monitor)
            ref = 'entering monitor 0x%x (entered %s times by thread %d "%s")' % (
                address(monitor), count, numbers.get(holder, 0), holder)
            if ref not in line:
                return "%s: no %s in %s" % (compare.show(name), compare.show(ref),
                                            compare.show(line))
        calls = exp.threads[name]["locks"].get("calls")
        ref = calls and "waiting on %s (%s)" % (calls["kind"].replace("_", " "), calls["method"])
        if ref and ref not in line:
            return "%s: no %s in %s" % (compare.show(name), compare.show(ref), compare.show(line))
        io = exp.threads[name]["locks"].get("io")
        if io and " on fd %d" % io["fd"] not in line:
            return "%s: no \" on fd %d\" in %s" % (compare.show(name), io["fd"], compare.show(line))
        child = exp.threads[name]["locks"].get("child")
        if child is not None and children:
            ref = "for child %d" % child if child > 0 else "for any child"
            if ref not in line:
                return "%s: no %s in %s" % (compare.show(name), compare.show(ref),
                                            compare.show(line))
    return None


def report(rep, selected, ruby, scenario, cap, runs, json_report):
    names = test_names(ruby, scenario)[:len(TESTS)]
    if names and any(selected(n) for n in names):
        checks.report_json_text_live(
            rep, selected, names, cap, runs, json_report,
            (check_report, check_text, lambda oracle, got: check_report(oracle, got, live=True)))


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def monitor_sysroot(core, root, mode, debug_dir):
    """A sysroot holding every file the core names as a link to itself but
    monitor.so: a copy without its debug info ("stripped"), that copy and
    its debug file in debug_dir's .build-id tree ("split"), or none
    ("absent"). -> how many monitor.so the core names."""
    found = 0
    for path in sorted(set(native.nt_file_paths(core))):
        if not os.path.isfile(path) or os.path.exists(root + path):
            continue
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        if os.path.basename(path) != "monitor.so":
            os.symlink(path, root + path)
            continue
        found += 1
        argv = []
        if mode == "split":
            bid = build_id(path)
            if not bid:
                raise procs.Failure("no build-id in %s" % path)
            debug = os.path.join(debug_dir, ".build-id", bid[:2], bid[2:] + ".debug")
            os.makedirs(os.path.dirname(debug), exist_ok=True)
            argv.append(["objcopy", "--only-keep-debug", path, debug])
        if mode != "absent":
            argv.append(["objcopy", "--strip-debug", path, root + path])
        for a in argv:
            subprocess.run(a, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return found


def check_no_debug(oracle, report):
    """The monitor entered is not shown, the wait on its mutex is, and
    nothing says the report is partial."""
    if report.get("complete") is not True:
        return "complete %s, expected true" % compare.show(report.get("complete"))
    exp = Expected(oracle)
    got = {key(t): t for t in report.get("threads") or []}
    addr = {n: t.get("thread") for n, t in got.items()}
    entering = [n for n, t in exp.threads.items() if t["locks"].get("monitor")]
    if not entering:
        return "no thread of the program enters a monitor"
    for name in entering:
        mine = got.get(name) or {}
        waiting = mine.get("waiting_on") or {}
        wf = waiting.get("waits_for") or {}
        if waiting.get("monitor") is not None or mine.get("locks_error"):
            return "%s: monitor %s, locks_error %s, expected neither" % (
                compare.show(name), compare.show(waiting.get("monitor")),
                compare.show(mine.get("locks_error")))
        want = exp.waits_for.get(name)
        if waiting.get("kind") != "mutex" or address(wf.get("thread")) != address(addr.get(want)):
            return "%s: waiting_on %s, expected the mutex of %s (%s)" % (
                compare.show(name), compare.show(waiting), compare.show(want), addr.get(want))
    return None


def report_debug_info(rep, selected, ruby, scenario, cap, corestack, timeout, workdir):
    """RUBY/SCENARIO/monitor-split-debug and monitor-no-debug (see the
    module's docstring)."""
    names = dict(zip(DEBUG_INFO + (DAMAGED,), test_names(ruby, scenario)[len(TESTS):]))
    for test, modes, check in (("monitor-split-debug", ("split",), check_report),
                               ("monitor-no-debug", ("stripped", "absent"), check_no_debug)):
        name = names.get(test)
        if not name or not selected(name):
            continue
        if isinstance(cap, procs.Failure) or getattr(cap, "oracle", None) is None:
            rep.result(name, "no core: capture failed")
            continue
        reason, skipped = None, False
        for mode in modes:
            root = os.path.join(workdir, test, mode)
            debug_dir = os.path.join(workdir, test, mode + "-debug")
            os.makedirs(debug_dir, exist_ok=True)
            if monitor_sysroot(cap.core, root, mode, debug_dir) == 0:
                rep.skip(name, "the core names no monitor.so (libruby's Monitor): "
                         "nothing to check")
                skipped = True
                break
            rc, out, err, why = procs.run_tool(
                [corestack, "--json", "--no-cache", "--sysroot", root, "--debug-dir", debug_dir,
                 cap.core], timeout)
            if why or rc != 0:
                reason = "%s: %s" % (mode, why or "exit %d: %s" % (rc, err.strip()[:200]))
                break
            report, why = compare.parse_report(out)
            reason = why or check(cap.oracle, report)
            if reason:
                reason = "%s: %s" % (mode, reason)
                break
        if not skipped:
            rep.result(name, reason)
    name = names.get(DAMAGED)
    if name and selected(name):
        if isinstance(cap, procs.Failure) or getattr(cap, "oracle", None) is None:
            rep.result(name, "no core: capture failed")
            return
        try:
            reason = owner_damaged(cap, corestack, timeout)
        except (RuntimeError, LookupError, KeyError, OSError, subprocess.SubprocessError) as exc:
            reason = "setup: %s" % exc
        if reason == "libruby":
            rep.skip(name, "the core names no monitor.so (libruby's Monitor): nothing to check")
        else:
            rep.result(name, reason)


def owner_damaged(cap, corestack, timeout):
    """RUBY/SCENARIO/monitor-owner-damaged; "libruby" when the core maps no
    monitor.so."""
    paths = set(native.nt_file_paths(cap.core))
    ext = sorted(p for p in paths if os.path.basename(p) == "monitor.so")
    if not ext:
        return "libruby"
    exp = Expected(cap.oracle)
    name = next(n for n, t in exp.threads.items() if t["locks"].get("monitor"))
    monitor = address(exp.threads[name]["locks"]["monitor"])
    rc, baseline, _, err = corrupt.run_json(corestack, cap.core, cap.exe, timeout)
    if rc != 0 or baseline is None:
        raise RuntimeError("the unpatched core: exit %d: %s" % (rc, err.strip()[:200]))
    vm = corrupt.layout_of(corestack, baseline["process"]["ruby_module"], timeout)
    mon = corrupt.layout_of(corestack, ext[0], timeout)
    cf = corrupt.CoreFile(cap.core)
    try:
        # its struct in the object where the type word says embedded (4.0+)
        embedded = vm.get("typed_data_embedded", (0, None))[0]
        in_place = cf.u64(monitor + vm["typeddata_type"][0]) & embedded
        data = monitor + vm["typeddata_data"][0]
        if not in_place:
            data = cf.u64(data)
        cf.write(data + mon["monitor_owner"][0], monitor.to_bytes(8, "little"))
        index = next(i for i, t in enumerate(baseline["threads"]) if key(t) == name)
        want = "monitor owner neither a Thread nor a Fiber at 0x%x" % monitor
        return corrupt.check_held(corestack, cap, baseline, index, "^%s$" % re.escape(want),
                                  timeout)
    finally:
        cf.restore()
