#!/usr/bin/env python3
"""summary_check.py: compares a test program's "expect" lines with the shim's JSON summary.

usage: summary_check.py SUMMARY_FILE PROGRAM_OUTPUT

SUMMARY_FILE holds the summary as its last line starting with '{' (PINSHIM_SUMMARY=json).
PROGRAM_OUTPUT holds lines "expect <dir> <host_kind|any> <count>" and optionally "expect failed <n>".
Every expected (dir, kind) count must equal the summary's count summed over size buckets and
actions, and each direction's total must equal the sum of what was expected for it (so extra or
double-counted copies fail too). Prints what differs; exit status 1 on any difference.
"""
import collections
import json
import sys


def load_summary(path):
    last = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("{"):
                last = line
    if last is None:
        sys.exit(f"summary_check: no JSON summary line in {path}")
    return json.loads(last)


def main():
    summary = load_summary(sys.argv[1])
    expected, expected_failed = {}, None
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if len(words) == 3 and words[:2] == ["expect", "failed"]:
                expected_failed = int(words[2])
            elif len(words) == 4 and words[0] == "expect":
                expected[(words[1], words[2])] = int(words[3])
    got = collections.Counter()
    per_dir = collections.Counter()
    for row in summary["transfers"]:
        got[(row["dir"], row["host_kind"])] += row["count"]
        per_dir[row["dir"]] += row["count"]
    problems = []
    want_dir = collections.Counter()
    for (direction, kind), count in sorted(expected.items()):
        want_dir[direction] += count
        have = per_dir[direction] if kind == "any" else got[(direction, kind)]
        if have != count:
            problems.append(f"{direction} {kind}: expected {count}, summary has {have}")
    if expected:
        for direction in sorted(set(per_dir) | set(want_dir)):
            if per_dir[direction] != want_dir[direction]:
                problems.append(f"{direction} total: expected {want_dir[direction]}, summary has {per_dir[direction]}")
    if expected_failed is not None and summary.get("failed_copies") != expected_failed:
        problems.append(f"failed copies: expected {expected_failed}, summary has {summary.get('failed_copies')}")
    for p in problems:
        print("summary_check: " + p)
    if problems:
        for row in summary["transfers"]:
            print("summary_check:   row " + json.dumps(row))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
