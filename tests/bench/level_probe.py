#!/usr/bin/env python3
"""level_probe.py: which CPU level a process meets over its life, with and without the shim. On the
H200 hosts a process runs at one of two speeds about 1.6x apart, set where it lands and changing
over seconds (tests/bench/workloads/HISTORY.md), so a fresh-process ratio of a small row mixes the
shim's cost with how often each side met the slower level. This tells the two apart: fresh
processes of several variants in rotation, each timing blocks of one 4 KB pageable pass
(torch_reuse.py's 1000 x 4 KB .to(cuda, non_blocking), then a synchronize) and the workloads'
pure-Python control loop after it (wl.control_us), for --seconds once CUDA is up.

Per block: seconds since the process started, the CPU it ran on, the pass, the control, the main
thread's run and run-queue wait (/proc/thread-self/schedstat) and the steal ticks of its CPU
(/proc/stat). Then per variant: the share of blocks at the slower level (control above 1.3 times the
median of the fastest tenth of every block pooled) and each process's, how many processes ran most
of their blocks there, the medians of the pass (all blocks, the faster level's,
the slower level's) and of the control; the faster level's pass process by process against the
first variant (each process's median there; its ratio with a 95 % interval, the processes
resampled); per CPU, the blocks and their slow share; per process, how
often the main thread changed CPU between blocks. Never judges the numbers.

    python3 tests/bench/level_probe.py --rounds 8 --seconds 4 --out F -- \\
        none=none shim=build/libpinshim.so noprewarm=build/libpinshim.so,PINSHIM_POOL_PREWARM=off empty=empty
    python3 tests/bench/level_probe.py --read F [F...]          # the table again, from --out files
                                                                # (plain or gzip'd: F.gz)

A variant is compare_builds.py's NAME=LIBRARY[,KEY=VALUE...]: LIBRARY the library to preload,
"none", or "empty" (a library with nothing in it, built here with cc). Needs PyTorch
and a GPU; prints a line and exits 0 without them. Standard library (and torch in the children)."""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")
sys.path.insert(0, WORKLOADS)
import compare_builds  # noqa: E402  its variants: NAME=LIBRARY[,KEY=VALUE...]
import merge  # noqa: E402  read_lines: a records file, plain or gzip'd
import run  # noqa: E402  the suite's seeded bootstrap (run.two_sample_interval)
import wl  # noqa: E402  control_us, torch_gpu_missing

MIN_FAST_BLOCKS = 50  # a process's faster-level median needs this many blocks there
SLOWER = 1.3  # the levels stand 1.6-1.9x apart; a level's own blocks spread about 10 %
FIELDS = ("t", "cpu", "pass_ms", "control_us", "wait_ms", "steal_ticks")


def child(seconds):
    """One process: its blocks, as one JSON line on stdout."""
    getcpu = ctypes.CDLL(None).sched_getcpu  # glibc's: Python's os module has no binding
    t_start = time.monotonic()
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            age = float(f.read().split()[0]) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        age = 0.0
    import torch
    dev = torch.device("cuda")
    torch.ones(1, device=dev)
    torch.cuda.synchronize()
    small = [torch.arange(1024, dtype=torch.float32) + i for i in range(1000)]

    def one_pass():
        [x.to(dev, non_blocking=True) for x in small]
        torch.cuda.synchronize()

    def schedstat():
        with open("/proc/thread-self/schedstat") as f:
            run, wait, _ = f.read().split()
        return int(run), int(wait)

    def steal(cpu):
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("cpu%d " % cpu):
                    return int(line.split()[8])
        return 0

    for _ in range(3):
        one_pass()
    blocks = []
    t_up = time.monotonic()
    while time.monotonic() - t_up < seconds:
        cpu = getcpu()
        s0, st0 = schedstat(), steal(cpu)
        t0 = time.perf_counter_ns()
        one_pass()
        t1 = time.perf_counter_ns()
        control = wl.control_us()
        s1, st1 = schedstat(), steal(cpu)
        blocks.append({"t": round(time.monotonic() - t_start + age, 3), "cpu": cpu,
                       "pass_ms": round((t1 - t0) / 1e6, 3), "control_us": round(control, 1),
                       "run_ms": round((s1[0] - s0[0]) / 1e6, 3), "wait_ms": round((s1[1] - s0[1]) / 1e6, 3),
                       "steal_ticks": st1 - st0})
    print(json.dumps({"up_s": round(t_up - t_start + age, 3), "threads": len(os.listdir("/proc/self/task")),
                      "blocks": blocks}))


