"""corestack's gdb commands: ruby-bt, ruby-locks, ruby-heap, ruby-frame,
ruby-up, ruby-down, ruby-list, ruby-locals, ruby-print and ruby-sample (see
gdbext/README.md).

    (gdb) source /usr/local/lib/corestack/ruby-gdb.py   # or auto-loaded
    (gdb) ruby-bt [--json] [full] [all | N]
    (gdb) ruby-locks
    (gdb) ruby-heap [--json] [--top N] [--retainers ADDRESS|CLASS]
    (gdb) ruby-frame [N] | ruby-up [N] | ruby-down [N]
    (gdb) ruby-list [LINE]
    (gdb) ruby-locals [N]
    (gdb) ruby-print EXPR          # or rp EXPR
    (gdb) ruby-sample [SECONDS] [--rate HZ] [--state LIST] [--out FILE [--format F]]

A thin loader: everything about Ruby is in the C module _corestack (found
next to this file); this file only tells it what gdb knows (the pid, the
core file, the threads, memory and mappings for remote targets) and
registers the commands.
"""

import glob
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
    # a core's file not where it names it: where gdb found one of that name
    by_name = dict((os.path.basename(p), p) for p in _loaded_files())
    found = {}
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
        if not path.startswith("/"):
            continue
        if path not in found:
            found[path] = path if os.path.exists(path) else by_name.get(
                os.path.basename(path), path)
        maps.append((start, end, offset, found[path]))
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


def _each_thread(inf, what):
    """[(tid, what())] with each thread of inf selected in turn, but those
    for which gdb cannot tell; gdb's selected thread and frame restored."""
    out = []
    selected = gdb.selected_thread()
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        frame = None
    try:
        for t in inf.threads():
            try:
                t.switch()
                out.append((t.ptid[1], what()))
            except (gdb.error, ValueError):
                pass
    finally:
        if selected is not None:
            selected.switch()
        if frame is not None:
            frame.select()
    return out


def _thread_hints(inf):
    """[(tid, fs_base)] of every thread, for Rubies that keep only a pthread_t."""
    return lambda: _each_thread(
        inf, lambda: int(gdb.parse_and_eval("$fs_base")) & (2**64 - 1))


def _core_signal(inf):
    """(signo, code, the first word of the siginfo's union, tid) of a core,
    from gdb's $_siginfo of its first thread (the kernel lists the thread
    that took it first). The union's word is a fault address or a sender's
    pid, as the code says: the module tells them apart."""
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


def _stop_signal_of(thread):
    """(signo, code, the first word of the siginfo's union) of the signal
    thread last stopped with, or None."""
    thread.switch()
    si = gdb.parse_and_eval("$_siginfo")
    word = 0
    try:
        word = int(si["_sifields"]["_sigfault"]["si_addr"])
    except (gdb.error, ValueError):
        pass
    return int(si["si_signo"]), int(si["si_code"]), word & (2**64 - 1)


def _registers():
    """The selected thread's 27 registers (user_regs_struct order), as its
    newest frame has them."""
    top = gdb.newest_frame()
    return tuple(int(top.read_register(r)) & (2**64 - 1) for r in _corestack.USER_REGS)


def _all_registers(inf):
    """[(tid, registers)] of every thread, for a live process no thread of
    which is stopped at a fatal signal: one may be crashing all the same,
    with no signal yet (a fault's handler, or Ruby's bug report, hanging)."""
    return _each_thread(inf, _registers)


def _live_stop(inf):
    """A live process gdb holds stopped at a fatal signal (a fault, an
    abort, before it is delivered): (signo, code, union word, tid, the
    thread's registers), the selected thread first; None otherwise."""
    selected = gdb.selected_thread()
    frame = gdb.selected_frame() if selected is not None else None
    threads = sorted(inf.threads(), key=lambda t: (t != selected, t.num))
    try:
        for t in threads:
            try:
                sig = _stop_signal_of(t)
                if not _corestack.stops_on_crash(sig[0]):
                    continue
                regs = _registers()
            except (gdb.error, ValueError):
                continue
            return sig + (t.ptid[1], regs)
        return None
    finally:
        if selected is not None:
            selected.switch()
        if frame is not None:
            frame.select()


def _local(path):
    """A path gdb names "target:/..." (the inferior's files, when gdb runs
    in another mount namespace, a container) as a local path."""
    return path[len("target:"):] if path and path.startswith("target:") else path


