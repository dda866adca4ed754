#!/usr/bin/env python3
"""small_tensor_layout.py: where a program's small CPU tensors lie, seen in the order it copies them
(issue #12). The shim answers a small pageable copy from a memo of pages; a cheaper answer, one
range per thread covering neighbouring plain pages, was tried and reverted at 2564404 because
PyTorch's 1000 x 4 KB tensors took it for 265 of 3000 copies (tests/bench/workloads/HISTORY.md,
fifty-fourth stop). This prints what decides that: the steps between consecutive tensors' first
bytes (by size, and how many go up), the mappings of /proc/self/maps they lie in, and, for each
reach, how many copies of a second pass one such range would answer after a first pass built it
(grown to a tensor's page when it lies within the reach past either end, else restarted there; the
pages between taken as plain).
Never asserts anything.

Usage: python3 tests/bench/small_tensor_layout.py [--count N] [--bytes B] [--reach PAGES,...]
                                                  [--addresses FILE]
  --count N      tensors made (default 1000), as tests/bench/inprocess_ab.py makes its small ones:
                 torch.full((B / 4,), float(i)), float32
  --bytes B      bytes a tensor (default 4096)
  --reach P,...  pages a range may grow over (default 8,256,16384)
  --addresses F  read the addresses (one a line, hexadecimal or decimal, in copy order) from F
                 instead of making tensors: no PyTorch needed, no mappings printed
Without PyTorch (and without --addresses) it prints a line and exits 0; bad usage exits 2."""
import argparse
import collections
import sys

PAGE = 4096
STEP_BUCKETS = ((1, "at most 4 KiB"), (8, "at most 32 KiB"), (256, "at most 1 MiB"), (16384, "at most 64 MiB"),
                (None, "more than 64 MiB"))


def reaches(text):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError("%r: expected pages, comma-separated whole numbers >= 0" % text)
    return values


def step_bucket(step):
    pages = abs(step) / PAGE
    for limit, name in STEP_BUCKETS:
        if limit is None or pages <= limit:
            return name
    return STEP_BUCKETS[-1][1]


def run_coverage(addresses, reach):
    """Copies of a second pass that the range built by a first pass answers."""
    base = end = None
    for a in addresses:
        lo = a // PAGE * PAGE
        hi = lo + PAGE
        if base is not None and base <= lo < end:
            continue
        if base is not None and lo >= end and lo - end <= reach * PAGE:
            end = hi
        elif base is not None and hi <= base and base - hi <= reach * PAGE:
            base = lo
        else:
            base, end = lo, hi
    return sum(1 for a in addresses if base <= a < end) if base is not None else 0


def mappings(addresses):
    """{a /proc/self/maps line: tensors in it}, or None where the file cannot be read."""
    try:
        with open("/proc/self/maps") as f:
            spans = []
            for line in f:
                lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
                spans.append((lo, hi, line.rstrip("\n")))
    except OSError:
        return None
    found = collections.Counter()
    for a in addresses:
        found[next((text for lo, hi, text in spans if lo <= a < hi), "(in no mapping)")] += 1
    return found


def report(addresses, reach_list, maps):
    steps = [b - a for a, b in zip(addresses, addresses[1:])]
    print("%d addresses, from %#x to %#x; %d of %d steps go up" % (len(addresses), min(addresses), max(addresses),
                                                                   sum(s > 0 for s in steps), len(steps)))
    counts = collections.Counter(step_bucket(s) for s in steps)
    for _, name in STEP_BUCKETS:
        print("  steps of %-18s %d" % (name + ":", counts[name]))
    for r in reach_list:
        print("one range growing over at most %d pages answers %d of %d copies of the next pass"
              % (r, run_coverage(addresses, r), len(addresses)))
    if maps:
        print("mappings (tensors in each):")
        for text, n in maps.most_common():
            print("  %5d  %s" % (n, text))


def main():
    p = argparse.ArgumentParser(add_help=True, usage=__doc__.split("Usage: ")[1].split("\n  --")[0])
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--bytes", type=int, default=4096)
    p.add_argument("--reach", type=reaches, default=[8, 256, 16384])
    p.add_argument("--addresses")
    args = p.parse_args()
    if args.count < 2 or args.bytes < 4:
        p.error("--count must be at least 2 and --bytes at least 4, not %d and %d" % (args.count, args.bytes))
    if args.addresses:
        try:
            with open(args.addresses) as f:
                addresses = [int(t, 0) for t in f.read().split()]
        except (OSError, ValueError) as e:
            p.error("--addresses %s: expected one address a line (hexadecimal 0x... or decimal): %s"
                    % (args.addresses, e))
        if len(addresses) < 2:
            p.error("--addresses %s: expected at least 2 addresses, found %d" % (args.addresses, len(addresses)))
        report(addresses, args.reach, None)
        return 0
    try:
        import torch
    except ImportError:
        print("small_tensor_layout.py: PyTorch is not installed here; nothing measured")
        return 0
    tensors = [torch.full((args.bytes // 4,), float(i)) for i in range(args.count)]
    addresses = [t.data_ptr() for t in tensors]
    report(addresses, args.reach, mappings(addresses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
