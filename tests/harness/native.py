"""Native stacks: a C extension's frames between the Ruby frames.

    RUBY/native/...          a C extension built against the Ruby
                             (fixtures/native/): a block a C method yields to calls a C
                             method that blocks in pause() (gcore) or faults at 0x10
                             (kernel core). --native (on the core, and with --pid on the
                             blocked program: pause-live): the Ruby frames are the oracle's,
                             each C method sits on its C function, native frames between;
                             native pcs and names as eu-stack --core; --native-all covers
                             every thread eu-stack sees; the crash: SIGSEGV, SEGV_MAPERR,
                             0x10, the crashed thread marked and first in the text;
                             rb-bug: on the crash scenario's core (Ruby's handler, rb_bug,
                             abort) the crashed thread's native frames show sigsegv and
                             rb_bug_for_fatal_signal
    RUBY/native/deep-merged  deep (200 blocks each yielded to by a C method, then
                             pause): more native frames than the limit (1024); exit 0,
                             the Ruby frames the oracle's, those whose vm_exec() frames
                             are in the native frames shown merged (C methods on their
                             C functions), from merge_cut on the outer ones, in order,
                             with no native fields

remote.py and debuginfod.py use this module's helpers.
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import time

from . import compare, elfcore, procs, variants


@contextlib.contextmanager
def extra_env(env):
    """os.environ with env added (what scenario and tool runs inherit)."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def nt_file_paths(core):
    """The file names of a core's NT_FILE note (x86-64 ELF64 LE)."""
    return [name.decode("utf-8", "replace") for _, name in elfcore.nt_file_names(core)]


def copy_into_root(path, root):
    dst = root + path
    if os.path.exists(dst) or not os.path.isfile(path):
        return
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy2(path, dst)


NATIVE_DIR = os.path.join(procs.ROOT, "fixtures", "native")
NATIVE_CHECKS = ("pause-merged", "pause-eu-stack", "pause-live", "native-all",
                 "segv-merged", "segv-crash-context", "segv-eu-stack", "rb-bug", "deep-merged")


def native_test_names(ruby):
    return ["%s/native/%s" % (ruby, n) for n in NATIVE_CHECKS]


def build_extension(ruby_exe, outdir):
    """nativetest.so for the fixture Ruby (see the note in nativetest.c: it
    declares the three C API functions it calls)."""
    procs.build_extension(os.path.join(NATIVE_DIR, "nativetest.c"), outdir, ruby_exe=ruby_exe)
    return outdir


def run_native_program(ruby_exe, mode, extdir, workdir, timeout, corestack):
    """native.rb in MODE -> (core, oracle frames, live run). pause: gcore of
    the blocked program, after corestack --native --pid on it; segv: the
    kernel's core."""
    with extra_env({"NATIVE_MODE": mode, "NATIVE_EXT": extdir}):
        run = procs.Scenario(ruby_exe, os.path.join(NATIVE_DIR, "native.rb"), workdir,
                             mode == "segv")
    live = None
    try:
        run.wait_oracle(timeout)
        with open(run.oracle_path) as f:
            oracle = json.load(f)["frames"]
        if mode == "segv":
            run.wait_exit(timeout)
            core = procs.kernel_core(run)
        else:
            time.sleep(0.5)   # from writing the oracle into pause()
            live = procs.run_tool([corestack, "--json", "--native", "--pid", str(run.pid)],
                                  timeout)
            core = procs.gcore(run.pid, os.path.join(workdir, "core"), 120)
    finally:
        run.kill()
    return core, oracle, live


def eu_stack(core, pid=None):
    """eu-stack --core (or -p pid, core None): {tid: [(pc, name)]}."""
    where = ["-p", str(pid)] if pid else ["--core", core]
    res = subprocess.run(["eu-stack"] + where, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, timeout=300,
                         env=procs.quiet_env())
    threads, cur = {}, None
    for line in res.stdout.splitlines():
        m = re.match(r"TID (\d+):", line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"#\d+\s+0x([0-9a-f]+)\s*(\S*)", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2)))
    return threads


def plain_name(name):
    """An ELF symbol name as the DWARF names the function."""
    name = name.split("@")[0]
    return re.sub(r"(\.(cold|constprop|isra|part|lto_priv)(\.\d+)?)+$", "", name)


def the_thread(report, c_label):
    for t in report.get("threads", []):
        if any(f.get("kind") == "cfunc" and compare.plain_label(f.get("label")) == c_label
               for f in t.get("frames", [])):
            return t
    return None


