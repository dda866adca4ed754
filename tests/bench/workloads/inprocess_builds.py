#!/usr/bin/env python3
"""inprocess_builds.py: the in-process table's rows (inprocess.py) under two or more builds of the
shim, in one run, for telling a change's cost apart from another instance's: the rows move by tens
of ns from instance to instance, more than a change to the shim's path, so a change is compared
only within one run. Each round runs every build once, each in a fresh process of run.py (one C
loop pair, the in-process rows named by --only, --groups groups of blocks); odd rounds in the order
given, even rounds reversed (A B, B A, ...: drift over the run meets each build alike). Each
process writes its own run.py folder, DIR/NAME-rROUND, which `run.py --merge DIR/NAME-r*` reads as
usual (the build's full tables). Then, or with --read DIR alone, one table: for each row and
build, the processes' mean of observing (observe - forward) and of the whole preload as each
process priced it (run.py's third table, from its own per-call prices), with 2 standard errors
pooled as run.py pools them (inprocess.pool); each build against the first: the difference of
the observing means with its 2 standard errors, and in how many rounds its process read lower
than the first's of the same round.
Never judges the numbers: a difference smaller than its error is not a measurement of the change.

usage: inprocess_builds.py --out DIR [--seconds S] [--rounds N] [--groups G] [--only TEXT]
                           [--python PY] [--timeout S] NAME=LIBRARY NAME=LIBRARY...
       inprocess_builds.py --read DIR [--first NAME]
  --seconds S  start no new process that would end after S seconds, judged by the longest so far
             (default 540: one GPU-machine command)
  --rounds N   at most N rounds (default: until --seconds)
  --groups G   groups of four blocks a row (run.py --inprocess-groups; default 600)
  --only TEXT  the PyTorch rows whose name holds TEXT (run.py --inprocess-only; default "nb")
  --first NAME with --read: the build the others are set against (default: the first by folder name;
             a run sets them against its first build)
  --fake       run.py's stand-in workload (fake_same) rather than the C loop's pair: for testing
  NAME=LIBRARY a build: a name (letters, digits, _ . -) and the libpinshim.so to preload
Exit status 1 when a process failed (its log: DIR/NAME-rROUND.log), 2 on bad usage."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import inprocess  # noqa: E402  (its pooling of processes, as run.py's tables pool them)

FOLDER = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)-r(?P<round>[0-9]+)$")


def variant(text):
    name, sep, lib = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or not lib:
        raise argparse.ArgumentTypeError("%r: expected NAME=LIBRARY (a name of letters, digits, _ . -)" % text)
    if not os.path.isfile(lib):
        raise argparse.ArgumentTypeError("%r: no such library: %s" % (text, lib))
    return name, os.path.abspath(lib)


def one_process(args, name, lib, rnd):
    """Runs run.py for one build in one round; returns (rc, seconds)."""
    out = os.path.join(args.out, "%s-r%d" % (name, rnd))
    cmd = [sys.executable, os.path.join(HERE, "run.py"), "--pairs", "1", "--no-guard", "--inprocess", "1",
           "--inprocess-only", args.only, "--inprocess-groups", str(args.groups), "--budget", "0",
           "--shim", lib, "--out", out]
    cmd += ["--fake", "--only", "fake_same"] if args.fake else ["--only", "c_dtoh_sync"]
    if args.python:
        cmd += ["--python", args.python]
    started = time.time()
    with open(out + ".log", "w") as log:
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return rc, time.time() - started


def sample(figures):
    """A process's figures (a run.py summary's row, or its whole preload) as inprocess.pool() takes them."""
    return {"median_ns": figures["cost_ns"], "se_ns": figures.get("se2_ns", 0.0) / 2,
            "forward_ns": figures.get("forward_ns") or 0.0}


def read(folder):
    """{row key: {name: {round: (observing's sample, the whole preload's or None)}}} and the names in
    their folders' order."""
    rows, names = {}, []
    for entry in sorted(os.listdir(folder)):
        m = FOLDER.match(entry)
        path = os.path.join(folder, entry, "summary.json")
        if not m or not os.path.isfile(path):
            continue
        try:
            with open(path) as f:
                summary = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit("inprocess_builds.py: %s: not a run.py summary (%s)" % (path, e))
        name, rnd = m.group("name"), int(m.group("round"))
        if name not in names:
            names.append(name)
        for row in (summary.get("inprocess") or {}).get("rows", []):
            if "cost_ns" in row:
                whole = row.get("whole")
                rows.setdefault(row["key"], {}).setdefault(name, {})[rnd] = (
                    sample(row), sample(whole) if whole and "cost_ns" in whole else None)
    return rows, names


