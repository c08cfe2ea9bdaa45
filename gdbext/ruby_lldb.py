"""corestack's lldb commands: ruby-bt, ruby-locks, ruby-heap, ruby-frame, ruby-up,
ruby-down, ruby-list, ruby-locals, ruby-print and ruby-sample (see
gdbext/README.md).

    (lldb) command script import /usr/local/lib/corestack/ruby_lldb.py
    (lldb) ruby-bt [--json] [full] [all | N]
    (lldb) ruby-locks
    (lldb) ruby-frame [N] | ruby-up [N] | ruby-down [N]
    (lldb) ruby-list [LINE]
    (lldb) ruby-locals [N]
    (lldb) ruby-print EXPR          # or rp EXPR
    (lldb) ruby-sample [SECONDS] [--rate HZ] [--state LIST] [--out FILE [--format F]]

A thin loader over the same C module as ruby-gdb.py (_corestack, found next
to this file): it tells the module what lldb knows (pid, threads, memory,
where modules are loaded, the core file it maps) and registers the
commands; the module decides how to read the process, as for gdb.
"""

import os
import sys
import time

import lldb


# _corestack lives next to this file (or where CORESTACK_GDBEXT_DIR says).
sys.path.insert(0, os.environ.get("CORESTACK_GDBEXT_DIR")
                or os.path.dirname(os.path.realpath(__file__)))
import _corestack  # noqa: E402


class CommandError(Exception):
    pass


def _process(debugger):
    target = debugger.GetSelectedTarget()
    process = target.GetProcess() if target.IsValid() else None
    if process is None or not process.IsValid() or process.GetProcessID() == lldb.LLDB_INVALID_PROCESS_ID:
        raise CommandError("no process and no core file: run, attach or load a core first")
    return target, process


def _is_core(process):
    return process.GetPluginName() == "elf-core"


def _core_file():
    """The core file this lldb has open: lldb 14 does not name it, but maps
    it. The one ELF core (e_type 4) among lldb's mapped files, or None."""
    cores = set()
    try:
        with open("/proc/self/maps") as f:
            paths = set(line.split(None, 5)[5].strip() for line in f
                        if len(line.split(None, 5)) == 6)
    except OSError:
        return None
    for path in paths:
        if not path.startswith("/") or path.endswith(" (deleted)"):
            continue
        try:
            with open(path, "rb") as f:
                head = f.read(18)
        except OSError:
            continue
        if head[:4] == b"\x7fELF" and head[16:18] == b"\x04\x00":
            cores.add(path)
    return cores.pop() if len(cores) == 1 else None


def _is_local(target):
    return target.GetPlatform().GetName() == "host"


def _mappings(target):
    """Where lldb loaded each module's segments, as file mappings."""
    maps = []
    for module in target.module_iter():
        path = module.GetFileSpec().fullpath
        if not path:
            continue
        path = os.path.realpath(path)   # the file, as the kernel names it
        for section in module.section_iter():
            if not (section.GetName() or "").startswith("PT_LOAD"):
                continue
            load = section.GetLoadAddress(target)
            if load == lldb.LLDB_INVALID_ADDRESS or section.GetFileByteSize() == 0:
                continue
            start = load & ~0xfff
            # up to the end of the file's bytes: the rest (bss) is not the file
            maps.append((start, load + section.GetFileByteSize(),
                         section.GetFileOffset() & ~0xfff, path))
    return maps


def _hints(process):
    """[(tid, fs_base, stack pointer)] of every thread, for Rubies that keep
    only a pthread_t; fs_base 0 where lldb shows none (lldb 14 on a live
    process): then the tid glibc records there is checked against the stack
    pointer instead."""
    def register(frame, name):
        reg = frame.FindRegister(name) if frame.IsValid() else None
        return reg.GetValueAsUnsigned() if reg is not None and reg.IsValid() else 0

    def hints():
        out = []
        for thread in process:
            frame = thread.GetFrameAtIndex(0)
            fs_base, sp = register(frame, "fs_base"), register(frame, "rsp")
            if fs_base or sp:
                out.append((thread.GetThreadID(), fs_base, sp))
        return out
    return hints


