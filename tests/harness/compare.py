"""Compare corestack's JSON with the oracle Ruby wrote about itself.

Every check returns None when it passes, or one line naming the first
difference with both sides.
"""

import fnmatch
import json
import os
import re

ORACLE_THREAD = "corestack-oracle"
STATUSES = ("run", "sleep", "aborting", "dead")
KINDS = ("ruby", "cfunc")


def show(value):
    """A value as it appears in a one-line message."""
    return json.dumps(value, ensure_ascii=False)


def scenario_threads(threads):
    """The threads a test compares: all but the oracle's own."""
    return [t for t in threads if t.get("name") != ORACLE_THREAD]


def thread_title(index, thread):
    name = thread.get("name")
    if thread.get("main"):
        return "thread %d (main)" % index
    if name is not None:
        return "thread %d %s" % (index, show(name))
    return "thread %d" % index


def parse_report(stdout):
    """corestack --json output -> (dict, None) or (None, reason)."""
    try:
        report = json.loads(stdout)
    except ValueError as exc:
        head = stdout.strip().splitlines()[:1]
        return None, "stdout is not JSON (%s): %s" % (
            exc, show(head[0][:120]) if head else "empty")
    if not isinstance(report, dict):
        return None, "stdout JSON is a %s, not an object" % type(report).__name__
    return report, None


def check_shape(report):
    """Schema-level checks of a complete report."""
    if report.get("corestack_schema") != 1:
        return "corestack_schema is %s, expected 1" % show(report.get("corestack_schema"))
    if report.get("complete") is not True:
        return "complete is %s, expected true (exit status was 0)" % show(report.get("complete"))
    if report.get("errors") != []:
        return "errors is %s, expected []" % show(report.get("errors"))[:300]
    if not isinstance(report.get("process"), dict):
        return "no process object"
    if not isinstance(report.get("threads"), list):
        return "no threads list"
    for ti, thread in enumerate(report["threads"]):
        if not isinstance(thread, dict) or not isinstance(thread.get("frames"), list):
            return "thread %d is not an object with a frames list" % ti
        if thread.get("status") not in STATUSES:
            return "%s: status %s is none of %s" % (
                thread_title(ti, thread), show(thread.get("status")), "/".join(STATUSES))
        if thread.get("error") is not None:
            return "%s: error %s" % (thread_title(ti, thread), show(thread["error"]))
        for fi, frame in enumerate(thread["frames"]):
            where = "%s frame %d" % (thread_title(ti, thread), fi)
            if not isinstance(frame, dict):
                return "%s is not an object" % where
            if frame.get("kind") not in KINDS:
                return "%s: kind %s is none of ruby/cfunc" % (where, show(frame.get("kind")))
            if not isinstance(frame.get("qualified"), str):
                return "%s: qualified is %s, not a string" % (where, show(frame.get("qualified")))
            if frame.get("error") is not None:
                return "%s: error %s" % (where, show(frame["error"]))
    return None


def check_process(report, oracle, signal_number=None, cwd_known=True):
    """The process facts the oracle (and, for kernel cores, wait()) knows.
    cwd_known: the target can read a live process's working directory (not
    one the debugger reads for corestack)."""
    proc = report["process"]
    if proc.get("pid") != oracle["pid"]:
        return "process.pid: oracle %s, corestack %s" % (show(oracle["pid"]), show(proc.get("pid")))
    if proc.get("ruby_version") != oracle["ruby_version"]:
        return "process.ruby_version: oracle %s, corestack %s" % (
            show(oracle["ruby_version"]), show(proc.get("ruby_version")))
    if "cmdline" in oracle:
        # the whole command line, not the 80 bytes or argv[0] of the notes
        want = " ".join(oracle["cmdline"]).rstrip(" ")
        if proc.get("command") != want:
            return "process.command: the process's cmdline %s, corestack %s" % (
                show(want), show(proc.get("command")))
    # a live process's working directory; a core does not record it
    live = proc.get("source") == "live" and cwd_known
    want_cwd = oracle.get("cwd") if live else None
    if proc.get("cwd") != want_cwd:
        return "process.cwd: %s, expected %s" % (show(proc.get("cwd")), show(want_cwd))
    if signal_number is not None:
        sig = proc.get("signal")
        got = sig.get("number") if isinstance(sig, dict) else None
        if got != signal_number:
            return "process.signal.number: process died of %d, corestack says %s" % (
                signal_number, show(sig))
    return None