def pooled(samples):
    """(mean, 2 standard errors) of the processes, as run.py's in-process table pools them: the larger
    of the processes' own errors combined and their spread; (None, None) without a process."""
    if not samples:
        return None, None
    row = inprocess.pool(samples)
    return row["cost_ns"], row["se2_ns"]


def show(value, error):
    return "-" if value is None else "%+.1f +- %.1f" % (value, error)


def table(folder, first=None):
    rows, names = read(folder)
    if not rows:
        sys.exit("inprocess_builds.py: %s holds no measured process (folders NAME-rROUND with a summary.json)" % folder)
    if first is not None and first not in names:
        sys.exit("inprocess_builds.py: --first %s: no build of that name in %s (%s)" % (first, folder, ", ".join(names)))
    base = first or names[0]
    names.sort(key=lambda n: n != base)  # the base first, the others in their folders' order
    print("# in-process rows by build, ns per operation: the mean of the processes +- 2 standard errors; "
          "each build against %s (tests/bench/workloads/inprocess_builds.py)" % base)
    head = ("row", "build", "processes", "observe - forward", "whole preload", "against " + base, "rounds lower")
    lines = []
    for key in rows:
        by_name = rows[key]
        for name in names:
            got = by_name.get(name, {})
            cost = pooled([v[0] for v in got.values()])
            whole = pooled([v[1] for v in got.values() if v[1] is not None])
            against, lower = "", ""
            if name != base and got and by_name.get(base):
                first_cost = pooled([v[0] for v in by_name[base].values()])
                against = show(cost[0] - first_cost[0], (cost[1] ** 2 + first_cost[1] ** 2) ** 0.5)
                paired = [got[r][0]["median_ns"] - by_name[base][r][0]["median_ns"] for r in got if r in by_name[base]]
                lower = "%d of %d" % (sum(d < 0 for d in paired), len(paired))
            lines.append((key, name, str(len(got)), show(*cost), show(*whole), against, lower))
    widths = [max(len(r[i]) for r in lines + [head]) for i in range(len(head))]
    for r in [head, tuple("-" * w for w in widths)] + lines:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", metavar="DIR")
    p.add_argument("--read", metavar="DIR")
    p.add_argument("--first", metavar="NAME")
    p.add_argument("--seconds", type=float, default=540.0)
    p.add_argument("--rounds", type=int)
    p.add_argument("--groups", type=int, default=600)
    p.add_argument("--only", default="nb")
    p.add_argument("--python")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--fake", action="store_true")
    p.add_argument("builds", nargs="*", type=variant, metavar="NAME=LIBRARY")
    args = p.parse_args()
    if args.read:
        if args.out or args.builds:
            p.error("--read DIR takes no --out and no builds")
        if not os.path.isdir(args.read):
            p.error("--read %s: no such folder" % args.read)
        table(args.read, first=args.first)
        return 0
    if not args.out:
        p.error("expected --out DIR (where each process writes its folder) or --read DIR")
    if len(args.builds) < 2 or len({n for n, _ in args.builds}) != len(args.builds):
        p.error("expected two or more builds with different names, NAME=LIBRARY each")
    if args.groups < 4 or (args.rounds is not None and args.rounds < 1) or not args.only.strip():
        p.error("--groups: at least 4; --rounds: at least 1; --only: part of a row's name")
    os.makedirs(args.out, exist_ok=True)
    started, longest, failed, rnd = time.time(), 0.0, 0, 0
    while args.rounds is None or rnd < args.rounds:
        rnd += 1
        order = args.builds if rnd % 2 else args.builds[::-1]
        for name, lib in order:
            if args.seconds and time.time() - started + longest > args.seconds:
                print("inprocess_builds.py: --seconds %g reached in round %d" % (args.seconds, rnd))
                break
            rc, took = one_process(args, name, lib, rnd)
            longest = max(longest, took)
            failed += rc != 0
            print("round %d %s: rc %s, %.0f s" % (rnd, name, rc, took), flush=True)
        else:
            continue
        break
    if any(FOLDER.match(e) for e in os.listdir(args.out)):
        table(args.out, first=args.builds[0][0])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
