"""gdbext tests: ruby-bt and ruby-sample inside gdb (and lldb) against what
Ruby says about itself (fixtures/oracle.rb), on every fixture Ruby.

    gdbext/RUBY/SCEN/MODE/json      ruby-bt --json all, MODE live (gdb -p on the
                                    parked scenario) or core (gdb RUBY CORE): same
                                    threads and frames as the oracle
    gdbext/RUBY/SCEN/MODE/text      ruby-bt all: byte for byte corestack's text for
                                    the same state (corestack CORE EXE, corestack
                                    --pid --nonblocking) once the frame numbers, #0,
                                    #1, ... per thread, are taken out, and each
                                    thread's "gdb thread N" (gdb's number of its
                                    LWP, as ruby-bt N names it); every oracle
                                    label in it, and printed by a plain `-ex ruby-bt all`
    gdbext/RUBY/SCEN/MODE/threads   ruby-bt N for every gdb thread N: that LWP's Ruby
                                    thread alone, or one error line when it runs
                                    none; ruby-bt alone = gdb's selected thread;
                                    every Ruby thread reachable; in a crash core,
                                    crash.thread_index indexes the threads shown
    gdbext/RUBY/SCEN/MODE/via-debugger  ruby-bt --json --via-debugger all (memory,
                                    mappings and auxv through gdb): as the oracle
    gdbext/RUBY/SCEN/live/detached  no thread of the scenario left stopped after gdb
    gdbext/RUBY/SCEN/MODE/locks     on a locks scenario (locks.py): ruby-locks names
                                    the deadlocks and each thread's wait, holder,
                                    deadlock and stuck-behind as the program's
                                    record gives them (locks.check_text), only
                                    deadlock and thread lines, each naming gdb's
                                    thread; --via-debugger --out FILE the same text;
                                    ruby-locks all: its usage line
    gdbext/RUBY/SCEN/MODE/bt-locks  ruby-bt all's deadlock section and thread lines,
                                    as locks.check_text expects
    lldb/RUBY/SCEN/MODE/locks       both in lldb, on the same process and core
    gdbext/RUBY/threads/MODE/frames on every gdb thread: ruby-frame 0, ruby-up to the
                                    outermost frame, ruby-down past #0, ruby-frame past
                                    the end: each frame Ruby's own at that depth (the
                                    oracle's Location#to_s), gdb's selected frame the
                                    one named, an interpreter loop (vm_exec_core) for a
                                    Ruby frame, a function the VM's cfunc call ran for
                                    a C method; one error line at each end, and for a
                                    thread without Ruby; the selection kept per thread
    gdbext/RUBY/threads/MODE/list   ruby-list around a frame's line, again (the next
                                    lines), ruby-list 1: the file's lines, the line
                                    marked; set sysroot to a tree with a newer copy:
                                    one note line, then its lines; to one without it:
                                    one error line naming the file
    gdbext/RUBY/threads/core/complete  complete ruby-bt (options, all, full, gdb's
                                    thread numbers), ruby-bt full (the same but full),
                                    ruby-bt --j, ruby-sample --, --out FILE,
                                    ruby-sample --format pp, --state running,bl, --state
                                    running, (no running again), --state
    gdbext/RUBY/sample              ruby-sample 2 --out F on fixtures/profile/shares.rb:
                                    heavy ranked over light (summary and collapsed
                                    stacks), every thread stopped again afterwards,
                                    and `continue` then runs the program to a
                                    normal exit (the SIGURG was not passed on)
    gdbext/RUBY/sample-speedscope   then ruby-sample 0.5 --out F --format speedscope in
                                    the same gdb: a speedscope file naming heavy and
                                    light, as many samples as the summary at most
    gdbext/RUBY/sample-state        then ruby-sample 0.3 --state blocked: samples, no
                                    stack of heavy or light kept (the one thread runs
                                    them); --state running: heavy or light kept
    gdbext/bad/...                  no Ruby in the inferior (live and core, also
                                    --via-debugger), no inferior, ruby-sample on a
                                    core, bad arguments, unreadable memory (a real
                                    core's VM pointer aimed at the zero page; every
                                    read path, and corestack on it says the thread
                                    list is incomplete, no sanitizer report): each
                                    command, run twice around `print 6*7`, prints the
                                    same one error line, no Python traceback, and 42
    gdbext/bad/error-classes        the module's errors keep their kind in Python, read
                                    directly and through gdb: ruby-bt of a tid no Ruby
                                    thread runs on raises NoRubyThreadError naming gdb's
                                    thread; on the core whose VM pointer is aimed at the
                                    zero page, FaultError with an address inside the VM
                                    struct there (gdb's sizeof), the one its message names
    lldb/bad/thread-numbers         ruby-bt N for every lldb thread on threads.rb's core:
                                    its Ruby thread alone, no header, its line naming
                                    "tid T, lldb thread N", or one line (not an error)
                                    saying it runs no Ruby thread; every Ruby thread
                                    with a tid reached
    lldb/bad/two-signals            a SIGSEGV another process sent to one thread while
                                    its SIGCHLD stops another (fixtures/native/
                                    two_signals.c, launched until lldb mixed them up
                                    twice, at most 40 times): at every
                                    stop the module's stop is SIGSEGV, SI_USER, that
                                    thread, though lldb 14 gives one thread's siginfo
                                    for both; fails when lldb never did in any launch
    lldb/bad/not-ruby-core, lldb/bad/unreadable-vm  the same in lldb (ruby-bt all,
                                    expression 6*7, ruby-bt all)
    gdbext/3.3-static/no-debug-info the static Ruby stripped of DWARF: one line naming
                                    the file and gdb's debug-file-directory (not the
                                    CLI's --debug-dir), on its core (also
                                    --via-debugger) and live
    gdbext/3.3-static/debug-file-directory  the advice followed (the DWARF in a
                                    build-id tree named by set debug-file-directory):
                                    the oracle's stacks
    gdbext/3.3-static/sample-debug-file-directory  ruby-sample on the stripped Ruby
                                    live, no ruby-bt before and no layout cached: ruby-bt's
                                    one line without the directory; samples once it is set
    lldb/3.3-static/no-debug-info   the same in lldb (target.debug-file-search-paths),
                                    both the error line and the stacks once set
    gdbext/3.3-static/sample-killed  ruby-sample on a long shares.rb run, gdb sent SIGTERM or
                                    SIGKILL while it attaches, while it samples, as the time
                                    is up, and `timeout 3 gdb ... ruby-sample 10`: gdb says no
                                    internal error and does not hang, and the target runs on
                                    untraced with no thread stopped; then SIGINT (Ctrl-C)
                                    while sampling: "Interrupted", and gdb goes on
    gdbext/3.3-static/sample-args   --rate 0, --rate 100000, SECONDS 0, --state sleeping and an --out in a
                                    missing directory: one error line each with the reason,
                                    before the inferior runs; then a run: one line of sample
                                    counts, the collapsed stacks written
    gdbext/3.1/thread-numbers       thread apply all ruby-bt on threads.rb live: each gdb
                                    thread's block has its Ruby thread naming "tid LWP, gdb
                                    thread N", or one line saying it runs no Ruby (not an
                                    error that ends thread apply), every oracle thread reached,
                                    no process header; ruby-bt all after it has one
    gdbext/3.1/moved-libruby/solib-search-path  its core with libruby's name changed where
                                    the core records it, that name found only through
                                    `set solib-search-path DIR`: ruby-bt --json all as the
                                    oracle
    gdbext/3.1/moved-libruby/sysroot  the same through `set sysroot DIR`
    lldb/3.1/as-installed           corestack-lldb as make install writes it, run with no
                                    PYTHONPATH: lldb-14's Python starts, the commands are there
    lldb/3.1/core-text              its ruby-bt all on 3.1's core: corestack's text for the
                                    core, header (command line, signal) included, once
                                    each thread's "lldb thread N" is taken out
    lldb/3.1/help                   its help ruby-bt: the syntax, all, N, the options
    gdbext/install-edges/no-ruby    make install PREFIX=TMP with no ruby on PATH: says no
                                    auto-load script was written and names RUBY=
    gdbext/install-edges/prefix     that install: the gdbinit snippet under TMP/etc, and a
                                    hint on how gdb comes to read it
    gdbext/install-edges/man-page   that install's man page: every docs/NAME.md it names
                                    installed at the path it gives; corestack-lldb in it
    gdbext/install-edges/unresolved-libruby  make install RUBY="3.1's ruby, a copy whose
                                    RUNPATH is gone": scripts for the ruby, its libruby and
                                    the copy's executable only, and the copy named as one
                                    whose libruby ldd cannot find
    gdbext/install-edges/no-snippet make install GDB_SYSTEM_GDBINIT_DIR=: says the line
                                    to add to ~/.gdbinit, and gdb -nx given that line
                                    has ruby-bt
    gdbext/install-edges/uninstall  make uninstall PREFIX=TMP: no file nor folder left
                                    under TMP
    gdbext/install-edges/stale-snippet  the snippet of a deleted prefix read by gdb: one
                                    line saying so, and gdb goes on
    gdbext/RUBY/threads/remote      ruby-bt --json all through gdbserver --attach (target
                                    remote: memory, mappings, auxv over the protocol): as
                                    the oracle; ruby-sample there says it needs a local
                                    process
    gdbext/RUBY/threads/container   gdb in a mount namespace of its own (unshare --mount, as
                                    in a container) names the process's files target:/...:
                                    ruby-bt --json --via-debugger all reads them, as the
                                    oracle
    lldb/RUBY/threads/MODE          the same ruby-bt --json all in lldb (live, core),
                                    on every fixture Ruby as all lldb/RUBY/... tests
    lldb/RUBY/threads/MODE/frames, lldb/RUBY/threads/MODE/list  the frames and list
                                    tests in the same lldb session (platform select
                                    --sysroot; on a core no note, lldb names no core)
    gdbext/RUBY/frames/MODE/locals, lldb/RUBY/frames/MODE/locals  ruby-bt full,
                                    ruby-locals [N] and ruby-print on the locals
                                    fixture's frames, against what Ruby said of
                                    them (frame_locals.py)
    lldb/RUBY/sample                ruby-sample 2 --out F in lldb on shares.rb: heavy
                                    ranked over light, the process stopped again
    lldb/RUBY/sample-speedscope     then ruby-sample 0.5 --out F --format speedscope in
                                    the same lldb, checked as in gdb
    lldb/RUBY/sample-state          then ruby-sample 0.3 --state blocked and --state
                                    running in the same lldb, checked as in gdb
    lldb/3.3-static/sample-killed   ruby-sample on the same long shares.rb run as
                                    gdbext/3.3-static/sample-killed, lldb sent SIGTERM, then
                                    SIGKILL, while it samples, and SIGKILL as the time is
                                    up: the target runs on untraced, no thread stopped, its
                                    CPU time growing
    gdbext/install                  make install PREFIX=TMP SYSCONFDIR=TMP/etc RUBY_FOR_GDB=
                                    3.3's ruby, then gdb -nx on a 3.3 core reading only the
                                    installed gdbinit.d snippet (-iex source, as gdb reads
                                    its system gdbinit dir): ruby-bt --json all as the oracle
    gdbext/install-destdir          make install DESTDIR=TMP (default PREFIX, SYSCONFDIR):
                                    every file under TMP, naming the final paths only
    gdbext/install-system-gdbinit   that staged tree laid over /usr/local and
                                    /etc/gdb/gdbinit.d in a private mount namespace
                                    (unshare -m): a plain gdb (no -nx, HOME empty) gets
                                    ruby-bt with no `source`; SKIP where mounting is not
                                    allowed

This module names the tests and runs them; the work is in gdbext_gdb.py
(running gdb, its checks, the scenarios, remote), gdbext_sample.py,
gdbext_lldb.py, gdbext_errors.py (bad/..., no-debug-info) and
gdbext_install.py.
"""