def _loaded_files():
    """The files gdb loaded for the inferior's objfiles: where it found a
    core's libraries (set sysroot, set solib-search-path)."""
    return [_local(o.filename) for o in gdb.objfiles()
            if o.filename and os.path.isabs(_local(o.filename))]


def _core_search():
    """(sysroot, search path) for a core's files not at the paths it names:
    gdb's settings, then the directories of the files gdb loaded."""
    sysroot = _local(gdb.parameter("sysroot") or "") or None
    dirs = [d for d in (gdb.parameter("solib-search-path") or "").split(":") if d]
    for path in _loaded_files():
        if os.path.dirname(path) not in dirs:
            dirs.append(os.path.dirname(path))
    return sysroot, ":".join(dirs) or None


DEBUG_DIR_ADVICE = ("add a directory that holds it to gdb's debug-file-directory "
                    "(set debug-file-directory DIR:...)")


def _facts(inf, via_debugger):
    """What gdb knows of the inferior, for _corestack to choose how to read
    it: a core file or a local process directly, else through gdb (memory,
    mappings, auxv and, on a core, the signal; asked only then)."""
    ctype = _connection_type(inf)
    is_core = ctype == "core"
    sysroot, search = _core_search() if is_core else (None, None)

    def read(addr, length):
        return bytes(inf.read_memory(addr, length))
    return dict(is_core=is_core, core=_core_file() if is_core else None, pid=inf.pid,
                local=ctype == "native", via_debugger=via_debugger,
                executable=_local(gdb.current_progspace().filename),
                name="gdb inferior %d" % inf.num, read=read, mappings=_mappings, auxv=_auxv,
                signal=(lambda: _core_signal(inf)) if is_core else None,
                stop=(lambda: _live_stop(inf)) if ctype == "native" else None,
                threads=(lambda: _all_registers(inf)) if ctype == "native" else None,
                hints=_thread_hints(inf), debug_dirs=gdb.parameter("debug-file-directory"),
                debug_dir_advice=DEBUG_DIR_ADVICE, sysroot=sysroot, lib_search_path=search)


def _thread_by_number(inf, number):
    for t in inf.threads():
        if t.num == number:
            return t
    raise gdb.GdbError("ruby-bt: no thread %d in gdb (see: info threads)" % number)


class RubyBt(gdb.Command):
    """Ruby stacks of the inferior, as corestack prints them.

ruby-bt [--json] [--out FILE] [--via-debugger] [full] [all | N]
  ruby-bt         the Ruby thread running on gdb's selected thread
  ruby-bt all     every Ruby thread, after the process header
  ruby-bt N       the Ruby thread running on gdb thread N (the Id column
                  of `info threads`)
  Ruby numbers its threads its own way: "Thread 2 (tid 4242, gdb thread 3)"
  is Ruby's thread 2, kernel thread 4242 (gdb's LWP 4242), gdb's thread 3.
  A gdb thread that runs no Ruby thread gets a line saying so, not an error
  (--json: an error), so that `thread apply all ruby-bt` goes on.
  full            every Ruby frame's local variables too
  --json          corestack's JSON (docs/json-schema.md)
  --out FILE      write to FILE instead of gdb's console, where gdb's own
                  warnings would mix with it (checked before any work)
  --via-debugger  read memory through gdb even where the target is a local
                  process or core (what a remote target always uses)"""

    def __init__(self):
        super().__init__("ruby-bt", gdb.COMMAND_STACK)

    def complete(self, text, word):
        return _complete(text, word, ("--json", "--out", "--via-debugger", "all", "full"), True)

    def invoke(self, arg, from_tty):
        sink = t = None
        json = False
        try:
            json, via_debugger, which, out, full = _corestack.bt_args(arg)
            sink = _output_file("ruby-bt", out)
            inf = _inferior("ruby-bt")
            tids = name = None
            # each Ruby thread's line names gdb's thread too, as `ruby-bt N`'s does
            names = [(t.ptid[1], "gdb thread %d" % t.num) for t in inf.threads()]
            if which != "all":
                t = gdb.selected_thread() if which is None else _thread_by_number(inf, which)
                if t is None:
                    raise gdb.GdbError("ruby-bt: no thread selected")
                tids, name = [t.ptid[1]], "gdb thread %d" % t.num
            text, _ = _corestack.backtrace(json=json, tids=tids, thread_name=name,
                                           thread_names=names, locals=full,
                                           **_facts(inf, via_debugger))
        except _corestack.Error as exc:
            if sink:
                sink.close()
            if isinstance(exc, _corestack.NoRubyThreadError) and not json:
                # not an error: `thread apply all ruby-bt` goes on
                gdb.write("ruby-bt: %s\n" % exc)
                return
            raise gdb.GdbError("ruby-bt: %s" % exc)
        _emit("ruby-bt", sink, out, text)


