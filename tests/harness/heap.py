"""corestack heap: the census of the GC heap against Ruby's own numbers.

fixtures/heap/heap.rb allocates known populations, disables the GC after a
full one and records ObjectSpace.count_objects and, for a few classes, the
count of their direct instances and the sum of their memsize_of; it proves
that the heap is still what it recorded before it says "heap exact" in its
process title (the fixture's comment says how). Then:

    RUBY/heap/core          gcore, then corestack heap --json CORE EXE: exit 0,
                            count_objects (TOTAL, FREE and every T_*) equal to
                            Ruby's exactly, each recorded class's row with
                            its count exactly, and its bytes equal to the
                            memsize_of sum for the classes whose bytes are
                            exact (docs/heap.md: Strings, Arrays and Hashes
                            without instance variables, objects with no ivars
                            or embedded ones); the text output exit 0 with the
                            same rows; the Strings and Arrays with a class
                            by length (bits of bytesize, of size) counted
                            as each_object(String), each_object(Array) count
                            them
    RUBY/heap/live          corestack heap --json --pid: the same, and no
                            thread of the fixture left stopped
    RUBY/heap/gdb           gdb on the core: ruby-heap --json (read directly and
                            --via-debugger) the same census as RUBY/heap/core's,
                            against Ruby's numbers; ruby-heap's text the same rows;
                            ruby-heap --retainers of the global's path, the
                            fiber's local's, and of a registered C global, a
                            mark object, a finalizer and a suspended fiber's C
                            local (every other one --via-debugger) as recorded;
                            ruby-heap --dump as RUBY/heap/dump checks the dump
    RUBY/heap/gdb-live      gdb -p on the fixture: ruby-heap --json as
                            RUBY/heap/live, and no thread left stopped once gdb
                            has gone
    RUBY/heap/lldb          lldb on the core: ruby-heap --json the same census,
                            ruby-heap --retainers of the same paths and
                            ruby-heap --dump
    RUBY/heap/retainers     corestack heap --retainers ADDRESS --json on the core,
                            for every object the fixture keeps by a known path
                            (a global variable, a top-level constant through a
                            nested constant, a Struct member and a class's ivar,
                            a parked thread's locals, a suspended fiber's local,
                            a C function's local, on its machine stack or in a
                            register, the same in a suspended fiber on the
                            machine stack it left, a C global registered with
                            rb_gc_register_address, rb_gc_register_mark_object,
                            a finalizer, a Proc's captured local through its
                            environment, from 3.3 an Array's element the
                            Array held only by an Enumerator's data: a
                            declarative mark list's hop "data"):
                            exit 0, found, the root's kind, name and frame (a
                            thread's, or a fiber's), and every object on the
                            path with how the one before holds it (ivar name,
                            element or member index, a Hash value's key), as
                            the fixture recorded them with the objects'
                            addresses; --retainers CLASS --top 2: Ruby's count
                            of its instances and the two largest, with their
                            memsize_of and their paths; the text output naming
                            the root and each hop, and each root kind of the
                            VM's and of a fiber's machine stack; an address
                            that is no live
                            object: exit 2 and one line on stderr
    RUBY/heap/retainers-live  the same of the live fixture (--pid), for the
                            global's, the threads' and fiber's locals', the C
                            locals' and the VM's roots' paths, and no thread
                            left stopped
    RUBY/heap/dump          corestack heap --dump FILE --json on the core: exit 0,
                            a complete summary of as many objects as Ruby's
                            TOTAL - FREE; FILE's JSON lines: the ROOT lines
                            first ("vm" holding Object, "global_tbl" the
                            global's Holder, "machine_context" the C local),
                            then one line an object, each
                            address once, as many of each type as
                            count_objects says; for the objects on the
                            recorded paths their class and exactly the
                            references Ruby's own GC marks from them but their
                            class (rb_objspace_reachable_objects_from); the
                            same of the imemos Ruby's GC reaches within
                            four hops from the fixture's methods and blocks
                            (HeapSize.values_from) whose imemo_type corestack
                            decodes (ment, cref, svar, throw_data, ifunc,
                            memo, callcache, constcache, cvar_entry, fields),
                            at least one of ment, cref, ifunc and svar
                            compared (of constcache from 3.1, of fields, a
                            String's ivars, from 4.0), and from 3.3 of an
                            Enumerator and a Dir (declarative marking); the
                            frozen probe String's value, bytesize and frozen;
                            for the fixture's FieldFixture objects (Strings of
                            several encodings and coderanges, heap Floats,
                            classes with a superclass, a module, an object)
                            shape_id, encoding, coderange, broken, superclass,
                            a Float's value, the GC flags (4.0+: with the
                            object id of T_OBJECTs, of a String and an
                            Array, whose ids are in generic fields objects,
                            and of a Mutex and two Structs, which keep their
                            own fields objects)
                            and, for objects whose allocation trace_object_allocations
                            recorded (in a method, at top level) or did
                            not (made before it ran, or after it in a
                            freed traced object's slot), file, line,
                            method and generation exactly as
                            ObjectSpace.dump writes them where the Ruby has
                            objspace, else as Ruby answers (docs/heap.md); a
                            FILE that cannot be written: exit 2, one line
    RUBY/heap/dump-live     the same of the live fixture (--pid; the counts and
                            the samples), and no thread left stopped
    RUBY/heap/corrupt-type  one sample object's flags given a type no
                            enumerator has: exit 1, that slot counted in
                            skipped.bad_types, T_OBJECT one less, nothing else
                            changed; the text output exit 1 with a Partial:
                            line counting it; --dump exit 1, that slot counted
                            in skipped.bad_types and dumped in no line
    RUBY/heap/corrupt-class another's class pointer pointed at no object: exit
                            1, skipped.bad_classes 1, its class row one less
    RUBY/heap/corrupt-page  the third's heap page's start pointer pointed at
                            unmapped memory: exit 1, skipped.pages 1 and
                            skipped.slots that page's slots, TOTAL that many
                            less, the text naming the page
    RUBY/heap/corrupt-dump  a String's encoding index pointed past the encoding
                            table, and (where RClass has super) a class's
                            superclass pointed at no object: --dump exit 1,
                            each counted in skipped.unreadable, every object
                            still dumped, those lines without encoding and
                            superclass and the other fields as before
    RUBY/heap/corrupt-alloc the objspace extension's allocation table
                            (tmp_trace_arg's object_table) pointed at unmapped
                            memory: --dump exit 1, one skip in
                            skipped.unreadable, the error naming the table,
                            every line as before without file, line, method
                            and generation
    RUBY/heap/corrupt-roots the VM's mark objects (vm->mark_object_ary, or
                            the main ractor's registered_marks) pointed at
                            unmapped memory: --retainers of the object
                            rb_gc_register_mark_object kept: exit 1, not
                            found, the error naming the mark objects; of the
                            object a registered C global keeps: exit 1, its
                            path as recorded
    RUBY/heap/alloc-nodebug the core read with --sysroot where objspace.so is
                            a copy without debug info: --dump exit 0,
                            complete, its note naming objspace.so, every line
                            as before without file, line, method and
                            generation
    RUBY-gcdefault/heap/gc-nodebug  (a Ruby run with RUBY_GC_LIBRARY=default
                            only) the core read with --sysroot where the GC
                            library is a copy without debug info: exit 2, one
                            line on stderr naming the library, and no count
                            ("walked": false)

The fixture runs once per Ruby (a core of a few MB); the corrupt tests patch
that core in place and restore it.
"""

