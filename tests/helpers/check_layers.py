#!/usr/bin/env python3
"""check_layers.py: keeps shim/ layered. Reads every `#include "..."` of the library's sources
(shim/<layer>/ and policy/), resolves it as the compiler does (the including file's folder first,
then -Ishim -Ipolicy -Iinclude), and fails on
  - an include from a layer to a higher one, or to another layer of the same rank,
  - a cycle between folders,
  - a folder under shim/ that LAYERS does not name, or a quoted include that resolves nowhere.
LAYERS below is the one place the allowed order is declared (README "Architecture" shows it).

usage: check_layers.py [ROOT]   (ROOT: the repository, default: two folders above this script)
Exit status 0 when the layering holds, 1 with one line per violation otherwise.
"""
import os
import re
import sys

# Top to bottom. A file may include headers of its own folder and of any folder of a lower rank;
# folders of one rank are independent of each other. "policy" is policy/ and "include" the public
# include/ folder; every other name is a folder of shim/.
LAYERS = [
    ("interpose",),        # what the program calls: driver wrappers, dlsym, cuGetProcAddress, API, init
    ("copy",),             # entry handlers, copy descriptor handling, cutting copies at registrations
    ("stage", "guard"),    # staging through the pinned pool | the unsynchronized-read guard
    ("hostmem",),          # allocation hooks and their events, tracking table, registrations, kinds
    ("observe",),          # counters and summary, log, advice, call sites, device timing, helpers
    ("policy",),           # the policy keys and their parser (policy/)
    ("base",),             # diagnostics, reentrancy, the driver entry table, real functions, struct copy
    ("include",),          # the public header (include/)
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = (".c", ".h", ".S")


def rank_of():
    ranks = {}
    for rank, names in enumerate(LAYERS):
        for name in names:
            ranks[name] = rank
    return ranks


def sources(root):
    """(layer, path) for every source of the library; unknown shim/ folders are reported."""
    found, problems = [], []
    shim = os.path.join(root, "shim")
    for entry in sorted(os.listdir(shim)):
        path = os.path.join(shim, entry)
        if not os.path.isdir(path):
            if entry.endswith(SOURCE_EXT):
                problems.append("shim/%s: a source outside every layer folder" % entry)
            continue
        for dirpath, _, files in os.walk(path):
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    found.append((entry, os.path.join(dirpath, f)))
    for extra in ("policy", "include"):
        for f in sorted(os.listdir(os.path.join(root, extra))):
            if f.endswith(SOURCE_EXT):
                found.append((extra, os.path.join(root, extra, f)))
    return found, problems


def layer_of(root, path):
    rel = os.path.relpath(path, root).split(os.sep)
    return rel[1] if rel[0] == "shim" else rel[0]


def resolve(root, including, name):
    for base in (os.path.dirname(including), os.path.join(root, "shim"), os.path.join(root, "policy"),
                 os.path.join(root, "include")):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(candidate):
            return candidate
    return None


def find_cycle(edges):
    """One cycle of the folder graph as a list of folders, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def check(root):
    ranks = rank_of()
    files, problems = sources(root)
    edges = {}
    for layer, path in files:
        rel = os.path.relpath(path, root)
        if layer not in ranks:
            problems.append("%s: folder shim/%s is not a declared layer (add it to LAYERS in "
                            "tests/helpers/check_layers.py)" % (rel, layer))
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            target = resolve(root, path, m.group(1))
            if target is None:
                problems.append('%s:%d: #include "%s" resolves to no file of the library' % (rel, line, m.group(1)))
                continue
            to = layer_of(root, target)
            if to == layer:
                continue
            edges.setdefault(layer, set()).add(to)
            if to not in ranks:
                problems.append('%s:%d: #include "%s" reaches outside the declared layers' % (rel, line, m.group(1)))
            elif ranks[to] == ranks[layer]:
                problems.append('%s:%d: #include "%s": %s and %s are independent layers of one rank' %
                                (rel, line, m.group(1), layer, to))
            elif ranks[to] < ranks[layer]:
                problems.append('%s:%d: #include "%s": %s is below %s and may not include it' %
                                (rel, line, m.group(1), layer, to))
    cycle = find_cycle(edges)
    if cycle:
        problems.append("cycle between folders: " + " -> ".join(cycle))
    return problems


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    problems = check(root)
    for p in problems:
        print("check_layers: " + p)
    if problems:
        print("check_layers: %d violation(s); the allowed order (top to bottom): %s" %
              (len(problems), " > ".join("|".join(names) for names in LAYERS)))
        return 1
    print("check_layers: ok (%s)" % " > ".join("|".join(names) for names in LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
