"""What a scenario needs from the Ruby that runs it.

A scenario declares it in a comment line of its own:

    # corestack-requires: Ractor (Ruby 3.0)

Fixture Rubies older than the version in parentheses do not run it; the
harness prints SKIP lines naming the feature for them, so a scenario is
never left out silently.
"""

import re

DECLARATION = re.compile(r"^#\s*corestack-requires:\s*(.+?)\s*\(Ruby (\d+)\.(\d+)\)\s*$")


def requirement(script):
    """-> (feature, (major, minor)) or None."""
    with open(script, encoding="utf-8") as f:
        for line in f:
            m = DECLARATION.match(line)
            if m:
                return m.group(1), (int(m.group(2)), int(m.group(3)))
    return None


def missing(script, ruby_version):
    """Why a Ruby "X.Y" cannot run script, or None."""
    need = requirement(script)
    if need is None:
        return None
    have = tuple(int(x) for x in ruby_version.split(".")[:2])
    if have < need[1]:
        return "needs %s, Ruby %d.%d or later; this fixture is Ruby %s" % (
            need[0], need[1][0], need[1][1], ruby_version)
    return None
