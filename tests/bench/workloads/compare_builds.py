#!/usr/bin/env python3
"""compare_builds.py: one workload script of the suite under several builds or settings of the shim,
in one run, for comparing variants side by side (machine instances differ more between runs than
variants do, so compare only within one run). Each round runs every variant once, the order
rotating from round to round (with --lockstep, all at once, taking turns); then each metric's
median (min-max) per variant, and the process's peak resident memory (peak_rss_mib, from wait4);
then each variant against the first, round by round: in how many rounds its value was higher, and
the median of its value over the first's (the runs of one round are close in time, so they share
more of the instance's drift than the medians do), with its 95 % interval over the rounds from 3
rounds on: an interval that holds 1.000x cannot tell the variant from the first.
Never judges the numbers;
exit status 1 when a run printed no result, 2 on bad usage.

usage: compare_builds.py [--rounds N] [--budget S] [--cpus LIST | --groups LIST] [--lockstep] [--out FILE]
                         SCRIPT [ARG...] -- VARIANT...
       compare_builds.py --merge [--first NAME] [--modes] FILE...
  --rounds N  rounds (default 3)
  --budget S  start no new round that would end after S seconds (judged by the longest round so
            far), so a run under a time limit still prints its table; 0 = no limit (default)
  --cpus LIST run every process on these CPUs only (a Linux CPU list: 2-5 or 2,3,4,5; each one of
            this process's), the same for every variant: a process's speed depends on the cores it
            lands on, and bound to the same ones no variant meets other cores than the rest
  --groups LIST  this run once per CPU listed, all at once, each group on its CPU only (--cpus C),
            writing FILE.g<CPU> (its output FILE.g<CPU>.log; --out FILE needed), then their files
            merged as --merge would (groups.py): a loop of one-CPU runs and their merge in one command
  --lockstep  the variants of a round as processes alive at the same time, taking turns: each
            timed block of a script that calls wl.turn() (wl.timed does) runs while the others
            wait, tens of ms from theirs (turns.py); a script that does not runs straight through
  --out FILE  also write every run there as it ends, one JSON line each: round, variant, and its
            metrics or why it has none (for reading the rounds one by one)
  --merge     run nothing: the tables of earlier runs' --out files (of one script) as one run's,
            each file's rounds counted apart (several runs at once on one machine, or one after
            another; a file may be gzip'd, as kept in results/); --first NAME sets the variants
            against NAME rather than the first one run; --modes adds a third table: each metric's
            runs split at their widest step into a fast and a slow mode (a host that runs a
            process at one of two speeds), each variant's runs and median per mode against the
            first's, so that a variant slower at either speed is told from one that met the slower
            speed more often
  SCRIPT    a workload script (tests/bench/workloads/*.py) and its arguments
  VARIANT   NAME=LIBRARY[,KEY=VALUE...]: LIBRARY is the libpinshim.so to preload, "none" for no
            shim, "empty" for a library with nothing in it (built here with cc): what preloading
            any library changes (the process's layout and environment), apart from the shim, or a
            C file, built here with cc into a library to preload (tests/bench/alloc_count.c, which
            counts the allocator calls train_phases.py reports); KEY=VALUE pairs are set in the
            environment of that variant's runs
example: compare_builds.py --rounds 5 tests/bench/workloads/torch_fresh.py -- none=none \\
             old=/tmp/old/libpinshim.so new=build/libpinshim.so new8=build/libpinshim.so,PINSHIM_STAGE_H2D_THREADS=8
Standard library only."""
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import groups
import merge as merge_files  # read_lines: an --out file, plain or gzip'd (as kept in results/)
import row_levels  # split_at_modes, median_ratio: a metric's two speeds
import run  # the suite's bootstrap interval
import turns

RUN_TIMEOUT_S = 300  # a run's limit (in lockstep its own time, not its waits)


