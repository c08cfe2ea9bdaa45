"""corestack record --subprocesses on fixtures/profile/forks.rb, a program
whose parent, two forked workers (one forked after the recording began) and
a grandchild each spin in a method of their own; the program writes which
process runs which method (the ground truth). It also starts `sleep`, a
child that is no Ruby.

    RUBY/record-subprocesses       record --subprocesses -- COMMAND, collapsed:
                                   every process of the truth has its method
                                   under its own "process PID: " label and no
                                   other's, the sleep child and no other pid is
                                   in it, nothing said about the skipped child;
                                   a worker that set its $0 has it in its
                                   labels, "process PID ($0): ", the others none
    RUBY/record-progress-silent    the same run, stderr not a terminal: no
                                   progress line in it
    RUBY/record-subprocesses-pid   (3.4 only) record --pid --subprocesses
                                   --format speedscope: one profile per process
                                   and thread, each process's method in its
                                   own profiles only
    RUBY/record-progress-tty       the same run with stderr on a pseudo-terminal:
                                   progress lines rewritten in place (\\r) with
                                   samples, lost, seconds and processes, cleared
                                   before the summary
    RUBY/record-subprocesses-summary (3.4 only) --format summary, the program
                                   ending within the recording, its workers
                                   first: the sample count at most the rate
                                   times the seconds and the target's one
                                   thread's (each tick samples every
                                   process), the number of processes the
                                   program ran, the followed ones counted after
                                   they ended, worker A's $0 in its label
    RUBY/record-subprocesses-pprof (3.4 only) --format pprof, read by go
                                   tool pprof -raw: each process's method in
                                   samples with its pid label
    RUBY/record-subprocesses-timeline (3.4 only) record --subprocesses
                                   --format speedscope on
                                   fixtures/profile/parks.rb, whose two
                                   workers sleep in park_long then park_short
                                   and write when each began and ended: in
                                   the file, each worker's phase is one run
                                   of samples (a thread that stays in one
                                   stack grows its sample, followed or not;
                                   one at the phase's start can see it
                                   before its sleep) as long as measured;
                                   loaded in
                                   speedscope's web app and exported by it
                                   (viewers.py), each worker's calls are the
                                   program's, one each, in its order, their
                                   lengths within 60 ms and 15 % of what it
                                   measured
    RUBY/forked-child-tids         corestack --pid CHILD --json on a forked child
                                   with two threads: each tid one of the child's
                                   threads as it listed them (/proc/self/task), the
                                   main thread's the child's pid (some Rubies keep
                                   the parent's tid in the child's main thread)
"""

import json
import os
import pty
import re
import select
import signal
import subprocess
import time

from . import procs, viewers
from .checks import first_line

FORKS = os.path.join(procs.ROOT, "fixtures", "profile", "forks.rb")
METHODS = ("parent_work", "worker_a", "worker_b", "grandchild_c")
LABEL = re.compile(r"^process (\d+)(?: \((.*?)\))?: ")
PARKS = os.path.join(procs.ROOT, "fixtures", "profile", "parks.rb")
PARK_SECONDS = (0.6, 0.4)
EXTRA_RUBY = "3.4"   # the one Ruby the other formats and --pid run on


def test_names(ruby):
    names = ["%s/record-subprocesses" % ruby, "%s/record-progress-silent" % ruby,
             "%s/forked-child-tids" % ruby]
    if ruby == EXTRA_RUBY:
        names += ["%s/record-subprocesses-pid" % ruby, "%s/record-progress-tty" % ruby,
                  "%s/record-subprocesses-pprof" % ruby,
                  "%s/record-subprocesses-summary" % ruby,
                  "%s/record-subprocesses-timeline" % ruby]
    return names


def read_truth(path):
    """pid -> method, as the program wrote it."""
    return {pid: method for pid, (method, _) in read_titles(path).items()}


def read_titles(path):
    """pid -> (method, the $0 it set or None), as the program wrote it."""
    truth = {}
    with open(path) as f:
        for line in f:
            pid, method, *title = line.split()
            truth[int(pid)] = (method, title[0] if title else None)
    return truth


