"""row_levels.py: run by run, each row's time beside the CPU level its process met and what its
other threads did meanwhile, from the suite's runs.jsonl (run.py --out DIR) for the workloads whose
scripts record them (notes.rows, wl.note_row_level: torch_reuse.py's rows, torch_train.py's step,
torch_item.py's and jax_copy.py's rows; run.py from guard_cost.c's "# level" line: the C loop's).

    python3 tests/bench/workloads/row_levels.py DIR [DIR ...] [--workload NAME] [--key KEY]

Every workload that recorded them unless --workload names one.

One line per run and row: the pair, the side, the row's metric, the control loop's time after it
(a larger control: a slower CPU level), the row over its control (compares runs met at different
levels), the CPU ms of the main thread, the shim's threads and the others over the row's measured
passes, and the busiest others by name; then, per side, the medians of the metric and of the
metric over control; then, at matched levels, each row's runs of both sides split at the median of
all their controls pooled: per half (the faster level, the slower one) each side's runs and median
and its ratio to the no-shim side's median in that half (a process's level is set where it lands, by
the core and its clock, not by the row: the halves compare runs met at like levels, and how many runs
of each side fell in each half shows whether one side met the slower level more often); last, by the
row's own modes: each row's runs of both sides pooled and split at the widest step between two
neighbouring values (a row that runs at one of two speeds splits between them; the step, as a
ratio, says whether there are two: a few per cent is only the spread), per mode each side's runs,
median and ratio to the no-shim median of that mode, so that a side meeting the slower mode more
often is told apart from a side slower within a mode, even where the control misreads the level
(the row's time itself places each run). Every ratio of a split has its 95 % interval, each side's
runs resampled on their own (they have no pairs). Then, per workload and folder, how many of each
side's processes met the slower level (the median of its rows' controls above the median of that
folder's processes of the workload: instances differ in level, so each folder is cut on its own),
and all of them together, with Fisher's exact test of the shim's count against no shim's: whether
the shim sends a process to the slower level, or the sides only drew it by chance. Reads only;
an unreadable folder or line is an error naming it. Standard library only."""
import argparse
import json
import math
import os
import sys

import merge  # a folder's runs file, plain or gzip'd
import run  # the suite's bootstrap


def median(values):
    v = sorted(values)
    n = len(v)
    return None if not n else v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def runs_of(folder):
    path = merge.runs_path(folder) or os.path.join(folder, "runs.jsonl")
    try:
        lines = merge.read_lines(path)
    except merge.UnreadableRuns as e:
        sys.exit("row_levels.py: %s: %s (expected run.py's --out folder, holding runs.jsonl or runs.jsonl.gz)"
                 % (path, e))
    for i, line in enumerate(lines, 1):
        try:
            yield json.loads(line)
        except ValueError:
            sys.exit("row_levels.py: %s line %d: not a JSON record (expected one run per line)" % (path, i))