def usage(message):
    sys.stderr.write("compare_builds.py: %s\n%s" % (message, __doc__.split("\n\n", 1)[1]))
    sys.exit(2)


def built_library(name, source=None):
    """A shared library built with cc into a temporary folder (removed at exit): from the C file
    source, or, without one, a library with nothing in it. Exits 2 when cc is missing or fails."""
    folder = tempfile.mkdtemp(prefix="compare_builds.")
    atexit.register(shutil.rmtree, folder, True)
    library = os.path.join(folder, "lib%s.so" % name)
    if source is None:
        source = os.path.join(folder, "empty.c")
        with open(source, "w") as f:
            f.write("int compare_builds_empty_library;\n")
    try:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source], check=True, capture_output=True,
                       text=True)
    except OSError as e:
        raise ValueError("variant library %s needs a C compiler (cc) to build it: %s" % (name, e))
    except subprocess.CalledProcessError as e:
        why = (e.stderr.strip().splitlines() or ["exit %d" % e.returncode])[0]
        raise ValueError("variant library %s: cc failed: %s" % (name, why))
    return library


def variant(spec, built):
    """A variant NAME=LIBRARY[,KEY=VALUE...] as (name, environment): this environment with
    PINSHIM_SUMMARY=none, LD_PRELOAD the library (none: no preload; empty or a C file: built here,
    once per spec's library, kept in built) and the settings. ValueError names what is wrong (also
    level_probe.py's variants)."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise ValueError("variant %r is not NAME=LIBRARY[,KEY=VALUE...]" % spec)
    library, *settings = rest.split(",")
    env = dict(os.environ, PINSHIM_SUMMARY="none")
    env.pop("LD_PRELOAD", None)
    if library == "empty" or library.endswith(".c"):
        source = None if library == "empty" else library
        if source and not os.path.isfile(source):
            raise ValueError("variant %s: no C file at %s" % (name, source))
        if library not in built:
            built[library] = built_library(os.path.basename(source)[:-2] if source else "empty", source)
        env["LD_PRELOAD"] = built[library]
    elif library != "none":
        if not os.path.isfile(library):
            raise ValueError("variant %s: no library at %s" % (name, library))
        env["LD_PRELOAD"] = os.path.abspath(library)
    for kv in settings:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise ValueError("variant %s: setting %r is not KEY=VALUE" % (name, kv))
        env[key] = value
    return name, env


def group_file(out, cpu):
    """The --out file of --groups' group on cpu."""
    return "%s.g%d" % (out, cpu)


def parse(argv):
    rounds, budget, cpus, lockstep, out, groups_on = 3, 0, None, False, None, None
    while argv[:1] in (["--rounds"], ["--budget"], ["--cpus"], ["--groups"], ["--lockstep"], ["--out"]):
        if argv[0] == "--lockstep":
            lockstep, argv = True, argv[1:]
            continue
        if len(argv) < 2:
            usage("%s wants a value" % argv[0])
        if argv[0] == "--out":
            out = argv[1]
        elif argv[0] in ("--cpus", "--groups"):
            listed = run.own_cpu_list(argv[1])
            if not listed:
                usage("%s %s is not a CPU list of this process's CPUs (%s)" %
                      (argv[0], argv[1], ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))))
            if argv[0] == "--cpus":
                cpus = listed
            else:
                groups_on = listed
        elif not argv[1].isdigit() or (argv[0] == "--rounds" and int(argv[1]) < 1):
            usage("%s wants a whole number%s" % (argv[0], " of at least 1" if argv[0] == "--rounds" else ""))
        elif argv[0] == "--rounds":
            rounds = int(argv[1])
        else:
            budget = int(argv[1])
        argv = argv[2:]
    if groups_on and (cpus or not out):
        usage("--groups binds each group to its CPU and writes FILE.g<CPU>: give --out FILE, not --cpus")
    for path in [group_file(out, c) for c in sorted(groups_on)] if groups_on else [out] if out else []:
        try:
            open(path, "w").close()
        except OSError as e:
            usage("--out %s cannot be written: %s" % (path, e.strerror))
    if "--" not in argv:
        usage("missing -- between the script and the variants")
    cut = argv.index("--")
    script, specs = argv[:cut], argv[cut + 1:]
    if not script or not specs:
        usage("give a script and at least one variant")
    variants, built = [], {}
    for spec in specs:
        try:
            variants.append(variant(spec, built))
        except ValueError as e:
            usage(str(e))
    return rounds, budget, cpus, lockstep, out, groups_on, script, variants