import os

from . import frame_locals, procs
from .gdbext_edges import (EDGE_RUBY, EDGE_TESTS, SHARED_RUBY, SHARED_TESTS, edge_tests,
                           shared_tests)
from .gdbext_errors import BAD_TESTS, NO_DEBUG_RUBY, NO_DEBUG_TESTS, bad_tests, no_debug_tests
from .gdbext_gdb import (container_test, fail_all, remote_test, scenario_runs,
                         scenario_tests)
from .gdbext_install import EDGE_INSTALL_TESTS, INSTALL_TESTS, install_edge_tests, install_test
from .gdbext_lldb import lldb_test, lldb_tests, locals_hook, locals_test_names
from .gdbext_sample import sample_test


REMOTE_RUBIES = ("3.3",)   # gdbserver: slow to start (it ships every library)


def ruby_tests(ruby, scenarios):
    names = []
    for scen in scenarios:
        names += scenario_tests(ruby, scen, scen.startswith("crash"))
    names += ["gdbext/%s/sample" % ruby, "gdbext/%s/sample-speedscope" % ruby,
              "gdbext/%s/sample-state" % ruby]
    names += lldb_tests(ruby)
    if frame_locals.SCENARIO in scenarios:
        names += locals_test_names(ruby)
    names += [n for n in locals_test_names(ruby, scenarios) if n.endswith("/locks")]
    if ruby in REMOTE_RUBIES:
        names += ["gdbext/%s/threads/remote" % ruby, "gdbext/%s/threads/container" % ruby]
    if ruby == NO_DEBUG_RUBY:
        names += NO_DEBUG_TESTS
    if ruby == EDGE_RUBY:
        names += EDGE_TESTS
    if ruby == SHARED_RUBY:
        names += SHARED_TESTS + EDGE_INSTALL_TESTS
    return names


