"""corestack's gdb commands: ruby-bt, ruby-sample, ruby-locals and ruby-print
(see gdbext/README.md).

    (gdb) source /usr/local/lib/corestack/ruby-gdb.py   # or auto-loaded
    (gdb) ruby-bt [--json] [full] [all | N]
    (gdb) ruby-sample [SECONDS] [--rate HZ] [--out FILE]
    (gdb) ruby-locals [N]
    (gdb) ruby-print EXPR          # or rp EXPR

A thin loader: everything about Ruby is in the C module _corestack (found
next to this file); this file only tells it what gdb knows (the pid, the
core file, the threads, memory and mappings for remote targets) and
registers the commands.
"""

import os
import re
import signal
import sys

import gdb


# _corestack lives next to this file (or where CORESTACK_GDBEXT_DIR says).
sys.path.insert(0, os.environ.get("CORESTACK_GDBEXT_DIR")
                or os.path.dirname(os.path.realpath(__file__)))
import _corestack  # noqa: E402


def _inferior(command):
    inf = gdb.selected_inferior()
    if inf is None or inf.pid == 0:
        raise gdb.GdbError("%s: no process and no core file: run, attach or load a core first"
                           % command)
    return inf


def _connection_type(inf):
    conn = getattr(inf, "connection", None)
    return getattr(conn, "type", None)


def _core_file():
    """The core file gdb reads, from `info target`, or None."""
    text = gdb.execute("info target", to_string=True)
    m = re.search(r"Local core dump file:\s*\n\s*`(.*)', file type", text)
    return m.group(1) if m else None


def _mappings():
    """File mappings from `info proc mappings`: [(start, end, offset, path)]."""
    maps = []
    text = gdb.execute("info proc mappings", to_string=True)
    for line in text.splitlines():
        words = line.split()
        if len(words) < 5 or not words[0].startswith("0x"):
            continue
        try:
            start, end, _, offset = (int(w, 16) for w in words[:4])
        except ValueError:
            continue
        rest = words[4:]
        if rest and re.fullmatch(r"[rwxps-]{4}", rest[0]):
            rest = rest[1:]
        path = " ".join(rest)
        if path.startswith("/"):
            maps.append((start, end, offset, path))
    return maps


def _auxv():
    """{type: value} from `info auxv` (numbers only)."""
    auxv = {}
    try:
        text = gdb.execute("info auxv", to_string=True)
    except gdb.error:
        return auxv
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+\S+\s.*?\s(0x[0-9a-fA-F]+|\d+)(\s+\".*\")?\s*$", line)
        if m:
            auxv[int(m.group(1))] = int(m.group(2), 0)
    return auxv


def _thread_hints(inf):
    """[(tid, fs_base)] of every thread, for Rubies that keep only a pthread_t."""
    def hints():
        out = []
        selected = gdb.selected_thread()
        try:
            frame = gdb.selected_frame()
        except gdb.error:
            frame = None
        try:
            for t in inf.threads():
                t.switch()
                try:
                    out.append((t.ptid[1], int(gdb.parse_and_eval("$fs_base")) & (2**64 - 1)))
                except gdb.error:
                    pass
        finally:
            if selected is not None:
                selected.switch()
            if frame is not None:
                frame.select()
        return out
    return hints


def _core_signal(inf):
    """(signo, code, fault address, tid) of a core, from gdb's $_siginfo of
    its first thread (the kernel lists the thread that took it first)."""
    first = min(inf.threads(), key=lambda t: t.num, default=None)
    if first is None:
        return None
    selected = gdb.selected_thread()
    try:
        first.switch()
        si = gdb.parse_and_eval("$_siginfo")
        addr = 0
        try:
            addr = int(si["_sifields"]["_sigfault"]["si_addr"])
        except (gdb.error, ValueError):
            pass
        return int(si["si_signo"]), int(si["si_code"]), addr & (2**64 - 1), first.ptid[1]
    except (gdb.error, ValueError):
        return None
    finally:
        if selected is not None:
            selected.switch()


def _debugger_source(inf, ctype):
    """Memory, mappings and auxv through gdb: any target gdb can read."""
    def read(addr, length):
        return bytes(inf.read_memory(addr, length))
    return dict(kind="debugger", read=read, mappings=_mappings(), auxv=_auxv(),
                is_core=ctype == "core", name="gdb inferior %d" % inf.num, pid=inf.pid,
                signal=_core_signal(inf) if ctype == "core" else None)


