"""The C unit test programs (tests/unit/test_*.c, built by make unit).

    unit/NAME                the program test_NAME given with --unit: exit 0 and no
                             sanitizer report; its own summary line goes to stderr
"""

import os

from . import procs


def names(ctx):
    return ["unit/" + os.path.basename(p).replace("test_", "") for p in ctx.args.unit.split()]


def run_tests(ctx):
    """Each unit test program is one test; its own summary line is shown."""
    rep, selected, extra_args, timeout = ctx.rep, ctx.selected, ctx.args.unit_arg, ctx.timeout
    for prog in ctx.args.unit.split():
        name = "unit/" + os.path.basename(prog).replace("test_", "")
        if not selected(name):
            continue
        rc, out, err, reason = procs.run_tool([prog] + extra_args, timeout)
        lines = out.strip().splitlines()
        summary = lines[-1] if lines else "(no output)"
        if reason is None and rc != 0:
            fails = [l for l in lines if l.startswith("FAIL")]
            reason = "exit %d: %s" % (rc, "; ".join(fails[:3]) or summary)
        if reason is None and procs.sanitizer_report(err):
            reason = "sanitizer report: %s" % procs.sanitizer_report(err)
        rep.result(name, reason)
        procs.progress("%s: %s" % (name, summary))
