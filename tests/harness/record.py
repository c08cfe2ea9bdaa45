"""corestack record on fixtures/profile/shares.rb, whose methods have known
time shares (heavy does 3x light's work).

    RUBY/record              record --pid (paused) for 2 s: heavy ranked over light,
                             the target left running, no thread of it stopped
    RUBY/record-nonblocking  the same with --nonblocking
    RUBY/record-speedscope   record --on-cpu -o F.speedscope.json -- COMMAND (the
                             name chooses the format): the file's indexes hold,
                             heavy ranked over light
    RUBY/record-flamegraph   -o F.svg: a well-formed SVG, heavy over light
    RUBY/record-pprof        -o F.pb.gz, read by go tool pprof -raw: heavy and
                             light with their file and the line Ruby gives them
                             (their .times call), exactly the sample count record
                             reported (a snapshot of the thread running no Ruby
                             frame, as the program ends, under "(no Ruby frame)"),
                             heavy over light, each sample labelled with a state
                             (and ractor 1 where Ruby has ractors)
    RUBY/record-pprof-top    the same file, go tool pprof -top: the names as Ruby
                             gives them, <main> and block in <main> among them
                             (pprof cuts <...> and (...) from a name it takes
                             for demangled C++), none <unknown> or cut short
    RUBY/record-pprof-protoc the same file gunzipped and decoded by protoc against
                             pprof's own profile.proto: sample types, period,
                             duration; heavy and light with their file and line;
                             the counts add up to what record reported, heavy over
                             light
    RUBY/record-firefox      --format firefox: the Firefox Profiler's Gecko format,
                             checked against its documented fields (firefox.py)
    RUBY/record-target-exits record -- COMMAND ends within 10 s of its target's exit,
                             with the profile
    RUBY/record-interrupted  SIGINT ends record --pid with a profile, the target running
    RUBY/record-holder-exits record -- COMMAND (paused) on holder_exits.rb, whose GVL
                             holders end one after another while main sleeps: at
                             most 5% of the samples lost (every sample after the
                             last holder ended was lost when the sampler kept
                             stopping only that thread), main seen in Kernel#sleep

run_tests also runs the recording groups of contention.py,
mn_threads.py, record_exits.py, traced.py, many_threads.py, states.py,
late_names.py and subprocesses.py.

A time share is a statistic over about 200 samples of a program that a
loaded machine can starve for whole slices of a second: a recording whose
only fault is its shares (heavy not ranked over light, too few samples, a
name with no sample) is recorded once more, and the test fails when the
second recording misses too.
"""

import json
import os
import re
import signal
import subprocess
import time

from . import (contention, firefox, late_names, many_threads, mn_threads, procs, record_exits,
               states, subprocesses, traced)
from .checks import first_line


# What a recording says when only its time shares missed.
SHARES_MISSED = re.compile(r"3x the work|samples in heavy or light|pprof -top shows no")


def shares_retried(attempt):
    """attempt() -> a list of failure reasons (None for a pass), called a
    second time when a reason is only a missed time share."""
    reasons = attempt()
    if any(r and SHARES_MISSED.search(r) for r in reasons):
        reasons = attempt()
    return reasons


TESTS = ("record", "record-nonblocking", "record-speedscope", "record-flamegraph",
         "record-pprof", "record-pprof-top", "record-pprof-protoc", "record-firefox")
END_TESTS = ("record-target-exits", "record-interrupted", "record-holder-exits")


def test_names(ruby):
    return (["%s/%s" % (ruby, t) for t in TESTS] + [contention.test_name(ruby)]
            + mn_threads.test_names(ruby) + record_exits.test_names(ruby)
            + traced.test_names(ruby) + many_threads.test_names(ruby)
            + [states.test_name(ruby), late_names.test_name(ruby)]
            + subprocesses.test_names(ruby)
            + ["%s/%s" % (ruby, t) for t in END_TESTS])


SHARES = procs.SHARES
HOLDER_EXITS = os.path.join(os.path.dirname(SHARES), "holder_exits.rb")


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
    return procs.left_running(target) if target is not None else None


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