def compare_threads(report, oracle):
    """Same threads, same order, same names/flags/status/tid and frames."""
    mine = scenario_threads(oracle["threads"])
    theirs = scenario_threads(report["threads"])
    for ti, (want, got) in enumerate(zip(mine, theirs)):
        title = thread_title(ti, want)
        for key in ("name", "main", "status"):
            if want.get(key) != got.get(key):
                return "%s: %s: oracle %s, corestack %s" % (
                    title, key, show(want.get(key)), show(got.get(key)))
        if want.get("native_thread_id") is not None and want["native_thread_id"] != got.get("tid"):
            return "%s: tid: oracle native_thread_id %s, corestack %s" % (
                title, show(want["native_thread_id"]), show(got.get("tid")))
        wf, gf = want["frames"], got["frames"]
        for fi, (a, b) in enumerate(zip(wf, gf)):
            for key in ("label", "path", "lineno", "absolute_path"):
                if (key in a or key != "absolute_path") and a.get(key) != b.get(key):
                    return "%s frame %d of %d: %s: oracle %s, corestack %s (oracle frame %s:%s:%s)" % (
                        title, fi, len(wf), key, show(a.get(key)), show(b.get(key)),
                        a.get("path"), a.get("lineno"), a.get("label"))
        if len(wf) != len(gf):
            extra = gf[len(wf)] if len(gf) > len(wf) else wf[len(gf)]
            return "%s: frame count: oracle %d, corestack %d (first unmatched: %s)" % (
                title, len(wf), len(gf), show(extra))
    if len(mine) != len(theirs):
        names = lambda ts: show([t.get("name") for t in ts])
        return "thread count (without %s): oracle %d %s, corestack %d %s" % (
            ORACLE_THREAD, len(mine), names(mine), len(theirs), names(theirs))
    return None


OWNER = re.compile(r"(^|in )[A-Z]\w*(?:::[A-Z]\w*)*[#.]")


def plain_label(label):
    """A label without the owner Ruby 3.4+ puts in it ("Kernel#sleep" ->
    "sleep", "block in Foo::Bar.baz" -> "block in baz"): the form the
    fixtures' sidecars and checks name frames by, on every Ruby."""
    return OWNER.sub(r"\1", label) if isinstance(label, str) else label


# --- .qualified sidecars -------------------------------------------------

class Expectation:
    """One sidecar line: the frame with this label at this place must carry
    this qualified name. path and lineno may be '*' patterns; path matches
    the frame's whole path or its basename. A path starting with '?' names a
    frame only some Rubies show (a rescue clause's own frame, up to 3.3):
    the line applies where Ruby reported such a frame."""

    def __init__(self, source, number, path, lineno, label, qualified):
        self.source, self.number = source, number
        self.optional = path.startswith("?")
        path = path[1:] if self.optional else path
        self.path, self.lineno, self.label, self.qualified = path, lineno, label, qualified

    def where(self):
        return "%s:%d" % (os.path.basename(self.source), self.number)

    def text(self):
        return "\t".join((("?" if self.optional else "") + self.path,
                          self.lineno, self.label, self.qualified))

    def matches(self, frame):
        if plain_label(frame.get("label")) != self.label:
            return False
        path = frame.get("path")
        if not isinstance(path, str):
            return False
        if not (fnmatch.fnmatchcase(path, self.path)
                or fnmatch.fnmatchcase(os.path.basename(path), self.path)):
            return False
        return fnmatch.fnmatchcase(str(frame.get("lineno")), self.lineno)


