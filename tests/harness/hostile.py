"""What corestack does to the machine it runs on, with a hostile core
(tests of issue 7's rules). On each Ruby's threads core:

    RUBY/hostile/strace        corestack --sysroot ROOT (ROOT: copies of every
                               file the core's NT_FILE names), plain and --native,
                               under strace -f: once the core is open, every file
                               NT_FILE names is opened under ROOT and read-only;
                               nothing is opened for writing, created, renamed or
                               removed outside the layout cache
                               ($XDG_CACHE_HOME/corestack/layouts); the only
                               execve is corestack's own, no other process is
                               started; the stacks are the oracle's (--native
                               may exit 1: YJIT's frames do not merge). A control run
                               without --sysroot must be flagged by the same check
                               (so the check can fail).
    RUBY/hostile/vm-fifo, vm-dev-zero, vm-directory, vm-huge
                               the core's NT_FILE entries for the VM module
                               (libruby.so, or the static ruby) rewritten in place
                               to name a FIFO (no writer: opening it would block),
                               /dev/zero, a directory, a 1 TiB sparse file: exit 2
                               within 30 s, one stderr line naming that path; the
                               same with --native
    RUBY/hostile/lib-fifo      libc's entries renamed to a FIFO, --native: the Ruby
                               stacks are still the oracle's (exit 0 or 1, partial
                               at most), within 30 s

The paths are rewritten to the same length (padded with leading slashes),
so the core is patched in place and restored afterwards.
"""

import os
import re
import shutil
import struct
import subprocess
import tempfile

from . import compare, elfcore, procs
from .checks import check_unusable, first_line
from .native import copy_into_root, nt_file_paths

SPECIAL = ("vm-fifo", "vm-dev-zero", "vm-directory", "vm-huge")
HOSTILE_TIMEOUT = 30


def test_names(ruby):
    return ["%s/hostile/%s" % (ruby, n) for n in ("strace",) + SPECIAL + ("lib-fifo",)]


# --- NT_FILE names, patched in place --------------------------------------------

class RenamedFiles:
    """A core whose NT_FILE names matching a test are replaced by another
    path of the same length (leading slashes added), restored on exit."""

    def __init__(self, core, match, target):
        self.core, self.saved = core, []
        hits = [(off, name) for off, name in elfcore.nt_file_names(core) if match(name.decode())]
        if not hits:
            raise LookupError("no NT_FILE entry to rename in %s" % core)
        with open(core, "r+b") as f:
            for off, name in hits:
                new = target.encode()
                if len(new) > len(name):
                    raise LookupError("%s is longer than %s" % (target, name.decode()))
                new = b"/" * (len(name) - len(new)) + new
                f.seek(off)
                f.write(new)
                self.saved.append((off, name))
        self.original = hits[0][1].decode()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with open(self.core, "r+b") as f:
            for off, name in self.saved:
                f.seek(off)
                f.write(name)


def vm_module_path(core, exe):
    """The VM module as the core names it: libruby.so*, else the ruby."""
    names = set(nt_file_paths(core))
    lib = sorted(n for n in names if os.path.basename(n).startswith("libruby.so"))
    return lib[0] if lib else os.path.realpath(exe)


# --- strace ---------------------------------------------------------------------

CALL = re.compile(r'^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)')
STRING = re.compile(r'(?:(\d+|AT_FDCWD)(?:<([^>]*)>)?,\s*)?"((?:[^"\\]|\\.)*)"')
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
MODIFY_CALLS = {"creat", "rename", "renameat", "renameat2", "unlink", "unlinkat", "mkdir",
                "mkdirat", "rmdir", "link", "linkat", "symlink", "symlinkat", "truncate",
                "chmod", "fchmodat", "chown", "lchown", "fchownat", "mknod", "mknodat",
                "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr",
                "removexattr", "lremovexattr"}
OPEN_CALLS = {"open", "openat", "openat2"}


