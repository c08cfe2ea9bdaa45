"""corestack's lldb commands: ruby-bt, ruby-sample, ruby-locals and ruby-print
(see gdbext/README.md).

    (lldb) command script import /usr/local/lib/corestack/ruby_lldb.py
    (lldb) ruby-bt [--json] [full] [all | N]
    (lldb) ruby-sample [SECONDS] [--rate HZ] [--out FILE]
    (lldb) ruby-locals [N]
    (lldb) ruby-print EXPR          # or rp EXPR

A thin loader over the same C module as ruby-gdb.py (_corestack, found next
to this file): it tells the module what lldb knows (pid, threads, memory,
where modules are loaded) and registers the commands. A local live process
is read directly; a core file (lldb 14 does not name it) or a remote target
through lldb's ReadMemory.
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
    def hints():
        out = []
        for thread in process:
            frame = thread.GetFrameAtIndex(0)
            reg = frame.FindRegister("fs_base") if frame.IsValid() else None
            if reg is not None and reg.IsValid():
                out.append((thread.GetThreadID(), reg.GetValueAsUnsigned()))
        return out
    return hints


def _debug_dirs(debugger):
    """lldb's target.debug-file-search-paths, then /usr/lib/debug, as "a:b"."""
    value = debugger.GetInternalVariableValue("target.debug-file-search-paths",
                                              debugger.GetInstanceName())
    dirs = []
    for i in range(value.GetSize() if value else 0):
        item = value.GetStringAtIndex(i)   # "  [0]: /path"
        dirs.append(item.split(":", 1)[1].strip() if "]:" in item else item.strip())
    return ":".join([d for d in dirs if d] + ["/usr/lib/debug"])


def _sources(target, process, via_debugger):
    exe = target.GetExecutable().fullpath
    if exe:
        exe = os.path.realpath(exe)   # as _mappings names it
    if not via_debugger and not _is_core(process) and _is_local(target):
        yield dict(kind="live", pid=process.GetProcessID())

    def read(addr, length):
        err = lldb.SBError()
        data = process.ReadMemory(addr, length, err)
        if err.Fail() or data is None:
            raise IOError(err.GetCString())
        return data
    yield dict(kind="debugger", read=read, mappings=_mappings(target), auxv={},
               is_core=_is_core(process), name="lldb process %d" % process.GetProcessID(),
               pid=process.GetProcessID(), executable=exe)


def ruby_bt(debugger, command, result, internal_dict):
    """ruby-bt [--json] [--out FILE] [--via-debugger] [full] [all | N]: Ruby stacks, as
    corestack prints them (full: with every Ruby frame's locals); --out writes them
    to FILE instead of lldb's console."""
    sink = None
    try:
        json, via_debugger, which, out, full = _corestack.bt_args(command)
        if out is not None:
            try:
                sink = open(out, "w", encoding="utf-8")
            except OSError as exc:
                raise CommandError("cannot write %s: %s" % (out, exc.strerror or exc))
        target, process = _process(debugger)
        if which == "all":
            tids = None
        elif which is None:
            tids = [process.GetSelectedThread().GetThreadID()]
        else:
            thread = process.GetThreadByIndexID(which)
            if not thread.IsValid():
                raise CommandError("no thread %d in lldb (see: thread list)" % which)
            tids = [thread.GetThreadID()]
        first = None
        for source in _sources(target, process, via_debugger):
            try:
                text, _ = _corestack.backtrace(
                    json=json, tids=tids, hints=_hints(process), locals=full,
                    debug_dirs=_debug_dirs(debugger),
                    debug_dir_advice="add a directory that holds it to lldb's "
                    "target.debug-file-search-paths (settings append "
                    "target.debug-file-search-paths DIR)",
                    **source)
                break
            except _corestack.Error as exc:
                first = first or exc
        else:
            raise first
        if sink:
            with sink:
                sink.write(text)
            result.Print("ruby-bt: written to %s\n" % out)
        else:
            result.Print(text)
    except (_corestack.Error, CommandError) as exc:
        if sink:
            sink.close()
        result.SetError("ruby-bt: %s" % exc)


def ruby_sample(debugger, command, result, internal_dict):
    """ruby-sample [SECONDS] [--rate HZ] [--out FILE]: sample the Ruby stacks while the process runs."""
    try:
        seconds, rate, out = _corestack.sample_args(command)
        target, process = _process(debugger)
        if _is_core(process) or not _is_local(target):
            raise CommandError("sampling needs a live local process; this is a %s" % (
                "core file" if _is_core(process) else "remote target"))
        if process.GetState() != lldb.eStateStopped:
            raise CommandError("the process is running; stop it first")
        sampler = _corestack.sample_start(process.GetProcessID(), seconds, rate)
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
            summary, _ = _corestack.sample_finish(sampler, out)
        result.Print(summary)
        state = process.GetState()
        result.Print("The process is stopped again.\n" if state == lldb.eStateStopped
                     else "The process is %s.\n" % lldb.SBDebugger.StateAsCString(state))
    except (_corestack.Error, CommandError) as exc:
        result.SetError("ruby-sample: %s" % exc)


def _read_any(debugger, target, process, tids, **request):
    """_corestack.backtrace on the first source of the process that reads."""
    first = None
    for source in _sources(target, process, False):
        try:
            text, _ = _corestack.backtrace(
                tids=tids, hints=_hints(process), debug_dirs=_debug_dirs(debugger),
                debug_dir_advice="add a directory that holds it to lldb's "
                "target.debug-file-search-paths (settings append "
                "target.debug-file-search-paths DIR)",
                **dict(source, **request))
            return text
        except _corestack.Error as exc:
            first = first or exc
    raise first


def ruby_locals(debugger, command, result, internal_dict):
    """ruby-locals [N]: the local variables of Ruby frame N of the selected thread
    (as ruby-bt numbers them, innermost 0; default: the innermost Ruby frame),
    each value read and shown safely."""
    try:
        frame = _corestack.locals_args(command)
        target, process = _process(debugger)
        tids = [process.GetSelectedThread().GetThreadID()]
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
    for name, func in (("ruby-bt", "ruby_bt"), ("ruby-sample", "ruby_sample"),
                       ("ruby-locals", "ruby_locals"), ("ruby-print", "ruby_print"),
                       ("rp", "ruby_print")):
        debugger.HandleCommand("command script add -f %s.%s %s" % (__name__, func, name))
