"""Debug info from elsewhere: a debuginfod server, --debug-dir.

    debuginfo/debuginfod, debuginfo/debug-dir-debuglink, debuginfo/no-debug-message
                             the stripped static 3.3 Ruby's DWARF
                             from a local debuginfod server (private db, loopback port),
                             by debuglink under --debug-dir; none: exit 2, one line with
                             the file, its build-id and how to get debug info
    debuginfo/debuginfod-lazy, debuginfo/debuginfod-unloadable
                             with DEBUGINFOD_URLS set and a libdebuginfod.so.1 that
                             cannot be loaded first on LD_LIBRARY_PATH: the Ruby with
                             its DWARF is read as ever (the library is loaded only to
                             ask a server, not at start-up); the stripped one is exit
                             2, one line naming the file, the library and why
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from . import procs
from .checks import check_oracle, check_unusable, first_line
from .layout import split_debug
from .native import extra_env
from .scenarios import Capture

DEBUGINFO_TESTS = ("debuginfo/debuginfod", "debuginfo/debug-dir-debuglink",
                   "debuginfo/no-debug-message", "debuginfo/debuginfod-lazy",
                   "debuginfo/debuginfod-unloadable")
# The soname dwarf/debuginfod.h loads.
DEBUGINFOD_SONAME = "libdebuginfod.so.1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Debuginfod:
    """A debuginfod server on loopback serving one directory, with a private
    database; killed on exit."""

    def __init__(self, serve_dir, workdir, build_id, timeout=60):
        self.port = free_port()
        self.log = os.path.join(workdir, "debuginfod.log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                ["debuginfod", "-F", serve_dir, "-d", os.path.join(workdir, "debuginfod.sqlite"),
                 "-p", str(self.port), "-t", "0", "-g", "0"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.url = "http://127.0.0.1:%d" % self.port
        deadline = time.monotonic() + timeout
        want = "%s/buildid/%s/debuginfo" % (self.url, build_id)
        while True:
            try:
                with urllib.request.urlopen(want, timeout=5) as r:   # debuginfod: GET only
                    if r.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise procs.Failure("debuginfod did not serve %s within %d s: %s" % (
                    want, timeout, procs.tail(self.log)))
            time.sleep(0.3)

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def names(ctx):
    return list(DEBUGINFO_TESTS)


def cores(ctx):
    """The static 3.3 Ruby's threads core, read with its DWARF elsewhere."""
    if "3.3-static" in ctx.rubies and ctx.any_selected(DEBUGINFO_TESTS):
        return {("3.3-static", "threads")}
    return set()


def run_tests(ctx):
    """The static 3.3 Ruby's DWARF split off and the binary stripped: found
    by .gnu_debuglink under --debug-dir, from a local debuginfod; with no
    debug info anywhere, one line naming the file, its build-id and the
    ways to get it."""
    rep, selected, args, captures, workdir = ctx.rep, ctx.selected, ctx.args, ctx.captures, ctx.workdir
    names = [n for n in DEBUGINFO_TESTS if selected(n)]
    if not names:
        return
    cap = captures.get(("3.3-static", "threads"))
    if not isinstance(cap, Capture):
        for n in names:
            rep.skip(n, "needs the 3.3-static/threads core")
        return
    cs, timeout = args.corestack, args.timeout
    base = os.path.join(workdir, "debuginfo5")
    try:
        shutil.rmtree(base, ignore_errors=True)
        stripped, debug, build_id = split_debug(cap.exe, os.path.join(base, "split"))
        # Away from the debuglink's reach next to the binary.
        serve = os.path.join(base, "serve")
        os.makedirs(serve)
        kept = os.path.join(serve, "ruby.debug")
        os.rename(debug, kept)
    except (procs.Failure, OSError, subprocess.SubprocessError) as exc:
        for n in names:
            rep.result(n, "setup: %s" % exc)
        return
    if selected("debuginfo/no-debug-message"):
        res = procs.run_tool([cs, "--json", "--no-cache", cap.core, stripped], timeout)
        reason = check_unusable(res, [stripped], (2,), r"DWARF", "'DWARF'")
        for word in (build_id, "DEBUGINFOD_URLS", "debug package", "-g"):
            if not reason and word not in res[2]:
                reason = "stderr does not say %r: %s" % (word, first_line(res[2]))
        rep.result("debuginfo/no-debug-message", reason)
    if selected("debuginfo/debuginfod-lazy") or selected("debuginfo/debuginfod-unloadable"):
        # A file of the library's name that is no ELF file, found first: the
        # dynamic loader refuses it. Servers are named but none listens.
        bogus = os.path.join(base, "bogus-lib")
        os.makedirs(bogus, exist_ok=True)
        with open(os.path.join(bogus, DEBUGINFOD_SONAME), "w") as f:
            f.write("not a library\n")
        env = ["env", "LD_LIBRARY_PATH=" + bogus, "DEBUGINFOD_URLS=http://127.0.0.1:9"]
        if selected("debuginfo/debuginfod-lazy"):
            res = procs.run_tool(env + [cs, "--json", "--no-cache", cap.core, cap.exe], timeout)
            rep.result("debuginfo/debuginfod-lazy", check_oracle(res, cap))
        if selected("debuginfo/debuginfod-unloadable"):
            res = procs.run_tool(env + [cs, "--json", "--no-cache", cap.core, stripped],
                                 timeout)
            reason = check_unusable(res, [stripped], (2,), r"DWARF", "'DWARF'")
            for word in (build_id, DEBUGINFOD_SONAME, "could not be loaded",
                         "http://127.0.0.1:9", "install elfutils' libdebuginfod"):
                if not reason and word not in res[2]:
                    reason = "stderr does not say %r: %s" % (word, first_line(res[2]))
            rep.result("debuginfo/debuginfod-unloadable", reason)
    if selected("debuginfo/debug-dir-debuglink"):
        # DIR + the binary's directory + the debuglink name, as GDB looks.
        tree = os.path.join(base, "debug-tree")
        target = tree + os.path.join(os.path.dirname(stripped), "ruby.debug")
        os.makedirs(os.path.dirname(target))
        shutil.copyfile(kept, target)
        res = procs.run_tool([cs, "--json", "--no-cache", "--debug-dir", tree, cap.core,
                              stripped], timeout)
        rep.result("debuginfo/debug-dir-debuglink", check_oracle(res, cap))
    if selected("debuginfo/debuginfod"):
        try:
            with Debuginfod(serve, base, build_id) as server:
                with extra_env({"DEBUGINFOD_URLS": server.url,
                                "DEBUGINFOD_CACHE_PATH": os.path.join(base, "client-cache")}):
                    res = procs.run_tool([cs, "--json", "--no-cache", cap.core, stripped],
                                         timeout)
            reason = check_oracle(res, cap)
            if not reason and not os.listdir(os.path.join(base, "client-cache")):
                reason = "nothing was fetched into the debuginfod client cache"
        except (procs.Failure, OSError, subprocess.SubprocessError) as exc:
            reason = "setup: %s" % exc
        rep.result("debuginfo/debuginfod", reason)


# --- --native on a C extension ------------------------------------------------