def check_merged(res, oracle, c_label, c_function, innermost_cfunc):
    """Exit 0; the thread's Ruby frames are the oracle's; merged holds every
    Ruby frame in order, the C methods on their C functions, native frames
    (rb_yield...) between the block and call_block."""
    report, reason = run_json(res)
    if reason:
        return reason
    t = the_thread(report, c_label)
    if not t:
        return "no thread with the C method %r" % c_label
    got = [[f.get("label"), f.get("path"), f.get("lineno")] for f in t["frames"]]
    if got != oracle:
        return "Ruby frames %s, oracle %s" % (compare.show(got), compare.show(oracle))
    if t.get("merge_error"):
        return "not merged: %s" % t["merge_error"]
    merged = t.get("merged") or []
    order = [e["frame"] for e in merged if "frame" in e]
    if order != list(range(len(t["frames"]))):
        return "Ruby frames in merged in order %s" % order
    by_frame = {e["frame"]: (i, e) for i, e in enumerate(merged) if "frame" in e}
    i_c, e_c = by_frame[0]
    if e_c.get("kind") != "cfunc" or e_c.get("function") != c_function:
        return "%r sits on %s, expected %s" % (c_label, compare.show(e_c.get("function")),
                                                c_function)
    call = next((k for k, f in enumerate(t["frames"])
                 if compare.plain_label(f["label"]) == "call_block"), None)
    if call is None:
        return "no call_block frame"
    i_b, e_b = by_frame[call]
    if e_b.get("function") != "nt_call_block":
        return "call_block sits on %s" % compare.show(e_b.get("function"))
    i_blk = by_frame[call - 1][0]
    between = [e.get("function") for e in merged[i_blk + 1:i_b] if "frame" not in e]
    if not between:
        return "no native frame between the block and call_block"
    if innermost_cfunc and i_c != 0:
        return "the crashing C method is not the innermost frame: %s" % compare.show(merged[0])
    if not innermost_cfunc and (i_c == 0 or "frame" in merged[0]):
        return "no native frame inside the C method %r" % c_label
    return None


def check_deep(res, oracle):
    """Native frames cut at the limit: the innermost Ruby frames merged as
    always, the outer ones after merge_cut, every one in order."""
    report, reason = run_json(res)
    if reason:
        return reason
    t = the_thread(report, "pause")
    if not t:
        return "no thread with the C method 'pause'"
    got = [[f.get("label"), f.get("path"), f.get("lineno")] for f in t["frames"]]
    if got != oracle:
        return "Ruby frames %s, oracle %s" % (compare.show(got[:4]), compare.show(oracle[:4]))
    if t.get("merge_error"):
        return "not merged: %s" % t["merge_error"]
    merged, cut = t.get("merged") or [], t.get("merge_cut")
    if not isinstance(cut, int) or not 0 < cut < len(merged):
        return "merge_cut %s of %d merged entries: expected the native frames cut inside " \
            "the Ruby stack" % (compare.show(cut), len(merged))
    order = [e["frame"] for e in merged if "frame" in e]
    if order != list(range(len(t["frames"]))):
        return "Ruby frames in merged in order %s" % compare.show(order[:20])
    inside = [e for e in merged[:cut] if e.get("kind") == "cfunc"]
    if not inside or any(e.get("function") not in ("nt_pause", "nt_call_block") for e in inside):
        return "C methods merged inside the cut sit on %s" % compare.show(
            sorted({e.get("function") for e in inside}))
    outside = merged[cut:]
    if any(e.get("kind") == "native" or e.get("function") for e in outside):
        return "native fields after merge_cut: %s" % compare.show(
            [e for e in outside if e.get("kind") == "native" or e.get("function")][:2])
    return None


def run_json(res):
    rc, out, err, reason = res
    if reason:
        return None, reason
    san = procs.sanitizer_report(err)
    if san:
        return None, "sanitizer report: %s" % san
    if rc != 0:
        return None, "exit status %d, expected 0; stderr: %s" % (rc, err.strip()[:200])
    return compare.parse_report(out)


def check_eu_stack(res, core, c_label):
    """The C-method thread's native frames (without inlined ones) have
    eu-stack's pcs, and its names for the Ruby and extension modules."""
    report, reason = run_json(res)
    if reason:
        return reason
    t = the_thread(report, c_label)
    if not t:
        return "no thread with the C method %r" % c_label
    eu = eu_stack(core).get(t.get("tid"))
    if not eu:
        return "eu-stack shows no thread %s" % t.get("tid")
    ours = [f for f in t.get("native", []) if not f["inlined"]]
    if [int(f["pc"], 16) for f in ours] != [pc for pc, _ in eu]:
        return "pcs %s, eu-stack %s" % ([f["pc"] for f in ours][:12],
                                        [hex(pc) for pc, _ in eu][:12])
    for f, (_, name) in zip(ours, eu):
        mod = f.get("module") or ""
        if (mod.startswith(("libruby", "nativetest")) or mod == "ruby") \
                and f.get("function") != plain_name(name):
            return "at %s: %s, eu-stack %s" % (f["pc"], f.get("function"), name)
    return None


def check_native_all(res, core):
    report, reason = run_json(res)
    if reason:
        return reason
    tids = {t.get("tid") for t in report.get("threads", [])}
    tids |= {t.get("tid") for t in report.get("native_threads", [])}
    eu = set(eu_stack(core))
    if tids != eu:
        return "threads %s, eu-stack %s" % (sorted(t for t in tids if t), sorted(eu))
    if not any(f.get("function") == "nt_c_thread_main"
               for t in report.get("native_threads", []) for f in t.get("native", [])):
        return "the extension's own thread (nt_c_thread_main) is not among native_threads"
    if any(not t.get("native") for t in report["native_threads"]):
        return "a thread without Ruby has no native frames"
    return None


