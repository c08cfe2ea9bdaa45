"""What a group of tests is to the runner, and what it is given.

A group is a module of tests/harness/ that run.py lists once, in GROUPS; the
order there is the order --list prints names and the run reports them. It
defines, each taking the Context:

    names(ctx)       every test name it may report, in order (--list; -k
                     selects among them)
    run_tests(ctx)   runs the selected ones, results through ctx.rep
and, when it needs them:
    cores(ctx)       the (Ruby, scenario) cores it reads from ctx.captures:
                     taken even when no scenario test is selected, kept until
                     the end
    rubies(ctx)      the fixture Rubies it runs without a scenario core of
                     theirs (ctx.prefixes); called once ctx.plan is known

A group whose tests damage or reread one Ruby's core of a scenario is
listed in EachRuby with the others of its kind, their tests going Ruby by
Ruby; it defines instead

    test_names(ruby)        every test name it may report on that Ruby
    run_on(ctx, ruby, cap)  runs the selected ones on the Capture of the
                            Ruby's core, called only when one is selected
                            and the core was taken
and SCENARIO when that core is not the threads scenario's, no_core(ctx,
ruby, names, failure) when a core not taken fails its selected tests.
"""

import os

from . import procs

BUILD_TIMEOUT = 3600


def ruby_spec(spec):
    """A Ruby's name -> (version, variant) of fixtures/build-ruby.sh."""
    version, _, variant = spec.partition("-")
    return version, variant or "shared"


class Context:
    """One run: its options, what -k selects, and what groups share."""

    def __init__(self, args, installed, scenario_list, rep):
        self.args = args
        self.rubies = args.rubies
        self.corestack, self.timeout = args.corestack, args.timeout
        self.installed = installed          # NAME -> PREFIX of --ruby
        self.scenarios = scenario_list      # fixtures/scenarios/*.rb
        self.rep = rep
        self.cores = set()     # (ruby, scenario) some group reads
        self.plan = {}         # ruby -> the scenarios whose cores are taken
        self.build = set()     # Rubies built (or given) this run
        self.prefixes = {}     # ruby -> PREFIX, or the build's Failure
        self.captures = {}     # (ruby, scenario) -> Capture or Failure
        self.workdir = None

    def selected(self, name):
        keys = self.args.keys
        return not keys or any(k in name for k in keys)

    def any_selected(self, names):
        return any(self.selected(n) for n in names)

    def capture(self, ruby, scenario):
        """The Capture of ruby's scenario, or None (not taken, or failed)."""
        cap = self.captures.get((ruby, scenario))
        return None if isinstance(cap, procs.Failure) else cap

    def build_ruby(self, ruby):
        """ruby's prefix, built on first use; None when it could not be."""
        try:
            self.prefixes[ruby] = self.installed.get(ruby) or \
                procs.build_ruby(*ruby_spec(ruby), timeout=BUILD_TIMEOUT)
        except procs.Unavailable as exc:   # e.g. YJIT without rustc
            self.prefixes[ruby] = exc
            self.rep.skip("%s/build" % ruby, str(exc))
            return None
        except procs.Failure as exc:
            self.prefixes[ruby] = exc
            self.rep.result("%s/build" % ruby, str(exc))
            return None
        return self.prefixes[ruby]

    def exe(self, ruby):
        """ruby's executable, when it was built."""
        prefix = self.prefixes.get(ruby)
        return os.path.join(prefix, "bin", "ruby") if isinstance(prefix, str) else None


def hook(group, name, ctx, *ruby):
    """group's name(ctx, ...), or nothing when the group has no such need."""
    f = getattr(group, name, None)
    return f(ctx, *ruby) if f else set()


class EachRuby:
    """Groups on one Ruby's core, run and listed Ruby by Ruby: each asks for
    its scenario's core on a Ruby when one of its tests there is selected."""

    def __init__(self, *groups):
        self.groups = groups

    def names(self, ctx):
        return [n for r in ctx.rubies for g in self.groups for n in g.test_names(r)]

    def cores(self, ctx):
        return {(r, scenario_of(g)) for r in ctx.rubies for g in self.groups
                if ctx.any_selected(g.test_names(r))}

    def run_tests(self, ctx):
        for r in ctx.rubies:
            for g in self.groups:
                names = [n for n in g.test_names(r) if ctx.selected(n)]
                if not names:
                    continue
                cap = ctx.capture(r, scenario_of(g))
                if cap is not None:
                    g.run_on(ctx, r, cap)
                elif hasattr(g, "no_core"):
                    g.no_core(ctx, r, names, ctx.captures.get((r, scenario_of(g))))


def scenario_of(group):
    """The scenario whose core an EachRuby group reads."""
    return getattr(group, "SCENARIO", "threads")