def median(v):
    return statistics.median(v) if v else float("nan")


def table(runs):
    controls = [b["control_us"] for r in runs for b in r["blocks"]]
    if not controls:
        print("level_probe: no blocks")
        return
    fastest = sorted(controls)[:max(1, len(controls) // 10)]
    floor = median(fastest)
    cut = SLOWER * floor
    names = list(dict.fromkeys(r["variant"] for r in runs))
    print("slower level: control above %.1f us (%.1f x %.1f, the median of the fastest tenth of all %d blocks)"
          % (cut, SLOWER, floor, len(controls)))
    print("%-12s %5s %7s %10s %10s %9s %9s %9s %8s %8s %6s" % (
        "variant", "procs", "blocks", "slow share", "slow procs", "pass ms", "fast pass", "slow pass",
        "control", "wait ms", "steal"))
    for name in names:
        rs = [r for r in runs if r["variant"] == name]
        bs = [b for r in rs for b in r["blocks"]]
        slow = [b["pass_ms"] for b in bs if b["control_us"] > cut]
        fast = [b["pass_ms"] for b in bs if b["control_us"] <= cut]
        shares = sorted(sum(b["control_us"] > cut for b in r["blocks"]) / max(1, len(r["blocks"])) for r in rs)
        slow_procs = sum(median([b["control_us"] for b in r["blocks"]]) > cut for r in rs if r["blocks"])
        print("%-12s %5d %7d %9.0f%% %10s %9.3f %9.3f %9.3f %8.1f %8.3f %6d" % (
            name, len(rs), len(bs), 100.0 * len(slow) / max(1, len(bs)), "%d/%d" % (slow_procs, len(rs)),
            median([b["pass_ms"] for b in bs]), median(fast), median(slow),
            median([b["control_us"] for b in bs]), median([b["wait_ms"] for b in bs]),
            sum(b["steal_ticks"] for b in bs)))
        print("%-12s   each process's slow share: %s; threads %s; CUDA up at %s s" % (
            "", " ".join("%.2f" % s for s in shares), sorted({r["threads"] for r in rs}),
            " ".join("%.1f" % r["up_s"] for r in rs)))
    # Blocks of one process share its state, so the variants are compared process by process: each
    # process's median pass over its blocks at the faster level, against the first variant's.
    per = {n: [median([b["pass_ms"] for b in r["blocks"] if b["control_us"] <= cut])
               for r in runs if r["variant"] == n
               and sum(b["control_us"] <= cut for b in r["blocks"]) >= MIN_FAST_BLOCKS] for n in names}
    print("at the faster level, process by process (each process's median pass over its %d or more blocks "
          "there), against %s:" % (MIN_FAST_BLOCKS, names[0]))
    for name in names:
        base, mine = per[names[0]], per[name]
        if not mine or not base:
            print("  %-12s no process with %d blocks at the faster level" % (name, MIN_FAST_BLOCKS))
            continue
        ratio = median(base) / median(mine)
        iv = run.two_sample_interval(base, mine, lambda a, b: median(a) / median(b))
        print("  %-12s %2d processes, median %.3f ms; %s / %s %.3fx%s" % (
            name, len(mine), median(mine), names[0], name, ratio,
            " (95%% interval %.3f-%.3fx)" % iv if iv else ""))
    print("by CPU: blocks, slow share, blocks per variant")
    for cpu in sorted({b["cpu"] for r in runs for b in r["blocks"]}):
        bs = [b for r in runs for b in r["blocks"] if b["cpu"] == cpu]
        by_variant = " ".join("%s:%d" % (n, sum(1 for r in runs if r["variant"] == n for b in r["blocks"]
                                                if b["cpu"] == cpu)) for n in names)
        print("  cpu %3d %7d %5.0f%%  %s" % (cpu, len(bs), 100.0 * sum(b["control_us"] > cut for b in bs) / len(bs),
                                             by_variant))
    print("CPU changes between blocks, per process:")
    for name in names:
        print("  %-12s %s" % (name, " ".join(str(sum(a["cpu"] != b["cpu"] for a, b in zip(r["blocks"], r["blocks"][1:])))
                                            for r in runs if r["variant"] == name)))


def read_runs(paths):
    """The processes of --out files; a missing file or a line that is not one is an error naming it."""
    runs = []
    for path in paths:
        try:
            lines = merge.read_lines(path)
        except merge.UnreadableRuns as e:
            sys.exit("level_probe: cannot read %s: %s" % (path, e))
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                ok = isinstance(rec.get("variant"), str) and "up_s" in rec and "threads" in rec and all(
                    isinstance(b.get(k), (int, float)) for b in rec["blocks"] for k in FIELDS)
            except (ValueError, KeyError, TypeError, AttributeError):
                ok = False
            if not ok:
                sys.exit("level_probe: %s:%d: not a process's record (expected a JSON object with variant, "
                         "up_s, threads and blocks of %s)" % (path, n, ", ".join(FIELDS)))
            runs.append(rec)
    return runs


def main(argv):
    if argv[:1] == ["--child"]:
        child(float(argv[1]))
        return 0
    ap = argparse.ArgumentParser(prog="level_probe.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4, help="rounds of every variant (default 4)")
    ap.add_argument("--seconds", type=float, default=4.0, help="seconds of blocks per process (default 4)")
    ap.add_argument("--budget", type=float, default=0, help="start no round that would end past this many seconds")
    ap.add_argument("--out", help="append each process's record there, one JSON line each")
    ap.add_argument("--read", nargs="+", metavar="FILE", help="run nothing: the table of earlier --out files")
    ap.add_argument("variants", nargs="*", metavar="VARIANT")
    args = ap.parse_args(argv)
    if args.read:
        table(read_runs(args.read))
        return 0
    if args.rounds < 1:
        ap.error("--rounds must be at least 1, not %d" % args.rounds)
    if not args.seconds > 0:
        ap.error("--seconds must be above 0, not %g" % args.seconds)
    variants, built = [], {}
    for spec in args.variants:
        try:
            variants.append(compare_builds.variant(spec, built))
        except ValueError as e:
            ap.error(str(e))
    if not variants:
        ap.error("no variant: give NAME=LIBRARY[,KEY=VALUE...], e.g. none=none shim=build/libpinshim.so")
    missing = wl.torch_gpu_missing()
    if missing:
        print("level_probe: skipped: PyTorch with a CUDA device is needed (%s)" % missing)
        return 0
    runs, t0, longest = [], time.monotonic(), 0.0
    out = open(args.out, "a") if args.out else None
    for rnd in range(args.rounds):
        if args.budget and time.monotonic() - t0 + longest > args.budget:
            print("level_probe: stopped after %d rounds: another would end past --budget %g s" % (rnd, args.budget))
            break
        r0 = time.monotonic()
        for name, env in variants[rnd % len(variants):] + variants[:rnd % len(variants)]:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(args.seconds)],
                               env=env, capture_output=True, text=True, timeout=120 + args.seconds)
            lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
            if p.returncode or not lines:
                print("level_probe: %s, round %d: exit status %d, no record: %s"
                      % (name, rnd + 1, p.returncode, (p.stderr.strip().splitlines() or ["no output"])[-1]))
                continue
            rec = dict(json.loads(lines[-1]), variant=name, round=rnd + 1)
            runs.append(rec)
            if out:
                out.write(json.dumps(rec) + "\n")
                out.flush()
        longest = max(longest, time.monotonic() - r0)
    if out:
        out.close()
    table(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