def run_child(argv, env, timeout, cpus=None):
    """Runs argv to its end, on the CPUs cpus (all of ours when None): (exit code, stdout, stderr,
    peak resident set in KiB, turns.reap), or None on timeout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(argv, env=env, stdout=out, stderr=err, text=True,
                                 preexec_fn=groups.pinned_to(cpus))
        returncode, usage, late = turns.reap(child, timeout, child.kill)
        if late:
            return None
        out.seek(0)
        err.seek(0)
        return returncode, out.read(), err.read(), usage.ru_maxrss


def run_once(script, env, cpus):
    """The metrics ({key: value}) of one run, with its peak resident memory (peak_rss_mib), or None
    with the reason."""
    done = run_child([sys.executable] + script, env, RUN_TIMEOUT_S, cpus)
    if done is None:
        return None, "timed out after %d s" % RUN_TIMEOUT_S
    return run_result(*done)


def run_round_lockstep(script, order, cpus):
    """A round's runs in lockstep (turns.py), in order: [(metrics, None) or (None, why)] as run_once
    gives them. RUN_TIMEOUT_S is each process's own time, not its waits."""
    takers = [turns.TurnTaker([sys.executable] + script, env, None, RUN_TIMEOUT_S, None, groups.pinned_to(cpus))
              for _, env in order]
    turns.take_turns(takers)
    out = []
    for t in takers:
        if t.start_error:
            out.append((None, t.start_error))
        elif t.timed_out:
            out.append((None, "timed out after %d s" % RUN_TIMEOUT_S))
        else:
            out.append(run_result(t.rc, t.out.decode("utf-8", "replace"), t.err.decode("utf-8", "replace"),
                              t.peak_rss_kib))
    return out


def run_result(returncode, stdout, stderr, rss_kib):
    """A finished run's metrics, or None with the reason."""
    results = [l for l in stdout.splitlines() if l.startswith("{")]
    if returncode != 0 or not results:
        return None, "exit %d: %s" % (returncode, stderr.strip().splitlines()[-1:] or "no output")
    line = json.loads(results[-1])
    if "skipped" in line:
        return None, "skipped: " + line["skipped"]
    metrics = {m["key"]: m["value"] for m in line["metrics"]}
    metrics["peak_rss_mib"] = rss_kib / 1024.0
    return metrics, None


def number(value):
    """value to 3 significant digits, whole numbers from 1000 up written out (1290, not 1.29e+03)."""
    text = "%.3g" % value
    return "%.0f" % value if "e+" in text else text


