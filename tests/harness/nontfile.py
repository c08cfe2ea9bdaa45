"""Cores without an NT_FILE note (the kernel leaves it out when a process
has too many mappings, ~100,000): corestack finds the executable and
libruby from the ELF headers and the dynamic linker's link map in the core.

On each fixture Ruby, the threads scenario (dumped by gcore) and the crash
scenario (dumped by the kernel) run from a copy of the Ruby that is then
moved under a sysroot, as in remote.py's tests, so the paths the
cores name no longer exist; then the NT_FILE note of each core is given
another type, so nothing of it is left to read:

    RUBY/nontfile/sysroot          --sysroot ROOT (the moved Ruby and copies of
                                   the other files): the oracle's stacks, exit 0,
                                   nothing on stderr
    RUBY/nontfile/lib-search-path  the executable and --lib-search-path with the
                                   moved Ruby's lib: the same
    RUBY/nontfile/native           the same with --native: the Ruby frames are the
                                   oracle's, and each thread's native pcs are what
                                   eu-stack --core said of the core before its
                                   NT_FILE was hidden and its files moved (up to
                                   the first frame of JIT code, which eu-stack
                                   cannot pass), the exit status 0
    RUBY/nontfile/kernel-core      the crash scenario's core, written by the kernel,
                                   with the executable and --lib-search-path: the
                                   oracle's stacks and signal
    RUBY/nontfile/many-mappings    no note hidden by hand: a Ruby maps a file ~60,000
                                   times (fixtures/nontfile/many_mappings.rb) and
                                   crashes; the kernel's core must have no NT_FILE
                                   (else SKIP: a kernel with a larger note limit)
                                   and corestack CORE EXECUTABLE gives the oracle's
                                   stacks
    RUBY/nontfile/wrong-library    another fixture Ruby's libruby under this one's
                                   names in --lib-search-path (a static Ruby: its
                                   executable, as ruby): exit 2, one line
                                   naming the file and its build-id
"""

import json
import re
import os
import shutil
import subprocess

from . import compare, elfcore, procs, requires, variants
from .checks import check_oracle, check_unusable
from .scenarios import CRASH_TIMEOUT, ORACLE_TIMEOUT, Capture, capture_all
from .native import copy_into_root, eu_stack, extra_env, nt_file_paths, run_json

TESTS = ("sysroot", "lib-search-path", "native", "kernel-core", "wrong-library",
         "many-mappings")
MANY = os.path.join(procs.ROOT, "fixtures", "nontfile", "many_mappings.rb")
HIDDEN_TYPE = 0x4e4f4e45   # no note of a core has this type


def test_names(ruby):
    return ["%s/nontfile/%s" % (ruby, t) for t in TESTS]


def static(ruby):
    return ruby.split("-", 1)[1:] == ["static"]


class Setup:
    """The threads scenario dumped from a copy of the Ruby that is then
    moved under a sysroot; the core's NT_FILE hidden."""

    def __init__(self, ruby, prefix, base, timeout):
        machine = os.path.join(base, "machine")
        self.root = os.path.join(base, "sysroot")
        shutil.rmtree(base, ignore_errors=True)
        copy = os.path.join(machine, "prefix")
        shutil.copytree(prefix, copy, symlinks=True)
        with extra_env({"LD_LIBRARY_PATH": os.path.join(copy, "lib")}):
            results = capture_all(ruby, os.path.join(copy, "bin", "ruby"),
                                      ["threads", "crash"], os.path.join(base, "run"), False,
                                      None, timeout)
        self.cap, self.crash = results["threads"], results["crash"]
        if isinstance(self.cap, procs.Failure):
            raise self.cap
        names = set(nt_file_paths(self.cap.core))
        cores = [self.cap.core]
        if isinstance(self.crash, Capture):
            names |= set(nt_file_paths(self.crash.core))
            cores.append(self.crash.core)
        if not any(n.startswith(copy + "/") and "libruby" in n or n == copy + "/bin/ruby"
                   for n in names):
            raise procs.Failure("the Ruby was not run from its copy %s" % copy)
        # Ground truth for --native, while the files are where the core says.
        self.eu = eu_stack(self.cap.core)
        os.makedirs(os.path.dirname(self.root + machine), exist_ok=True)
        os.rename(machine, self.root + machine)
        for path in names:
            copy_into_root(path, self.root)
        # The loader's names go through /lib, /lib64 where those are links.
        for top in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
            if os.path.islink("/" + top) and not os.path.lexists(self.root + "/" + top):
                os.symlink(os.readlink("/" + top), self.root + "/" + top)
        for core in cores:
            if elfcore.retype_notes(core, elfcore.NT_FILE, HIDDEN_TYPE) != 1 or \
                    elfcore.nt_file_names(core):
                raise procs.Failure("%s: not exactly one NT_FILE note to hide" % core)
        self.exe = self.root + os.path.join(copy, "bin", "ruby")
        self.lib = self.root + os.path.join(copy, "lib")
        self.cap.exe = None