def _sources(inf, via_debugger):
    """The ways to read the inferior, fastest first."""
    ctype = _connection_type(inf)
    exe = gdb.current_progspace().filename
    fast = None
    if not via_debugger:
        if ctype == "core":
            core = _core_file()
            if core and os.access(core, os.R_OK):
                fast = dict(kind="core", core=core, executable=exe)
        elif ctype == "native":
            fast = dict(kind="live", pid=inf.pid)
    if fast:
        yield fast
    if exe and os.path.exists(exe):
        exe = os.path.realpath(exe)   # as `info proc mappings` names it
    yield dict(_debugger_source(inf, ctype), executable=exe)


def _thread_by_number(inf, number):
    for t in inf.threads():
        if t.num == number:
            return t
    raise gdb.GdbError("ruby-bt: no thread %d in gdb (see: info threads)" % number)


class RubyBt(gdb.Command):
    """Ruby stacks of the inferior, as corestack prints them.

ruby-bt [--json] [--via-debugger] [full] [all | N]
  ruby-bt         the Ruby thread running on gdb's selected thread
  ruby-bt all     every Ruby thread
  ruby-bt N       the Ruby thread running on gdb thread N
  full            every Ruby frame's local variables too
  --json          corestack's JSON (docs/json-schema.md)
  --out FILE      write to FILE instead of gdb's console, where gdb's own
                  warnings would mix with it (checked before any work)
  --via-debugger  read memory through gdb even where the target is a local
                  process or core (what a remote target always uses)"""

    def __init__(self):
        super().__init__("ruby-bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        sink = None
        try:
            json, via_debugger, which, out, full = _corestack.bt_args(arg)
            sink = _output_file(out)
            inf = _inferior("ruby-bt")
            if which == "all":
                tids = None
            else:
                t = gdb.selected_thread() if which is None else _thread_by_number(inf, which)
                if t is None:
                    raise gdb.GdbError("ruby-bt: no thread selected")
                tids = [t.ptid[1]]
            first = None
            for source in _sources(inf, via_debugger):
                try:
                    text, _ = _corestack.backtrace(
                        json=json, tids=tids, hints=_thread_hints(inf), locals=full,
                        debug_dirs=gdb.parameter("debug-file-directory"),
                        debug_dir_advice="add a directory that holds it to gdb's "
                        "debug-file-directory (set debug-file-directory DIR:...)",
                        **source)
                    break
                except _corestack.Error as exc:
                    first = first or exc
            else:
                raise first
        except _corestack.Error as exc:
            if sink:
                sink.close()
            raise gdb.GdbError("ruby-bt: %s" % exc)
        if sink:
            with sink:
                sink.write(text)
            gdb.write("ruby-bt: written to %s\n" % out)
        else:
            gdb.write(text)


def _output_file(path):
    """--out FILE opened before any work, so that a bad path costs nothing;
    a message of one line when it cannot be."""
    if path is None:
        return None
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise _corestack.Error("cannot write %s: %s" % (path, exc.strerror or exc))


def _sigint_handling():
    """gdb's (stop, print, pass) for SIGINT."""
    text = gdb.execute("info signals SIGINT", to_string=True)
    m = re.search(r"^SIGINT\s+(Yes|No)\s+(Yes|No)\s+(Yes|No)", text, re.M)
    return m.groups() if m else None


class RubySample(gdb.Command):
    """Sample the Ruby stacks of the live inferior while it runs.

ruby-sample [SECONDS] [--rate HZ] [--out FILE]
  Lets the stopped inferior run for SECONDS (default 5), samples every Ruby
  thread at HZ (default 100), then stops it again (gdb sees a SIGINT, which
  is not passed to the program) and prints the frames with the most samples.
  --out FILE writes the collapsed stacks (flamegraph.pl, speedscope)."""

    def __init__(self):
        super().__init__("ruby-sample", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        try:
            seconds, rate, out = _corestack.sample_args(arg)
        except _corestack.Error as exc:
            raise gdb.GdbError("ruby-sample: %s" % exc)
        inf = _inferior("ruby-sample")
        if _connection_type(inf) != "native":
            raise gdb.GdbError("ruby-sample: sampling needs a live local process; "
                               "this inferior is a %s" % (
                                   "core file" if _connection_type(inf) == "core"
                                   else "remote target"))
        if any(t.is_running() for t in inf.threads()):
            raise gdb.GdbError("ruby-sample: the inferior is running; stop it first")
        handling = _sigint_handling()
        try:
            sampler = _corestack.sample_start(inf.pid, seconds, rate,
                                              interrupt_signal=signal.SIGINT)
        except _corestack.Error as exc:
            raise gdb.GdbError("ruby-sample: %s" % exc)
        # The sampler stops the inferior with a SIGINT: gdb must stop on it
        # and keep it from the program.
        gdb.execute("handle SIGINT stop print nopass", to_string=True)
        try:
            gdb.execute("continue", to_string=True)
        finally:
            if handling:
                gdb.execute("handle SIGINT %s %s %s" % (
                    "stop" if handling[0] == "Yes" else "nostop",
                    "print" if handling[1] == "Yes" else "noprint",
                    "pass" if handling[2] == "Yes" else "nopass"), to_string=True)
            try:
                summary, interrupted = _corestack.sample_finish(sampler, out)
            except _corestack.Error as exc:
                raise gdb.GdbError("ruby-sample: %s" % exc)
        gdb.write(summary)
        if gdb.selected_inferior().pid == 0:
            gdb.write("The inferior exited while it was sampled.\n")
        elif interrupted:
            gdb.write("The inferior is stopped again (ruby-sample's SIGINT, "
                      "not passed to the program).\n")
        else:
            gdb.write("The inferior stopped on its own before the time was up.\n")


def _read_any(command, inf, tids, **request):
    """_corestack.backtrace on the first source of the inferior that reads."""
    first = None
    for source in _sources(inf, False):
        try:
            text, _ = _corestack.backtrace(
                tids=tids, hints=_thread_hints(inf),
                debug_dirs=gdb.parameter("debug-file-directory"),
                debug_dir_advice="add a directory that holds it to gdb's "
                "debug-file-directory (set debug-file-directory DIR:...)",
                **dict(source, **request))
            return text
        except _corestack.Error as exc:
            first = first or exc
    raise gdb.GdbError("%s: %s" % (command, first))


class RubyLocals(gdb.Command):
    """Local variables of a Ruby frame of gdb's selected thread.

ruby-locals [N]
  ruby-locals     the innermost Ruby frame
  ruby-locals N   frame N as ruby-bt lists them (innermost 0)
Each value is read, never computed, and shown safely: nil, true, false,
Integer, Float, Symbol, String (bounded), Array and Hash (sizes and first
elements), a class by path, else #<Class:0x...>; <unreadable: why> when it
cannot be read."""

    def __init__(self):
        super().__init__("ruby-locals", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        try:
            frame = _corestack.locals_args(arg)
        except _corestack.Error as exc:
            raise gdb.GdbError("ruby-locals: %s" % exc)
        inf = _inferior("ruby-locals")
        t = gdb.selected_thread()
        if t is None:
            raise gdb.GdbError("ruby-locals: no thread selected")
        gdb.write(_read_any("ruby-locals", inf, [t.ptid[1]], frame=frame))


class RubyPrint(gdb.Command):
    """Show a Ruby VALUE safely, with its class.

ruby-print EXPR   (alias: rp)
  EXPR is an address or any gdb expression whose value is a VALUE:
  ruby-print 0x7f3a8d2c4e18, rp $rdi, rp (VALUE)some_variable"""

    def __init__(self, name="ruby-print"):
        super().__init__(name, gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        if not arg.strip():
            raise gdb.GdbError("ruby-print: usage: ruby-print EXPR")
        try:
            value = int(gdb.parse_and_eval(arg).cast(
                gdb.lookup_type("unsigned long")))
        except gdb.error as exc:
            raise gdb.GdbError("ruby-print: %s" % exc)
        inf = _inferior("ruby-print")
        gdb.write(_read_any("ruby-print", inf, None, value=value))


RubyBt()
RubySample()
RubyLocals()
RubyPrint()
RubyPrint("rp")