INSTALL_RUBY = "3.3"


def wanted(selected, rubies, scenarios):
    """Does any gdbext test run? (so run.py builds the Rubies)"""
    return any(selected(n) for r in rubies for n in ruby_tests(r, scenarios)) or \
        any(selected(n) for n in BAD_TESTS) or \
        (INSTALL_RUBY in rubies and any(selected(n) for n in INSTALL_TESTS))


# --- entry point -------------------------------------------------------------------

def names(ctx):
    names = [n for r in ctx.rubies for n in ruby_tests(r, ctx.scenarios)] + list(BAD_TESTS)
    if INSTALL_RUBY in ctx.rubies:
        names += list(INSTALL_TESTS)
    return names


def rubies(ctx):
    return {r for r in ctx.rubies if wanted(ctx.selected, [r], ctx.scenarios)}


def run_tests(ctx):
    """All gdbext tests of the selected Rubies."""
    rep, selected, args, prefixes, workdir = ctx.rep, ctx.selected, ctx.args, ctx.prefixes, ctx.workdir
    scenarios = ctx.scenarios
    if not wanted(selected, args.rubies, scenarios):
        return
    if not os.path.exists(os.path.join(args.gdbext, "_corestack.abi3.so")):
        fail_all(rep, selected, [n for r in args.rubies for n in ruby_tests(r, scenarios)]
                 + list(BAD_TESTS) + list(INSTALL_TESTS),
                 "no gdbext module in %s (make gdbext)" % args.gdbext)
        return
    some_ruby = None
    for ruby in args.rubies:
        prefix = prefixes.get(ruby)
        if not isinstance(prefix, str):
            continue
        exe = os.path.join(prefix, "bin", "ruby")
        rwork = os.path.join(workdir, "gdbext", ruby)
        os.makedirs(rwork, exist_ok=True)
        procs.progress("gdbext: %s" % ruby)
        scenario_runs(rep, selected, args, ruby, exe, scenarios, rwork,
                      locals_hook(rep, selected, args, ruby))
        if any(selected("gdbext/%s/%s" % (ruby, t))
               for t in ("sample", "sample-speedscope", "sample-state")):
            sample_test(rep, args, ruby, exe, rwork, selected)
        lldb_test(rep, selected, args, ruby, exe, rwork)
        if ruby in REMOTE_RUBIES and selected("gdbext/%s/threads/remote" % ruby):
            remote_test(rep, args, ruby, exe, rwork)
        if ruby in REMOTE_RUBIES and selected("gdbext/%s/threads/container" % ruby):
            container_test(rep, args, ruby, exe, rwork)
        if ruby == INSTALL_RUBY and any(selected(n) for n in INSTALL_TESTS):
            install_test(rep, selected, args, exe, rwork)
        if ruby == NO_DEBUG_RUBY:
            no_debug_tests(rep, selected, args, exe, rwork)
        if ruby == EDGE_RUBY:
            edge_tests(rep, selected, args, exe, rwork)
        if ruby == SHARED_RUBY:
            shared_tests(rep, selected, args, exe, rwork)
            install_edge_tests(rep, selected, args, exe, rwork)
        if some_ruby is None and any(selected(n) for n in (
                "gdbext/bad/sample-on-core", "gdbext/bad/unreadable-vm", "lldb/bad/unreadable-vm",
                "gdbext/bad/error-classes", "lldb/bad/thread-numbers")):
            sleeper = procs.Scenario(exe, os.path.join(procs.SCENARIOS, "threads.rb"),
                                     os.path.join(rwork, "bad-core"), False)
            try:
                sleeper.wait_oracle(60)
                some_ruby = (exe, procs.gcore(sleeper.pid, os.path.join(sleeper.workdir, "core"),
                                              120))
            except procs.Failure:
                pass
            finally:
                sleeper.kill()
    bad_tests(rep, selected, args, os.path.join(workdir, "gdbext", "bad"), some_ruby)