def check_native(res, cap, eu):
    """The Ruby frames are the oracle's, nothing on stderr; each thread's
    native pcs (inlined frames left out) are eu-stack's, up to the first
    frame of JIT code: eu-stack has no way past it (jit_native.py checks
    what follows)."""
    rc, out, err, reason = res
    report, reason = run_json(res)
    if reason:
        return reason
    if err.strip():
        return "stderr is not empty: %s" % err.strip()[:200]
    reason = compare.compare_threads(report, cap.oracle)
    if reason:
        return reason
    for t in report["threads"]:
        want = [pc for pc, _ in eu.get(t.get("tid"), [])]
        ours = [f for f in t.get("native") or [] if not f.get("inlined")]
        got = [int(f["pc"], 16) for f in ours]
        if not want:
            return "eu-stack shows no thread %s" % t.get("tid")
        jit = next((i for i, f in enumerate(ours) if f.get("jit")), None)
        if jit is not None:
            got, want = got[:jit + 1], want[:jit + 1]
        # corestack cuts an unwind where it leaves code or the thread's
        # stack (saying so); eu-stack prints on
        cut = re.match(r"unwinding cut", t.get("native_error") or "")
        if got != want and not (cut and got and got == want[:len(got)]):
            return "thread %s: native pcs %s, eu-stack %s" % (
                t.get("tid"), [hex(pc) for pc in got[:12]], [hex(pc) for pc in want[:12]])
    return None


def other_ruby(ruby, prefixes):
    """A built fixture Ruby of another version, with a libruby if this one
    has one: (name, prefix) or None."""
    version = ruby.split("-")[0]
    for name, prefix in sorted(prefixes.items()):
        if isinstance(prefix, str) and name.split("-")[0] != version and \
                (static(ruby) or not static(name)):
            return name, prefix
    return None


def wrong_dir(ruby, setup, other, base):
    """A directory holding the other Ruby's libruby under every libruby
    name of this one (its executable as ruby for a static Ruby)."""
    wrong = os.path.join(base, "wrong")
    os.makedirs(wrong, exist_ok=True)
    if static(ruby):
        shutil.copy2(os.path.join(other, "bin", "ruby"), os.path.join(wrong, "ruby"))
        return wrong
    theirs = sorted(f for f in os.listdir(os.path.join(other, "lib")) if f.startswith("libruby.so"))
    ours = [f for f in os.listdir(setup.lib) if f.startswith("libruby.so")]
    if not theirs or not ours:
        raise procs.Failure("no libruby.so* in %s or %s" % (other, setup.lib))
    src = os.path.realpath(os.path.join(other, "lib", theirs[0]))
    for name in ours:
        shutil.copy2(src, os.path.join(wrong, name))
    return wrong


