"""make install of the debugger module: the files it writes, and gdb
loading it from the installed gdbinit.d snippet (gdbext/install...).
"""

import os
import re
import shutil
import subprocess

from . import compare, procs
from .gdbext_gdb import GDB_TIMEOUT, ROOT, check_json, fail_all, json_in, parked


# --- make install ------------------------------------------------------------------

INSTALL_TESTS = ("gdbext/install", "gdbext/install-destdir", "gdbext/install-system-gdbinit")
SNIPPET = os.path.join("gdb", "gdbinit.d", "corestack.gdb")   # under SYSCONFDIR


def make_install(variables):
    """make install with variables -> None or why it failed."""
    try:
        res = subprocess.run(["make", "-C", ROOT, "install"] + variables,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "make install hung"
    if res.returncode != 0:
        return "make install exited %d: %s" % (res.returncode, compare.show(res.stdout[-300:]))
    return None


def installed_files(root, prefix, sysconfdir, exe):
    """Where make install must have written (under root, DESTDIR or /)."""
    autoload = os.path.join(prefix, "share", "gdb", "auto-load")
    return [root + os.path.join(prefix, p) for p in (
        "bin/corestack", "lib/corestack/_corestack.abi3.so",
        "lib/corestack/ruby-gdb.py", "lib/corestack/ruby_lldb.py",
        "share/man/man1/corestack.1")] + [
        root + os.path.join(sysconfdir, SNIPPET),
        root + autoload + os.path.realpath(exe) + "-gdb.py"]


def check_installed(root, prefix, sysconfdir, exe):
    for path in installed_files(root, prefix, sysconfdir, exe):
        if not os.path.isfile(path):
            return "make install did not write %s" % path
    return None


def check_destdir(dest, exe):
    """DESTDIR: every file under it, each naming the final paths only."""
    reason = check_installed(dest, "/usr/local", "/etc", exe)
    if reason:
        return reason
    snippet, autoload = installed_files(dest, "/usr/local", "/etc", exe)[-2:]
    for path, final in ((snippet, "/usr/local/share/gdb/auto-load"),
                        (autoload, "/usr/local/lib/corestack/ruby-gdb.py")):
        with open(path) as f:
            text = f.read()
        if dest in text:
            return "%s names the DESTDIR %s" % (path, dest)
        if final not in text:
            return "%s does not name %s: %s" % (path, final, compare.show(text[-300:]))
    return None


def check_autoloaded(res, oracle):
    report = json_in(res.stdout)
    if report is None:
        return "no ruby-bt report from the auto-loaded commands: %s" % compare.show(
            (res.stdout + res.stderr)[-300:])
    return check_json({"out": report}, oracle, "core", None)


def mount_namespace_works():
    """Can the tests mount inside a private mount namespace (root, and a
    container that allows it)? -> None or why not."""
    unshare = shutil.which("unshare")
    if not unshare:
        return "no unshare(1)"
    try:
        res = subprocess.run([unshare, "-m", "sh", "-c", "mount -t tmpfs none /mnt"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "unshare -m: %s" % exc
    return None if res.returncode == 0 else "cannot mount in a private mount namespace: %s" % (
        res.stdout.strip()[:200])


def system_gdbinit_run(dest, exe, core, workdir):
    """gdb as a user runs it (no -nx), in a private mount namespace where
    the DESTDIR tree is laid over /usr/local and /etc/gdb/gdbinit.d: what
    the installed tree does once in place, without touching the real /."""
    home = os.path.join(workdir, "home")   # no ~/.gdbinit of the user's
    os.makedirs(home, exist_ok=True)
    gdbinit_d = "/etc/gdb/gdbinit.d"
    script = ('set -e; mount --bind %(dest)s%(gd)s %(gd)s; '
              'mount -t overlay overlay -o lowerdir=%(dest)s/usr/local:/usr/local /usr/local; '
              'exec gdb -q -batch -ex "ruby-bt --json all" %(exe)s %(core)s') % {
                  "gd": gdbinit_d, "dest": dest, "exe": exe, "core": core}
    env = procs.quiet_env({"HOME": home})
    env.pop("CORESTACK_GDBEXT_DIR", None)
    return subprocess.run(["unshare", "-m", "sh", "-c", script], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=GDB_TIMEOUT, env=env)


def install_test(rep, selected, args, exe, workdir):
    """make install into temporary trees; gdb gets the commands from what it
    wrote, with no `source` and no auto-load settings of its own."""
    base = os.path.join(workdir, "install")
    shutil.rmtree(base, ignore_errors=True)
    prefix, etc = os.path.join(base, "prefix"), os.path.join(base, "etc")
    dest = os.path.join(base, "dest")
    sc = core = None
    try:
        sc, oracle = parked(exe, workdir, "install-threads")
        core = procs.gcore(sc.pid, os.path.join(sc.workdir, "core"), 120)
    except (procs.Failure, OSError, ValueError) as exc:
        fail_all(rep, selected, INSTALL_TESTS, "capture failed: %s" % exc)
        return
    finally:
        if sc:
            sc.kill()
    env = procs.quiet_env()
    env.pop("CORESTACK_GDBEXT_DIR", None)
    if selected("gdbext/install"):
        # PREFIX and SYSCONFDIR in a temporary tree; gdb -nx skips the system
        # gdbinit directory, so it reads the snippet as it would read that.
        reason = make_install(["PREFIX=" + prefix, "SYSCONFDIR=" + etc,
                                     "RUBY_FOR_GDB=" + exe]) or \
            check_installed("", prefix, etc, exe)
        if not reason:
            try:
                res = subprocess.run(["gdb", "-nx", "-q", "-batch",
                                      "-iex", "source " + os.path.join(etc, SNIPPET),
                                      "-ex", "ruby-bt --json all", exe, core],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, timeout=GDB_TIMEOUT,
                                     env=env)
                reason = check_autoloaded(res, oracle)
            except subprocess.TimeoutExpired:
                reason = "gdb hung"
        rep.result("gdbext/install", reason)
    if selected("gdbext/install-destdir") or selected("gdbext/install-system-gdbinit"):
        # The default PREFIX (/usr/local) and SYSCONFDIR (/etc), staged.
        reason = make_install(["DESTDIR=" + dest, "RUBY_FOR_GDB=" + exe]) or \
            check_destdir(dest, exe)
        if selected("gdbext/install-destdir"):
            rep.result("gdbext/install-destdir", reason)
        if selected("gdbext/install-system-gdbinit"):
            why_not = None if reason else mount_namespace_works()
            if why_not:
                rep.skip("gdbext/install-system-gdbinit", why_not)
            elif reason:
                rep.result("gdbext/install-system-gdbinit", reason)
            else:
                try:
                    res = system_gdbinit_run(dest, exe, core, base)
                    rep.result("gdbext/install-system-gdbinit", check_autoloaded(res, oracle))
                except subprocess.TimeoutExpired:
                    rep.result("gdbext/install-system-gdbinit", "gdb hung")
    os.unlink(core)


# --- make install's edges ------------------------------------------------------------

EDGE_INSTALL_TESTS = ("gdbext/install-edges/no-ruby", "gdbext/install-edges/prefix",
                      "gdbext/install-edges/man-page", "gdbext/install-edges/unresolved-libruby",
                      "gdbext/install-edges/no-snippet", "gdbext/install-edges/uninstall",
                      "gdbext/install-edges/stale-snippet")


def check_man_page(prefix):
    """The installed man page: every document it names is installed there,
    and it describes corestack-lldb, which the install writes too."""
    page = os.path.join(prefix, "share", "man", "man1", "corestack.1")
    try:
        with open(page) as f:
            text = f.read().replace("\\-", "-")
    except OSError as exc:
        return "no man page: %s" % exc
    # a path as the page writes it, also in parentheses or quotes
    named = re.findall(r"([^\s(\"'`]*docs/[a-z-]+\.md)", text)
    if not named:
        return "the man page names no document"
    # a path in the source tree is no help once installed
    missing = sorted({n for n in named if not n.startswith(prefix) or not os.path.isfile(n)})
    if missing:
        return "the man page names documents not installed: %s" % missing
    if not os.path.isfile(os.path.join(prefix, "bin", "corestack-lldb")) or \
            "corestack-lldb" not in text:
        return "corestack-lldb installed but not in the man page"
    return None


def check_no_snippet(prefix, out, env):
    """GDB_SYSTEM_GDBINIT_DIR=: the install says the line for ~/.gdbinit,
    and gdb given that line alone has ruby-bt."""
    m = re.search(r"add '([^']+)' to ~/\.gdbinit", out)
    if not m:
        return "make install did not say what to add to ~/.gdbinit: %s" % compare.show(
            out[-400:])
    res = subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", m.group(1), "-ex", "help ruby-bt"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=GDB_TIMEOUT, env=env)
    if "ruby-bt all" not in res.stdout:
        return "gdb with %r has no ruby-bt: %s" % (m.group(1), compare.show(res.stdout[-300:]))
    return None


def make_output(variables, env=None):
    """make install/uninstall -> (None or why it failed, its output)."""
    try:
        res = subprocess.run(["make", "-C", ROOT] + variables, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=600, env=env)
    except subprocess.TimeoutExpired:
        return "make hung", ""
    if res.returncode != 0:
        return "make exited %d: %s" % (res.returncode, compare.show(res.stdout[-300:])), \
            res.stdout
    return None, res.stdout


def unresolvable_copy(exe, workdir):
    """A copy of a shared Ruby whose RUNPATH names a directory that is not
    there: ldd cannot find its libruby."""
    with open(exe, "rb") as f:
        data = f.read()
    runpath = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(exe))), "lib")
    old = runpath.encode() + b"\0"
    if data.count(old) != 1:
        raise procs.Failure("%s: no RUNPATH %s to change" % (exe, runpath))
    copy = os.path.join(workdir, "bin", "ruby")
    os.makedirs(os.path.dirname(copy), exist_ok=True)
    with open(copy, "wb") as f:
        f.write(data.replace(old, old[:-2] + b"X\0"))
    os.chmod(copy, 0o755)
    return copy