def traced(argv, log, cwd, env, timeout):
    """argv under strace; -> (rc, stdout, stderr, reason)."""
    # LeakSanitizer cannot run under a tracer; every other test checks leaks.
    env = dict(env, ASAN_OPTIONS=(env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":"))
    cmd = ["strace", "-f", "-qq", "-y", "-s", "4096", "-e", "trace=%file,%process",
           "-o", log] + argv
    try:
        res = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", "", "timed out after %d s under strace" % timeout
    return res.returncode, res.stdout, res.stderr, None


def paths_of(args, cwd):
    """The path arguments of a traced call, absolute."""
    out = []
    for m in STRING.finditer(args):
        dirpath, path = m.group(2), m.group(3).encode().decode("unicode_escape")
        if not path.startswith("/"):
            path = os.path.join(dirpath or cwd, path)
        out.append(os.path.normpath(path))
    return out


def under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def check_trace(log, corestack, core, root, cache_dir, cwd, nt_paths):
    """Problems in a strace log (list of strings, empty when clean)."""
    problems, core_open, execs = [], False, 0
    with open(log) as f:
        lines = f.read().splitlines()
    for line in lines:
        m = CALL.match(line)
        if not m:
            continue
        call, args = m.group(2), m.group(3)
        if call in ("execve", "execveat"):
            execs += 1
            if execs > 1 or corestack not in args:
                problems.append("runs a program: %s" % line[:300])
            continue
        if call in ("fork", "vfork") or (call in ("clone", "clone3") and "CLONE_THREAD" not in args):
            problems.append("starts a process: %s" % line[:300])
            continue
        paths = paths_of(args, cwd)
        if not paths:
            continue
        failed = m.group(4).startswith("-")
        if call in OPEN_CALLS:
            if paths[0] == core:
                core_open = True
            writes = any(flag in args for flag in WRITE_FLAGS)
            if writes and not under(paths[0], cache_dir):
                problems.append("opens for writing: %s" % line[:300])
            if core_open and paths[0] in nt_paths and not failed and not under(paths[0], root):
                problems.append("opens a file the core names outside the sysroot: %s" % line[:300])
            if core_open and under(paths[0], root) and writes:
                problems.append("opens a sysroot file for writing: %s" % line[:300])
        elif call in MODIFY_CALLS:
            for p in paths:
                # mkdir -p of the cache directory starts at its ancestors
                if call in ("mkdir", "mkdirat") and under(cache_dir, p):
                    continue
                if not under(p, cache_dir):
                    problems.append("modifies the file system: %s" % line[:300])
    if execs == 0:
        problems.append("strace saw no execve (is the log complete?)")
    if not core_open:
        problems.append("strace saw no open of the core %s" % core)
    return problems


def strace_test(corestack, cap, work, timeout):
    root = os.path.join(work, "root")
    nt_paths = sorted(set(nt_file_paths(cap.core)))
    for p in nt_paths:
        copy_into_root(p, root)
    cwd = os.path.join(work, "cwd")
    os.makedirs(cwd, exist_ok=True)
    core = os.path.realpath(cap.core)
    originals = {os.path.normpath(p) for p in nt_paths} | {os.path.realpath(p) for p in nt_paths}
    for variant, extra in (("plain", []), ("native", ["--native"])):
        xdg = os.path.join(work, "xdg-" + variant)
        env = dict(os.environ, XDG_CACHE_HOME=xdg)
        env.pop("DEBUGINFOD_URLS", None)
        log = os.path.join(work, variant + ".strace")
        rc, out, err, reason = traced([corestack, "--json", "--sysroot", root] + extra + [core],
                                      log, cwd, env, timeout)
        if reason:
            return "%s: %s" % (variant, reason)
        if rc != 0:
            return "%s: exit %d: %s" % (variant, rc, first_line(err))
        report, why = compare.parse_report(out)
        why = why or compare.compare_threads(report, cap.oracle)
        if why:
            return "%s: %s" % (variant, why)
        problems = check_trace(log, corestack, core, root, os.path.join(xdg, "corestack"),
                               cwd, originals)
        if problems:
            return "%s: %d problem(s), first: %s" % (variant, len(problems), problems[0])
    # Control: without --sysroot the core's own paths are opened, which the
    # same check must report, or it could never fail.
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "xdg-control"))
    log = os.path.join(work, "control.strace")
    rc, _, err, reason = traced([corestack, "--json", core, cap.exe], log, cwd, env, timeout)
    if reason or rc != 0:
        return "control run without --sysroot: %s" % (reason or "exit %d: %s" % (rc, first_line(err)))
    if not any("outside the sysroot" in p for p in check_trace(
            log, corestack, core, root, os.path.join(work, "xdg-control", "corestack"), cwd, originals)):
        return "the check did not flag a run without --sysroot (it cannot fail)"
    return None