def sidecar_rows(path):
    """(line number, line, tab-separated columns) of a sidecar file's
    lines that are neither blank nor comments."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.strip() and not line.startswith("#"):
                yield number, line, line.split("\t")


def load_sidecar(path):
    """-> (list of Expectation, None) or (None, reason)."""
    expectations = []
    for number, line, cols in sidecar_rows(path):
        if len(cols) != 4 or not all(cols):
            return None, "%s:%d: not 4 non-empty tab-separated columns: %s" % (
                os.path.basename(path), number, show(line))
        expectations.append(Expectation(path, number, *cols))
    return expectations, None


def all_frames(threads):
    for thread in scenario_threads(threads):
        for frame in thread.get("frames", []):
            yield frame


def check_sidecar_against_oracle(expectations, oracle):
    """Fixture self-check: every expectation names a frame Ruby reported
    (an optional one, when Ruby reported it)."""
    frames = list(all_frames(oracle["threads"]))
    for exp in expectations:
        if not exp.optional and not any(exp.matches(f) for f in frames):
            return "%s matches no frame of the oracle: %s" % (exp.where(), show(exp.text()))
    return None


def check_qualified(expectations, report, oracle, field="qualified"):
    frames = list(all_frames(report["threads"]))
    theirs = list(all_frames(oracle["threads"]))
    for exp in expectations:
        hits = [f for f in frames if exp.matches(f)]
        if exp.optional and not any(exp.matches(f) for f in theirs):
            continue
        if not hits:
            return "%s matches no frame of corestack's report: %s" % (exp.where(), show(exp.text()))
        for frame in hits:
            if frame.get(field) != exp.qualified:
                return "%s (%s:%s %s): expected %s %s, corestack %s" % (
                    exp.where(), frame.get("path"), frame.get("lineno"), exp.label, field,
                    show(exp.qualified), show(frame.get(field)))
    return None


FOLD = re.compile(r"\.\.\. (\d+) levels\.\.\.(?: \(the (\d+) frames above, (\d+) more times\))?$")


FOLD_MAX_RUN = 4   # a recursion deeper than this is folded


def text_stacks(stdout):
    """Each thread's frame lines in the text output, its folds ("... N
    levels...") expanded -> (list of lists of Location#to_s, None) or
    (None, reason); more than FOLD_MAX_RUN identical lines in a row are a
    recursion left unfolded."""
    stacks, cur, run, last = [], None, 0, None
    for line in stdout.splitlines():
        if line.startswith("Thread "):
            cur = []
            stacks.append(cur)
            continue
        if cur is None or not line.startswith("    ") or line[4:5] == " ":
            if not line.startswith("    "):
                cur = None if line.startswith("  ") or not line else cur
            continue
        text = line[4:]
        m = FOLD.match(text)
        if m:
            levels, period = int(m.group(1)), int(m.group(2) or 1)
            reps = levels // period
            if levels % period or (m.group(3) and int(m.group(3)) != reps) or len(cur) < period:
                return None, "fold line %s does not repeat whole blocks of what is above" % show(line)
            cur.extend(cur[-period:] * reps)
        elif not (text.startswith("<") and text.endswith(">") and ":in " not in text):
            cur.append(text.split("  ")[0])
            run = run + 1 if len(cur) > 1 and cur[-1] == cur[-2] and line == last else 1
            if run > FOLD_MAX_RUN:
                return None, "%d identical lines in a row, not folded: %s" % (run, show(line))
        last = line
    return stacks, None


def check_text_stacks(stdout, oracle):
    """Every thread Ruby reported is, frame by frame, one thread of the text
    output once its folded recursions are expanded."""
    stacks, why = text_stacks(stdout)
    if why:
        return why
    for thread in scenario_threads(oracle["threads"]):
        want = [f.get("text") or f["label"] for f in thread.get("frames", [])]
        if want not in stacks:
            near = min(stacks, key=lambda s: abs(len(s) - len(want))) if stacks else []
            return "no thread of the text shows the %d frames Ruby reported (%s ...); nearest has %d" % (
                len(want), show(want[:3]), len(near))
    return None


def check_text(stdout, oracle):
    """Every frame Ruby reported shows up in the text output as the line
    Ruby prints for it (Location#to_s: path, line, label, quotes)."""
    seen = set()
    lines = set(l.strip().split("  ")[0] for l in stdout.splitlines())
    for frame in all_frames(oracle["threads"]):
        text = frame.get("text") or frame["label"]
        if text in seen:
            continue
        seen.add(text)
        if text not in lines:
            return "frame %s not printed as Ruby prints it (%s:%s)" % (
                show(text), frame.get("path"), frame.get("lineno"))
    return None
