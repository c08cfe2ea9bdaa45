"""A directory of cores (corestack DIR): the crash cores crash.py makes, put
in a directory with what CI finds next to them, grouped by crash signature
and summarized as JSON, Markdown and JUnit XML.

    RUBY/crash/dir/CHECK     the cores of crash modes segv and segv_copy
                             (the same crash site, two processes), abort (as
                             a bundle, corestack bundle's output, read as
                             the core it holds, nothing left in TMPDIR),
                             copies of the abort core compressed with zstd
                             and lz4 under systemd-coredump's names (.zst,
                             .lz4) and with bzip2, the segv core cut to
                             4096 bytes, a text file and (when the threads
                             scenario's gcore was taken) that gcore of a
                             running Ruby. CHECK: groups: --json gives
                             exactly two groups, most frequent first: the
                             four abort cores (the bundle and the three
                             compressed copies), then the two segv cores,
                             each with the crash kind and function the mode
                             makes and the stable names of the three
                             innermost Ruby frames Ruby's own crash report
                             (or the program's record) gives; each
                             compressed copy's report has the crash and the
                             threads (stacks) of the plain abort core's;
                             the cut core is one broken line naming the
                             truncation, the text file is skipped, the
                             gcore is "no crash", and the exit code is 3
                             (crashes found); markdown: the groups table,
                             one fenced stack per group with its innermost
                             Ruby frame, the broken core listed, exit 3 (a
                             smaller directory: the segv and abort cores
                             and the cut one); junit: the same directory as
                             XML that parses, one failing test case per
                             group named by its signature, the failure
                             naming its cores and stack; and the segv core
                             alone: its one group
    core-dir/hostile         a directory of what is not a core: a symlink
                             loop, a dangling symlink, a FIFO, a
                             subdirectory, an empty file, an executable, a
                             file without read permission (skipped or
                             broken, as the user may read it), an ELF core
                             header alone, zstd, lz4 and bzip2 streams of
                             garbage (broken, one line each), a name with a
                             control character; every format ends (no
                             hang) with exit 2, no group, the exact
                             skipped count, and JUnit XML that parses
    core-dir/empty           an empty directory: exit 0, one line on
                             stderr, a summary of nothing
"""

import json
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET

from . import compare, procs

DIR_CHECKS = ("groups", "markdown", "junit")
# The crash modes whose cores the directory holds.
DIR_MODES = ("segv", "segv_copy", "abort")
CUT = 4096
# systemd-coredump's names of a zstd and an lz4 core (Compress=)
SYSTEMD_NAME = "core.ruby.1000.0f1e2d3c4b5a69788796a5b4c3d2e1f0.%d.1700000000000000.%s"
# the abort core's compressed copies: (file name, compressing command)
COMPRESSED = ((SYSTEMD_NAME % (os.getpid(), "zst"), ["zstd", "-q", "-1", "-c"]),
              (SYSTEMD_NAME % (os.getpid(), "lz4"), ["lz4", "-q", "-c"]),
              ("core.abort.%d.bz2" % os.getpid(), ["bzip2", "-1", "-c"]))


def test_names(ruby):
    return ["%s/crash/dir/%s" % (ruby, c) for c in DIR_CHECKS]


def names(ctx):
    return ["core-dir/hostile", "core-dir/empty"]


def exited(res, code, what="exit"):
    """Why the run res (procs.run_tool) did not end with code, or None."""
    rc, _, err, reason = res
    if reason:
        return reason
    if rc != code:
        return "%s %s, expected %d; stderr: %s" % (what, rc, code, err.strip()[-300:])
    return None