def check_truth(truth, seen):
    """seen: pid -> set of method names in that process's stacks."""
    if sorted(truth.values()) != sorted(METHODS):
        return "the program wrote %s" % truth
    for pid, method in truth.items():
        names = seen.get(pid, set())
        if "Object#" + method not in names:
            return "process %d (%s) not sampled in it: %s" % (
                pid, method, sorted(n for n in names if n.startswith("Object#")))
        for other, m in truth.items():
            if other != pid and "Object#" + m in names:
                return "Object#%s (process %d) under process %d" % (m, other, pid)
    strangers = set(seen) - set(truth)
    if strangers:
        return "processes that are not the program's Rubies: %s" % sorted(strangers)
    return None


def collapsed_processes(path):
    """pid -> names; no thread of one process labelled with the tid of
    another's main thread (its pid): a forked child's main thread labelled
    with its parent's tid fails here."""
    seen, threads = {}, {}
    with open(path) as f:
        for line in f:
            frames = line.rsplit(" ", 1)[0].split(";")
            m = LABEL.match(frames[0])
            if not m:
                raise ValueError("a line without a process: %s" % line[:100])
            pid = int(m.group(1))
            seen.setdefault(pid, set()).update(frames[1:])
            threads.setdefault(pid, {}).setdefault(frames[0][m.end():], set()).update(
                frames[1:])
    for pid, labels in threads.items():
        for label, names in labels.items():
            wrong = [other for other in threads if other != pid and label == "thread %d" % other]
            if wrong:
                raise ValueError("process %d's thread labelled %r, the tid of process %d's "
                                 "main thread" % (pid, label, wrong[0]))
    return seen


def check_titles(truth_path, labels):
    """Each process's labels carry the $0 it set, and no title if it set
    none. labels: the thread labels of the profile."""
    titles = {}
    for label in labels:
        m = LABEL.match(label)
        if m:
            titles.setdefault(int(m.group(1)), set()).add(m.group(2))
    for pid, (method, title) in read_titles(truth_path).items():
        if pid in titles and titles[pid] != {title}:
            return "process %d (%s, $0 %s) labelled with titles %s" % (
                pid, method, title, sorted(titles[pid], key=str))
    return None


def collapsed_labels(path):
    with open(path) as f:
        return {line.split(";", 1)[0] for line in f}


def speedscope_processes(path):
    with open(path) as f:
        doc = json.load(f)
    frames = [fr["name"] for fr in doc["shared"]["frames"]]
    seen, labels = {}, set()
    for prof in doc["profiles"]:
        m = LABEL.match(prof["name"])
        if not m or prof["name"] in labels:
            raise ValueError("profile name %r: not one per process and thread" % prof["name"])
        labels.add(prof["name"])
        names = seen.setdefault(int(m.group(1)), set())
        for stack in prof["samples"]:
            names.update(frames[i] for i in stack)
    return seen


PPROF_SAMPLE = re.compile(r"^\s+\d+\s+\d+: ([\d ]+)$")
PPROF_LOCATION = re.compile(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+) ")


