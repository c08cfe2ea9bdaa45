"""Permission problems on --pid give one clear line and exit 2.

    live/no-cap-sys-ptrace[-nonblocking]  corestack run as root without
        CAP_SYS_PTRACE (setpriv drops it, as a container started without it
        would) against a process of another user: the message names the pid
        and CAP_SYS_PTRACE, paused (ptrace attach) and nonblocking (memory
        reads)

Another tracer already attached is covered by tests/unit/test_live.c.
kernel.yama.ptrace_scope cannot be set up by a test (it is a machine-wide
sysctl, and absent where Yama is not built in); its messages are written
from the kernel's documented behaviour.
"""

import os
import shutil
import subprocess

from . import checks, procs

NAMES = ("live/no-cap-sys-ptrace", "live/no-cap-sys-ptrace-nonblocking")


def names(ctx):
    return list(NAMES)


def run_tests(ctx):
    rep, selected, corestack, timeout = ctx.rep, ctx.selected, ctx.corestack, ctx.timeout
    check_unusable, run_tool = checks.check_unusable, procs.run_tool
    wanted = [n for n in NAMES if selected(n)]
    if not wanted:
        return
    setpriv = shutil.which("setpriv")
    why = None
    if os.geteuid() != 0:
        why = "needs root (to start a process as another user and drop a capability)"
    elif not setpriv:
        why = "needs setpriv (util-linux)"
    if why:
        for n in wanted:
            rep.skip(n, why)
        return
    sleeper = subprocess.Popen([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                                "sleep", "600"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for name in wanted:
            extra = ["--nonblocking"] if name.endswith("nonblocking") else []
            argv = [setpriv, "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace",
                    corestack, "--pid", str(sleeper.pid)] + extra
            rep.result(name, check_unusable(run_tool(argv, timeout), ["pid %d" % sleeper.pid],
                                            (2,), r"CAP_SYS_PTRACE", "CAP_SYS_PTRACE"))
    finally:
        sleeper.kill()
        sleeper.wait()