def link(src, dst):
    """A name for src in another directory without copying half a GB."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def expected_group(crash, cr):
    """What the group of crash run cr must say: kind, function, the labels
    of its three innermost Ruby frames (from Ruby's report or the
    program's record)."""
    exp = crash.EXPECT[cr.mode]
    function = exp.get("function") or exp.get("called_from")
    labels = [f[0] for f in crash.expected_frames(cr)[:3]]
    return exp["kind"], function, labels


def stable_matches(stable, label):
    """Is stable the class-qualified name of the frame Ruby labels label
    ("CrashTest.segv" for "segv" or "CrashTest.segv", "Job.crash" for
    "crash", "block in <main>" as itself)?"""
    if not isinstance(stable, str):
        return False
    plain = compare.plain_label(label)
    if stable == label or stable == plain:
        return True
    m = re.match(r"((?:block (?:\(\d+ levels\) )?in )?)(.*)$", plain)
    prefix, method = m.group(1), m.group(2)
    return (stable.startswith(prefix) and
            re.fullmatch(r"[\w:]+[.#]" + re.escape(method), stable[len(prefix):]) is not None)


def make_dir(base, runs, live, cs, timeout):
    """The mixed directory -> (path, expected groups, cut name, text name,
    live name or None)."""
    d = os.path.join(base, "cores")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    names = {}
    for mode in DIR_MODES:
        names[mode] = "core.%s.%d" % (mode, os.getpid())
        if mode == "abort":
            names[mode] += ".bundle"
            made = procs.run_tool([cs, "bundle", "-o", os.path.join(d, names[mode]),
                                   runs[mode].core], timeout)
            if made[3] or made[0] != 0:
                raise procs.Failure("corestack bundle: exit %s: %s" % (
                    made[0], made[3] or made[2].strip()[-200:]))
            continue
        link(runs[mode].core, os.path.join(d, names[mode]))
    for name, argv in COMPRESSED:
        with open(runs["abort"].core, "rb") as fin, open(os.path.join(d, name), "wb") as fout:
            res = subprocess.run(argv, stdin=fin, stdout=fout, stderr=subprocess.PIPE,
                                 text=True)
        if res.returncode != 0:
            raise procs.Failure("%s failed: %s" % (argv[0], res.stderr.strip()))
    cut = "core.cut.%d" % os.getpid()
    with open(runs["segv"].core, "rb") as f, open(os.path.join(d, cut), "wb") as out:
        out.write(f.read(CUT))
    text = "README.txt"
    with open(os.path.join(d, text), "w") as f:
        f.write("core files of the test run\n")
    live_name = None
    if live:
        live_name = "core.live.%d" % os.getpid()
        os.symlink(live, os.path.join(d, live_name))
    # most frequent first
    groups = [(names["abort"],) + tuple(name for name, _ in COMPRESSED),
              (names["segv"], names["segv_copy"])]
    return d, groups, cut, text, live_name


def check_group(crash, g, runs, modes, files):
    kind, function, labels = expected_group(crash, runs[modes[0]])
    for other in modes[1:]:
        if expected_group(crash, runs[other]) != (kind, function, labels):
            return "modes %s do not crash at the same site: %s vs %s" % (
                modes, (kind, function, labels), expected_group(crash, runs[other]))
    got = (g.get("kind"), g.get("function"), g.get("count"), g.get("cores"))
    if got != (kind, function, len(files), sorted(files)):
        return "group %r: kind, function, count, cores %s, expected %s" % (
            g.get("signature"), got, (kind, function, len(files), sorted(files)))
    frames = g.get("ruby_frames") or []
    if len(frames) != len(labels) or not all(
            stable_matches(s, l) for s, l in zip(frames, labels)):
        return "group %r: Ruby frames %s, expected the stable names of %s" % (
            g.get("signature"), frames, labels)
    sig = "%s in %s" % (kind, function) + "".join(" <- %s" % f for f in frames)
    if g.get("signature") != sig:
        return "group signature %r, expected %r" % (g.get("signature"), sig)
    return None


def same_core(doc, plain):
    """Why a compressed copy's report in the directory's JSON doc differs
    from the plain core's report plain (its crash, its threads), or None."""
    reports = {c.get("file"): c.get("report") for c in doc.get("cores", [])}
    for name, _ in COMPRESSED:
        report = reports.get(name) or {}
        for key in ("crash", "threads"):
            if report.get(key) != plain.get(key):
                return "%s: its %s differ from the plain core's: %s vs %s" % (
                    name, key, compare.show(report.get(key))[:300],
                    compare.show(plain.get(key))[:300])
    return None


def check_groups(crash, res, runs, groups, cut, text, live, plain):
    rc, out, err, reason = res
    if reason:
        return reason
    try:
        doc = json.loads(out)
    except ValueError as exc:
        return "not JSON (%s): %s" % (exc, out[:200])
    if rc != 3 or doc.get("exit_code") != 3:
        return "exit %s (JSON exit_code %s), expected 3 (crashes found); stderr: %s" % (
            rc, doc.get("exit_code"), err.strip()[-300:])
    if doc.get("corestack_schema_minor", 0) < 24:
        return "schema minor %s, expected at least 24" % doc.get("corestack_schema_minor")
    got = doc.get("groups", [])
    if len(got) != 2:
        return "%d groups, expected 2: %s" % (len(got), [g.get("signature") for g in got])
    for g, modes, files in zip(got, (("abort",), ("segv", "segv_copy")), groups):
        reason = check_group(crash, g, runs, modes, files)
        if reason:
            return reason
    broken = doc.get("broken", [])
    if [b.get("file") for b in broken] != [cut] or "truncated core" not in broken[0].get("error", ""):
        return "broken %s, expected %s as a truncated core" % (broken, cut)
    if doc.get("skipped") != 1:
        return "skipped %s, expected 1 (%s)" % (doc.get("skipped"), text)
    if doc.get("no_crash") != ([live] if live else []):
        return "no_crash %s, expected %s" % (doc.get("no_crash"), [live] if live else [])
    reason = same_core(doc, plain)
    if reason:
        return reason
    status = {c.get("file"): c.get("status") for c in doc.get("cores", [])}
    want = {f: "crash" for fs in groups for f in fs}
    want[cut] = "broken"
    if live:
        want[live] = "no_crash"
    if status != want:
        return "per-core status %s, expected %s" % (status, want)
    for c in doc.get("cores", []):
        report = c.get("report")
        if (c["status"] == "broken") != (report is None) or \
                (report and (report.get("crash") is None) != (c["status"] == "no_crash")):
            return "core %s: status %s but report %s" % (
                c["file"], c["status"], "null" if report is None else "with crash %s" % report.get("crash"))
    return None


def make_small_dir(base, runs):
    """segv and abort cores and the cut one -> (path, [(mode, file)], cut)."""
    d = os.path.join(base, "ci-cores")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    files = []
    for mode in ("segv", "abort"):
        name = "core.%s" % mode
        link(runs[mode].core, os.path.join(d, name))
        files.append((mode, name))
    with open(runs["segv"].core, "rb") as f, open(os.path.join(d, "core.cut"), "wb") as out:
        out.write(f.read(CUT))
    return d, files, "core.cut"


def md_unescape(s):
    return re.sub(r"\\(.)", r"\1", s)


def check_markdown(crash, res, runs, files, cut):
    why = exited(res, 3)
    if why:
        return why
    out = res[1]
    rows = [l for l in out.splitlines() if re.match(r"\| \d+ \| \d+ \|", l)]
    if len(rows) != len(files):
        return "%d table rows, expected %d: %r" % (len(rows), len(files), out[:500])
    # one core each: ties ordered by signature, memory_access before sent
    for row, (mode, name) in zip(rows, files):
        cells = [md_unescape(c.strip()) for c in row.strip("|").split(" | ")]
        kind, function, labels = expected_group(crash, runs[mode])
        frames = cells[4].split(" &larr; ")
        if cells[1:4] != ["1", kind, function] or cells[5] != name or \
                len(frames) != len(labels) or \
                not all(stable_matches(s, l) for s, l in zip(frames, labels)):
            return "row %r, expected count 1, %s, %s, frames of %s, core %s" % (
                row, kind, function, labels, name)
    blocks = re.findall(r"^```text\n(.*?)^```$", out, re.S | re.M)
    if len(blocks) != len(files):
        return "%d fenced stacks, expected %d" % (len(blocks), len(files))
    for block, (mode, _) in zip(blocks, files):
        label, path, line = crash.expected_frames(runs[mode])[0]
        shown = "%s:%d:in " % (path, line)
        if not block.startswith("Crash: ") or shown not in block:
            return "the %s stack does not start with the crash summary or lacks %s%s: %r" % (
                mode, shown, label, block[:300])
    if not re.search(r"^### Broken cores\n\n- %s: .*truncated core" % re.escape(cut), out, re.M):
        return "no broken-core line for %s" % cut
    return None


def signature_matches(crash, cr, name):
    """Is name the signature of crash run cr's group: its kind, function
    and the stable names of the labels of its three innermost Ruby frames,
    as Ruby's report or the program's record gives them?"""
    kind, function, labels = expected_group(crash, cr)
    head = "%s in %s" % (kind, function)
    frames = name[len(head):].split(" <- ")[1:] if name.startswith(head + " <- ") else []
    return len(frames) == len(labels) and all(
        stable_matches(f, l) for f, l in zip(frames, labels))


def check_junit(crash, res, runs, files, shown):
    """files: (mode, core name) per group, in the order of their
    signatures; shown: per group, the cores as the run names them."""
    why = exited(res, 3)
    if why:
        return why
    try:
        root = ET.fromstring(res[1])
    except ET.ParseError as exc:
        return "XML does not parse: %s" % exc
    suites = root.findall("testsuite")
    if root.tag != "testsuites" or len(suites) != 1:
        return "root %s with %d testsuites" % (root.tag, len(suites))
    suite = suites[0]
    cases = suite.findall("testcase")
    if (suite.get("tests"), suite.get("failures")) != (str(len(files)), str(len(files))) \
            or len(cases) != len(files):
        return "testsuite tests=%s failures=%s with %d test cases, expected %d" % (
            suite.get("tests"), suite.get("failures"), len(cases), len(files))
    for case, (mode, _), cores in zip(cases, files, shown):
        cr = runs[mode]
        if not signature_matches(crash, cr, case.get("name") or ""):
            return "test case %r, expected the signature of %s: %s" % (
                case.get("name"), mode, expected_group(crash, cr))
        failure = case.find("failure")
        label, path, line = crash.expected_frames(cr)[0]
        text = failure.text or "" if failure is not None else ""
        if failure is None or failure.get("type") != crash.EXPECT[mode]["kind"] or \
                not text.startswith("cores: %s\n" % " ".join(cores)) or \
                "\nCrash: " not in text or "%s:%d:in " % (path, line) not in text:
            return "test case %r: failure %r, expected its cores, the crash summary " \
                "and %s:%d" % (case.get("name"), text[:200], path, line)
    return None


def run_dir_checks(crash, rep, names, cs, timeout, base, runs, live):
    """The selected RUBY/crash/dir/* checks, on the crash runs of
    DIR_MODES; live: the path of a gcore of a running Ruby, or None."""
    missing = [m for m in DIR_MODES if m not in runs]
    if missing:
        for n in names:
            rep.result(n, "setup: no core of crash mode %s" % ", ".join(missing))
        return
    try:
        d, groups, cut, text, live_name = make_dir(base, runs, live, cs, timeout)
        tmp = os.path.join(base, "tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        small, files, small_cut = make_small_dir(base, runs)
    except (procs.Failure, OSError) as exc:
        for n in names:
            rep.result(n, "setup: %s" % exc)
        return
    for n in names:
        check = n.rsplit("/", 1)[1]
        if check == "groups":
            # the abort core read as it is, for its compressed copies
            plain, reason = compare.parse_report(
                procs.run_tool([cs, "--json", runs["abort"].core], timeout)[1])
            reason = reason and "the plain abort core: " + reason
            reason = reason or check_groups(
                crash, procs.run_tool(["env", "TMPDIR=" + tmp, cs, "--json", d], timeout),
                runs, groups, cut, text, live_name, plain)
            left = os.listdir(tmp)
            reason = reason or ("the bundle left %s in TMPDIR" % left if left else None)
        elif check == "markdown":
            reason = check_markdown(crash, procs.run_tool([cs, "--format", "markdown", small], timeout),
                                    runs, files, small_cut)
        else:
            # one test case per core, ordered by signature: memory_access
            # (segv) before sent (abort)
            reason = check_junit(crash, procs.run_tool([cs, "--format", "junit", small], timeout),
                                 runs, files, [[name] for _, name in files])
            # one core alone: its group alone
            one = os.path.join(small, files[0][1])
            reason = reason or check_junit(
                crash, procs.run_tool([cs, "--format", "junit", one], timeout), runs,
                files[:1], [[one]])
        rep.result(n, reason)
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(small, ignore_errors=True)


# --- core-dir/hostile, core-dir/empty ------------------------------------

def elf_core_header():
    """A 64-bit little-endian ELF header of a core, and nothing it describes."""
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    return ident + struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, 3, 0, 0, 0)


def make_hostile(d):
    """-> (expected skipped, expected broken files)."""
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    p = lambda n: os.path.join(d, n)
    os.symlink("loop.b", p("loop.a"))
    os.symlink("loop.a", p("loop.b"))
    os.symlink("nowhere", p("dangling"))
    os.mkfifo(p("fifo"))
    os.mkdir(p("subdir"))
    open(p("empty"), "wb").close()
    shutil.copyfile(shutil.which("true") or "/bin/true", p("an-executable"))
    with open(p("header-only.core"), "wb") as f:
        f.write(elf_core_header())
    with open(p("garbage.zst"), "wb") as f:
        f.write(b"\x28\xb5\x2f\xfd" + os.urandom(4096))
    with open(p("stream.lz4"), "wb") as f:
        # a frame descriptor of version 0: no lz4 frame
        f.write(b"\x04\x22\x4d\x18\x00" + os.urandom(64))
    with open(p("garbage.bz2"), "wb") as f:
        f.write(b"BZh9" + os.urandom(4096))
    with open(p("ctrl\x01name.core"), "wb") as f:
        f.write(elf_core_header())
    with open(p("secret"), "wb") as f:
        f.write(b"not a core")
    os.chmod(p("secret"), 0)
    readable = os.access(p("secret"), os.R_OK)   # root reads it anyway
    skipped = 7 + (1 if readable else 0)   # 2 loop links, dangling, fifo, subdir, empty, executable
    broken = sorted(["ctrl\x01name.core", "garbage.bz2", "garbage.zst", "header-only.core",
                     "stream.lz4"]
                    + ([] if readable else ["secret"]))
    return skipped, broken


def check_hostile(cs, timeout, d):
    skipped, broken = make_hostile(d)
    res = procs.run_tool([cs, "--json", d], timeout)
    why = exited(res, 2, "--json (broken cores, no crash) exit")
    if why:
        return why
    try:
        doc = json.loads(res[1])
    except ValueError as exc:
        return "not JSON: %s" % exc
    got = (doc.get("groups"), doc.get("no_crash"), doc.get("skipped"),
           [b.get("file") for b in doc.get("broken", [])])
    if got != ([], [], skipped, broken):
        return "groups, no_crash, skipped, broken %s, expected %s" % (got, ([], [], skipped, broken))
    if any(not b.get("error") or "\n" in b["error"] for b in doc["broken"]):
        return "a broken core without its one-line reason: %s" % doc["broken"]
    res = procs.run_tool([cs, "--format", "junit", d], timeout)
    why = exited(res, 2, "junit exit")
    if why:
        return why
    try:
        root = ET.fromstring(res[1])
    except ET.ParseError as exc:
        return "JUnit XML of a name with a control character does not parse: %s" % exc
    if root.findall("testsuite/testcase") or "ctrl\\x01name.core" not in root.find("testsuite/system-out").text:
        return "JUnit: test cases without a crash, or the control character not shown as \\x01"
    for fmt in ("text", "markdown"):
        why = exited(procs.run_tool([cs, "--format", fmt, d], timeout), 2,
                     "--format %s exit" % fmt)
        if why:
            return why
    return None


def check_empty(cs, timeout, d):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    rc, out, err, reason = procs.run_tool([cs, "--json", d], timeout)
    if reason:
        return reason
    lines = err.strip().splitlines()
    if rc != 0 or len(lines) != 1 or d not in lines[0] or "no core" not in lines[0]:
        return "exit %s, stderr %r: expected 0 and one line naming %s" % (rc, err, d)
    doc = json.loads(out)
    if (doc.get("cores"), doc.get("groups"), doc.get("skipped")) != ([], [], 0):
        return "an empty directory gave %s" % out[:300]
    return None


def run_tests(ctx):
    cs, timeout, base = ctx.args.corestack, ctx.args.timeout, os.path.join(ctx.workdir, "core-dir")
    if ctx.selected("core-dir/hostile"):
        ctx.rep.result("core-dir/hostile", check_hostile(cs, timeout, os.path.join(base, "hostile")))
    if ctx.selected("core-dir/empty"):
        ctx.rep.result("core-dir/empty", check_empty(cs, timeout, os.path.join(base, "empty")))
    shutil.rmtree(base, ignore_errors=True)