def _server_thread(process, tid):
    """Make tid lldb-server's current thread (the gdb-remote Hg packet);
    False where the process is not a gdb-remote one or it refused.

    lldb 14 reads a thread's siginfo (qXfer:siginfo:read) without first
    naming the thread to the server: each thread then shows the siginfo of
    whichever thread the server last took, when two stop on signals at
    once (a SIGSEGV another process sent, and the SIGCHLD of that sender
    exiting, on another thread)."""
    result = lldb.SBCommandReturnObject()
    interp = process.GetTarget().GetDebugger().GetCommandInterpreter()
    # in this process's context: the debugger's selected target may be
    # another one
    interp.HandleCommand("process plugin packet send Hg%x" % tid, lldb.SBExecutionContext(process),
                         result, False)
    return result.Succeeded() and "response: OK" in (result.GetOutput() or "")


def _siginfo_of(process, thread):
    """The siginfo of the signal thread stopped with, or None where lldb
    gives none, or one that is not that signal's."""
    _server_thread(process, thread.GetThreadID())
    si = thread.GetSiginfo()
    if not si.IsValid():
        return None
    signo = si.GetChildMemberWithName("si_signo").GetValueAsSigned()
    # a signal stop's own signal number
    said = thread.GetStopReasonDataAtIndex(0) if \
        thread.GetStopReason() == lldb.eStopReasonSignal else 0
    return si if not said or said == signo else None


def _live_stop(process):
    """A live process lldb holds stopped at a fatal signal (a fault, an
    abort, before it is delivered): (signo, code, the first word of the
    siginfo's union, tid, the thread's registers), the selected thread
    first; None otherwise."""
    selected_thread = process.GetSelectedThread()
    selected = selected_thread.GetIndexID()
    try:
        return _fatal_stop(process, selected)
    finally:
        if selected_thread.IsValid():   # the thread lldb itself last named
            _server_thread(process, selected_thread.GetThreadID())


def _fatal_stop(process, selected):
    for thread in sorted(process, key=lambda t: (t.GetIndexID() != selected, t.GetIndexID())):
        # a fault lldb cannot name (a SIGSEGV another process sent) is an
        # "exception" stop
        if thread.GetStopReason() not in (lldb.eStopReasonSignal, lldb.eStopReasonException):
            continue
        si = _siginfo_of(process, thread)
        if si is None:
            continue
        signo = si.GetChildMemberWithName("si_signo").GetValueAsSigned()
        if not _corestack.stops_on_crash(signo):
            continue
        code = si.GetChildMemberWithName("si_code").GetValueAsSigned()
        word = si.GetValueForExpressionPath("._sifields._sigfault.si_addr")
        return (signo, code, word.GetValueAsUnsigned() if word.IsValid() else 0,
                thread.GetThreadID(), _registers(thread))
    return None


def _registers(thread):
    """The thread's 27 registers (user_regs_struct order) as its newest
    frame has them; 0 for one lldb does not show."""
    frame = thread.GetFrameAtIndex(0)
    regs = []
    for name in _corestack.USER_REGS:
        reg = frame.FindRegister(name) if frame.IsValid() else None
        regs.append(reg.GetValueAsUnsigned() if reg is not None and reg.IsValid() else 0)
    return tuple(regs)


def _all_registers(process):
    """[(tid, registers)] of every thread, for a live process no thread of
    which is stopped at a fatal signal: one may be crashing all the same,
    with no signal yet (a fault's handler, or Ruby's bug report, hanging)."""
    return [(t.GetThreadID(), _registers(t)) for t in process]


def _debug_dirs(debugger):
    """lldb's target.debug-file-search-paths, then /usr/lib/debug, as "a:b"."""
    value = debugger.GetInternalVariableValue("target.debug-file-search-paths",
                                              debugger.GetInstanceName())
    dirs = []
    for i in range(value.GetSize() if value else 0):
        item = value.GetStringAtIndex(i)   # "  [0]: /path"
        dirs.append(item.split(":", 1)[1].strip() if "]:" in item else item.strip())
    return ":".join([d for d in dirs if d] + ["/usr/lib/debug"])


DEBUG_DIR_ADVICE = ("add a directory that holds it to lldb's target.debug-file-search-paths "
                    "(settings append target.debug-file-search-paths DIR)")


