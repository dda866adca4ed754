"""pass_power.py: how often the suite's verdict would PASS a shim that costs nothing, row by row, from
the suite's --out folders (merged as run.py --merge merges them): whether more pairs can settle a
WIDE row, and about how many.

    python3 tests/bench/workloads/pass_power.py DIR [DIR ...] [--workload NAME] [--key KEY]
                                                [--multiples 1,2,4,8,16] [--resamples 400]

For every row whose bound says the shim has nothing to speed up (>=0.99x, <=+100ns) and that has at
least MIN_PAIRS pairs: if the shim cost nothing, which run of a pair was the shim's would be chance,
so each resample draws as many of the row's pairs as the projection asks (with replacement), swaps
the two runs of each with probability 1/2, and judges the draw as the table does (run.py: the ratio
of the two sides' medians, or their ns difference, and the median of the pairs' own figures, both at
the bound). The share of resamples that PASS, at the row's own number of pairs times each multiple,
is the chance that a shim costing nothing PASSes there; beside it, at the largest multiple, each of
the two figures' share alone, so that a row whose ratio of medians cannot settle is told from one
whose pairs' median cannot. A row whose runs fall at one of two CPU speeds about half the time each
has its pooled median in the gap between them, and each side's median lands at either edge of it as
the draw goes: its ratio of medians jumps by the gap about as often as not, however many pairs
(2026-12-04, H200s: torch_reuse's three 4 KB rows, 44 pairs, PASS 0.41-0.65 of the time from 1x to
16x). Beside the projection, the spread of the pairs' own figures and the pairs that a mean of normal
values of that spread would need for +-1 % (a median about 1.6 times as many): a rough floor for any
figure of such pairs. A projection from the pairs at hand:
it holds as far as they sample the host's states (a multiple draws the same runs again, smoothed).
A row the shim does speed up reads as if it did not: the projection asks what the noise alone gives.
Seeded: the same folders give the same figures. Reads only; a folder the merge refuses is named.
Standard library only."""
import argparse
import math
import os
import random
import statistics
import sys

import merge
import run

MIN_PAIRS = 10  # fewer give too few distinct runs to draw from
PASS_SHARE = 0.95  # "settles": a shim costing nothing PASSes at least this often


def row_pairs(runs, workload_only=None, key_only=None):
    """{(workload, key, expect, side): [(no-shim value, side value)]} over the pairs both sides
    completed with times above 0 (the smoothing scales them), for the rows whose bound is not a
    speed-up; a row without such pairs is left out."""
    by_pair = {}  # (workload, key, expect, side) -> {pair: value}
    for r in runs:
        if r.get("status") != "ok" or workload_only and r["workload"] != workload_only:
            continue
        for m in r.get("metrics") or []:
            expect = m.get("expect", "same")
            if expect == "faster" or key_only and m.get("key") != key_only or not isinstance(m.get("value"), (int, float)):
                continue
            by_pair.setdefault((r["workload"], m["key"], expect, r["side"]), {})[r["pair"]] = m["value"]
    rows = {}
    for (workload, key, expect, side), values in by_pair.items():
        base = by_pair.get((workload, key, expect, "noshim"))
        if side == "noshim" or not base:
            continue
        pairs = [(base[p], values[p]) for p in sorted(set(base) & set(values)) if values[p] > 0 and base[p] > 0]
        if pairs:
            rows[(workload, key, expect, side)] = pairs
    return rows