def _emit(command, sink, out, text):
    """text to the --out file opened (sink), else to gdb's console."""
    if sink:
        with sink:
            sink.write(text)
        gdb.write("%s: written to %s\n" % (command, out))
    else:
        gdb.write(text)


class RubyLocks(gdb.Command):
    """Who holds what among the Ruby threads, as corestack's text report says it.

ruby-locks [--out FILE] [--via-debugger]
  The deadlocks (threads that wait for each other for ever), then the line
  of each Ruby thread that waits on something or holds a mutex: what it
  waits on, who holds it, what it holds, its deadlock or the thread it is
  stuck behind; each line names gdb's thread of it ("tid 4242, gdb thread
  3"). docs/threads-and-fibers.md "Who holds what" says what is read.
  --out FILE      write to FILE instead of gdb's console
  --via-debugger  read memory through gdb (what a remote target always uses)"""

    def __init__(self):
        super().__init__("ruby-locks", gdb.COMMAND_STACK)

    def complete(self, text, word):
        return _complete(text, word, ("--out", "--via-debugger"), False)

    def invoke(self, arg, from_tty):
        sink = None
        try:
            via_debugger, out = _corestack.locks_args(arg)
            sink = _output_file("ruby-locks", out)
            inf = _inferior("ruby-locks")
            names = [(t.ptid[1], "gdb thread %d" % t.num) for t in inf.threads()]
            text, _ = _corestack.backtrace(locks=True, thread_names=names,
                                           **_facts(inf, via_debugger))
        except _corestack.Error as exc:
            if sink:
                sink.close()
            raise gdb.GdbError("ruby-locks: %s" % exc)
        _emit("ruby-locks", sink, out, text)


class RubyHeap(gdb.Command):
    """The census of the Ruby GC heap, as corestack heap prints it.

ruby-heap [--json] [--top N] [--retainers ADDRESS|CLASS] [--dump FILE]
          [--out FILE] [--via-debugger]
  The live objects by type and by class (class-qualified names): count and
  bytes, sorted by bytes; Strings and Arrays by length. docs/heap.md says
  what is counted and how.
  --json          the JSON document of corestack heap --json
  --top N         class rows shown (default 30); with --retainers CLASS,
                  instances (default 3)
  --retainers ADDRESS|CLASS
                  what keeps the object at ADDRESS (0x...), or the largest
                  instances of CLASS, alive: the shortest path from a root
  --dump FILE     every object into FILE, as ObjectSpace.dump_all writes it
  --out FILE      write to FILE instead of gdb's console
  --via-debugger  read memory through gdb (what a remote target always uses)"""

    def __init__(self):
        super().__init__("ruby-heap", gdb.COMMAND_DATA)

    def complete(self, text, word):
        return _complete(text, word, ("--json", "--top", "--retainers", "--dump", "--out",
                                      "--via-debugger"), False)

    def invoke(self, arg, from_tty):
        sink = None
        try:
            via_debugger, out, json_out, top, retainers, dump = _corestack.heap_args(arg)
            sink = _output_file("ruby-heap", out)
            inf = _inferior("ruby-heap")
            text, _ = _corestack.backtrace(heap=True, json=json_out, top=top,
                                           retainers=retainers, dump=dump,
                                           **_facts(inf, via_debugger))
        except _corestack.Error as exc:
            if sink:
                sink.close()
            raise gdb.GdbError("ruby-heap: %s" % exc)
        _emit("ruby-heap", sink, out, text)