def _facts(debugger, target, process, via_debugger):
    """What lldb knows of the process, for _corestack to choose how to read
    it: a core file or a local process directly, else through lldb (memory
    and where modules are loaded; asked only then)."""
    is_core = _is_core(process)

    def read(addr, length):
        err = lldb.SBError()
        data = process.ReadMemory(addr, length, err)
        if err.Fail() or data is None:
            raise IOError(err.GetCString())
        return data
    return dict(is_core=is_core, core=_core_file() if is_core else None,
                pid=process.GetProcessID(), local=_is_local(target), via_debugger=via_debugger,
                executable=target.GetExecutable().fullpath,
                name="lldb process %d" % process.GetProcessID(), read=read,
                mappings=lambda: _mappings(target), hints=_hints(process),
                stop=(lambda: _live_stop(process)) if not is_core else None,
                threads=(lambda: _all_registers(process)) if not is_core else None,
                debug_dirs=_debug_dirs(debugger), debug_dir_advice=DEBUG_DIR_ADVICE,
                sysroot=_sysroot(debugger))


def _output_file(command, path):
    """--out FILE opened before any work, so that a bad path costs nothing;
    a message of one line when it cannot be."""
    if path is None:
        return None
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise CommandError("cannot write %s: %s" % (path, exc.strerror or exc))


BT_HELP = """Ruby stacks of the process or core, as corestack prints them.

Syntax: ruby-bt [--json] [--out FILE] [--via-debugger] [full] [all | N]

  ruby-bt         the Ruby thread running on lldb's selected thread
  ruby-bt all     every Ruby thread, after the process header
  ruby-bt N       the Ruby thread running on lldb thread N (thread list's
                  index, `thread #N`)
  full            every Ruby frame's local variables too
  --json          corestack's JSON (docs/json-schema.md)
  --out FILE      write to FILE instead of lldb's console (checked before
                  any work)
  --via-debugger  read memory through lldb even where the target is a local
                  process or core (what a remote target always uses)

Ruby numbers its threads its own way; each thread's line names its kernel
tid, which `thread list` shows as tid, and lldb's number of it:
"Thread 2 (tid 4242, lldb thread 3)". Debug info is looked for in
target.debug-file-search-paths, then /usr/lib/debug.
"""

LOCKS_HELP = """Who holds what among the Ruby threads, as corestack's text report says it.

Syntax: ruby-locks [--out FILE] [--via-debugger]

The deadlocks (threads that wait for each other for ever), then the line of
each Ruby thread that waits on something or holds a mutex: what it waits
on, who holds it, what it holds, its deadlock or the thread it is stuck
behind; each line names lldb's thread of it ("tid 4242, lldb thread 3").
  --out FILE      write to FILE instead of lldb's console
  --via-debugger  read memory through lldb (what a remote target always uses)
"""

HEAP_HELP = """The census of the Ruby GC heap, as corestack heap prints it.

Syntax: ruby-heap [--json] [--top N] [--retainers ADDRESS|CLASS] [--dump FILE]
                 [--out FILE] [--via-debugger]

The live objects by type and by class (class-qualified names): count and
bytes, sorted by bytes; Strings and Arrays by length. docs/heap.md says what
is counted and how.
  --json          the JSON document of corestack heap --json
  --top N         class rows shown (default 30); with --retainers CLASS,
                  instances (default 3)
  --retainers ADDRESS|CLASS
                  what keeps the object at ADDRESS (0x...), or the largest
                  instances of CLASS, alive: the shortest path from a root
  --dump FILE     every object into FILE, as ObjectSpace.dump_all writes it
  --out FILE      write to FILE instead of lldb's console
  --via-debugger  read memory through lldb (what a remote target always uses)
"""

SAMPLE_HELP = """Sample the Ruby stacks of the live process while it runs.

Syntax: ruby-sample [SECONDS] [--rate HZ] [--state LIST] [--out FILE [--format F]]

Lets the stopped process run for SECONDS (default 5, at most 86400), samples
every Ruby thread at HZ (default 100, at most 10000), stops it again and
prints the frames with the most samples. --state LIST keeps only the threads
in those states (a comma list of running, waiting for the GVL, blocked, gc),
as corestack record's --state does. --out FILE writes the profile:
collapsed stacks (flamegraph.pl), or with --format speedscope, flamegraph
(SVG), pprof, firefox or summary, as corestack record does; FILE is opened
before the process runs.
Should lldb die meanwhile, the process is resumed.
"""


