#!/usr/bin/env python3
"""report_speed.py: how many transfer records per second pinshim-report reads on one core.

Writes synthetic job logs once (tests/report/gen_logs.py: by default 200 files, 1,000,000 transfer
records, about 300 MB), then runs `PYTHON REPORT LOGDIR --jobs 1 --progress never` (text tables to
/dev/null) RUNS times and prints, for each run and as the median, the wall time and the CPU time
(user + sys) of the report's process and the records per second of each. On a shared machine the
CPU time is the steadier figure. Several interpreters and reports can be given (each is run RUNS
times, alternating, so that a change of load hits all of them alike).

usage: tests/bench/report_speed.py [--python PY]... [--report SCRIPT]... [--logs DIR] [--files N]
                                   [--records N] [--runs N]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def one_run(python, report, logs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([python, report, logs, "--jobs", "1", "--progress", "never"], stdout=subprocess.DEVNULL,
                   check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", help="interpreter (repeatable; default: python3 on PATH)")
    parser.add_argument("--report", action="append", help="pinshim-report script (repeatable; default: this tree's)")
    parser.add_argument("--logs", default="/tmp/pinshim-report-bench", help="folder for the logs (reused if there)")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    pythons = args.python or ["python3"]
    reports = args.report or [os.path.join(ROOT, "scripts", "pinshim-report")]
    logs = os.path.join(args.logs, "%d-files-%d-records" % (args.files, args.records))
    if not os.path.isdir(logs):
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "report", "gen_logs.py"), logs,
                        "--files", str(args.files), "--records", str(args.records)], check=True)
    size = sum(os.path.getsize(os.path.join(logs, f)) for f in os.listdir(logs))
    print("logs: %s (%d files, %d transfer records, %.0f MB)" % (logs, args.files, args.records, size / 1e6))
    cases = [(py, rep) for rep in reports for py in pythons]
    times = {case: [] for case in cases}
    for run in range(args.runs):
        for case in cases:
            wall, cpu = one_run(case[0], case[1], logs)
            times[case].append((wall, cpu))
            print("run %d  %-24s %s: wall %.2f s (%.0f rec/s), cpu %.2f s (%.0f rec/s)"
                  % (run + 1, case[0], case[1], wall, args.records / wall, cpu, args.records / cpu), flush=True)
    print("median of %d runs:" % args.runs)
    for case in cases:
        wall = statistics.median(t[0] for t in times[case])
        cpu = statistics.median(t[1] for t in times[case])
        version = subprocess.run([case[0], "--version"], capture_output=True, text=True).stdout.strip()
        print("  %-24s (%s) %s: wall %.2f s = %.0f rec/s; cpu %.2f s = %.0f rec/s"
              % (case[0], version, case[1], wall, args.records / wall, cpu, args.records / cpu))


if __name__ == "__main__":
    main()