def _complete(text, word, options, threads, values=None):
    """A command's options and, where it takes one, gdb's thread numbers;
    a file name after --out; after an option of values (option -> its
    choices), a choice, or one more of a comma list (not one it holds)."""
    words = text.split()
    partial = "" if not words or text[-1:].isspace() else words[-1]
    before = words[:-1] if partial else words
    if before and before[-1] == "--rate":
        return gdb.COMPLETE_NONE
    if before and values and before[-1] in values:
        done, _, last = partial.rpartition(",")
        given = done.split(",") if done else []
        done = done + "," if done else ""
        cut = len(partial) - len(word or "")
        return [(done + c)[cut:] for c in values[before[-1]]
                if c.startswith(last) and c not in given]
    if before and before[-1] == "--out":
        # gdb's own filename completer finds nothing after an option
        choices = [p + "/" if os.path.isdir(p) else p
                   for p in sorted(glob.glob(glob.escape(partial) + "*"))]
        cut = len(partial) - len(word or "")
        return [c[cut:] for c in choices]
    choices = list(options)
    if threads and gdb.selected_inferior().pid != 0:
        choices += [str(t.num) for t in sorted(gdb.selected_inferior().threads(),
                                                 key=lambda t: t.num)]
    # gdb replaces only `word`, which stops at a '-'
    cut = len(partial) - len(word or "")
    return [c[cut:] for c in choices if c.startswith(partial) and c not in before]


def _output_file(command, path):
    """--out FILE opened before any work, so that a bad path costs nothing;
    a message of one line when it cannot be."""
    if path is None:
        return None
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise gdb.GdbError("%s: cannot write %s: %s" % (command, path, exc.strerror or exc))


def _signal_handling(name):
    """gdb's (stop, print, pass) for signal name."""
    text = gdb.execute("info signals " + name, to_string=True)
    m = re.search(r"^%s\s+(Yes|No)\s+(Yes|No)\s+(Yes|No)" % name, text, re.M)
    return m.groups() if m else None


def _restore_handling(name, handling):
    if handling:
        gdb.execute("handle %s %s %s %s" % (
            name, "stop" if handling[0] == "Yes" else "nostop",
            "print" if handling[1] == "Yes" else "noprint",
            "pass" if handling[2] == "Yes" else "nopass"), to_string=True)


def _stop_signal():
    """The signal the inferior stopped with, or None (a breakpoint...)."""
    try:
        return int(gdb.parse_and_eval("$_siginfo.si_signo"))
    except (gdb.error, ValueError):
        return None


# The signal that stops the inferior when the time is up: one that gdb
# keeps from the program, and that a program ignores by default should gdb
# be gone before it intercepts it (SIGINT would end a Ruby with Interrupt).
SAMPLE_STOP = signal.SIGURG


class RubySample(gdb.Command):
    """Sample the Ruby stacks of the live inferior while it runs.

ruby-sample [SECONDS] [--rate HZ] [--state LIST] [--out FILE [--format F]]
  Lets the stopped inferior run for SECONDS (default 5, at most 86400),
  samples every Ruby thread at HZ (default 100, at most 10000), then stops
  it again (gdb sees a SIGURG, which is not passed to the program) and
  prints the frames with the most samples. Ctrl-C ends it early.
  --state LIST keeps only the threads in those states, a comma list of
  running, waiting (for the GVL), blocked, gc; as record's --state.
  --out FILE writes the profile: collapsed stacks (flamegraph.pl), or with
  --format speedscope, flamegraph (SVG), pprof, firefox or summary, as
  record does; FILE is opened before the inferior runs.
  The Ruby's debug info is looked for in gdb's debug-file-directory. Should
  gdb get SIGTERM or SIGHUP meanwhile, the inferior is stopped, then gdb
  quits (detaching it); should gdb die, the inferior is resumed."""

    def __init__(self):
        super().__init__("ruby-sample", gdb.COMMAND_RUNNING)

    def complete(self, text, word):
        formats, states = _corestack.sample_choices()
        return _complete(text, word, ("--rate", "--state", "--out", "--format"), False,
                         {"--format": formats, "--state": states})

    def invoke(self, arg, from_tty):
        try:
            seconds, rate, out, fmt, states = _corestack.sample_args(arg)
        except _corestack.Error as exc:
            raise gdb.GdbError("ruby-sample: %s" % exc)
        inf = _inferior("ruby-sample")
        ctype = _connection_type(inf)
        if any(t.is_running() for t in inf.threads()):
            raise gdb.GdbError("ruby-sample: the inferior is running; stop it first")
        name = signal.Signals(SAMPLE_STOP).name
        handling = _signal_handling(name)
        try:
            sampler = _corestack.sample_start(
                inf.pid, seconds, rate, interrupt_signal=SAMPLE_STOP, out=out, format=fmt,
                states=states, is_core=ctype == "core", local=ctype == "native",
                debug_dirs=gdb.parameter("debug-file-directory"),
                debug_dir_advice=DEBUG_DIR_ADVICE)
        except _corestack.Error as exc:
            raise gdb.GdbError("ruby-sample: %s" % exc)
        try:
            # gdb must stop on the sampler's signal and keep it from the
            # program.
            gdb.execute("handle %s stop print nopass" % name, to_string=True)
            gdb.execute("continue", to_string=True)
        except gdb.error:
            pass   # the inferior is gone; said below
        except BaseException:
            # gdb is quitting: no more gdb commands, only the sampler ended
            _corestack.sample_finish(sampler)
            raise
        _restore_handling(name, handling)
        try:
            summary, interrupted, quit_signal = _corestack.sample_finish(sampler)
        except _corestack.Error as exc:
            raise gdb.GdbError("ruby-sample: %s" % exc)
        gdb.write(summary)
        stop = _stop_signal() if gdb.selected_inferior().pid else None
        if gdb.selected_inferior().pid == 0:
            gdb.write("The inferior exited while it was sampled.\n")
        elif quit_signal:
            gdb.write("gdb got %s while sampling: the inferior is stopped; gdb quits "
                      "now, detaching it.\n" % signal.Signals(quit_signal).name)
        elif interrupted and stop == SAMPLE_STOP:
            gdb.write("The inferior is stopped again (ruby-sample's %s, "
                      "not passed to the program).\n" % name)
        elif stop == signal.SIGINT:
            gdb.write("Interrupted (SIGINT, Ctrl-C) before the time was up: the "
                      "inferior is stopped.\n")
        else:
            gdb.write("The inferior stopped on its own before the time was up "
                      "(%s).\n" % (signal.Signals(stop).name if stop else "not by a signal"))
        if quit_signal:
            # what gdb does on SIGTERM; now, with the inferior stopped
            gdb.execute("set confirm off", to_string=True)
            gdb.execute("quit")