def ruby_bt(debugger, command, result, internal_dict):
    """ruby-bt: see BT_HELP."""
    sink = None
    json = False
    try:
        json, via_debugger, which, out, full = _corestack.bt_args(command)
        sink = _output_file("ruby-bt", out)
        target, process = _process(debugger)
        tids = name = None
        # each Ruby thread's line names lldb's thread too, as `ruby-bt N`'s does
        names = [(t.GetThreadID(), "lldb thread %d" % t.GetIndexID()) for t in process]
        if which != "all":
            thread = process.GetSelectedThread() if which is None \
                else process.GetThreadByIndexID(which)
            if not thread.IsValid():
                raise CommandError("no thread selected" if which is None
                                   else "no thread %d in lldb (see: thread list)" % which)
            tids, name = [thread.GetThreadID()], "lldb thread %d" % thread.GetIndexID()
        text, _ = _corestack.backtrace(json=json, tids=tids, thread_name=name,
                                       thread_names=names, locals=full,
                                       **_facts(debugger, target, process, via_debugger))
        _emit(result, "ruby-bt", sink, out, text)
    except (_corestack.Error, CommandError) as exc:
        if sink:
            sink.close()
        if isinstance(exc, _corestack.NoRubyThreadError) and not json:
            result.Print("ruby-bt: %s\n" % exc)   # not an error, as in gdb
            return
        result.SetError("ruby-bt: %s" % exc)


def _emit(result, command, sink, out, text):
    """text to the --out file opened (sink), else to lldb's output."""
    if sink:
        with sink:
            sink.write(text)
        result.Print("%s: written to %s\n" % (command, out))
    else:
        result.Print(text)


def ruby_locks(debugger, command, result, internal_dict):
    """ruby-locks: see LOCKS_HELP."""
    sink = None
    try:
        via_debugger, out = _corestack.locks_args(command)
        sink = _output_file("ruby-locks", out)
        target, process = _process(debugger)
        names = [(t.GetThreadID(), "lldb thread %d" % t.GetIndexID()) for t in process]
        text, _ = _corestack.backtrace(locks=True, thread_names=names,
                                       **_facts(debugger, target, process, via_debugger))
        _emit(result, "ruby-locks", sink, out, text)
    except (_corestack.Error, CommandError) as exc:
        if sink:
            sink.close()
        result.SetError("ruby-locks: %s" % exc)


def ruby_sample(debugger, command, result, internal_dict):
    """ruby-sample: see SAMPLE_HELP."""
    try:
        seconds, rate, out, fmt, states = _corestack.sample_args(command)
        target, process = _process(debugger)
        if process.GetState() != lldb.eStateStopped:
            raise CommandError("the process is running; stop it first")
        sampler = _corestack.sample_start(process.GetProcessID(), seconds, rate, out=out,
                                          format=fmt, states=states,
                                          is_core=_is_core(process), local=_is_local(target),
                                          debug_dirs=_debug_dirs(debugger),
                                          debug_dir_advice=DEBUG_DIR_ADVICE)
        # Asynchronous: continue, watch the state (it turns "running" a
        # moment later), stop it when the time is up unless it stopped or
        # exited on its own meanwhile.
        was_async = debugger.GetAsync()
        debugger.SetAsync(True)
        gone = (lldb.eStateExited, lldb.eStateCrashed, lldb.eStateDetached)
        try:
            process.Continue()
            deadline = time.monotonic() + seconds
            seen_running = False
            while time.monotonic() < deadline:
                time.sleep(0.02)
                state = process.GetState()
                seen_running = seen_running or state == lldb.eStateRunning
                if state in gone or (seen_running and state == lldb.eStateStopped):
                    break
            if process.GetState() not in gone + (lldb.eStateStopped,):
                process.Stop()
            for _ in range(250):   # bounded: 5 s
                if process.GetState() in gone + (lldb.eStateStopped,):
                    break
                time.sleep(0.02)
        finally:
            debugger.SetAsync(was_async)
            summary, _, _ = _corestack.sample_finish(sampler)
        result.Print(summary)
        state = process.GetState()
        result.Print("The process is stopped again.\n" if state == lldb.eStateStopped
                     else "The process is %s.\n" % lldb.SBDebugger.StateAsCString(state))
    except (_corestack.Error, CommandError) as exc:
        result.SetError("ruby-sample: %s" % exc)


# --- ruby-frame, ruby-up, ruby-down, ruby-list ------------------------------

# The Ruby frame selected on each thread, and where ruby-list stopped, both
# valid while the process stays in the stop they were made in.
_selected = {}   # (pid, thread index) -> (stop id, Ruby frame number)
_listed = {}     # the same key -> (stop id, Ruby frame number, last line)


def _thread_key(process, thread):
    return (process.GetProcessID(), thread.GetIndexID())