def main():
    ap = argparse.ArgumentParser(description="each row's time beside its process's CPU level, run by run")
    ap.add_argument("folders", nargs="+", metavar="DIR")
    ap.add_argument("--workload", help="only this workload (default: every one with notes.rows)")
    ap.add_argument("--key", help="only this row (a metric key, e.g. 4KB_pinned)")
    args = ap.parse_args()
    per_side = {}
    processes = {}  # (workload, folder): [(side, the median of the process's rows' controls)]
    print("%-16s %-6s %-7s %-12s %10s %10s %9s %8s %8s %8s  %s" % (
        "workload", "pair", "side", "row", "metric", "control_us", "per_ctl", "main_ms", "shim_ms", "other_ms",
        "busiest others (ms)"))
    for folder in args.folders:
        folder_name = os.path.basename(os.path.normpath(folder))
        for run in runs_of(folder):
            rows = (run.get("notes") or {}).get("rows")
            if args.workload and run.get("workload") != args.workload or not isinstance(rows, dict):
                continue
            values = {m.get("key"): m.get("value") for m in run.get("metrics") or []}
            controls = []
            for key, row in rows.items():
                if args.key and key != args.key or values.get(key) is None:
                    continue
                value, control = values[key], row.get("control_us")
                per = value / control if control else None
                seen, levels = per_side.setdefault((run.get("workload"), key, str(run.get("side"))), ([], []))
                seen.append(value)
                if control:
                    levels.append((control, value))
                    controls.append(control)
                busiest = ", ".join("%s %.1f" % (name, ms) for name, ms in row.get("busiest_others") or [])
                pair = "%s/%s" % (folder_name, run.get("pair"))
                print("%-16s %-6s %-7s %-12s %10.4g %10s %9s %8.1f %8.1f %8.1f  %s" % (
                    run.get("workload"), pair, run.get("side"), key, value,
                    "%.1f" % control if control else "-", "%.4g" % per if per is not None else "-",
                    row.get("main_cpu_ms", 0), row.get("shim_threads_ms", 0), row.get("other_threads_ms", 0),
                    busiest))
            if controls:
                processes.setdefault((run.get("workload"), folder_name), []).append(
                    (str(run.get("side")), median(controls)))
    if not per_side:
        sys.exit("row_levels.py: no run%s with notes.rows in %s (the scripts that record them: torch_reuse.py, "
                 "torch_train.py, torch_item.py, jax_copy.py, the C loop)"
                 % (" of " + args.workload if args.workload else "", " ".join(args.folders)))
    print()
    for (workload, key, side), (values, levels) in sorted(per_side.items()):
        pers = [value / control for control, value in levels]
        print("%-16s %-12s %-7s runs %2d  median %.4g  median over control %s" % (
            workload, key, side, len(values), median(values), "%.4g" % median(pers) if pers else "-"))
    print_matched_levels(per_side)
    print_modes(per_side)
    print_slower_level(processes)


def print_split(workload, key, label, sides):
    """One line: each side's runs, median and ratio to the no-shim median (above 1: the side faster),
    with the ratio's 95 % interval (median_ratio): these runs have no pairs."""
    base_values = sides.get("noshim", [])
    base = median(base_values)
    cells = []
    for side in sorted(sides, key=lambda name: (name != "noshim", name)):
        values = sides[side]
        m = median(values)
        ratio = ""
        if side != "noshim" and base and m:
            figure, interval = median_ratio(base_values, values, slower_above_one=False)
            ratio = " (%.2fx%s)" % (figure, ", %.2f-%.2fx" % interval if interval else "")
        cells.append("%s %d runs %s%s" % (side, len(values), "%.4g" % m if m is not None else "-", ratio))
    print("%-16s %-12s %s: %s" % (workload, key, label, ", ".join(cells)))


def median_ratio(base, values, slower_above_one):
    """(ratio, interval) of two sets of runs that have no pairs: the median of values over the median
    of base (slower_above_one: compare_builds.py's direction) or of base over values (above 1: values
    faster, the suite's), and its 95 % interval from each set resampled on its own
    (run.two_sample_interval; None with under three runs a set, or a denominator run not above 0)."""
    statistic = (lambda b, v: median(v) / median(b)) if slower_above_one else (lambda b, v: median(b) / median(v))
    denominator = base if slower_above_one else values
    interval = run.two_sample_interval(base, values, statistic) if min(denominator) > 0 else None
    return statistic(base, values), interval


def print_matched_levels(per_side):
    """Each row's runs split at the median control of both sides' runs pooled; per half, print_split."""
    rows = {}
    for (workload, key, side), (_, levels) in per_side.items():
        if levels:
            rows.setdefault((workload, key), {})[side] = levels
    if not rows:
        return
    print()
    print("at matched levels: each row's runs split at the median control of both sides' runs")
    for (workload, key), sides in sorted(rows.items()):
        cut = median([control for levels in sides.values() for control, _ in levels])
        for half, sign, inside in (("faster", "<=", lambda c: c <= cut), ("slower", ">", lambda c: c > cut)):
            print_split(workload, key, "%s (control %s %.1f us)" % (half, sign, cut),
                        {side: [v for c, v in levels if inside(c)] for side, levels in sides.items()})