def check_crash_context(res_json, res_text):
    report, reason = run_json(res_json)
    if reason:
        return reason
    sig = report.get("process", {}).get("signal") or {}
    want = {"name": "SIGSEGV", "code_name": "SEGV_MAPERR", "fault_address": "0x10"}
    got = {k: sig.get(k) for k in want}
    if got != want:
        return "signal %s, expected %s" % (got, want)
    t = the_thread(report, "segv")
    crashed = [x for x in report["threads"] if x.get("crashed")]
    if crashed != [t]:
        return "crashed threads %s, expected the one in 'segv'" % [x.get("tid") for x in crashed]
    rc, out, err, reason = res_text
    if reason or rc != 0:
        return reason or "text run exit %d" % rc
    blocks = out.split("\nThread ")[1:]
    if not blocks or "received the signal" not in blocks[0].splitlines()[0] \
            or "= nt_segv" not in blocks[0]:
        return "the first thread in the text is not the crashed one in nt_segv: %s" % (
            compare.show(blocks[0][:200] if blocks else out[:200]))
    return None


def check_rb_bug(res):
    """The crash scenario's core (Ruby's SIGSEGV handler, rb_bug, abort):
    the crashed thread's native frames show the handler and rb_bug, and
    every thread merges."""
    report, reason = run_json(res)
    if reason:
        return reason
    crashed = [t for t in report.get("threads", []) if t.get("crashed")]
    if len(crashed) != 1:
        return "%d threads marked crashed, expected 1" % len(crashed)
    names = [plain_name(f.get("function") or "") for f in crashed[0].get("native", [])]
    for want in ("sigsegv", "rb_bug_for_fatal_signal"):
        if want not in names:
            return "no %s among the crashed thread's native frames: %s" % (want, names[:8])
    bad = [t.get("merge_error") for t in report["threads"] if t.get("merge_error")]
    return "not merged: %s" % bad[0] if bad else None


def names(ctx):
    return [n for r in ctx.rubies for n in native_test_names(r)]


def cores(ctx):
    """rb-bug reads the crash scenario's core."""
    return {(r, "crash") for r in ctx.rubies if ctx.selected("%s/native/rb-bug" % r)}


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.any_selected(native_test_names(r))}


def run_tests(ctx):
    rep, selected, args, prefixes, workdir = ctx.rep, ctx.selected, ctx.args, ctx.prefixes, ctx.workdir
    captures = ctx.captures
    cs, timeout = args.corestack, args.timeout
    for ruby in args.rubies:
        if selected("%s/native/rb-bug" % ruby):
            cap = captures.get((ruby, "crash"))
            if cap is None or isinstance(cap, procs.Failure):
                rep.result("%s/native/rb-bug" % ruby, "setup: no %s/crash core: %s" % (ruby, cap))
            else:
                rep.result("%s/native/rb-bug" % ruby, check_rb_bug(
                    procs.run_tool([cs, "--json", "--native", cap.core], timeout)))
        names = [n for n in native_test_names(ruby) if selected(n) and not n.endswith("rb-bug")]
        if not names:
            continue
        prefix = prefixes.get(ruby)
        if not isinstance(prefix, str):
            for n in names:
                rep.skip(n, "the %s fixture Ruby is not built" % ruby)
            continue
        exe = os.path.join(prefix, "bin", "ruby")
        base = os.path.join(workdir, ruby, "native")
        results = {}
        try:
            shutil.rmtree(base, ignore_errors=True)
            ext = build_extension(exe, os.path.join(base, "ext"))
            for mode in ("pause", "segv", "deep"):
                if not any(n.startswith("%s/native/%s" % (ruby, mode)) or
                           (mode == "pause" and n.endswith("native-all")) for n in names):
                    continue
                core, oracle, live = run_native_program(exe, mode, ext,
                                                        os.path.join(base, mode), timeout, cs)
                results[mode] = (core, oracle, live,
                                 procs.run_tool([cs, "--json", "--native-all", core], timeout))
        except (procs.Failure, OSError, subprocess.SubprocessError, ValueError) as exc:
            for n in names:
                rep.result(n, "setup: %s" % exc)
            continue
        for n in names:
            check = n.rsplit("/", 1)[1]
            mode = check.split("-")[0] if check.startswith(("segv", "deep")) else "pause"
            if mode not in results:
                rep.result(n, "setup: no %s core" % mode)
                continue
            core, oracle, live, res = results[mode]
            if check == "pause-live":
                reason = check_merged(live, oracle, "pause", "nt_pause", False)
            elif check == "pause-merged":
                reason = check_merged(res, oracle, "pause", "nt_pause", False)
            elif check == "deep-merged":
                reason = check_deep(res, oracle)
            elif check == "segv-merged":
                reason = check_merged(res, oracle, "segv", "nt_segv", True)
            elif check.endswith("eu-stack"):
                reason = check_eu_stack(res, core, mode)
            elif check == "native-all":
                reason = check_native_all(res, core)
            else:
                reason = check_crash_context(res, procs.run_tool([cs, "--native", core], timeout))
            rep.result(n, reason)