# --- ruby-frame, ruby-up, ruby-down, ruby-list ------------------------------

# The Ruby frame selected on each thread, and where ruby-list stopped:
# forgotten whenever the inferior runs.
_selected = {}   # (inferior, pid, thread number) -> Ruby frame number
_listed = {}     # the same key -> (Ruby frame number, last line listed)


def _thread_key(thread):
    return (thread.inferior.num, thread.inferior.pid, thread.num)


def selected_ruby_frame(thread=None):
    """The number of the Ruby frame ruby-frame, ruby-up or ruby-down
    selected on thread (gdb's selected thread by default), as ruby-bt
    numbers them: 0, the innermost, when none was."""
    thread = thread or gdb.selected_thread()
    return _selected.get(_thread_key(thread), 0) if thread else 0


def _forget(_event=None):
    _selected.clear()
    _listed.clear()


gdb.events.cont.connect(_forget)
gdb.events.exited.connect(_forget)


def _native_frames():
    """gdb's frames of the selected thread, innermost first, inlined ones
    included (gdb numbers them so): the gdb.Frame list and, for the merge,
    [(function, entry address, inlined)]."""
    frames, described = [], []
    try:
        frame = gdb.newest_frame()
    except gdb.error:
        return frames, described
    while frame is not None:
        inlined = frame.type() == gdb.INLINE_FRAME
        start = 0
        try:
            function = None if inlined else frame.function()
            if function is not None:
                start = int(function.value().address) & (2**64 - 1)
        except (gdb.error, RuntimeError):
            pass
        frames.append(frame)
        described.append((frame.name(), start, inlined))
        try:
            frame = frame.older()
        except gdb.error:
            break
    return frames, described


def _ruby_frames(command, native):
    """(Ruby frames, why no native frame) of gdb's selected thread."""
    inf = _inferior(command)
    thread = gdb.selected_thread()
    if thread is None:
        raise gdb.GdbError("%s: no thread selected" % command)
    try:
        return _corestack.thread_frames(thread.ptid[1], native=native, **_facts(inf, False))
    except _corestack.Error as exc:
        raise gdb.GdbError("%s: %s" % (command, exc))


class RubyFrameCommand(gdb.Command):
    """Shared by ruby-frame, ruby-up and ruby-down."""

    def __init__(self, name):
        super().__init__(name, gdb.COMMAND_STACK, gdb.COMPLETE_NONE)
        self.name = name

    def invoke(self, arg, from_tty):
        gdb_frames, described = _native_frames()
        frames, native_error = _ruby_frames(self.name, described)
        key = _thread_key(gdb.selected_thread())
        try:
            number = _corestack.frame_select(self.name, arg, _selected.get(key, 0),
                                             len(frames))
        except _corestack.Error as exc:
            raise gdb.GdbError("%s: %s" % (self.name, exc))
        _selected[key] = number
        _listed.pop(key, None)
        text, _, _, native = frames[number]
        gdb.write("#%-2d %s\n" % (number, text))
        if native is not None and native < len(gdb_frames):
            gdb_frames[native].select()
            said = gdb.execute("frame", to_string=True).splitlines()
            gdb.write("Native frame selected: %s\n" % (said[0] if said else "#%d" % native))
        else:
            gdb.write("No native frame selected: %s\n" % (
                native_error or "none found for this Ruby frame"))


