"""The command line and the core argument, without any fixture Ruby.

    cli/usage/NAME        a wrong option or value (or top without a terminal): exit
                          64, one stderr line that names the option (and for a
                          value, the range it takes)
    cli/core-arg/NAME     a core argument that is no core file (a FIFO with no
                          writer, a character device, a file of /proc): exit 2
                          at once, one line naming the file and saying what it
                          is; never a hang; a directory (read as a directory of
                          cores) with an EXECUTABLE after it: exit 64, one line
                          naming it
    cli/record-out/NAME   record -o to a path that cannot be written: refused
                          before anything is recorded (no target is even started)
    cli/record-binary-terminal
                          record --format pprof (gzip) without -o, stdout a
                          terminal: exit 64 with one line saying so, before any
                          target is started, nothing written to the terminal
    cli/man-page          every option corestack --help, corestack record --help,
                          corestack top --help and corestack heap --help name is in
                          docs/corestack.1, which man renders without a warning
"""

import os
import pty
import re
import shutil
import subprocess
import tempfile

from . import procs

MAN_PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "docs", "corestack.1")


def man_page_test(rep, selected, corestack, run_tool, timeout):
    name = "cli/man-page"
    if not selected(name):
        return
    with open(MAN_PAGE, encoding="utf-8") as f:
        page = f.read().replace("\\-", "-")
    missing = []
    for argv in ([corestack, "--help"], [corestack, "record", "--help"],
                 [corestack, "top", "--help"], [corestack, "heap", "--help"]):
        rc, out, err, reason = run_tool(argv, timeout)
        if reason or rc != 0:
            rep.result(name, "%s: %s" % (" ".join(argv[1:]), reason or "exit %d" % rc))
            return
        for opt in sorted(set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", out))):
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt), page):
                missing.append(opt)
    if missing:
        rep.result(name, "options not in docs/corestack.1: %s" % ", ".join(missing))
        return
    if not shutil.which("man"):
        rep.result(name, "man is not installed (.ci/install-deps installs man-db)")
        return
    res = subprocess.run(["man", "--warnings", "-l", MAN_PAGE], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=timeout,
                         env=dict(os.environ, MANWIDTH="80"))
    rep.result(name, None if res.returncode == 0 and not res.stderr.strip()
               else "man --warnings: exit %d: %s" % (res.returncode, res.stderr.strip()[:300]))

# (name, argv after the program, pattern the one line must match)
USAGE = [
    ("max-frames-overflow", ["--max-frames", "18446744073709551616", "core"],
     r"--max-frames takes a whole number from 1 to \d+, not '18446744073709551616'"),
    ("max-frames-zero", ["--max-frames", "0", "core"], r"--max-frames .* from 1 to"),
    ("max-output-negative", ["--max-output", "-5", "core"], r"--max-output .*not '-5'"),
    ("pid-negative", ["--pid", "-3"], r"--pid takes a whole number from 1 to \d+"),
    ("pid-junk", ["--pid", "12x"], r"--pid .*not '12x'"),
    ("pid-missing-value", ["--pid"], r"--pid needs a value"),
    ("unknown-long", ["--frobnicate", "core"], r"unknown option '--frobnicate'.*--help"),
    ("unknown-short", ["-x", "core"], r"unknown option '-x'.*--help"),
    ("no-core", [], r"CORE.*--pid"),
    ("three-args", ["a", "b", "c"], r"'c'"),
    ("record-duration-nan", ["record", "--duration", "nan", "--pid", "1"],
     r"--duration takes seconds from [\d.]+ to \d+, not 'nan'"),
    ("record-duration-negative", ["record", "--duration", "-1", "--pid", "1"],
     r"--duration .*not '-1'"),
    ("record-duration-inf", ["record", "--duration", "inf", "--pid", "1"], r"--duration .*'inf'"),
    ("record-state-unknown", ["record", "--state", "running,sleeping", "--pid", "1"],
     r"--state takes a comma list of running, waiting, blocked, gc; not 'sleeping'"),
    ("record-state-empty", ["record", "--state", "", "--pid", "1"], r"--state .*not ''"),
    ("record-rate-zero", ["record", "--rate", "0", "--pid", "1"],
     r"--rate takes samples per second from [\d.]+ to 10000, not '0'"),
    ("record-rate-huge", ["record", "--rate", "100000", "--pid", "1"], r"--rate .*10000"),
    ("record-rate-overflow", ["record", "--rate", "1e400", "--pid", "1"], r"--rate .*'1e400'"),
    ("record-format", ["record", "--format", "pdf", "--pid", "1"], r"--format is one of .*'pdf'"),
    ("record-unknown", ["record", "--bogus"], r"unknown option '--bogus'"),
    ("record-nothing", ["record"], r"--pid PID or -- COMMAND"),
    ("record-both", ["record", "--pid", "1", "--", "true"], r"not both"),
    # --on-cpu with --state: narrowed or added to? refused, either order
    ("record-on-cpu-state", ["record", "--on-cpu", "--state", "blocked", "--pid", "1"],
     r"--on-cpu is --state running: not both"),
    ("top-state-on-cpu", ["top", "--state", "gc", "--on-cpu", "--pid", "1"],
     r"--on-cpu is --state running: not both"),
    ("top-nothing", ["top"], r"--pid PID"),
    ("heap-retainers-address", ["heap", "--retainers", "0x12zz", "core"],
     r"--retainers takes an address in hex .* not '0x12zz'"),
    ("heap-dump-retainers", ["heap", "--dump", "x", "--retainers", "Foo", "core"],
     r"--dump and --retainers"),
    ("top-rate-zero", ["top", "--rate", "0", "--pid", "1"], r"--rate .*from 0.01"),
    # checked before attaching: pid 1 is no Ruby, which would be exit 2
    ("top-not-a-terminal", ["top", "--pid", "1"], r"standard output is not a terminal"),
]