# --- special files --------------------------------------------------------------

def make_special(kind, dirs, basename):
    """A file of that kind named basename (libruby.so* is found by its
    name), in a directory short enough to replace the core's names: one of
    its own right under /tmp (/tmp/XXXXXXXX/, 14 bytes, so a Ruby
    installed under a prefix as short as /tmp/r41 can be tested), added to
    dirs for the caller to remove."""
    d = tempfile.mkdtemp(prefix="", dir="/tmp")
    dirs.append(d)
    path = os.path.join(d, basename)
    if kind in ("vm-fifo", "lib-fifo"):
        os.mkfifo(path)   # no writer: an open for reading would block
    elif kind == "vm-dev-zero":
        os.symlink("/dev/zero", path)
    elif kind == "vm-directory":
        os.makedirs(path)
    elif kind == "vm-huge":
        with open(path, "wb") as f:
            f.truncate(1 << 40)   # sparse: no disk used
    return path


def special_test(kind, corestack, cap, dirs):
    if kind == "lib-fifo":
        libc = sorted(n for n in nt_file_paths(cap.core)
                      if os.path.basename(n).startswith("libc.so"))
        if not libc:
            raise LookupError("the core maps no libc.so")
        wanted = libc[0]
    else:
        wanted = vm_module_path(cap.core, cap.exe)
    target = make_special(kind, dirs, os.path.basename(wanted))
    match = lambda n: n == wanted
    with RenamedFiles(cap.core, match, target) as renamed:
        named = renamed.saved[0][1]
        shown = "/" * (len(named) - len(target)) + target
        for extra in ([], ["--native"]):
            argv = [corestack, "--json"] + extra + [cap.core]
            if kind == "lib-fifo":
                argv.append(cap.exe)
            res = procs.run_tool(argv, HOSTILE_TIMEOUT)
            what = "%s%s" % (kind, " --native" if extra else "")
            if kind == "lib-fifo":
                rc, out, err, reason = res
                if reason:
                    return "%s: %s" % (what, reason)
                san = procs.sanitizer_report(err)
                if san or rc not in (0, 1):
                    return "%s: exit %s: %s" % (what, rc, san or first_line(err))
                report, why = compare.parse_report(out)
                why = why or compare.compare_threads(report, cap.oracle)
                if why:
                    return "%s: %s" % (what, why)
                continue
            why = check_unusable(res, [shown, target], (2,))
            if why:
                return "%s: %s" % (what, why)
    return None


def run_on(ctx, ruby, cap):
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    names = [n for n in test_names(ruby) if selected(n)]
    if not shutil.which("strace"):
        for n in names:
            rep.result(n, "strace is not installed (.ci/install-deps)")
        return
    work = tempfile.mkdtemp(prefix="csh", dir="/tmp")
    dirs = []   # the special files' directories (make_special)
    try:
        for n in names:
            kind = n.rsplit("/", 1)[1]
            try:
                if kind == "strace":
                    rep.result(n, strace_test(corestack, cap, os.path.join(work, "strace"),
                                              max(timeout, 120)))
                else:
                    rep.result(n, special_test(kind, corestack, cap, dirs))
            except (LookupError, OSError, ValueError, struct.error) as exc:
                rep.result(n, "setup: %s" % exc)
    finally:
        for d in dirs + [work]:
            shutil.rmtree(d, ignore_errors=True)