class RubyFrame(RubyFrameCommand):
    """Select and show a Ruby frame of gdb's selected thread.

ruby-frame [N]
  Ruby frame #N as ruby-bt numbers it (without N: the one selected), and
  gdb's frame that runs it (its interpreter loop, or a C method's C
  function) becomes gdb's selected frame. ruby-list lists its source."""

    def __init__(self):
        super().__init__("ruby-frame")


class RubyUp(RubyFrameCommand):
    """Select and show the Ruby frame N (default 1) outer of the selected one.

ruby-up [N]   as gdb's up, on the Ruby frames ruby-bt numbers (see ruby-frame)"""

    def __init__(self):
        super().__init__("ruby-up")


class RubyDown(RubyFrameCommand):
    """Select and show the Ruby frame N (default 1) inner of the selected one.

ruby-down [N]   as gdb's down, on the Ruby frames ruby-bt numbers (see ruby-frame)"""

    def __init__(self):
        super().__init__("ruby-down")


def _live_cwd(inf):
    try:
        return os.readlink("/proc/%d/cwd" % inf.pid)
    except OSError:
        return None


class RubyList(gdb.Command):
    """List the Ruby source around the selected Ruby frame's line.

ruby-list [LINE]
  Lines 5 before to 5 after the line of the Ruby frame ruby-frame, ruby-up or
  ruby-down selected (#0 without one), or around LINE of its file; again
  without LINE: the next lines. The file is read from disk under gdb's
  sysroot (set sysroot); a line before the lines says when the file changed
  after the core was written or the process started."""

    def __init__(self):
        super().__init__("ruby-list", gdb.COMMAND_FILES, gdb.COMPLETE_NONE)

    def invoke(self, arg, from_tty):
        arg = arg.strip()
        if arg and not arg.isdigit():
            raise gdb.GdbError("ruby-list: usage: ruby-list [LINE]")
        frames, _ = _ruby_frames("ruby-list", None)
        thread = gdb.selected_thread()
        key = _thread_key(thread)
        number = _selected.get(key, 0)
        if number >= len(frames):
            raise gdb.GdbError("ruby-list: this thread has no Ruby frames")
        _, path, lineno, _ = frames[number]
        listed = _listed.get(key)
        if arg:
            first = int(arg) - 5
        elif listed and listed[0] == number:
            first = listed[1] + 1
        elif lineno:
            first = lineno - 5
        else:
            raise gdb.GdbError("ruby-list: Ruby frame #%d has no line number" % number)
        first = max(first, 1)
        inf = thread.inferior
        ctype = _connection_type(inf)
        try:
            text, last = _corestack.list_source(
                path, lineno, first, first + 10, sysroot=gdb.parameter("sysroot"),
                cwd=_live_cwd(inf) if ctype == "native" else None,
                core=_core_file() if ctype == "core" else None,
                pid=inf.pid if ctype == "native" else 0)
        except _corestack.Error as exc:
            raise gdb.GdbError("ruby-list: %s" % exc)
        _listed[key] = (number, last)
        gdb.write(text)


def _read_any(command, inf, tids, **request):
    """The text of _corestack.backtrace for request (frame=, value=), read
    as ruby-bt reads the inferior."""
    try:
        text, _ = _corestack.backtrace(tids=tids, **dict(_facts(inf, False), **request))
    except _corestack.Error as exc:
        raise gdb.GdbError("%s: %s" % (command, exc))
    return text


class RubyLocals(gdb.Command):
    """Local variables of a Ruby frame of gdb's selected thread.

ruby-locals [N]
  ruby-locals     the Ruby frame ruby-frame, ruby-up or ruby-down selected,
                  else the innermost Ruby frame
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
        if frame < 0 and _thread_key(t) in _selected:
            frame = _selected[_thread_key(t)]
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
RubyLocks()
RubyHeap()
RubySample()
RubyFrame()
RubyUp()
RubyDown()
RubyList()
RubyLocals()
RubyPrint()
RubyPrint("rp")