import json
import os
import struct
import time

from . import gdbext_gdb, gdbext_lldb, native, procs, variants
from .corrupt import CoreFile, layout_of, module_base
from .fibers import nodebug_sysroot

FIXTURE_DIR = os.path.join(procs.ROOT, "fixtures", "heap")
FIXTURE = os.path.join(FIXTURE_DIR, "heap.rb")
TESTS = ("core", "live", "gdb", "gdb-live", "lldb", "retainers", "retainers-live",
         "dump", "dump-live", "corrupt-type", "corrupt-class", "corrupt-page",
         "corrupt-dump", "corrupt-alloc", "corrupt-roots", "alloc-nodebug")
# The keys of an allocation trace_object_allocations recorded.
ALLOC_KEYS = ("file", "line", "method", "generation")
DEBUGGER_TESTS = ("gdb", "gdb-live", "lldb")
READY_TIMEOUT = 120
# Classes whose memsize_of is their slot plus what the census counts: the
# fixture's String, Array and Hash subclasses (their buffers and tables
# counted), Hash itself, Structs in and off their slots, Bignums (Integer:
# each_object(Integer) yields Bignums only), and objects whose ivars are
# embedded (none, or three). Not String and Array themselves: Ruby gives a few of its own Strings instance variables, whose
# table (generic ivars) memsize_of counts and the census does not.
EXACT_BYTES = {"HeapFixture::Plain", "Outer::Inner", "HeapFixture::Widget",
               "#<anonymous subclass of HeapFixture::Plain>", "HeapFixture::Str",
               "HeapFixture::Ary", "HeapFixture::Hsh", "Hash", "HeapFixture::Narrow",
               "HeapFixture::Wide", "Integer"}
BAD_TYPE = 0x17   # no enumerator of ruby_value_type has it (2.7 to 4.1)


def test_names(ruby):
    gc = variants.variant_of(ruby)
    nodebug = ("gc-nodebug",) if gc and gc.suffix == variants.GC_VARIANT else ()
    return ["%s/heap/%s" % (ruby, t) for t in TESTS + nodebug]


def names(ctx):
    return [n for r in ctx.rubies for n in test_names(r)]


def rubies(ctx):
    return {r for r in ctx.rubies if ctx.any_selected(test_names(r))}