CORE_ARGS = ("fifo", "char-device", "directory", "proc-mem")
RECORD_OUTS = ("missing-dir", "directory")


def test_names():
    return (["cli/man-page"] + ["cli/usage/" + name for name, _, _ in USAGE]
            + ["cli/core-arg/" + name for name in CORE_ARGS]
            + ["cli/record-out/" + name for name in RECORD_OUTS]
            + ["cli/record-binary-terminal"])


def binary_terminal_test(corestack, marker, sanitizer_report, timeout):
    """pprof's gzip is not written to a terminal; the command is never
    started."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([corestack, "record", "--format", "pprof", "--duration", "1",
                               "--", "sh", "-c", "touch %s" % marker],
                              stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
        os.close(slave)
        slave = None
        shown = b""
        os.set_blocking(master, False)
        try:
            shown = os.read(master, 4096)
        except OSError:
            pass    # nothing written (EAGAIN), or every writer closed it (EIO)
    except subprocess.TimeoutExpired:
        return "record ran on with gzip for a terminal"
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    why = sanitizer_report(proc.stderr) or _one_line(
        (proc.returncode, "", proc.stderr, None), 64, r"pprof.*terminal.*-o FILE")
    if not why and shown:
        why = "%d bytes written to the terminal: %r" % (len(shown), shown[:40])
    if not why and os.path.exists(marker):
        why = "the command was started before the format was refused"
    return why


def _one_line(run, rc_expected, pattern):
    rc, out, err, reason = run
    if reason:
        return reason
    lines = err.rstrip("\n").split("\n") if err.strip() else []
    if rc != rc_expected:
        return "exit status %s, expected %d; stderr: %r" % (rc, rc_expected, err[:300])
    if len(lines) != 1:
        return "stderr has %d lines, expected one: %r" % (len(lines), err[:300])
    if not re.search(pattern, lines[0]):
        return "stderr %r does not match %r" % (lines[0], pattern)
    if out:
        return "stdout not empty: %r" % out[:200]
    return None


def names(ctx):
    return test_names()


def run_tests(ctx):
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    run_tool, sanitizer_report = procs.run_tool, procs.sanitizer_report
    man_page_test(rep, selected, corestack, run_tool, timeout)
    for name, argv, pattern in USAGE:
        test = "cli/usage/" + name
        if selected(test):
            run = run_tool([corestack] + argv, timeout)
            rep.result(test, sanitizer_report(run[2]) or _one_line(run, 64, pattern))

    with tempfile.TemporaryDirectory(prefix="corestack-cli-") as tmp:
        fifo = os.path.join(tmp, "core.fifo")
        os.mkfifo(fifo)
        cases = [
            # a FIFO with no writer: open() would block forever
            ("fifo", fifo, r"not a regular file", (), 2),
            ("char-device", "/dev/null", r"not a regular file", (), 2),
            ("directory", tmp, r"is a directory: .*name none", ("/bin/true",), 64),
            ("proc-mem", "/proc/self/mem", r"/proc.*not a core dump.*--pid", (), 2),
        ]
        for name, path, pattern, more, code in cases:
            test = "cli/core-arg/" + name
            if selected(test):
                # a hang shows as run_tool's timeout; a short one is plenty
                run = run_tool([corestack, path] + list(more), min(timeout, 20))
                why = sanitizer_report(run[2]) or _one_line(run, code, pattern)
                if not why and path not in run[2]:
                    why = "stderr does not name %s: %r" % (path, run[2])
                rep.result(test, why)

        marker = os.path.join(tmp, "started")
        for name, out in (("missing-dir", os.path.join(tmp, "no", "such", "dir", "p.txt")),
                          ("directory", tmp)):
            test = "cli/record-out/" + name
            if not selected(test):
                continue
            # the command would leave a mark if record started it
            run = run_tool([corestack, "record", "-o", out, "--duration", "1", "--",
                            "sh", "-c", "touch %s" % marker], timeout)
            why = sanitizer_report(run[2]) or _one_line(run, 2, r"cannot write the profile to")
            if not why and out not in run[2]:
                why = "stderr does not name %s: %r" % (out, run[2])
            if not why and os.path.exists(marker):
                why = "the command was started before the output path was checked"
            rep.result(test, why)

        if selected("cli/record-binary-terminal"):
            rep.result("cli/record-binary-terminal", binary_terminal_test(
                corestack, marker, sanitizer_report, timeout))