def quartile_spread(values):
    """(upper quartile - lower quartile) / 1.349 of sorted values: their standard deviation where they
    are normal, and little moved by a few stray ones."""
    n = len(values)
    return (values[(3 * n) // 4] - values[n // 4]) / 1.349


def pairs_spread(expect, pairs):
    """The spread of the pairs' own log ratios (ns rows: of their differences, in ns; quartile_spread)
    and, for a ratio row, the pairs a mean of normal values of that spread would need for a 95 %
    interval of +-1 %: (1.96 x spread / 0.01)^2, fewer than a median needs (None for an ns row: its
    bound is 100 ns, not 1 %)."""
    spread = quartile_spread(sorted(o - b if expect == "ns" else math.log(o / b) for b, o in pairs))
    return spread, None if expect == "ns" else math.ceil((1.96 * spread / 0.01) ** 2)


def figures(expect, pairs):
    """(the row's figure, the median of the pairs' own figures), as run.py computes them."""
    return (run.figure(expect, run.median([b for b, _ in pairs]), run.median([o for _, o in pairs])),
            run.median([run.figure(expect, b, o) for b, o in pairs]))


def bandwidth(pairs):
    """The spread, as a logarithm, that pass_shares gives each run drawn: Silverman's rule of thumb
    for the pairs' own log ratios (0.9 x the lesser of their standard deviation and quartile_spread,
    x pairs^-1/5), over the square root of 2 (both runs of a pair are smoothed)."""
    logs = sorted(math.log(o / b) for b, o in pairs)
    spread = min(statistics.pstdev(logs), quartile_spread(logs)) or statistics.pstdev(logs)
    return 0.9 * spread * len(logs) ** -0.2 / math.sqrt(2)


def pass_shares(expect, pairs, h, n, resamples, rng):
    """(PASS, the figure alone, the pairs' median alone): the share of resamples of n pairs, each
    pair's runs swapped with probability 1/2 and each run smoothed (times e^(h z), z normal, h the
    pairs' bandwidth: a draw of more pairs than were run repeats the same runs, and medians of
    repeated values tie; the smoothing gives them the spread of runs like them), that meet the bound."""
    both = figure_only = median_only = 0
    for _ in range(resamples):
        draw = [(b * math.exp(h * rng.gauss(0, 1)), o * math.exp(h * rng.gauss(0, 1)))
                for b, o in (rng.choice(pairs) for _ in range(n))]
        draw = [(b, o) if rng.random() < 0.5 else (o, b) for b, o in draw]
        fig_ok, med_ok = (run.meets_bound(expect, f) for f in figures(expect, draw))
        both += fig_ok and med_ok
        figure_only += fig_ok
        median_only += med_ok
    return both / resamples, figure_only / resamples, median_only / resamples


def cell(expect, value):
    return ("%+.0fns" if expect == "ns" else "%.3fx") % value


def multiples_arg(text):
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v < 1 or v > 64 for v in values) or values != sorted(set(values)):
        raise argparse.ArgumentTypeError("%r: expected rising whole numbers from 1 to 64, comma-separated "
                                         "(e.g. 1,2,4,8,16)" % text)
    return values


def resamples_arg(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 50 <= value <= 100000:
        raise argparse.ArgumentTypeError("%r: expected a whole number of resamples from 50 to 100000" % text)
    return value


def main():
    ap = argparse.ArgumentParser(description="how often the suite's verdict would PASS a shim that costs nothing")
    ap.add_argument("folders", nargs="+", metavar="DIR")
    ap.add_argument("--workload", help="only this workload")
    ap.add_argument("--key", help="only this row (a metric key, e.g. 4KB_nb)")
    ap.add_argument("--multiples", type=multiples_arg, default=[1, 2, 4, 8, 16],
                    help="project to the row's pairs times each (default 1,2,4,8,16)")
    ap.add_argument("--resamples", type=resamples_arg, default=400, help="resamples a projection (default 400)")
    args = ap.parse_args()
    for folder in args.folders:
        if not os.path.isdir(folder):
            sys.exit("pass_power.py: %s: not a folder (expected run.py's --out folder)" % folder)
    try:
        merged = merge.merge(args.folders)
    except merge.MergeError as e:
        sys.exit("pass_power.py: %s" % e)
    rows = row_pairs(merged["runs"], args.workload, args.key)
    if not rows:
        sys.exit("pass_power.py: no row with a bound of >=%.2fx or <=+%dns and pairs of both sides in %s%s"
                 % (run.RATIO_SAME, run.NS_MAX, " ".join(args.folders),
                    "" if not (args.workload or args.key) else " (--workload/--key left none)"))
    top = args.multiples[-1]
    print("# how often a shim costing nothing would PASS each row: its pairs drawn again, each pair's runs "
          "swapped at random, judged as the table (figure and pairs' median at the bound); %d resamples a "
          "projection, seeded" % args.resamples)
    print("%-24s %-13s %-5s %5s %9s %9s %7s %7s  %-*s  %s" % (
        "workload", "row", "side", "pairs", "figure", "pairs'", "spread", "+-1%", 6 * len(args.multiples) - 1,
        "P(PASS) at " + ",".join("%dx" % m for m in args.multiples), "at %dx: figure, pairs' median alone; settles" % top))
    rng = random.Random(run.BOOTSTRAP_SEED)
    for (workload, key, expect, side), pairs in sorted(rows.items()):
        n = len(pairs)
        figure, pairs_median = figures(expect, pairs)
        spread, needed = pairs_spread(expect, pairs)
        head = "%-24s %-13s %-5s %5d %9s %9s %7s %7s" % (workload, key, side, n, cell(expect, figure),
                                                      cell(expect, pairs_median),
                                                      ("%.1f" if expect == "ns" else "%.3f") % spread,
                                                      "-" if needed is None else needed)
        if n < MIN_PAIRS:
            print("%s  too few pairs to draw from (%d, at least %d)" % (head, n, MIN_PAIRS))
            continue
        h = bandwidth(pairs)
        shares = [pass_shares(expect, pairs, h, n * m, args.resamples, rng) for m in args.multiples]
        settles = next((n * m for m, s in zip(args.multiples, shares) if s[0] >= PASS_SHARE), None)
        print("%s  %s  %.2f, %.2f; %s" % (
            head, " ".join("%5.2f" % s[0] for s in shares), shares[-1][1], shares[-1][2],
            "at %d pairs" % settles if settles else "not by %d pairs" % (n * top)))
    print("# pairs': the median of the pairs' own figures; spread: of the pairs' own log ratios (ns rows: "
          "differences), interquartile range / 1.349; +-1%%: the pairs a mean of normal values of that spread "
          "needs for a 95 %% interval of +-1 %%; settles: the fewest pairs projected at which a shim costing "
          "nothing PASSes %d%% of the time" % round(100 * PASS_SHARE))


if __name__ == "__main__":
    main()