def selected_ruby_frame(process, thread=None):
    """The number of the Ruby frame ruby-frame, ruby-up or ruby-down
    selected on thread (the selected one by default), as ruby-bt numbers
    them: 0, the innermost, when none was or the process ran since."""
    thread = thread or process.GetSelectedThread()
    stop, number = _selected.get(_thread_key(process, thread), (None, 0))
    return number if stop == process.GetStopID() else 0


def _native_frames(target, thread):
    """lldb's frames of thread, innermost first, inlined ones included (lldb
    numbers them so), for the merge: [(function, entry address, inlined)]."""
    out = []
    for frame in thread:
        inlined = frame.IsInlined()
        start = 0
        if not inlined:
            function = frame.GetFunction()
            address = function.GetStartAddress() if function.IsValid() \
                else frame.GetSymbol().GetStartAddress()
            start = address.GetLoadAddress(target) if address.IsValid() else 0
            if start == lldb.LLDB_INVALID_ADDRESS:
                start = 0
        out.append((frame.GetFunctionName(), start, inlined))
    return out


def _ruby_frames(debugger, command, native):
    """(target, process, thread, Ruby frames, why no native frame)"""
    target, process = _process(debugger)
    thread = process.GetSelectedThread()
    if not thread.IsValid():
        raise CommandError("no thread selected")
    frames, native_error = _corestack.thread_frames(
        thread.GetThreadID(), native=_native_frames(target, thread) if native else None,
        **_facts(debugger, target, process, False))
    return target, process, thread, frames, native_error


def _frame_command(name):
    def command(debugger, line, result, internal_dict):
        try:
            target, process, thread, frames, native_error = _ruby_frames(debugger, name, True)
            number = _corestack.frame_select(name, line, selected_ruby_frame(process, thread),
                                             len(frames))
            key = _thread_key(process, thread)
            _selected[key] = (process.GetStopID(), number)
            _listed.pop(key, None)
            text, _, _, native = frames[number]
            result.Print("#%-2d %s\n" % (number, text))
            if native is not None and native < thread.GetNumFrames():
                thread.SetSelectedFrame(native)
                result.Print("Native frame selected: %s\n" % str(thread.GetFrameAtIndex(native)))
            else:
                result.Print("No native frame selected: %s\n" % (
                    native_error or "none found for this Ruby frame"))
        except (_corestack.Error, CommandError) as exc:
            result.SetError("%s: %s" % (name, exc))
    command.__doc__ = ("%s [N]: select and show a Ruby frame of the selected thread "
                       "(ruby-frame: #N as ruby-bt numbers them; ruby-up, ruby-down: N "
                       "frames outer, inner) and the native frame that runs it" % name)
    return command


ruby_frame = _frame_command("ruby-frame")
ruby_up = _frame_command("ruby-up")
ruby_down = _frame_command("ruby-down")