def print_table(rows):
    """rows (the header first) as columns: the first left-aligned, the others right-aligned, each
    as wide as its widest cell, two spaces apart."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join([r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]).rstrip())


def main(argv):
    if argv[:1] == ["--merge"]:
        first, by_modes, argv = None, False, argv[1:]
        while argv[:1] in (["--first"], ["--modes"]):
            if argv[0] == "--modes":
                by_modes, argv = True, argv[1:]
                continue
            if len(argv) < 2:
                usage("--first wants a variant's name")
            first, argv = argv[1], argv[2:]
        return merge(argv, first, by_modes)
    rounds, budget, cpus, lockstep, out, groups_on, script, variants = parse(argv)
    if groups_on:
        options = len(argv) - len(script) - 1 - len(variants)  # what comes before SCRIPT
        return run_groups(groups.without(groups.without(argv[:options], "--groups"), "--out") + argv[options:],
                          groups_on, out)
    values = {name: {} for name, _ in variants}
    failed = False
    start, longest, done = time.monotonic(), 0.0, 0
    for r in range(rounds):
        began = time.monotonic()
        if budget and began + longest - start > budget:
            break
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        if lockstep:
            outcomes = run_round_lockstep(script, order, cpus)
        else:
            outcomes = (run_once(script, env, cpus) for _, env in order)
        for (name, _), (metrics, why) in zip(order, outcomes):
            if out:
                with open(out, "a") as f:
                    f.write(json.dumps({"script": " ".join(script), "round": r + 1, "variant": name,
                                        "metrics": metrics, "error": why}) + "\n")
            if metrics is None:
                print("round %d, %s: %s" % (r + 1, name, why))
                failed = True
                continue
            for key, value in metrics.items():
                values[name].setdefault(key, {})[r] = value
        longest = max(longest, time.monotonic() - began)
        done += 1
    stopped = "" if done == rounds else " (of %d: --budget %d s reached)" % (rounds, budget)
    bound = ", on CPUs %s" % run.cpu_ranges(cpus) if cpus else ""
    how = "order rotating" + (", the variants of a round at once, taking turns" if lockstep else "")
    report("%s, %d rounds%s, %s%s" % (" ".join(script), done, stopped, how, bound), [n for n, _ in variants], values)
    return 1 if failed else 0


def run_groups(rest, cpus, out):
    """--groups: this run (rest: its arguments less --groups and --out) once per CPU at the same
    time, each group bound to its CPU (groups.py) and writing FILE.g<CPU> (its output
    FILE.g<CPU>.log), then their files merged as --merge would; exit status the worst of the
    groups' and the merge's."""
    jobs = [(cpu, [sys.executable, os.path.abspath(__file__), "--cpus", str(cpu), "--out", group_file(out, cpu)] + rest,
             group_file(out, cpu) + ".log") for cpu in sorted(cpus)]
    statuses = groups.run(jobs)
    files = [group_file(out, cpu) for cpu in sorted(cpus) if os.path.getsize(group_file(out, cpu))]
    if not files:
        usage("--groups: no group wrote a round (their output: %s.g*.log)" % out)
    return max([merge(files)] + statuses)


def merge(files, first=None, by_modes=False):
    """The tables of earlier runs' --out files (plain or gzip'd) as one run's: each file's rounds
    counted apart, the variants against first (a name) or the first one run; with by_modes, the
    modes table too. Exits 2 when a file cannot be read, a line is not one of --out's, the files ran
    other scripts, or no variant is named first."""
    if not files:
        usage("--merge wants the --out files of earlier runs")
    names, values, script, rounds = [], {}, None, set()
    for i, path in enumerate(files):
        try:
            lines = [line.rstrip("\n") for line in merge_files.read_lines(path)]
        except merge_files.UnreadableRuns as e:
            usage("--merge: cannot read %s: %s" % (path, e))
        for n, line in enumerate(lines, 1):
            try:
                rec = json.loads(line)
                name, rnd, metrics = rec["variant"], (i, int(rec["round"])), rec["metrics"]
                if script is None:
                    script = rec["script"]
                elif rec["script"] != script:
                    usage("--merge: %s:%d ran %s, where the first line read ran %s: merge only runs of one script"
                          % (path, n, rec["script"], script))
                if metrics is not None and not all(isinstance(v, (int, float)) for v in metrics.values()):
                    raise ValueError("a metric that is not a number")
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                usage("--merge: %s:%d is not a line of compare_builds.py --out (%s): %.80s" % (path, n, e, line))
            if name not in values:
                names.append(name)
                values[name] = {}
            rounds.add(rnd)
            for key, value in (metrics or {}).items():
                values[name].setdefault(key, {})[rnd] = value
    if script is None:
        usage("--merge: no run in %s" % ", ".join(files))
    if first is not None:
        if first not in names:
            usage("--merge: --first %s: no such variant (the variants: %s)" % (first, ", ".join(names)))
        names.remove(first)
        names.insert(0, first)
    keys = report("merged: %s, %d rounds from %d files (%s)" % (script, len(rounds), len(files), ", ".join(files)),
                  names, values)
    if by_modes:
        modes(names, values, keys)
    return 0


def report(title, names, values):
    """The two tables: each metric's median (min-max) per variant, then each variant against the
    first, round by round (paired)."""
    keys = []
    for per in values.values():
        keys += [k for k in per if k not in keys]
    print("# %s; median (min-max) per variant" % title)
    rows = [["metric"] + names]
    for key in keys:
        cells = []
        for name in names:
            v = list(values[name].get(key, {}).values())
            cells.append("%s (%s-%s)" % (number(statistics.median(v)), number(min(v)), number(max(v))) if v else "-")
        rows.append([key] + cells)
    print_table(rows)
    paired(names, values, keys)
    return keys


def paired(names, values, keys):
    """Each variant against the first, over the rounds where both have the metric: rounds higher,
    the median ratio, and with 3 rounds or more its 95 % interval over resampled rounds (run.py's
    bootstrap: a round drawn whole), which tells a variant's difference from the rounds' spread."""
    if len(names) < 2:
        return
    first = names[0]
    print("# against %s, round by round: rounds higher / rounds, median ratio (its 95 %% interval over "
          "the rounds)" % first)
    rows = [["metric"] + names[1:]]
    for key in keys:
        base = values[first].get(key, {})
        cells = []
        for name in names[1:]:
            ratios = [v / base[r] for r, v in values[name].get(key, {}).items() if r in base and base[r]]
            if not ratios:
                cells.append("-")
                continue
            cell = "%d/%d, %.3fx" % (sum(q > 1 for q in ratios), len(ratios), statistics.median(ratios))
            interval = run.bootstrap_interval(ratios, statistics.median)
            cells.append(cell + (" (%.3f-%.3f)" % interval if interval else ""))
        rows.append([key] + cells)
    print_table(rows)


def modes(names, values, keys):
    """Each metric's runs of every variant pooled and split at the widest step between two
    neighbouring values (row_levels.split_at_modes): where a host runs a process at one of two speeds,
    a variant that met the slower one more often is told apart from one slower at either speed. Per
    mode, each variant's runs and median, and against the first its median over the first's, with
    its 95 % interval from each variant's runs resampled on their own (the modes split the rounds'
    pairs). The resident memory is not a time and is left out."""
    print("# by each metric's own modes: every variant's runs pooled and split at the widest step between "
          "two neighbouring values; per mode, each variant's runs and median, and against %s the median "
          "ratio (its 95 %% interval, each side's runs resampled on their own)" % names[0])
    rows = [["metric", "mode"] + names]
    for key in keys:
        if key == "peak_rss_mib":
            continue
        split = row_levels.split_at_modes({name: list(values[name].get(key, {}).values()) for name in names})
        if not split:
            continue
        cut, step, halves = split
        for mode, sign, runs in halves:
            base = runs[names[0]]
            cells = []
            for name in names:
                vs = runs[name]
                cell = "%d runs %s" % (len(vs), number(statistics.median(vs))) if vs else "0 runs"
                if name != names[0] and vs and base:
                    ratio, interval = row_levels.median_ratio(base, vs, slower_above_one=True)
                    cell += ", %.3fx" % ratio + (" (%.3f-%.3f)" % interval if interval else "")
                cells.append(cell)
            rows.append([key, "%s %s %s (step %.3fx)" % (mode, sign, number(cut), step)] + cells)
    print_table(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