def autoload_scripts(prefix):
    root = os.path.join(prefix, "share", "gdb", "auto-load")
    return sorted(os.path.join(d, n)[len(root):] for d, _, names in os.walk(root)
                  for n in names)


def install_edges(prefix, exe, workdir):
    """make install with no ruby on PATH, PREFIX alone, a Ruby whose
    libruby ldd cannot find; make uninstall; the snippet left behind."""
    results = {}
    path = ":".join(d for d in os.environ.get("PATH", "").split(":")
                    if not os.path.exists(os.path.join(d, "ruby")))
    env = procs.quiet_env({"PATH": path})
    env.pop("RUBY", None)
    reason, out = make_output(["install", "PREFIX=" + prefix], env)
    results["no-ruby"] = reason or (
        None if re.search(r"no ruby on PATH: no gdb auto-load script written.*RUBY=", out)
        else "make install said nothing of the missing ruby: %s" % compare.show(out[-400:]))
    snippet = os.path.join(prefix, "etc", SNIPPET)
    results["prefix"] = reason or (
        "no snippet at %s" % snippet if not os.path.isfile(snippet) else
        "no hint on how gdb reads %s: %s" % (snippet, compare.show(out[-400:]))
        if "add 'source %s' to ~/.gdbinit" % snippet not in out else None)
    results["man-page"] = reason or check_man_page(prefix)
    bad = unresolvable_copy(exe, workdir)
    reason, out = make_output(["install", "PREFIX=" + prefix, "RUBY=%s %s" % (exe, bad)], env)
    lib = [l for l in os.listdir(os.path.join(os.path.dirname(os.path.dirname(
        os.path.realpath(exe))), "lib")) if re.fullmatch(r"libruby\.so[0-9.]*", l)]
    want = sorted([os.path.realpath(exe) + "-gdb.py", bad + "-gdb.py"] + [
        os.path.realpath(os.path.join(os.path.dirname(os.path.dirname(
            os.path.realpath(exe))), "lib", lib[0])) + "-gdb.py"] if lib else [])
    got = autoload_scripts(prefix)
    results["unresolved-libruby"] = reason or (
        "auto-load scripts %s, expected %s" % (got, want) if got != want else
        "make install did not say ldd cannot find the libruby: %s" % compare.show(out[-400:])
        if "ldd cannot find the libruby of " + bad not in out else None)
    saved = os.path.join(workdir, "corestack.gdb")
    shutil.copy(snippet, saved)
    reason, out = make_output(["install", "PREFIX=" + prefix, "GDB_SYSTEM_GDBINIT_DIR="], env)
    results["no-snippet"] = reason or check_no_snippet(prefix, out, env)
    reason, out = make_output(["uninstall", "PREFIX=" + prefix], env)
    left = [os.path.join(d, n) for d, dirs, names in os.walk(prefix) for n in names + dirs]
    results["uninstall"] = reason or ("files or folders left: %s" % left[:5] if left else None)
    shutil.rmtree(prefix)
    res = subprocess.run(["gdb", "-nx", "-q", "-batch", "-iex", "source " + saved,
                          "-ex", "echo ok\\n"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=GDB_TIMEOUT, env=env)
    said = [l for l in res.stdout.splitlines() if l.startswith("corestack:")]
    autoload = os.path.join(prefix, "share", "gdb", "auto-load")
    results["stale-snippet"] = None if len(said) == 1 and autoload + " is gone" in said[0] \
        and "ok" in res.stdout.splitlines() else \
        "a snippet naming a deleted prefix: expected one line, got %s" % compare.show(res.stdout)
    return results


def install_edge_tests(rep, selected, args, exe, workdir):
    names = [n for n in EDGE_INSTALL_TESTS if selected(n)]
    if not names:
        return
    base = os.path.join(workdir, "install-edges")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    try:
        results = install_edges(os.path.join(base, "prefix"), exe, base)
    except (procs.Failure, OSError, ValueError, subprocess.SubprocessError) as exc:
        fail_all(rep, selected, names, "setup: %s" % exc)
        return
    for n in names:
        rep.result(n, results[n.rsplit("/", 1)[1]])
