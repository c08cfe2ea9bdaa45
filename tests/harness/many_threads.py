"""A live process with more threads than --pid once took (8,192).

    RUBY/many-threads/live[-nonblocking]  fixtures/many_threads.rb with
                          WORKERS parked threads (the process has more than
                          8,192 in the kernel): corestack --json --pid, paused
                          and --nonblocking, exit 0, every thread present and
                          each stack the oracle's; afterwards no thread of it
                          is left stopped

WORKERS is the fewest that prove the point: the test runs on every fixture
Ruby, under ASan, on a 2-core machine.
"""

import json
import os

from . import procs, variants
from .checks import check_oracle
from .scenarios import Capture

FIXTURE = os.path.join(procs.ROOT, "fixtures", "many_threads.rb")
OLD_LIMIT = 8192
WORKERS = OLD_LIMIT + 8    # with main and the oracle's thread, 10 more
ORACLE_TIMEOUT = 180       # starting and parking every thread
MODES = (("live", []), ("live-nonblocking", ["--nonblocking"]))


def test_names(ruby):
    return ["%s/many-threads/%s" % (ruby, mode) for mode, _ in MODES]


def kernel_threads(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(l for l in f if l.startswith("Threads:")).split()[1])


def many_threads_tests(rep, selected, corestack, ruby, exe, workdir, timeout):
    names = [n for n in test_names(ruby) if selected(n)]
    if not names:
        return
    target = None
    try:
        target = procs.Scenario(exe, FIXTURE, os.path.join(workdir, "many-threads-" + ruby),
                                False, variants.scenario_env(ruby), [str(WORKERS)])
        target.wait_oracle(ORACLE_TIMEOUT)
        with open(target.oracle_path) as f:
            oracle = json.load(f)
        count = kernel_threads(target.pid)
        if count <= OLD_LIMIT:
            raise procs.Failure("the fixture has %d threads, not more than %d" % (
                count, OLD_LIMIT))
        cap = Capture(ruby, "many-threads", None, exe, oracle, None)
        for mode, extra in MODES:
            name = "%s/many-threads/%s" % (ruby, mode)
            if name not in names:
                continue
            res = procs.run_tool([corestack, "--json", "--pid", str(target.pid)] + extra,
                                 timeout)
            left = procs.stopped_threads(target.pid)
            rep.result(name, check_oracle(res, cap, live=True) or (
                "threads left stopped: %s" % ", ".join(left[:5]) if left else None))
    except (procs.Failure, OSError, ValueError, StopIteration) as exc:
        for n in names:
            rep.result(n, "setup: %s" % exc)
    finally:
        if target:
            target.kill()