def pprof_processes(path):
    """pid -> names, from go tool pprof -raw: each sample's locations and
    then its labels, pid among them."""
    raw = subprocess.run(["go", "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    if raw.returncode != 0:
        raise ValueError("go tool pprof -raw: %s" % first_line(raw.stderr))
    samples, locations, stack = [], {}, None
    for line in raw.stdout.split("\n"):
        m = PPROF_SAMPLE.match(line)
        if m:
            stack = [int(x) for x in m.group(1).split()]
            continue
        m = re.search(r"pid:\[(\d+)\]", line)
        if m and stack is not None:
            samples.append((int(m.group(1)), stack))
            stack = None
            continue
        m = PPROF_LOCATION.match(line)
        if m:
            locations[int(m.group(1))] = m.group(2)
    if not samples:
        raise ValueError("no sample with a pid label: %s" % raw.stdout[:300])
    seen = {}
    for pid, stack in samples:
        seen.setdefault(pid, set()).update(locations.get(i, "?") for i in stack)
    return seen


def check_run(res, out, truth_path, read):
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    if procs.sanitizer_report(res.stderr):
        return "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    # the summary, and the line saying the command was ended (record -- CMD
    # ends a command that outlives --duration)
    said = [line for line in res.stderr.split("\n")
            if line.strip() and not re.match(
                r"corestack record: (\d+ (samples|processes)|the recording ended: sent SIGTERM)",
                line.strip("\r").lstrip())]
    if said:
        return "record said more than its summary: %s" % said[0][:200]
    try:
        return check_truth(read_truth(truth_path), read(out))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        return "no readable profile: %s" % exc


SUMMARY_HEAD = re.compile(r"^(\d+) samples in ([\d.]+) s \((\d+) Hz\), \d+ lost"
                          r"(?:, of each of (\d+) processes)?;")


def check_summary(res, truth_path):
    """The summary counts ticks, not the processes' samples added up; the
    processes the program ran are all counted, the ended ones too; a
    worker's $0 is in its label."""
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    if procs.sanitizer_report(res.stderr):
        return "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    truth = read_titles(truth_path)
    if sorted(m for m, _ in truth.values()) != sorted(METHODS):
        return "the program wrote %s" % truth
    head = SUMMARY_HEAD.match(res.stdout)
    if not head:
        return "summary begins %r" % first_line(res.stdout)
    samples, seconds, rate = int(head.group(1)), float(head.group(2)), int(head.group(3))
    if samples > 1.1 * rate * (seconds + 0.05) + 5:
        return "%d samples in %.1f s at %d Hz: more than one per tick" % (samples, seconds, rate)
    # the parent's one thread is in every sample of the target
    parent = next(pid for pid, (m, _) in truth.items() if m == "parent_work")
    own = re.search(r"process %d: thread \d+ \((\d+) samples" % parent, res.stdout)
    if not own or not int(own.group(1)) <= samples <= int(own.group(1)) + 3:
        return "%d samples, the target's thread in %s: not one sample per tick" % (
            samples, own.group(1) if own else "none")
    if int(head.group(4) or 1) != len(truth):
        return "summary says %s processes, the program ran %d" % (head.group(4), len(truth))
    followed = re.search(r"(\d+) processes followed besides the target", res.stderr)
    if not followed or int(followed.group(1)) != len(truth) - 1:
        return "record says %r, the program forked %d Rubies" % (
            followed.group(0) if followed else res.stderr[-200:], len(truth) - 1)
    for pid, (method, title) in truth.items():
        if title and "process %d (%s): " % (pid, title) not in res.stdout:
            return "no label of process %d with its $0 %s in the summary" % (pid, title)
    return None


PROGRESS = re.compile(r"\rcorestack record: (\d+) samples, (\d+) lost, ([\d.]+) s, (\d+) processes")


def near(got, real):
    """Within what viewers/speedscope-timeline allows of a measured time."""
    return abs(got - real) <= 0.06 + 0.15 * real


def file_phases(path, pid, methods):
    """Per method, (place, seconds) of each sample of process pid's
    profiles in the speedscope file that has it in its stack, place
    counting the samples of those profiles in the file's order."""
    with open(path) as f:
        doc = json.load(f)
    frames = [fr["name"] for fr in doc["shared"]["frames"]]
    found = {m: [] for m in methods}
    place = 0
    for prof in doc["profiles"]:
        m = LABEL.match(prof["name"])
        if not m or int(m.group(1)) != pid:
            continue
        scale = viewers.TIME_UNITS[prof["unit"]] / 1e9
        for stack, weight in zip(prof["samples"], prof["weights"]):
            for name in methods:
                if name in (frames[i] for i in stack):
                    found[name].append((place, weight * scale))
            place += 1
    return found


def check_timeline(res, js, truth_path, timeout):
    """The workers' phases in the file and in speedscope against the
    times parks.rb measured."""
    if res.returncode != 0:
        return "record exit %d: %s" % (res.returncode, first_line(res.stderr))
    with open(truth_path) as f:
        workers = [json.loads(line) for line in f if line.strip()]
    if len(workers) != 2:
        return "the program wrote %d workers, not 2" % len(workers)
    methods = tuple(p[0] for p in workers[0]["phases"])
    for w in workers:
        for (name, t0, t1, _, _), got in zip(
                w["phases"], file_phases(js, w["pid"], methods).values()):
            # one run of samples: the phase's first can catch it before
            # its sleep (at caller_locations), a stack of its own
            places = [at for at, _ in got]
            seconds = sum(sec for _, sec in got)
            if not got or places != list(range(places[0], places[0] + len(got))) \
                    or not near(seconds, t1 - t0):
                return ("process %d's %s: samples %s of %.3f s in all in the"
                        " file, one run of %.3f s measured" % (
                            w["pid"], name, places, seconds, t1 - t0))
    missing = viewers.speedscope_missing()
    if missing:
        return missing
    doc = viewers.speedscope_export(js, timeout)
    for name, _, _, path, line in workers[0]["phases"]:
        for fr in doc["shared"]["frames"]:
            if fr["name"] == name and (fr.get("file"), fr.get("line")) != (path, line):
                return "speedscope reads %s at %s:%s, Ruby gives %s:%d" % (
                    name, fr.get("file"), fr.get("line"), path, line)
    for w in workers:
        own = [p["name"] for p in doc["profiles"]
               if (m := LABEL.match(p["name"])) and int(m.group(1)) == w["pid"]]
        calls = viewers.phase_calls(doc, methods, own)
        want = [p[0] for p in w["phases"]]
        if [c[0] for c in calls] != want:
            return "speedscope's time order of process %d calls %s, the program %s" % (
                w["pid"], [c[0] for c in calls], want)
        for (name, start, end), (_, t0, t1, _, _) in zip(calls, w["phases"]):
            if not near((end - start) / 1e9, t1 - t0):
                return "speedscope's %s of process %d lasts %.3f s, measured %.3f s" % (
                    name, w["pid"], (end - start) / 1e9, t1 - t0)
    return None


def check_tty(text):
    """Progress lines, each started with \\r, then a blank line over the
    last one before the summary."""
    lines = PROGRESS.findall(text)
    if len(lines) < 2:
        return "%d progress lines on the terminal: %r" % (len(lines), text[:300])
    if [int(n) for n, _, _, _ in lines] != sorted(int(n) for n, _, _, _ in lines):
        return "progress sample counts go down: %s" % lines
    if max(int(p) for _, _, _, p in lines) < 3:
        return "progress never counts the forked processes: %s" % lines
    end = re.search(r" processes *\r +\r(?=corestack record: \d+ samples in)", text)
    if not end:
        return "the progress line is not cleared before the summary: %r" % text[-300:]
    if "\n" in text[:end.start()]:
        return "the progress line is not kept in place: %r" % text[:end.start()][:300]
    return None


def run_on_tty(argv, timeout):
    """argv with stderr on a pseudo-terminal: its result, stderr as the
    terminal showed it."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 4096)
                except OSError:
                    break  # every writer closed it
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
        stdout = proc.communicate(timeout=timeout)[0]
    finally:
        os.close(master)
    text = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, text)


def started_program(exe, truth):
    """forks.rb running (8 s at most), once it wrote its parent and worker A."""
    target = subprocess.Popen([exe, FORKS, "8", truth], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        time.sleep(0.05)
        if os.path.exists(truth) and len(read_truth(truth)) >= 2:
            break
    return target


# A forked child with a second thread, which writes its pid and the kernel's
# list of its threads (/proc/self/task), then sleeps.
FORKED_CHILD = r'''
$stdout.sync = true
child = fork do
  t = Thread.new { sleep }
  sleep 0.1 until t.status == "sleep"
  puts "#{Process.pid} #{Dir.children("/proc/self/task").sort.join(",")}"
  sleep
end
sleep
'''


def forked_child_tids(corestack, exe, timeout):
    """corestack --pid CHILD --json: the main thread's tid is the child's
    pid, every tid one of the child's threads (some Rubies keep the
    parent's tid in the child's main thread)."""
    proc = subprocess.Popen([exe, "-e", FORKED_CHILD], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    child = None
    try:
        if not select.select([proc.stdout], [], [], 60)[0]:
            return "the program wrote nothing in 60 s"
        line = proc.stdout.readline().split()
        if len(line) != 2:
            return "the program wrote %r" % line
        child, tasks = int(line[0]), {int(t) for t in line[1].split(",")}
        res = subprocess.run([corestack, "--pid", str(child), "--json"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=timeout)
        if res.returncode != 0:
            return "exit %d: %s" % (res.returncode, first_line(res.stderr))
        threads = json.loads(res.stdout)["threads"]
        tids = [(t.get("tid"), t.get("main")) for t in threads]
        if len(threads) != 2 or any(t.get("tid_error") for t in threads):
            return "threads %s, errors %s" % (tids, [t.get("tid_error") for t in threads])
        for tid, main in tids:
            if tid not in tasks or main != (tid == child):
                return "child %d with threads %s: corestack gave (tid, main) %s" % (
                    child, sorted(tasks), tids)
        return None
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
        return "failed: %s" % exc
    finally:
        if child:
            os.kill(child, signal.SIGKILL)
        proc.kill()
        proc.wait()


def subprocess_tests(rep, selected, corestack, ruby, exe, workdir, timeout):
    name = "%s/forked-child-tids" % ruby
    if selected(name):
        rep.result(name, forked_child_tids(corestack, exe, timeout))
    base = os.path.join(workdir, "forks-%s" % ruby)
    command = "%s/record-subprocesses" % ruby
    silent = "%s/record-progress-silent" % ruby
    if selected(command) or selected(silent):
        out, truth = base + ".folded", base + ".truth"
        try:
            res = subprocess.run([corestack, "record", "--subprocesses", "-o", out,
                                  "--duration", "1", "--", exe, FORKS, "8", truth],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 timeout=timeout)
            rep.result(command, check_run(res, out, truth, collapsed_processes)
                       or check_titles(truth, collapsed_labels(out)))
            rep.result(silent, "progress on a stderr that is no terminal: %r" % res.stderr[:200]
                       if re.search(r"\r|\d+ samples, \d+ lost", res.stderr) else None)
        except subprocess.TimeoutExpired:
            rep.result(command, "record hung")
            rep.result(silent, "record hung")
    if ruby != EXTRA_RUBY:
        return
    pid_mode = "%s/record-subprocesses-pid" % ruby
    tty = "%s/record-progress-tty" % ruby
    if selected(pid_mode) or selected(tty):
        out, truth = base + ".speedscope.json", base + "-pid.truth"
        target = started_program(exe, truth)
        try:
            res = run_on_tty([corestack, "record", "--pid", str(target.pid), "--subprocesses",
                              "--duration", "1", "--format", "speedscope", "-o", out], timeout)
            tail = res.stderr[res.stderr.rfind("\r") + 1:]
            summary = subprocess.CompletedProcess(res.args, res.returncode, res.stdout, tail)
            rep.result(pid_mode, check_run(summary, out, truth, speedscope_processes))
            rep.result(tty, check_tty(res.stderr) if res.returncode == 0
                       else "exit %d" % res.returncode)
        finally:
            target.terminate()   # its at_exit ends the sleep child
            target.wait()
    name = "%s/record-subprocesses-pprof" % ruby
    if selected(name):
        out, truth = base + ".pb.gz", base + "-pprof.truth"
        try:
            res = subprocess.run([corestack, "record", "--subprocesses", "--format", "pprof",
                                  "-o", out, "--duration", "1", "--", exe, FORKS, "8", truth],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, timeout=timeout)
            rep.result(name, check_run(res, out, truth, pprof_processes))
        except subprocess.TimeoutExpired:
            rep.result(name, "record hung")
    name = "%s/record-subprocesses-summary" % ruby
    if selected(name):
        truth = base + "-summary.truth"
        try:
            res = subprocess.run([corestack, "record", "--subprocesses", "--format", "summary",
                                  "--", exe, FORKS, "4", truth],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, timeout=timeout)
            rep.result(name, check_summary(res, truth))
        except subprocess.TimeoutExpired:
            rep.result(name, "record hung")
    name = "%s/record-subprocesses-timeline" % ruby
    if selected(name):
        js, truth = base + "-timeline.speedscope.json", base + "-timeline.truth"
        try:
            res = subprocess.run([corestack, "record", "--subprocesses", "--format", "speedscope",
                                  "-o", js, "--duration", "20", "--", exe, PARKS, truth]
                                 + ["%g" % s for s in PARK_SECONDS],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, timeout=timeout)
            rep.result(name, check_timeline(res, js, truth, timeout))
        except subprocess.TimeoutExpired:
            rep.result(name, "record or chromium hung")
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            rep.result(name, str(exc))