def method_lines(method):
    """(the line of method's `.times` call, the lines of its body) in
    shares.rb: Ruby places method (and its block) at its .times call while
    it runs, and at another line of its body for the moment before the call
    or after it, which a sample may catch."""
    with open(SHARES) as f:
        lines = f.read().split("\n")
    start = lines.index("def %s" % method)
    end = lines.index("end", start)
    body = set(range(start + 2, end + 1))
    for i in range(start, end):
        if ".times" in lines[i]:
            return i + 1, body
    raise ValueError("no .times in %s" % method)


def wrong_lines(method, found):
    """Why the lines found for method are not where Ruby places it, or
    None: its .times line among them, no line outside its body."""
    times, body = method_lines(method)
    if times not in found or not set(found) <= body:
        return "lines %s, expected %d (and else only lines of its body, %d-%d)" % (
            sorted(found), times, min(body), max(body))
    return None


def thread_samples_reported(stderr):
    """The samples record's summary line reports, less those it says
    listed no Ruby thread (a Ruby starting or ending): what a file of
    one thread's samples holds. None without the line."""
    m = re.search(r"(\d+) samples in .*?lost(?:, (\d+) with no Ruby thread)?,", stderr)
    return int(m.group(1)) - int(m.group(2) or 0) if m else None


LOCATION = re.compile(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*) (\S+):(\d+) s=\d+(?:\((.*)\))?$")
SAMPLE = re.compile(r"^\s+(\d+)\s+(\d+): ([\d ]+)$")