def _sysroot(debugger):
    """The platform's sysroot (platform select --sysroot), or None."""
    ret = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand("platform status", ret)
    for line in (ret.GetOutput() or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("Sysroot", "Sysroot Path") and value.strip():
            return value.strip()
    return None


def ruby_list(debugger, command, result, internal_dict):
    """ruby-list [LINE]: the Ruby source around the selected Ruby frame's line
    (or LINE of its file; again: the next lines), from the file on disk under
    the platform's sysroot."""
    try:
        arg = command.strip()
        if arg and not arg.isdigit():
            raise CommandError("usage: ruby-list [LINE]")
        target, process, thread, frames, _ = _ruby_frames(debugger, "ruby-list", False)
        number = selected_ruby_frame(process, thread)
        if number >= len(frames):
            raise CommandError("this thread has no Ruby frames")
        _, path, lineno, _ = frames[number]
        key = _thread_key(process, thread)
        listed = _listed.get(key)
        if arg:
            first = int(arg) - 5
        elif listed and listed[:2] == (process.GetStopID(), number):
            first = listed[2] + 1
        elif lineno:
            first = lineno - 5
        else:
            raise CommandError("Ruby frame #%d has no line number" % number)
        first = max(first, 1)
        live = not _is_core(process) and _is_local(target)
        cwd = None
        if live:
            try:
                cwd = os.readlink("/proc/%d/cwd" % process.GetProcessID())
            except OSError:
                pass
        text, last = _corestack.list_source(
            path, lineno, first, first + 10, sysroot=_sysroot(debugger), cwd=cwd,
            pid=process.GetProcessID() if live else 0)
        _listed[key] = (process.GetStopID(), number, last)
        result.Print(text)
    except (_corestack.Error, CommandError) as exc:
        result.SetError("ruby-list: %s" % exc)


class _Command:
    """A command with lldb's short and long help (`help ruby-bt`)."""
    func = short = long = None

    def __init__(self, debugger, internal_dict):
        self.internal_dict = internal_dict

    def __call__(self, debugger, command, exe_ctx, result):
        type(self).func(debugger, command, result, self.internal_dict)

    def get_short_help(self):
        return self.short

    def get_long_help(self):
        return self.long


class RubyBt(_Command):
    func, short, long = ruby_bt, BT_HELP.splitlines()[0], BT_HELP


class RubyLocks(_Command):
    func, short, long = ruby_locks, LOCKS_HELP.splitlines()[0], LOCKS_HELP


def ruby_heap(debugger, command, result, internal_dict):
    """ruby-heap: see HEAP_HELP."""
    sink = None
    try:
        via_debugger, out, json_out, top, retainers, dump = _corestack.heap_args(command)
        sink = _output_file("ruby-heap", out)
        target, process = _process(debugger)
        text, _ = _corestack.backtrace(heap=True, json=json_out, top=top, retainers=retainers,
                                       dump=dump,
                                       **_facts(debugger, target, process, via_debugger))
        _emit(result, "ruby-heap", sink, out, text)
    except (_corestack.Error, CommandError) as exc:
        if sink:
            sink.close()
        result.SetError("ruby-heap: %s" % exc)


class RubyHeap(_Command):
    func, short, long = ruby_heap, HEAP_HELP.splitlines()[0], HEAP_HELP


class RubySample(_Command):
    func, short, long = ruby_sample, SAMPLE_HELP.splitlines()[0], SAMPLE_HELP


def _read_any(debugger, target, process, tids, **request):
    """The text of _corestack.backtrace for request (frame=, value=), read
    as ruby-bt reads the process."""
    text, _ = _corestack.backtrace(
        tids=tids, **dict(_facts(debugger, target, process, False), **request))
    return text


def ruby_locals(debugger, command, result, internal_dict):
    """ruby-locals [N]: the local variables of Ruby frame N of the selected thread
    (as ruby-bt numbers them, innermost 0; default: the one ruby-frame selected,
    else the innermost Ruby frame),
    each value read and shown safely."""
    try:
        frame = _corestack.locals_args(command)
        target, process = _process(debugger)
        thread = process.GetSelectedThread()
        if not thread.IsValid():
            raise CommandError("no thread selected")
        tids = [thread.GetThreadID()]
        selected = _selected.get(_thread_key(process, thread))
        if frame < 0 and selected and selected[0] == process.GetStopID():
            frame = selected[1]   # what ruby-frame, ruby-up, ruby-down chose
        result.Print(_read_any(debugger, target, process, tids, frame=frame))
    except (_corestack.Error, CommandError) as exc:
        result.SetError("ruby-locals: %s" % exc)


def ruby_print(debugger, command, result, internal_dict):
    """ruby-print EXPR (alias rp): a Ruby VALUE (an address or any expression)
    shown safely, with its class."""
    try:
        if not command.strip():
            raise CommandError("usage: ruby-print EXPR")
        target, process = _process(debugger)
        frame = process.GetSelectedThread().GetSelectedFrame()
        value = frame.EvaluateExpression(command) if frame.IsValid() \
            else target.EvaluateExpression(command)
        if not value.GetError().Success():
            raise CommandError(value.GetError().GetCString() or "cannot evaluate %s" % command)
        result.Print(_read_any(debugger, target, process, None,
                               value=value.GetValueAsUnsigned()))
    except (_corestack.Error, CommandError) as exc:
        result.SetError("ruby-print: %s" % exc)


def __lldb_init_module(debugger, internal_dict):
    for name, cls in (("ruby-bt", "RubyBt"), ("ruby-locks", "RubyLocks"),
                      ("ruby-heap", "RubyHeap"), ("ruby-sample", "RubySample")):
        debugger.HandleCommand("command script add -c %s.%s %s" % (__name__, cls, name))
    for name, func in (("ruby-frame", "ruby_frame"), ("ruby-up", "ruby_up"),
                       ("ruby-down", "ruby_down"), ("ruby-list", "ruby_list"),
                       ("ruby-locals", "ruby_locals"), ("ruby-print", "ruby_print"),
                       ("rp", "ruby_print")):
        debugger.HandleCommand("command script add -f %s.%s %s" % (__name__, func, name))