def title(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().split(b"\0")[0].decode("utf-8", "replace")


def start_fixture(exe, ruby, workdir, timeout, args=()):
    """The fixture parked with its heap exact -> (Scenario, record)."""
    so = procs.build_extension(os.path.join(FIXTURE_DIR, "heapsize.c"),
                               os.path.join(workdir, "ext"), ruby_exe=exe)
    run = procs.Scenario(exe, FIXTURE, os.path.join(workdir, "run"), False,
                         variants.scenario_env(ruby), [so] + list(args))
    try:
        run.wait_oracle(timeout)
        deadline = time.monotonic() + timeout
        while True:
            said = title(run.pid)
            if said in ("heap exact", "heap moved"):
                break
            if run.poll() or time.monotonic() > deadline:
                raise procs.Failure("heap.rb never said its heap was exact (%s); stderr: %s" % (
                    run.describe_exit(), procs.tail(run.stderr_path)))
            time.sleep(0.02)
        if said != "heap moved" and not os.path.exists(run.oracle_path):
            raise procs.Failure("heap.rb wrote no record")
        if said == "heap moved":
            raise procs.Failure("heap.rb: the heap changed after its record was written")
        with open(run.oracle_path) as f:
            record = json.load(f)
    except BaseException:
        run.kill()
        raise
    return run, record


def census(corestack, argv, timeout):
    """-> (exit status, document or None, stdout, stderr, reason)."""
    rc, out, err, reason = procs.run_tool([corestack, "heap", "--json", "--top", "1000000"] + argv,
                                          timeout)
    if reason:
        return rc, None, out, err, reason
    san = procs.sanitizer_report(err)
    if san:
        return rc, None, out, err, san
    try:
        return rc, json.loads(out), out, err, None
    except ValueError as exc:
        return rc, None, out, err, "stdout is not JSON (%s): %s" % (exc, out[:200])


def compare(doc, record):
    """None when the census is Ruby's numbers, else the first difference."""
    want = record["count_objects"]
    got = doc.get("count_objects", {})
    if got != want:
        diff = sorted("%s: corestack %s, Ruby %s" % (k, got.get(k), want.get(k))
                      for k in set(got) | set(want) if got.get(k) != want.get(k))
        return "count_objects differ: %s" % "; ".join(diff)
    rows = {c["name"]: c for c in doc.get("classes", [])}
    for want_row in record["classes"]:
        name = want_row["name"]
        row = rows.get(name)
        if row is None:
            return "no class row %r (rows: %s)" % (name, sorted(rows)[:20])
        if row["count"] != want_row["count"]:
            return "%s: count %d, Ruby counts %d" % (name, row["count"], want_row["count"])
        if name in EXACT_BYTES and row["bytes"] != want_row["memsize"]:
            return "%s: bytes %d, the memsize_of sum %d" % (name, row["bytes"],
                                                           want_row["memsize"])
    for kind in ("strings_by_length", "arrays_by_length"):
        got = {str(b["bits"]): b["count"] for b in doc.get(kind) or []}
        if got != record[kind]:
            diff = sorted("%s bits: corestack %s, Ruby %s" % (k, got.get(k), record[kind].get(k))
                          for k in set(got) | set(record[kind])
                          if got.get(k) != record[kind].get(k))
            return "%s differ: %s" % (kind, "; ".join(diff))
    for kind in ("pages", "slots", "bad_types", "bad_classes"):
        if doc["skipped"][kind]:
            return "skipped.%s is %d on an intact heap" % (kind, doc["skipped"][kind])
    return None


def check_census(res, record, live=False):
    rc, doc, out, err, reason = res
    if reason:
        return reason
    if rc != 0:
        return "exit %d (want 0): %s" % (rc, err.strip()[:300])
    if doc.get("kind") != "heap_census" or doc.get("source") != ("live" if live else "core"):
        return "not a heap census of a %s: %s" % ("live process" if live else "core", out[:200])
    return compare(doc, record)


def check_text(corestack, argv, record, timeout):
    rc, out, err, reason = procs.run_tool([corestack, "heap", "--top", "1000000"] + argv, timeout)
    if reason:
        return reason
    if rc != 0:
        return "text: exit %d: %s" % (rc, err.strip()[:300])
    return check_text_rows(out, record)


def check_text_rows(out, record):
    """Each class the fixture recorded has its row, with Ruby's count."""
    for row in record["classes"]:
        line = next((l for l in out.splitlines()
                     if l.strip().startswith(row["name"] + " ")), None)
        if line is None or int(line.split()[-2]) != row["count"]:
            return "text: no row %r with count %d: %r" % (row["name"], row["count"], line)
    return None


def debugger_census(path, record, live=False):
    """The census a debugger's ruby-heap --json --out wrote at path."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        return "no census written: %s" % exc
    if doc.get("kind") != "heap_census" or doc.get("source") != ("live" if live else "core"):
        return "not a heap census of a %s: %s" % ("live process" if live else "core",
                                                  json.dumps(doc)[:200])
    if not doc.get("complete"):
        return "the census says it is partial on an intact heap"
    return compare(doc, record)


def gdb_heap(ctx, target_args, base, tag, record, live):
    """gdb: ruby-heap --json, read directly (and through gdb on a core),
    and on a core its text."""
    paths = retainer_samples(record)
    outs = [os.path.join(base, "%s-%d.out" % (tag, i)) for i in range(4 + len(paths))]
    commands = ["ruby-heap --json --top 1000000 --out " + outs[0]]
    if not live:
        commands += ["ruby-heap --json --top 1000000 --via-debugger --out " + outs[1],
                     "ruby-heap --top 1000000 --out " + outs[2],
                     "ruby-heap --json --dump %s.dump --out %s" % (outs[3], outs[3])]
        # every other path read through gdb
        commands += ["ruby-heap --json %s--retainers %s --out %s" % (
            "--via-debugger " if i % 2 else "", p["path"][-1]["object"], o)
            for i, (p, o) in enumerate(zip(paths, outs[4:]))]
    rc, stdout, stderr, _, reason = gdbext_gdb.run_gdb(ctx.args.gdbext, target_args, commands,
                                                       base, tag)
    if reason:
        return reason
    if "ruby-heap:" in stderr:
        return "gdb: %s" % compare_show(stderr)
    reason = debugger_census(outs[0], record, live)
    if not reason and not live:
        reason = debugger_census(outs[1], record) and "--via-debugger: %s" % \
            debugger_census(outs[1], record)
        if not reason:
            try:
                with open(outs[2]) as f:
                    reason = check_text_rows(f.read(), record)
            except OSError as exc:
                reason = "no text written: %s" % exc
        for out, want in zip(outs[4:], paths):
            reason = reason or debugger_retainers(out, want)
        reason = reason or debugger_dump(outs[3], record)
    return reason


def debugger_dump(summary, record):
    """What a debugger's ruby-heap --dump wrote: its summary at summary,
    the dump beside it."""
    try:
        with open(summary) as f:
            doc = json.load(f)
        with open(summary + ".dump") as f:
            lines = [json.loads(l) for l in f]
    except (OSError, ValueError) as exc:
        return "ruby-heap --dump: %s" % exc
    counts = record["count_objects"]
    if doc.get("kind") != "heap_dump" or not doc.get("complete") or \
            doc.get("objects") != counts["TOTAL"] - counts["FREE"]:
        return "ruby-heap --dump: summary %s" % json.dumps(doc)[:300]
    reason = check_dump_lines(lines, record)
    return reason and "ruby-heap --dump: %s" % reason


def retainer_samples(record):
    """The paths the debuggers are asked about: a global's, a fiber's
    local's, and one from each root kind of the VM's and a suspended
    fiber's machine stack."""
    return [record["retention"][0],
            next(p for p in record["retention"] if "block in" in p["root"].get("frame", ""))] + \
        [next(p for p in record["retention"] if p["root"]["kind"] == k) for k in VM_ROOTS]


def debugger_retainers(path, want):
    """The --retainers document a debugger's ruby-heap wrote at path."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        return "no retainers written: %s" % exc
    targets = doc.get("targets") or []
    if doc.get("kind") != "heap_retainers" or not doc.get("complete") or len(targets) != 1:
        return "ruby-heap --retainers: kind %r, complete %r, %d targets" % (
            doc.get("kind"), doc.get("complete"), len(targets))
    reason = check_path(targets[0], want)
    return reason and "ruby-heap --retainers %s: %s" % (want["path"][-1]["object"], reason)


def compare_show(text):
    return " | ".join(l for l in text.strip().splitlines() if "ruby-heap" in l)[:300]


def lldb_heap(ctx, target_args, base, record):
    """lldb: ruby-heap --json on the core."""
    out = os.path.join(base, "lldb-heap.census")
    paths = retainer_samples(record)
    outs = [os.path.join(base, "lldb-heap-%d.retainers" % i) for i in range(len(paths))]
    dump = os.path.join(base, "lldb-heap.summary")
    results, output, reason = gdbext_lldb.run_lldb_commands(
        ctx.args, target_args, ["ruby-heap --json --top 1000000 --out " + out] +
        ["ruby-heap --json --retainers %s --out %s" % (p["path"][-1]["object"], o)
         for p, o in zip(paths, outs)] +
        ["ruby-heap --json --dump %s.dump --out %s" % (dump, dump)], base, "lldb-heap")
    if reason:
        return reason
    if len(results) != 2 + len(paths) or not all(r["ok"] for r in results):
        bad = next((r for r in results if not r["ok"]), None)
        return "ruby-heap failed: %s" % (bad["error"] if bad else output[-300:])
    return debugger_census(out, record) or next(
        (r for r in (debugger_retainers(o, p) for o, p in zip(outs, paths)) if r), None) or \
        debugger_dump(dump, record)


def retainers(corestack, argv, timeout):
    """corestack heap --retainers ... --json -> (exit, document, stderr, reason)."""
    rc, out, err, reason = procs.run_tool([corestack, "heap", "--json", "--retainers"] + argv,
                                          timeout)
    reason = reason or procs.sanitizer_report(err)
    if reason:
        return rc, None, err, reason
    try:
        return rc, json.loads(out), err, None
    except ValueError as exc:
        return rc, None, err, "stdout is not JSON (%s): %s" % (exc, out[:200])


# Where a local may be found on the machine stack instead: ZJIT keeps a
# compiled method's locals in its native frame, not in the VM stack, until
# it leaves the JIT code (the GC finds them there, conservatively).
CONSERVATIVE = ("machine_stack", "register")
# The root kinds of what the VM keeps for C code and of a suspended
# fiber's machine stack (RetainRoots.vm_tables, HeapSize.hold in a fiber)
VM_ROOTS = ("registered_address", "mark_object", "finalizer", "fiber_machine_stack")


def check_path(target, want, jit_locals=False):
    """None when the target's root and path are the recorded ones
    (jit_locals: a local's may be a machine stack's or a register's)."""
    if not target.get("found"):
        return "no path found"
    root, want_root = target.get("root") or {}, want["root"]
    want_path = want["path"]
    if jit_locals and want_root["kind"] == "local" and root.get("kind") in CONSERVATIVE:
        # the native frame may hold any object of the path: the rest of
        # the path from there must be the recorded one
        want_root = {"kind": "machine_stack"}
        n = len(target.get("path") or [])
        if 0 < n <= len(want_path):
            want_path = [dict(want_path[-n], via=None)] + want_path[len(want_path) - n + 1:]
    for k, v in want_root.items():
        if want_root["kind"] == "machine_stack" and k == "name":
            continue   # a register's name, or none for a stack word
        if k == "kind" and v == "machine_stack" and root.get(k) in ("machine_stack", "register"):
            continue   # the C local was on the stack or in a register
        if root.get(k) != v:
            return "root %s is %r, want %r (root %s)" % (k, root.get(k), v, root)
    if want_root["kind"] == "machine_stack" and (not root.get("thread") or root.get("fiber")):
        return "a machine stack root without its thread: %s" % root
    if want_root["kind"] == "fiber_machine_stack" and (not root.get("thread") or
                                                       not root.get("fiber")):
        return "a fiber's machine stack root without its thread and fiber: %s" % root
    if want_root["kind"] == "local":
        if not root.get("thread"):
            return "a local's root names no thread: %s" % root
        if (root.get("fiber") is None) != ("block in" not in want_root["frame"]):
            return "the root's fiber is %r: %s" % (root.get("fiber"), root)
    path = target.get("path") or []
    hops = ["%s %s" % (h.get("object"), h.get("via")) for h in path]
    if len(path) != len(want_path):
        return "%d objects on the path, want %d: %s" % (len(path), len(want_path), hops)
    for i, (got, exp) in enumerate(zip(path, want_path)):
        if exp["object"] is None:   # an object Ruby cannot name (an env)
            if not got.get("object"):
                return "object %d of the path has no address: %s" % (i, hops)
        elif int(got.get("object") or "0", 16) != int(exp["object"], 16):
            return "object %d of the path is %s, want %s: %s" % (i, got.get("object"),
                                                                exp["object"], hops)
        via, exp_via = got.get("via"), exp["via"]
        if exp_via is None:
            if via is not None:
                return "the path's first object is held by %r, not the root" % via
            continue
        for k, v in exp_via.items():
            if (via or {}).get(k) != v:
                return "hop %d: via %s, want %s" % (i, via, exp_via)
    return None


def check_retainers(corestack, target_args, record, timeout, which=None, jit_locals=False):
    """Each recorded path (those of which, if given) from --retainers."""
    for want in record["retention"]:
        if which and want["root"]["kind"] not in which:
            continue
        addr = want["path"][-1]["object"]
        rc, doc, err, reason = retainers(corestack, [addr] + target_args, timeout)
        if reason:
            return "%s: %s" % (addr, reason)
        if rc != 0 or doc.get("kind") != "heap_retainers" or not doc.get("complete"):
            return "%s: exit %d, kind %r, complete %r: %s" % (
                addr, rc, doc.get("kind"), doc.get("complete"), err.strip()[:200])
        targets = doc.get("targets") or []
        if len(targets) != 1 or int(targets[0]["object"], 16) != int(addr, 16):
            return "%s: targets %s" % (addr, [t.get("object") for t in targets])
        reason = check_path(targets[0], want, jit_locals)
        if reason:
            return "%s (%s %s): %s" % (addr, want["root"]["kind"], want["root"]["name"], reason)
    return None


def check_retained_class(corestack, target_args, record, timeout):
    want = record["retained_class"]
    rc, doc, err, reason = retainers(corestack, [want["class"], "--top", "2"] + target_args,
                                     timeout)
    if reason:
        return "%s: %s" % (want["class"], reason)
    if rc != 0:
        return "%s: exit %d: %s" % (want["class"], rc, err.strip()[:200])
    if doc.get("instances") != want["instances"]:
        return "%s: %r instances, Ruby has %d" % (want["class"], doc.get("instances"),
                                                  want["instances"])
    targets = doc.get("targets") or []
    if len(targets) != len(want["largest"]):
        return "%s: %d targets, want the %d largest" % (want["class"], len(targets),
                                                        len(want["largest"]))
    for got, exp in zip(targets, want["largest"]):
        if got.get("bytes") != exp["bytes"]:
            return "%s %s: %r bytes, memsize_of says %d" % (want["class"], got.get("object"),
                                                            got.get("bytes"), exp["bytes"])
        reason = check_path(got, exp)
        if reason:
            return "%s %s: %s" % (want["class"], got.get("object"), reason)
    return None


def check_retainers_text(corestack, target_args, record, timeout):
    """The text of the first path: the root named, then one line a hop."""
    want = record["retention"][0]
    addr = want["path"][-1]["object"]
    rc, out, err, reason = procs.run_tool(
        [corestack, "heap", "--retainers", addr] + target_args, timeout)
    if reason or rc != 0:
        return "text: %s" % (reason or "exit %d: %s" % (rc, err.strip()[:200]))
    lines = out.splitlines()
    head = "is kept alive by global variable %s:" % want["root"]["name"]
    if not lines or head not in lines[0]:
        return "text: first line %r lacks %r" % (lines[:1], head)
    hops = [l for l in lines[1:] if l.startswith("  ")]
    if len(hops) != len(want["path"]) or "@items ->" not in hops[1] or \
            'value of key "k" ->' not in hops[-1]:
        return "text: hops %r" % hops
    for line, exp in zip(hops, want["path"]):
        if "0x%x" % int(exp["object"], 16) not in line:
            return "text: %r does not end at %s" % (line, exp["object"])
    for kind, head in TEXT_ROOTS.items():
        want = next(p for p in record["retention"] if p["root"]["kind"] == kind)
        addr = want["path"][-1]["object"]
        rc, out, err, reason = procs.run_tool(
            [corestack, "heap", "--retainers", addr] + target_args, timeout)
        if reason or rc != 0:
            return "text of %s: %s" % (kind, reason or "exit %d: %s" % (rc, err.strip()[:200]))
        head = head % want["root"]
        if head not in out.splitlines()[0]:
            return "text of %s: first line %r lacks %r" % (kind, out.splitlines()[:1], head)
    return None


# How the text names the roots of the VM's and a fiber's machine stack
TEXT_ROOTS = {
    "registered_address": "kept alive by the C global at %(name)s (rb_gc_register_address):",
    "mark_object": "kept alive by the VM's mark objects (rb_gc_register_mark_object):",
    "finalizer": "kept alive by the finalizers of %(name)s:",
    "fiber_machine_stack": "kept alive by the saved machine stack (conservatively) of thread ",
}


def check_not_object(corestack, target_args, timeout):
    """An address inside no object: exit 2, one line naming it."""
    rc, out, err, reason = procs.run_tool(
        [corestack, "heap", "--retainers", "0x10"] + target_args, timeout)
    lines = err.strip().splitlines()
    if reason or rc != 2 or len(lines) != 1 or "0x10" not in lines[0]:
        return "--retainers 0x10: exit %d, stderr %r (want 2 and one line naming it)" % (
            rc, err.strip()[:300])
    return None


def check_dump(corestack, target_args, record, path, timeout, live=False):
    """corestack heap --dump path --json, the summary and the lines."""
    rc, out, err, reason = procs.run_tool(
        [corestack, "heap", "--json", "--dump", path] + target_args, timeout)
    reason = reason or procs.sanitizer_report(err)
    if reason:
        return reason
    try:
        summary = json.loads(out)
    except ValueError as exc:
        return "stdout is not JSON (%s): %s" % (exc, out[:200])
    counts = record["count_objects"]
    want = counts["TOTAL"] - counts["FREE"]
    if rc != 0 or summary.get("kind") != "heap_dump" or not summary.get("complete"):
        return "exit %d, kind %r, complete %r: %s" % (rc, summary.get("kind"),
                                                     summary.get("complete"), err.strip()[:200])
    if summary.get("objects") != want or summary.get("source") != ("live" if live else "core"):
        return "summary: %r objects of a %r, Ruby has %d live" % (
            summary.get("objects"), summary.get("source"), want)
    try:
        with open(path) as f:
            lines = [json.loads(l) for l in f]
    except (OSError, ValueError) as exc:
        return "the dump is not JSON lines: %s" % exc
    finally:
        if os.path.exists(path):
            os.unlink(path)
    return check_dump_lines(lines, record)


def check_dump_unwritable(corestack, target_args, timeout):
    """A dump FILE that cannot be written: exit 2, one line naming it."""
    path = "/nonexistent-corestack-dir/heap.dump"
    rc, out, err, reason = procs.run_tool([corestack, "heap", "--dump", path] + target_args,
                                          timeout)
    lines = err.strip().splitlines()
    if reason or rc != 2 or len(lines) != 1 or path not in lines[0]:
        return "--dump %s: exit %d, stderr %r (want 2 and one line naming it)" % (
            path, rc, err.strip()[:300])
    return None


# The imemo types whose references corestack decodes (docs/heap.md), and
# those the fixture reaches on every Ruby (from its methods and blocks).
DECODED_IMEMOS = {"ment", "cref", "svar", "throw_data", "ifunc", "memo",
                  "callcache", "constcache", "cvar_entry", "fields"}
REQUIRED_IMEMOS = {"ment", "cref", "ifunc", "svar"}


def check_dump_lines(lines, record):
    roots = {}
    objects = {}
    types = {}
    for i, line in enumerate(lines):
        if line.get("type") == "ROOT":
            if objects:
                return "a ROOT line after the objects: %s" % json.dumps(line)[:200]
            roots[line["root"]] = {int(a, 16) for a in line.get("references", [])}
            continue
        addr = int(line["address"], 16)
        if addr in objects:
            return "0x%x dumped twice" % addr
        objects[addr] = line
        types["T_" + line["type"]] = types.get("T_" + line["type"], 0) + 1
    want = {k: v for k, v in record["count_objects"].items() if k not in ("TOTAL", "FREE")}
    if types != want:
        diff = sorted("%s: dump %s, Ruby %s" % (k, types.get(k), want.get(k))
                      for k in set(types) | set(want) if types.get(k) != want.get(k))
        return "objects by type differ: %s" % "; ".join(diff)
    if int(record["object_class"], 16) not in roots.get("vm", ()):
        return "the vm ROOT line lacks Object (%s): %s" % (record["object_class"],
                                                           sorted(roots))
    holder = int(record["retention"][0]["path"][0]["object"], 16)
    if holder not in roots.get("global_tbl", ()):
        return "the global_tbl ROOT line lacks $corestack_retained's 0x%x" % holder
    for want in record["retention"]:
        if want["root"]["kind"] != "machine_stack":
            continue
        held = int(want["path"][0]["object"], 16)
        if held not in roots.get("machine_context", ()):
            return "the machine_context ROOT line lacks the C local's 0x%x" % held
    compared = set()
    for sample in record["dump_samples"]:
        line = objects.get(int(sample["object"], 16))
        if line is None:
            return "no line for %s" % sample["object"]
        if sample.get("internal"):
            # an internal object the fixture reached: compared when it is
            # an imemo of a type whose references corestack decodes
            kind = line.get("imemo_type")
            if line["type"] != "IMEMO" or kind not in DECODED_IMEMOS:
                continue
            compared.add(kind)
            got = sorted({int(a, 16) for a in line.get("references", [])})
            exp = sorted(int(a, 16) for a in sample["references"])
            if got != exp:
                return "%s (imemo %s): references %s, Ruby's GC marks %s" % (
                    sample["object"], kind, [hex(a) for a in got], [hex(a) for a in exp])
            continue
        if "value" in sample:
            if line.get("value") != sample["value"] or \
                    line.get("bytesize") != len(sample["value"]) or not line.get("frozen"):
                return "the probe String's line: %s" % json.dumps(line)
            continue
        if int(line.get("class", "0"), 16) != int(sample["class"], 16):
            return "%s: class %s, want %s" % (sample["object"], line.get("class"),
                                             sample["class"])
        got = sorted({int(a, 16) for a in line.get("references", [])})
        exp = sorted(int(a, 16) for a in sample["references"])
        if got != exp:
            return "%s (%s): references %s, Ruby's GC marks %s" % (
                sample["object"], line["type"], [hex(a) for a in got], [hex(a) for a in exp])
    required = set(REQUIRED_IMEMOS)
    version = tuple(int(p) for p in record["ruby_version"].split(".")[:2])
    if version >= (3, 1):
        required.add("constcache")  # an imemo from 3.1
    if version >= (4, 0):
        required.add("fields")  # a String's ivars, in a fields object
    missing = sorted(required - compared)
    if missing:
        return "no sample imemo of type %s compared (compared: %s)" % (
            ", ".join(missing), ", ".join(sorted(compared)))
    return check_dump_fields(objects, record)


def check_dump_fields(objects, record):
    """The fields of the fixture's FieldFixture samples as Ruby gave them
    (ObjectSpace.dump's, or Ruby's own answers): each key present with
    the same value, or absent where Ruby's is null. Where the Ruby has
    objspace, the samples include objects whose allocation
    ObjectSpace.trace_object_allocations recorded, for which Ruby's dump
    must have written the allocation's keys (else the fixture traced
    nothing, and the keys' check proves nothing)."""
    samples = record["field_samples"]
    traced = sum(1 for s in samples if s["expect"].get("generation") is not None)
    if traced != record.get("traced", 0) or \
            (record.get("traced") and record.get("reused") != 1):
        return "the fixture's record: %d samples with an allocation recorded, %r traced, " \
            "%r reused" % (traced, record.get("traced"), record.get("reused"))
    # where Ruby's flags come from rb_gc_object_metadata (an age), the
    # fixture's T_OBJECTs given an object id have it among them, and so
    # do its String and Array, whose id is in a generic fields object
    flags = [s["expect"].get("flags") or {} for s in samples]
    if any("age" in f for f in flags) and \
            (sum(1 for f in flags if "object_id" in f) < 5 or
             sum(1 for s in samples if "object_id" in (s["expect"].get("flags") or {})
                 and s.get("type") in ("STRING", "ARRAY")) < 2):
        return "the fixture's record: fewer than 5 samples with an object id, or " \
            "not a String and an Array among them"
    # where Ruby's dump was recorded (the key present, null or not), a
    # sample has each of these keys written; singleton where Ruby writes
    # a superclass (both from 3.1)
    recorded = any("fstring" in s["expect"] for s in samples)
    superclass = any(s["expect"].get("superclass") for s in samples)
    # where Ruby's dump is recorded and has shapes, one T_OBJECT's shape
    # is too complex
    shapes = recorded and any(s["expect"].get("shape_id") is not None for s in samples)
    if shapes and not any(s["expect"].get("too_complex_shape") or
                          s["expect"].get("complex_shape") for s in samples):
        return "the fixture's record: no T_OBJECT of too complex a shape"
    for key, when, what in (("imemo_type", recorded, "imemo"),
                            ("fstring", recorded, "interned String"),
                            ("default", recorded, "Hash with a default Proc"),
                            ("singleton", superclass, "singleton class")):
        if when and not any(s["expect"].get(key) for s in samples):
            return "the fixture's record: no %s among its samples (%s)" % (what, key)
    for sample in samples:
        line = objects.get(int(sample["object"], 16))
        if line is None:
            return "no line for %s" % sample["object"]
        for key, want in sorted(sample["expect"].items()):
            got = line.get(key)
            if key in ("superclass", "default") and got is not None and want is not None:
                same = int(got, 16) == int(want, 16)
            else:
                same = got == want
            if not same:
                return "%s (%s): %s %s, Ruby's %s" % (
                    sample["object"], line["type"], key, json.dumps(got), json.dumps(want))
    return None


def check_dump_skip(corestack, core, exe, record, timeout):
    """--dump of a core with one slot of no known type: exit 1, that slot
    counted in skipped.bad_types and in no line."""
    path = core + ".dump"
    rc, out, err, reason = procs.run_tool(
        [corestack, "heap", "--json", "--dump", path, core, exe], timeout)
    if os.path.exists(path):
        os.unlink(path)
    if reason:
        return "--dump: %s" % reason
    try:
        doc = json.loads(out)
    except ValueError:
        return "--dump: stdout is not JSON: %s" % out[:200]
    counts = record["count_objects"]
    if rc != 1 or doc.get("complete") is not False or \
            doc.get("skipped", {}).get("bad_types") != 1 or \
            doc.get("objects") != counts["TOTAL"] - counts["FREE"] - 1:
        return "--dump: exit %d, %s (want 1, the slot skipped and counted)" % (
            rc, json.dumps(doc)[:300])
    return None


def check_partial_text(corestack, core, exe, timeout):
    """The text output of a damaged core: exit 1 and its Partial: line."""
    rc, out, err, reason = procs.run_tool([corestack, "heap", core, exe], timeout)
    if reason:
        return reason
    line = next((l for l in out.splitlines() if l.startswith("Partial:")), None)
    if rc != 1 or not line or "1 slots of no known type" not in line:
        return "text: exit %d, Partial line %r (want exit 1 and the slot counted)" % (rc, line)
    return None


def patched(corestack, core, exe, cf, timeout):
    try:
        return census(corestack, [core, exe], timeout)
    finally:
        cf.restore()


def check_skip(res, baseline, kind, expect_counts, text_needle=None):
    """exit 1, skipped.kind as expected, count_objects as expect_counts."""
    rc, doc, out, err, reason = res
    if reason:
        return reason
    if rc != 1:
        return "exit %d (want 1, partial): %s" % (rc, err.strip()[:200])
    if doc.get("complete") is not False or not doc.get("error"):
        return "complete %r, error %r: the skip not reported" % (doc.get("complete"),
                                                                 doc.get("error"))
    for k, v in kind.items():
        if doc["skipped"][k] != v:
            return "skipped.%s is %d, want %d" % (k, doc["skipped"][k], v)
    if doc["count_objects"] != expect_counts:
        return "count_objects %s, want %s" % (doc["count_objects"], expect_counts)
    if text_needle and text_needle not in doc["error"]:
        return "error %r does not name %s" % (doc["error"], text_needle)
    return None


def corrupt_tests(ctx, ruby, cap_core, exe, record, baseline):
    rep, corestack, timeout = ctx.rep, ctx.corestack, ctx.timeout
    name = "%s/heap/" % ruby
    samples = [int(a, 16) for a in record["samples"]]
    want = dict(record["count_objects"])
    todo = [t for t in ("corrupt-type", "corrupt-class", "corrupt-page", "corrupt-dump",
                        "corrupt-alloc", "corrupt-roots")
            if ctx.selected(name + t)]
    if not todo:
        return
    try:
        layout = layout_of(corestack, baseline_module(corestack, cap_core, exe, timeout), timeout)
        flags_off = layout["basic_flags"][0]
        klass_off = layout["basic_klass"][0]
    except (RuntimeError, KeyError, OSError) as exc:
        for t in todo:
            rep.result(name + t, "setup: %s" % exc)
        return
    cf = CoreFile(cap_core)
    if "corrupt-type" in todo:
        flags = cf.u64(samples[0] + flags_off)
        cf.write(samples[0] + flags_off, struct.pack("<Q", (flags & ~0x1f) | BAD_TYPE))
        expect = dict(want, T_OBJECT=want["T_OBJECT"] - 1)
        try:
            reason = check_skip(census(corestack, [cap_core, exe], timeout), baseline,
                                {"bad_types": 1}, expect) or check_partial_text(
                                    corestack, cap_core, exe, timeout) or check_dump_skip(
                                        corestack, cap_core, exe, record, timeout)
        finally:
            cf.restore()
        rep.result(name + "corrupt-type", reason)
    if "corrupt-class" in todo:
        cf.write(samples[1] + klass_off, struct.pack("<Q", 0x10))
        rep.result(name + "corrupt-class", check_skip(
            patched(corestack, cap_core, exe, cf, timeout), baseline, {"bad_classes": 1}, want,
            "0x10"))
    if "corrupt-page" in todo:
        try:
            mask = layout["heap_page_align_mask"][0]
            page = cf.u64((samples[2] & ~mask) + layout["page_body_page"][0])
            total = cf.uint(page + layout["page_total_slots"][0],
                            layout["page_total_slots"][1] or 8)
            cf.write(page + layout["page_start"][0], struct.pack("<Q", 0x10))
        except (KeyError, LookupError) as exc:
            rep.result(name + "corrupt-page", "setup: %s" % exc)
            return
        rep.result(name + "corrupt-page", check_page(
            patched(corestack, cap_core, exe, cf, timeout), baseline, want, total))
    if "corrupt-dump" in todo:
        rep.result(name + "corrupt-dump", corrupt_dump(ctx, cap_core, exe, record, layout, cf))
    if "corrupt-alloc" in todo:
        rep.result(name + "corrupt-alloc", corrupt_alloc(ctx, cap_core, exe, record, cf))
    if "corrupt-roots" in todo:
        rep.result(name + "corrupt-roots", corrupt_roots(ctx, cap_core, exe, record, layout, cf))


def corrupt_roots(ctx, core, exe, record, layout, cf):
    """The VM's mark objects pointed at unmapped memory: the object only
    they keep has no path, the run partial and saying why; another root
    kind's path is still found."""
    lost = next(p for p in record["retention"] if p["root"]["kind"] == "mark_object")
    kept = next(p for p in record["retention"] if p["root"]["kind"] == "registered_address")
    try:
        module = baseline_module(ctx.corestack, core, exe, ctx.timeout)
        vm = cf.u64(module_base(core, module) + layout["vm_ptr"][0])
        if "vm_mark_object_ary" in layout:
            at = vm + layout["vm_mark_object_ary"][0]
        else:
            at = cf.u64(vm + layout["vm_main_ractor"][0]) + layout["ractor_registered_marks"][0]
        cf.write(at, struct.pack("<Q", 0x10))
    except (RuntimeError, KeyError, LookupError, OSError) as exc:
        cf.restore()
        return "setup: %s" % exc
    try:
        results = [retainers(ctx.corestack, [p["path"][-1]["object"], core, exe], ctx.timeout)
                   for p in (lost, kept)]
    finally:
        cf.restore()
    for (rc, doc, err, reason), want in zip(results, (lost, kept)):
        addr = want["path"][-1]["object"]
        if reason:
            return "%s: %s" % (addr, reason)
        targets = doc.get("targets") or []
        if rc != 1 or doc.get("complete") is not False or len(targets) != 1 or \
                "mark objects not read" not in (doc.get("error") or ""):
            return "%s: exit %d, complete %r, error %r (want 1, partial, naming the " \
                "mark objects)" % (addr, rc, doc.get("complete"), doc.get("error"))
        if want is lost and targets[0].get("found"):
            return "%s: found from %s, with its only root unread" % (addr, targets[0].get("root"))
        if want is kept:
            reason = check_path(targets[0], want)
            if reason:
                return "%s: %s" % (addr, reason)
    return None


def intact_traced(ctx, core, exe, record):
    """The intact core's dump and the objspace.so it maps -> ({address:
    line}, path), or a reason: exit 0, and the traced samples' lines with
    their allocation's keys (else a dump without them proves nothing)."""
    res = dump_lines(ctx.corestack, core, exe, ctx.timeout)
    if isinstance(res, str):
        return "the intact core: " + res
    rc, _, intact = res
    traced = [int(s["object"], 16) for s in record["field_samples"]
              if s["expect"].get("generation") is not None]
    if rc != 0 or not traced or \
            any("generation" not in intact.get(a, {}) for a in traced):
        return "the intact core: exit %d, %d traced samples, not all with a generation" % (
            rc, len(traced))
    path = next((p for p in sorted(set(native.nt_file_paths(core)))
                 if os.path.basename(p) == "objspace.so"), None)
    return (intact, path) if path else "the core maps no objspace.so"


def check_without_alloc(res, intact, rc_want, skipped, needle):
    """A dump of the core whose allocation table was not read: exit
    rc_want, skipped.unreadable skipped, needle in its error (exit 1) or
    note (exit 0), and every line of the intact dump without the
    allocation's keys."""
    if isinstance(res, str):
        return res
    rc, doc, lines = res
    said = doc.get("error") if rc_want else doc.get("note")
    if rc != rc_want or doc.get("complete") is not (rc_want == 0) or \
            doc["skipped"]["unreadable"] != skipped or needle not in (said or ""):
        return "--dump: exit %d, %s (want %d, %d unreadable, %r said)" % (
            rc, json.dumps(doc)[:400], rc_want, skipped, needle)
    if set(lines) != set(intact):
        return "--dump: %d objects, the intact core's %d" % (len(lines), len(intact))
    for addr, line in intact.items():
        want = {k: v for k, v in line.items() if k not in ALLOC_KEYS}
        if lines[addr] != want:
            return "0x%x: %s, want %s" % (addr, json.dumps(lines[addr])[:300],
                                         json.dumps(want)[:300])
    return None


def corrupt_alloc(ctx, core, exe, record, cf):
    """tmp_trace_arg's object_table pointed at unmapped memory."""
    setup = intact_traced(ctx, core, exe, record)
    if isinstance(setup, str):
        return setup
    intact, path = setup
    try:
        ext = layout_of(ctx.corestack, path, ctx.timeout)
        # a shared object's link-time addresses start at 0: its load
        # bias is where the core maps its start
        arg = cf.u64(module_base(core, path) + ext["trace_arg"][0])
        cf.write(arg + ext["trace_object_table"][0], struct.pack("<Q", 0x10))
    except (RuntimeError, KeyError, LookupError, OSError) as exc:
        cf.restore()
        return "setup: %s" % exc
    try:
        res = dump_lines(ctx.corestack, core, exe, ctx.timeout)
    finally:
        cf.restore()
    return check_without_alloc(res, intact, 1, 1, "trace_object_allocations")


def check_alloc_nodebug(ctx, core, exe, record, root):
    """objspace.so without its debug info (--sysroot)."""
    setup = intact_traced(ctx, core, exe, record)
    if isinstance(setup, str):
        return setup
    intact, path = setup
    why = nodebug_sysroot(root, path)
    if why:
        return "setup: %s" % why
    res = dump_lines(ctx.corestack, core, exe, ctx.timeout,
                     ["--no-cache", "--sysroot", root])
    return check_without_alloc(res, intact, 0, 0, "objspace.so")


def corrupt_dump(ctx, core, exe, record, layout, cf):
    """A String's encoding index past the table, a class's superclass no
    object (where RClass has super): each a counted skip, its key left out."""
    res = dump_lines(ctx.corestack, core, exe, ctx.timeout)
    if isinstance(res, str):
        return "the intact core: " + res
    rc, _, intact = res
    # the first UTF-8 String and the first class with a superclass
    string = klass = None
    for sample in record["field_samples"]:
        addr = int(sample["object"], 16)
        line = intact.get(addr, {})
        if string is None and line.get("encoding") == "UTF-8":
            string = addr
        if klass is None and line.get("type") == "CLASS" and "superclass" in line:
            klass = addr
    if rc != 0 or string is None:
        return "the intact core: exit %d, no UTF-8 field sample" % rc
    try:
        flags_off = layout["basic_flags"][0]
        mask, shift = layout["encoding_mask"][0], layout["encoding_shift"][0]
        index = layout["encoding_inline_max"][0] - 1  # past any loaded
        flags = cf.u64(string + flags_off)
        cf.write(string + flags_off, struct.pack("<Q", (flags & ~mask) | (index << shift)))
        damaged = {string: "encoding"}
        if klass is not None and "rclass_super" in layout:
            cf.write(klass + layout["rclass_super"][0], struct.pack("<Q", 0x13))
            damaged[klass] = "superclass"
    except (KeyError, LookupError) as exc:
        cf.restore()
        return "setup: %s" % exc
    return check_dump_damage(ctx.corestack, core, exe, cf, ctx.timeout, intact, damaged)


def dump_lines(corestack, core, exe, timeout, options=()):
    """--dump of core -> (exit status, summary, {address: line}), or a
    reason."""
    path = core + ".fields.dump"
    try:
        rc, out, err, reason = procs.run_tool(
            [corestack, "heap", "--json", "--dump", path] + list(options) + [core, exe],
            timeout)
        if reason:
            return reason
        with open(path) as f:
            lines = [json.loads(l) for l in f]
        return rc, json.loads(out), {int(l["address"], 16): l for l in lines
                                     if "address" in l}
    except (OSError, ValueError) as exc:
        return "--dump: %s" % exc
    finally:
        if os.path.exists(path):
            os.unlink(path)


def check_dump_damage(corestack, core, exe, cf, timeout, intact, damaged):
    """The dump of the core with damaged (address -> key) patched in cf:
    exit 1, each counted in skipped.unreadable, its key left out, every
    object of the intact dump still there with its other keys."""
    try:
        res = dump_lines(corestack, core, exe, timeout)
    finally:
        cf.restore()
    if isinstance(res, str):
        return res
    rc, doc, lines = res
    if rc != 1 or doc.get("complete") is not False or \
            doc["skipped"]["unreadable"] != len(damaged) or \
            doc["objects"] != len(intact):
        return "--dump: exit %d, %s (want 1, %d unreadable, %d objects)" % (
            rc, json.dumps(doc)[:300], len(damaged), len(intact))
    for addr, key in damaged.items():
        line = lines.get(addr, {})
        want = {k: v for k, v in intact[addr].items() if k != key}
        if line != want:
            return "0x%x: %s, want %s (no %s)" % (addr, json.dumps(line)[:300],
                                                json.dumps(want)[:300], key)
    return None


def check_page(res, baseline, want, total):
    """The page's slots gone from TOTAL, and from FREE and the types
    together: as many as it had."""
    expect = dict(want, TOTAL=want["TOTAL"] - total)
    doc = res[1]
    if doc:
        got = doc["count_objects"]
        lost = 0
        for k, v in want.items():
            if k == "TOTAL":
                continue
            if got.get(k, 0) > v:
                return "%s is %d, more than the %d of the intact heap" % (k, got[k], v)
            lost += v - got.get(k, 0)
        if lost != total:
            return "the types and FREE lost %d slots, the page had %d" % (lost, total)
        expect = dict(got, TOTAL=expect["TOTAL"])
    return check_skip(res, baseline, {"pages": 1, "slots": total}, expect, "0x10")


def gc_library(pid):
    """The GC library the process mapped, or None."""
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            path = line.split(None, 5)[5].strip() if len(line.split(None, 5)) == 6 else ""
            if os.path.basename(path).startswith("librubygc."):
                return path
    return None


def check_nodebug(corestack, core, exe, library, root, timeout):
    if not library:
        return "the process mapped no GC library (RUBY_GC_LIBRARY=default did not load one)"
    why = nodebug_sysroot(root, library)
    if why:
        return "setup: %s" % why
    rc, doc, out, err, reason = census(corestack, ["--no-cache", "--sysroot", root, core, exe],
                                       timeout)
    if reason:
        return reason
    lines = err.strip().splitlines()
    if rc != 2 or len(lines) != 1:
        return "exit %d with %d lines on stderr (want 2 and one line): %s" % (
            rc, len(lines), err.strip()[:300])
    if os.path.basename(library) not in lines[0]:
        return "the line does not name the GC library %s: %s" % (library, lines[0])
    if doc.get("walked") is not False or doc.get("live"):
        return "counted a heap it cannot walk: walked %r, live %r" % (doc.get("walked"),
                                                                   doc.get("live"))
    return None


def baseline_module(corestack, core, exe, timeout):
    """The module holding the VM: what corestack --json says of the core."""
    rc, out, err, reason = procs.run_tool([corestack, "--json", "--no-fibers", core, exe], timeout)
    if reason or rc not in (0, 1):
        raise RuntimeError("corestack --json %s: %s" % (core, reason or err.strip()[:200]))
    return json.loads(out)["process"]["ruby_module"]


def run_tests(ctx):
    rep, corestack, timeout = ctx.rep, ctx.corestack, ctx.timeout
    for ruby in ctx.rubies:
        names_here = [n for n in test_names(ruby) if ctx.selected(n)]
        if not names_here:
            continue
        exe = ctx.exe(ruby)
        if not exe:
            for n in names_here:
                rep.skip(n, "needs the %s fixture Ruby (not built)" % ruby)
            continue
        base = os.path.join(ctx.workdir, "heap", ruby)
        name = "%s/heap/" % ruby
        zjit = "zjit" in ruby   # a JIT whose locals may leave the VM stack
        if not ctx.args.gdbext:
            for t in DEBUGGER_TESTS:
                if name + t in names_here:
                    rep.skip(name + t, "needs the debugger module (--gdbext; make test gives it)")
            names_here = [n for n in names_here if n.rsplit("/", 1)[1] not in DEBUGGER_TESTS]
            if not names_here:
                continue
        run = None
        try:
            run, record = start_fixture(exe, ruby, base, READY_TIMEOUT)
            if ctx.selected(name + "live"):
                res = census(corestack, ["--pid", str(run.pid)], timeout)
                left = procs.stopped_threads(run.pid)
                rep.result(name + "live", check_census(res, record, live=True) or (
                    "threads left stopped: %s" % ", ".join(left) if left else None))
            if ctx.selected(name + "retainers-live"):
                pid_args = ["--pid", str(run.pid)]
                reason = check_retainers(corestack, pid_args, record, timeout,
                                         ("global", "local", "machine_stack") + VM_ROOTS,
                                         zjit)
                left = procs.stopped_threads(run.pid)
                rep.result(name + "retainers-live", reason or (
                    "threads left stopped: %s" % ", ".join(left) if left else None))
            if ctx.selected(name + "dump-live"):
                reason = check_dump(corestack, ["--pid", str(run.pid)], record,
                                    os.path.join(base, "live.dump"), timeout, live=True)
                left = procs.stopped_threads(run.pid)
                rep.result(name + "dump-live", reason or (
                    "threads left stopped: %s" % ", ".join(left) if left else None))
            if name + "gdb-live" in names_here:
                reason = gdb_heap(ctx, ["-p", str(run.pid)], base, "gdb-live", record, True)
                left = procs.stopped_threads(run.pid)
                rep.result(name + "gdb-live", reason or (
                    "threads left stopped: %s" % ", ".join(left) if left else None))
            library = gc_library(run.pid)
            core = procs.gcore(run.pid, os.path.join(base, "core"), timeout)
        except (procs.Failure, OSError, ValueError) as exc:
            for n in names_here:
                if not n.endswith(("/live", "/gdb-live")) or run is None:
                    rep.result(n, "setup: %s" % exc)
            continue
        finally:
            if run:
                run.kill()
        res = census(corestack, [core, exe], timeout)
        if ctx.selected(name + "core"):
            rep.result(name + "core", check_census(res, record) or
                       check_text(corestack, [core, exe], record, timeout))
        if ctx.selected(name + "retainers"):
            rep.result(name + "retainers",
                       check_retainers(corestack, [core, exe], record, timeout,
                                       jit_locals=zjit) or
                       check_retained_class(corestack, [core, exe], record, timeout) or
                       check_retainers_text(corestack, [core, exe], record, timeout) or
                       check_not_object(corestack, [core, exe], timeout))
        if ctx.selected(name + "dump"):
            rep.result(name + "dump", check_dump(corestack, [core, exe], record,
                                                 os.path.join(base, "core.dump"), timeout)
                       or check_dump_unwritable(corestack, [core, exe], timeout))
        if name + "gdb" in names_here:
            rep.result(name + "gdb", gdb_heap(ctx, [exe, "-c", core], base, "gdb", record, False))
        if name + "lldb" in names_here:
            rep.result(name + "lldb", lldb_heap(ctx, [exe, "-c", core], base, record))
        corrupt_tests(ctx, ruby, core, exe, record, res[1])
        if ctx.selected(name + "alloc-nodebug"):
            rep.result(name + "alloc-nodebug",
                       check_alloc_nodebug(ctx, core, exe, record,
                                           os.path.join(base, "alloc-nodebug-root")))
        if name + "gc-nodebug" in names_here:
            rep.result(name + "gc-nodebug", check_nodebug(corestack, core, exe, library,
                                                          os.path.join(base, "nodebug-root"),
                                                          timeout))
        if not ctx.args.keep:
            os.unlink(core)
