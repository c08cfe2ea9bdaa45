"""The sampler's frame cache against a fresh decode, on a real core.

`corestack record` and gdb's ruby-sample keep decoded frames across
samples (rubyvm/frame_cache.c), and a frame whose pc alone moved (the top
of a running stack) keeps its names and gets only a new line. Nothing in a
profile shows lines, so the profile tests cannot see a wrong one: this test
runs build/check-frame-reuse (tests/tools/check_frame_reuse.c) on the
threads scenario's core. It moves each thread's innermost Ruby pc within
and far outside its iseq, in memory, and requires every frame a reusing
session gives to be the one a fresh session decodes, and at least one moved
frame to have come from the cache.

    RUBY/frame-reuse     exit 0 and the checker's summary line
"""

import subprocess


def test_name(ruby):
    return "%s/frame-reuse" % ruby


def test_names(ruby):
    return [test_name(ruby)]


def run_on(ctx, ruby, cap):
    rep, checker, timeout = ctx.rep, ctx.args.frame_reuse_check, ctx.timeout
    name = test_name(ruby)
    if not checker:
        rep.result(name, "no checker given (--frame-reuse-check)")
        return
    try:
        res = subprocess.run([checker, cap.core, cap.exe], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        rep.result(name, "check-frame-reuse hung")
        return
    lines = res.stdout.strip().splitlines() or ["(no output)"]
    if res.returncode != 0:
        rep.result(name, "exit %d: %s" % (res.returncode, " | ".join(lines[-4:])[:600]))
        return
    print("  " + lines[-1], flush=True)
    rep.result(name, None)
