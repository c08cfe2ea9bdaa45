#!/usr/bin/env python3
"""The layering of the source tree, checked (`make lint` runs this).

Each folder may include only from itself and from the folders its line
below names; the folders form no cycle. docs/ARCHITECTURE.md describes
the layers. Besides:
- a `*_internal.h` is included only from its own folder;
- above the engine, a front end, renderer, profile or sampler includes of
  process/ only the headers that serve the layers above it (PROCESS_PUBLIC),
  never how a core or a live process is read.

Prints one line per include that breaks a rule and exits 1, or exits 0.
"""
import os
import re
import sys

# folder -> the folders it may include from (its own is always allowed)
ALLOWED = {
    "util": [],
    "dwarf": ["util"],
    "process": ["util"],
    "rubyvm": ["util", "dwarf", "process"],
    "engine": ["util", "dwarf", "process", "rubyvm"],
    # above the engine, DWARF is the engine's business
    "render": ["util", "process", "rubyvm", "engine"],
    "profile": ["util", "rubyvm"],
    "sampling": ["util", "process", "rubyvm", "engine", "profile"],
    # the two front ends: each on the layers, neither on the other
    "corestack": ["util", "process", "rubyvm", "engine", "render", "profile",
                  "sampling"],
    "gdbext": ["util", "process", "rubyvm", "engine", "render", "profile",
               "sampling"],
}
BELOW_ENGINE = {"util", "dwarf", "process", "rubyvm", "engine"}
PROCESS_PUBLIC = {"target.h", "open.h", "live.h", "memory.h", "page_cache.h",
                  "module_search.h",
                  "crash_signal.h", "build_id.h", "blocked_call.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def acyclic(graph):
    state = {}

    def visit(n):
        if state.get(n) == 1:
            return False
        if state.get(n) == 2:
            return True
        state[n] = 1
        ok = all(visit(m) for m in graph[n])
        state[n] = 2
        return ok

    return all(visit(n) for n in graph)


def problems(root):
    if not acyclic(ALLOWED):
        yield "tests/tools/check_layers.py: the allowed layers form a cycle"
    for folder in ALLOWED:
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            yield f"{folder}/: missing (the layers of docs/ARCHITECTURE.md)"
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            src = os.path.join(path, name)
            with open(src, encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                target = os.path.normpath(os.path.join(folder, inc))
                to = target.split(os.sep)[0] if os.sep in target else folder
                where = f"{folder}/{name}: includes {inc}"
                if not os.path.isfile(os.path.join(root, target)):
                    yield f"{where}: no such file in the tree"
                elif to not in ALLOWED:
                    yield f"{where}: {to}/ is no layer"
                elif to != folder and to not in ALLOWED[folder]:
                    yield f"{where}: {folder}/ may not include from {to}/"
                elif (target.endswith("_internal.h") and to != folder):
                    yield f"{where}: another folder's internal header"
                elif (to == "process" and folder not in BELOW_ENGINE and
                      os.path.basename(target) not in PROCESS_PUBLIC):
                    yield (f"{where}: above the engine only process/"
                           f"{{{','.join(sorted(PROCESS_PUBLIC))}}}")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    found = list(problems(root))
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