def many_mappings(ruby, exe, base, cs, timeout):
    """-> (None, reason) for a result, (reason, None) for a SKIP."""
    why = requires.missing(MANY, ruby.split("-")[0])
    if why:
        return why, None
    scen = procs.Scenario(exe, MANY, os.path.join(base, "many"), True, variants.scenario_env(ruby))
    try:
        scen.wait_oracle(ORACLE_TIMEOUT)
        scen.wait_exit(CRASH_TIMEOUT)
        core = procs.kernel_core(scen)
        with open(scen.oracle_path) as f:
            oracle = json.load(f)
    except (procs.Failure, OSError, ValueError) as exc:
        return None, "setup: %s" % exc
    finally:
        scen.kill()
    if elfcore.nt_file_names(core):
        return "the kernel wrote NT_FILE for %s mappings (its note limit is larger)" % (
            len(elfcore.nt_file_names(core))), None
    cap = Capture(ruby, "many_mappings", core, exe, oracle, os.WTERMSIG(scen.status))
    res = procs.run_tool([cs, "--json", core, exe], timeout)
    return None, check_oracle(res, cap)


def names(ctx):
    return [n for r in ctx.rubies for n in test_names(r)]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.any_selected(test_names(r))}


def run_tests(ctx):
    rep, selected, args, prefixes, workdir = ctx.rep, ctx.selected, ctx.args, ctx.prefixes, ctx.workdir
    cs, timeout = args.corestack, args.timeout
    for ruby in args.rubies:
        names = [n for n in test_names(ruby) if selected(n)]
        if not names:
            continue
        prefix = prefixes.get(ruby)
        if not isinstance(prefix, str):
            for n in names:
                rep.skip(n, "needs the %s fixture Ruby (not built)" % ruby)
            continue
        base = os.path.join(workdir, "nontfile", ruby)
        name = "%s/nontfile/" % ruby
        if selected(name + "many-mappings"):
            skip, reason = many_mappings(ruby, os.path.join(prefix, "bin", "ruby"), base,
                                         cs, timeout)
            if skip:
                rep.skip(name + "many-mappings", skip)
            else:
                rep.result(name + "many-mappings", reason)
            if not args.keep:   # half a GiB of core
                shutil.rmtree(os.path.join(base, "many"), ignore_errors=True)
        names = [n for n in names if not n.endswith("/many-mappings")]
        if not names:
            continue
        try:
            setup = Setup(ruby, prefix, base, timeout)
        except (procs.Failure, OSError, subprocess.SubprocessError, ValueError) as exc:
            for n in names:
                rep.result(n, "setup: %s" % exc)
            continue
        cap = setup.cap
        lib_args = ["--lib-search-path", setup.lib, cap.core, setup.exe]
        if selected(name + "sysroot"):
            res = procs.run_tool([cs, "--json", "--sysroot", setup.root, cap.core], timeout)
            rep.result(name + "sysroot", check_oracle(res, cap))
        if selected(name + "lib-search-path"):
            res = procs.run_tool([cs, "--json"] + lib_args, timeout)
            rep.result(name + "lib-search-path", check_oracle(res, cap))
        if selected(name + "native"):
            res = procs.run_tool([cs, "--json", "--native"] + lib_args, timeout)
            rep.result(name + "native", check_native(res, cap, setup.eu))
        if selected(name + "kernel-core"):
            if isinstance(setup.crash, procs.Failure):
                rep.result(name + "kernel-core", "setup: %s" % setup.crash)
            else:
                res = procs.run_tool([cs, "--json", "--lib-search-path", setup.lib,
                                      setup.crash.core, setup.exe], timeout)
                rep.result(name + "kernel-core", check_oracle(res, setup.crash))
        if selected(name + "wrong-library"):
            other = other_ruby(ruby, prefixes)
            if not other:
                rep.skip(name + "wrong-library", "needs a fixture Ruby of another version")
            else:
                try:
                    wrong = wrong_dir(ruby, setup, other[1], base)
                    argv = [cs, "--json", "--lib-search-path", wrong, cap.core]
                    res = procs.run_tool(argv + ([] if static(ruby) else [setup.exe]), timeout)
                    rep.result(name + "wrong-library", check_unusable(
                        res, [wrong], (2,), r"build-id", "'build-id'"))
                except (procs.Failure, OSError) as exc:
                    rep.result(name + "wrong-library", "setup: %s" % exc)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