def widest_step(values):
    """(cut, step): the cut halfway between the two neighbouring sorted values with the widest ratio
    between them, leaving a tenth of the values each side (two at least), and that ratio; None under
    four values. The tenth keeps a few stray runs at the edge from being called a mode: over 190
    runs of .item() (2026-12-02) the widest step was below the three slowest, and the two speeds,
    150-175 ms and 178-248, went unsplit."""
    v = sorted(x for x in values if x > 0)
    if len(v) < 4:
        return None
    least = max(2, len(v) // 10)
    i = max(range(least - 1, len(v) - least), key=lambda j: v[j + 1] / v[j])
    return (v[i] + v[i + 1]) / 2, v[i + 1] / v[i]


def split_at_modes(sides):
    """sides: {side: runs}. Every side's runs pooled, their widest step, and each side's runs either
    side of it: (cut, step, (("fast", "<=", {side: runs <= cut}), ("slow", ">", {side: runs > cut}))),
    each mode with the comparison its label prints, or None where widest_step finds no step
    (compare_builds.py --modes splits its variants so too)."""
    found = widest_step([v for values in sides.values() for v in values])
    if not found:
        return None
    cut, step = found
    return cut, step, tuple((mode, sign, {side: [v for v in values if inside(v)] for side, values in sides.items()})
                            for mode, sign, inside in (("fast", "<=", lambda v: v <= cut),
                                                       ("slow", ">", lambda v: v > cut)))


def print_modes(per_side):
    """Each row's runs of both sides pooled and split at their widest step; per mode, print_split."""
    rows = {}
    for (workload, key, side), (values, _) in per_side.items():
        rows.setdefault((workload, key), {})[side] = values
    splits = {row: split_at_modes(sides) for row, sides in rows.items()}
    if not any(splits.values()):
        return
    print()
    print("by the row's own modes: each row's runs split at the widest step between two neighbouring values")
    for (workload, key), split in sorted(splits.items()):
        if not split:
            continue
        cut, step, halves = split
        for mode, sign, sides in halves:
            print_split(workload, key, "%s mode (%s %.4g, step %.3fx)" % (mode, sign, cut, step), sides)


def print_slower_level(processes):
    """Per workload and folder, each side's processes above the median control of that folder's
    processes of the workload, and all pooled, with Fisher's exact test of shim against noshim."""
    if not any(len(procs) > 1 for procs in processes.values()):
        return
    print()
    print("processes at the slower level: each process's control (the median of its rows') above the median "
          "of its folder's processes of the workload")
    everyone = []  # (side, at the slower level) of every process of a split
    for (workload, folder), procs in sorted(processes.items()):
        if len(procs) < 2:
            continue
        cut = median([control for _, control in procs])
        slow = [(side, control > cut) for side, control in procs]
        everyone += slow
        print("%-16s %-50s %s" % (workload, folder, slower_counts(tally(slow))))
    total = tally(everyone)
    line = slower_counts(total)
    if "noshim" in total and "shim" in total:
        (a, n1), (c, n2) = total["shim"], total["noshim"]
        line += " (Fisher's exact test, shim against noshim: p %.2f)" % fisher_exact(a, n1 - a, c, n2 - c)
    print("%-16s %-50s %s" % ("all", "", line))


def tally(slow):
    """{side: (processes at the slower level, processes)} of (side, at the slower level) pairs."""
    counts = {}
    for side, is_slow in slow:
        at, n = counts.get(side, (0, 0))
        counts[side] = (at + is_slow, n + 1)
    return counts


def slower_counts(counts):
    return ", ".join("%s %d of %d" % (side, slow, n)
                     for side, (slow, n) in sorted(counts.items(), key=lambda kv: (kv[0] != "noshim", kv[0])))


def fisher_exact(a, b, c, d):
    """Two-sided p of Fisher's exact test on the table [[a, b], [c, d]]: the probability, with the
    margins fixed, of a table no likelier than this one."""
    row, col, n = a + b, a + c, a + b + c + d

    def likelihood(x):
        return math.comb(row, x) * math.comb(n - row, col - x) / math.comb(n, col)

    seen = likelihood(a)
    return min(1.0, sum(p for p in map(likelihood, range(max(0, col + row - n), min(row, col) + 1))
                        if p <= seen * (1 + 1e-9)))


if __name__ == "__main__":
    main()