def check_pprof(res, path):
    """go tool pprof reads the profile; heavy and light are where Ruby says
    they are, and the counts add up to what record reported."""
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    if procs.sanitizer_report(res.stderr):
        return "sanitizer report: %s" % procs.sanitizer_report(res.stderr)
    reported = thread_samples_reported(res.stderr)
    raw = subprocess.run(["go", "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    if raw.returncode != 0:
        return "go tool pprof -raw failed: %s" % first_line(raw.stderr)
    locations, samples = {}, []
    for line in raw.stdout.split("\n"):
        m = LOCATION.match(line)
        if m:
            name = m.group(5) or m.group(2)
            locations[int(m.group(1))] = (name, os.path.basename(m.group(3)), int(m.group(4)))
            continue
        m = SAMPLE.match(line)
        if m:
            samples.append((int(m.group(1)), int(m.group(2)),
                            [int(x) for x in m.group(3).split()]))
    if not samples or not locations:
        return "no samples or locations in go tool pprof -raw: %s" % raw.stdout[:300]
    total = sum(count for count, _, _ in samples)
    # Every snapshot that lists the one thread is one sample, also those
    # taken as the program starts or ends, when its thread runs no Ruby
    # frame (a location of their own: pprof drops a sample without one).
    if reported is None or total != reported:
        return "pprof holds %d samples, record reported %s with a Ruby thread" % (
            total, reported)
    if any(wall <= 0 for _, wall, _ in samples):
        return "a sample without wall time"
    states = re.findall(r"\bstate:\[([^\]]*)\]", raw.stdout)
    if len(states) != len(samples) or not set(states) <= {"running", "waiting", "blocked", "gc"}:
        return "%d samples, state labels %s" % (len(samples), sorted(set(states)))
    if not set(re.findall(r"\bractor:\[([^\]]*)\]", raw.stdout)) <= {"1"}:
        return "ractor labels other than the main ractor's 1"
    inclusive = {}
    for method in ("heavy", "light"):
        found = [loc for loc in locations.values() if loc[0] == "Object#%s" % method]
        if not found:
            return "no location of Object#%s: %s" % (method, sorted(locations.values()))
        wrong = wrong_lines(method, {loc[2] for loc in found})
        if wrong or any(loc[1] != "shares.rb" for loc in found):
            return "Object#%s at %s: %s" % (method, found, wrong or "expected shares.rb")
        ids = {i for i, loc in locations.items() if loc[0] == "Object#%s" % method}
        inclusive[method] = sum(count for count, _, stack in samples if ids & set(stack))
    if inclusive["heavy"] + inclusive["light"] < 50:
        return "only %d samples in heavy or light" % (inclusive["heavy"] + inclusive["light"])
    if inclusive["heavy"] < 1.5 * inclusive["light"]:
        return "heavy %d samples, light %d: heavy does 3x the work" % (
            inclusive["heavy"], inclusive["light"])
    return None


# What shares.rb runs, as Ruby's backtraces name it (its script body, the
# loop's block, the methods and their blocks).
SHARES_NAMES = {"<main>", "block in <main>", "Kernel#loop", "Object#heavy", "Object#light",
                "block in Object#heavy", "block in Object#light", "Integer#times"}
TOP_LINE = re.compile(r"^\s*[\d.]+\w*\s+[\d.]+%\s+[\d.]+%\s+[\d.]+\w*\s+[\d.]+%\s+(.*)$")


def check_pprof_top(res, path):
    """go tool pprof -top shows every function by Ruby's name."""
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    top = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=1000", path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=120)
    if top.returncode != 0:
        return "go tool pprof -top failed: %s" % first_line(top.stderr)
    names = {m.group(1) for m in map(TOP_LINE.match, top.stdout.split("\n")) if m}
    missing = SHARES_NAMES - names
    if missing:
        return "go tool pprof -top shows no %s; it shows %s" % (sorted(missing), sorted(names))
    cut = sorted(n for n in names if n == "<unknown>" or n.endswith(" in") or not n.strip())
    if cut:
        return "go tool pprof -top shows %s" % cut
    return None


# Where Debian's golang-github-google-pprof-dev installs profile.proto.
PPROF_PROTO_DIR = "/usr/share/gocode/src/github.com/google/pprof/proto"


def parse_text_format(text):
    """protoc's text format -> a list of (field, value) where value is a
    string (scalars, strings still quoted) or such a list (messages)."""
    root = []
    stack = [root]
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
        elif line.endswith(" {"):
            child = []
            stack[-1].append((line[:-2], child))
            stack.append(child)
        else:
            key, _, value = line.partition(": ")
            stack[-1].append((key, value))
    if len(stack) != 1:
        raise ValueError("unbalanced braces")
    return root


def fields(msg, name):
    return [v for k, v in msg if k == name]


def field(msg, name, default=None):
    found = fields(msg, name)
    return found[0] if found else default


def check_pprof_protoc(res, path):
    """protoc decodes the gunzipped file as perftools.profiles.Profile;
    its functions, lines and counts are Ruby's."""
    import gzip
    if res.returncode != 0:
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    reported = thread_samples_reported(res.stderr)
    try:
        with gzip.open(path) as f:
            raw = f.read()
    except (OSError, EOFError) as exc:
        return "not gzipped: %s" % exc
    dec = subprocess.run(["protoc", "--decode", "perftools.profiles.Profile",
                          "-I", PPROF_PROTO_DIR, "profile.proto"], input=raw,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if dec.returncode != 0:
        return "protoc --decode failed: %s" % first_line(dec.stderr.decode(errors="replace"))
    try:
        prof = parse_text_format(dec.stdout.decode())
        strings = [json.loads(s) for s in fields(prof, "string_table")]
        if not strings or strings[0] != "":
            return "string_table does not start with \"\": %s" % strings[:3]
        text = lambda msg, name: strings[int(field(msg, name, "0"))]
        types = [(text(t, "type"), text(t, "unit")) for t in fields(prof, "sample_type")]
        if types != [("samples", "count"), ("wall", "nanoseconds")]:
            return "sample types %s" % types
        period = int(field(prof, "period", "0"))
        if (text(field(prof, "period_type", []), "type") != "wall" or period <= 0
                or int(field(prof, "duration_nanos", "0")) <= 0
                or int(field(prof, "time_nanos", "0")) <= 0):
            return "period, its type, the duration or the start time unset"
        functions = {int(field(f, "id")): (text(f, "name"), os.path.basename(text(f, "filename")))
                     for f in fields(prof, "function")}
        locations = {}
        for loc in fields(prof, "location"):
            line = field(loc, "line", [])
            locations[int(field(loc, "id"))] = functions[int(field(line, "function_id"))] + (
                int(field(line, "line", "0")),)
        samples = []
        for s in fields(prof, "sample"):
            values = [int(v) for v in fields(s, "value")]
            if len(values) != 2 or values[1] != values[0] * period:
                return "sample values %s with period %d" % (values, period)
            labels = {text(lb, "key") for lb in fields(s, "label")}
            if "thread" not in labels:
                return "a sample without its thread label"
            samples.append((values[0], [locations[int(i)] for i in fields(s, "location_id")]))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return "protoc's decoding does not hold together: %s" % exc
    total = sum(count for count, _ in samples)
    if reported is None or total != reported:
        return "protoc decodes %d samples, record reported %s with a Ruby thread" % (
            total, reported)
    inclusive = {}
    for method in ("heavy", "light"):
        want = ("Object#%s" % method, "shares.rb", method_lines(method)[0])
        found = {loc for loc in locations.values() if loc[0] == want[0]}
        wrong = wrong_lines(method, {loc[2] for loc in found})
        if wrong or any(loc[1] != "shares.rb" for loc in found):
            return "%s decoded as %s: %s" % (want[0], sorted(found), wrong or "expected shares.rb")
        inclusive[method] = sum(count for count, stack in samples if want in stack)
    if inclusive["heavy"] + inclusive["light"] < 50 or \
            inclusive["heavy"] < 1.5 * inclusive["light"]:
        return "heavy %d samples, light %d: heavy does 3x the work" % (
            inclusive["heavy"], inclusive["light"])
    return None


def check_firefox(res, path):
    return firefox.check_firefox(res, path, method_lines, wrong_lines)


def holder_exits(corestack, exe, out, timeout):
    try:
        res = subprocess.run([corestack, "record", "--duration", "1.5", "--rate", "200",
                              "--format", "collapsed", "-o", out, "--", exe, HOLDER_EXITS,
                              "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return "record hung"
    if res.returncode != 0 or procs.sanitizer_report(res.stderr):
        return "exit %d: %s" % (res.returncode, first_line(res.stderr))
    m = re.search(r"(\d+) samples in .*?(\d+) lost", res.stderr)
    if not m:
        return "no sample count: %s" % first_line(res.stderr)
    taken, lost = int(m.group(1)), int(m.group(2))
    if lost > 0.05 * (taken + lost):
        return "%d of %d samples lost" % (lost, taken + lost)
    with open(out) as f:
        if "sleep" not in f.read():
            return "main thread's sleep not in the profile"
    return None


def names(ctx):
    return [n for r in ctx.rubies for n in test_names(r)]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.any_selected(test_names(r))}


def run_tests(ctx):
    """corestack record on a program with known time shares."""
    rep, selected, args, prefixes, workdir = ctx.rep, ctx.selected, ctx.args, ctx.prefixes, ctx.workdir
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
            rep.result(name, shares_retried(
                lambda: [record_pid(args, exe, out, extra)])[0])
        name = "%s/record-speedscope" % ruby
        if selected(name):
            js = out + ".speedscope.json"
            rep.result(name, shares_retried(lambda: record_command(
                args, exe, js, ["--on-cpu"], check_speedscope))[0])
        # flame graphs and pprof by -o's name alone; firefox has no suffix
        for fmt, suffix, check in (("flamegraph", ".svg", check_flamegraph),
                                   ("pprof", ".pb.gz", check_pprof),
                                   ("firefox", ".gecko.json", check_firefox)):
            chosen = ["--format", fmt] if fmt == "firefox" else []
            name = "%s/record-%s" % (ruby, fmt)
            # the same file, decoded by protoc and listed by pprof -top
            decoded = "%s/record-pprof-protoc" % ruby if fmt == "pprof" else None
            top = "%s/record-pprof-top" % ruby if fmt == "pprof" else None
            if not selected(name) and not (decoded and selected(decoded)) and \
                    not (top and selected(top)):
                continue
            path = out + suffix
            checks = [(name, check), (decoded, check_pprof_protoc), (top, check_pprof_top)]
            checks = [(n, c) for n, c in checks if n and selected(n)]
            reasons = shares_retried(lambda: record_command(
                args, exe, path, chosen, *[c for _, c in checks]))
            for (n, _), reason in zip(checks, reasons):
                rep.result(n, reason)
        contention.contention_test(rep, selected, args.corestack, ruby, exe, args.timeout)
        states.states_test(rep, selected, args.corestack, ruby, exe, workdir, args.timeout)
        late_names.named_late_test(rep, selected, args.corestack, ruby, exe, workdir,
                                   args.timeout)
        mn_threads.mn_tests(rep, selected, args.corestack, ruby, exe, workdir, args.timeout)
        record_exits.record_exit_tests(rep, selected, args.corestack, ruby, exe, workdir,
                                       args.timeout)
        traced.traced_tests(rep, selected, args.corestack, ruby, exe, workdir, args.timeout)
        many_threads.many_threads_tests(rep, selected, args.corestack, ruby, exe, workdir,
                                        args.timeout)
        subprocesses.subprocess_tests(rep, selected, args.corestack, ruby, exe, workdir,
                                      args.timeout)
        name = "%s/record-target-exits" % ruby
        if selected(name):
            rep.result(name, shares_retried(lambda: [record_target_exits(args, exe, out)])[0])
        name = "%s/record-holder-exits" % ruby
        if selected(name):
            rep.result(name, holder_exits(args.corestack, exe, out, args.timeout))
        name = "%s/record-interrupted" % ruby
        if selected(name):
            rep.result(name, shares_retried(lambda: [record_interrupted(args, exe, out)])[0])


def record_pid(args, exe, out, extra):
    """record --pid for 2 s on the shares program: check_profile's reason."""
    target = subprocess.Popen([exe, SHARES], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        res = subprocess.run([args.corestack, "record", "--pid", str(target.pid),
                              "--duration", "2", "-o", out] + extra,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout)
        return check_profile(res, out, target)
    except subprocess.TimeoutExpired:
        return "record hung"
    finally:
        target.kill()
        target.wait()


def record_command(args, exe, path, chosen, *checks):
    """record -- the shares program for 1.5 s into path: each check's reason."""
    try:
        res = subprocess.run([args.corestack, "record", "--duration", "20"] + chosen
                             + ["-o", path, "--", exe, SHARES, "1.5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return ["record hung"] * len(checks)
    return [check(res, path) for check in checks]


def record_target_exits(args, exe, out):
    """record -- the shares program for 1.5 s: check_profile's reason, or
    that record went on long after the program ended."""
    started = time.monotonic()
    try:
        res = subprocess.run([args.corestack, "record", "--duration", "20", "-o", out,
                              "--", exe, SHARES, "1.5"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return "record hung after its target exited"
    took = time.monotonic() - started
    reason = check_profile(res, out)
    if not reason and took > 10:
        reason = "record went on %.1f s after its target exited" % took
    return reason


def record_interrupted(args, exe, out):
    """record --pid ended by SIGINT after 2 s: check_profile's reason."""
    target = subprocess.Popen([exe, SHARES], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rec = None
    try:
        time.sleep(0.5)
        rec = subprocess.Popen([args.corestack, "record", "--pid", str(target.pid),
                                "-o", out], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        rec.send_signal(signal.SIGINT)
        stdout, stderr = rec.communicate(timeout=args.timeout)
        return check_profile(
            subprocess.CompletedProcess(rec.args, rec.returncode, stdout, stderr),
            out, target)
    except subprocess.TimeoutExpired:
        rec.kill()
        rec.wait()
        return "record did not stop on SIGINT"
    finally:
        target.kill()
        target.wait()
