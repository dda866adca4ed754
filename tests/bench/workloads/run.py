#!/usr/bin/env python3
"""run.py: the real-workload benchmark suite (make bench-workloads; tests/bench/workloads/README.md).

Each workload runs in a fresh process without the shim, with it (LD_PRELOAD=build/libpinshim.so)
and, unless --no-guard, with it and PINSHIM_GUARD=warn PINSHIM_GUARD_PAGES=first, one after the
other (in reverse order in even pairs), --pairs times over. Then one table: each side's median and min-max, the ratios (no-shim time
over shim time: above 1 the shim is faster), bound checks (PASS, MISS, or WIDE for a miss that the
pairs' spread cannot tell from the bound: pair_interval; never an error), and whether
every run's results were identical. Before the pairs, unless --inprocess 0, the small operations'
cost measured inside one process (inprocess.py), printed as a second table. Exit status 0; 1 when a
result differed or a run failed (crashed, timed out, printed no result, or skipped on some sides
only, or an in-process measurement failed); 2 for bad usage. With --merge DIR... it runs nothing
and prints the table of earlier runs' --out folders as one run's (merge.py).
Standard library only; the workloads bring their own frameworks."""
import argparse
import datetime
import fnmatch
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import groups
import inprocess
import merge
import turns
import wl

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

SIDES = ("noshim", "shim", "guard")
SIDE_TITLE = {"noshim": "no shim", "shim": "shim", "guard": "shim+guard"}
GUARD_ENV = {"PINSHIM_GUARD": "warn", "PINSHIM_GUARD_PAGES": "first"}
RATIO_SAME, RATIO_FASTER, NS_MAX = 0.99, 1.0, 100.0  # the bounds (README.md here: "Bounds")
# a miss's interval over resampled pairs (pair_interval, pairs_median_interval)
BOOTSTRAP_ROUNDS, BOOTSTRAP_MIN_PAIRS, BOOTSTRAP_SEED = 2000, 3, 12
C_LOOP_ITERS = 20000
STDERR_TAIL = 30


class Workload:
    """One program of the suite: how to start it, how long a run takes on the GPU machine (for the
    plan and the budget: the median run of each on an H200 instance, 2026-11-27, framework start-up
    included), Turn 2's figures for its metrics (FACTS.md) to compare with, and the in-process rows
    (inprocess.ROWS' keys) that time the same operation as a metric: where the pairs cannot settle a
    row, that row's note gives what observing costs it inside one process."""

    def __init__(self, name, script=None, args=(), est_s=3.0, turn2=None, default=True, c_loop=False,
                 lockstep=False, inside=None):
        self.name, self.script, self.args, self.est_s = name, script, list(args), est_s
        self.turn2 = turn2 or {}
        self.inside = inside or {}
        self.default = default
        self.c_loop = c_loop
        self.lockstep = lockstep  # its script times blocks in turns (wl.turn): --lockstep runs its pairs so

    def argv(self, ctx):
        if self.c_loop:
            return [ctx.c_binary or "<tests/bench/guard_cost.c, built at the start>", "4"]
        return [ctx.python, os.path.join(HERE, self.script)] + self.args

    def extra_env(self):
        return {"GUARD_COST_ITERS": str(C_LOOP_ITERS)} if self.c_loop else {}


WORKLOADS = [
    Workload("torch_train", "torch_train.py", est_s=11.5, turn2={"step": "1.06x"}, lockstep=True,
             inside={"step": "MLP step"}),
    Workload("torch_graph", "torch_train.py", ["--graph"], est_s=11.0, lockstep=True,
             inside={"step": "graph-replayed step"}),
    Workload("torch_dataloader", "torch_dataloader.py", ["--pin", "0"], est_s=6.4, turn2={"batch": "1.26x"}),
    Workload("torch_dataloader_pinned", "torch_dataloader.py", ["--pin", "1"], est_s=6.4, turn2={"batch": "0.88x"},
             inside={"batch": "DataLoader pinned"}),
    Workload("torch_item", "torch_item.py", est_s=4.6, turn2={"item": "0.88x"}, lockstep=True,
             inside={"item": "item"}),
    Workload("torch_reuse", "torch_reuse.py", est_s=7.7,
             turn2={"4KB": "0.99x", "4MB": "5.85x", "4MB_pinned": "~17ms"}, lockstep=True,
             inside={"4KB": "4KB pageable", "4KB_nb": "4KB pageable nb", "4KB_pinned": "4KB pinned nb"}),
    Workload("torch_neighbours", "torch_neighbours.py", est_s=5.7),
    Workload("torch_offload", "torch_offload.py", est_s=5.2,
             turn2={"d2h": "5.3x", "h2d": "3.1x", "d2h_pinned": "9.8ms"}, lockstep=True),
    Workload("torch_fresh", "torch_fresh.py", est_s=5.5, turn2={"64MiB": "1.5x", "64MiB_pinned": "1.2ms"},
             lockstep=True, inside={"1MiB": "1MB fresh pageable", "4MiB_pinned": "4MiB pinned nb"}),
    Workload("torch_first_d2h", "torch_first_copy.py", ["--dir", "d2h"], est_s=4.4),
    Workload("torch_first_h2d", "torch_first_copy.py", ["--dir", "h2d"], est_s=4.6),
    Workload("torch_pinned_d2h", "torch_pinned_d2h.py", est_s=4.3, turn2={"copy": "g+86us"}),
    Workload("cupy_copy", "cupy_copy.py", est_s=3.2, turn2={"asarray": "1.04x", "asnumpy": "4.3x"}, lockstep=True),
    Workload("jax_copy", "jax_copy.py", est_s=3.5, turn2={"device_put": "0.92x", "asarray": "1.04x"},
             lockstep=True, inside={"device_put": "jax device_put"}),
    Workload("c_dtoh_sync", est_s=0.5, turn2={"iter": "+160ns"}, c_loop=True, inside={"iter": "C loop"}),
]

# Stand-ins for testing the harness without a GPU (--fake): fake.py, values known in advance.
FAKE_WORKLOADS = [Workload("fake_" + m, "fake.py", [m], est_s=0.1, turn2={"t": "2.00x"} if m == "faster" else None,
                           default=m not in ("hang", "noisy", "drift", "turns", "turncrash", "turnhang"),
                           lockstep=m.startswith("turn"), inside={"t": "item"} if m == "noisy" else None)
                  for m in ("faster", "same", "ns", "missing", "mismatch", "crash", "shimskip", "hang", "noisy",
                            "drift", "turns", "turncrash", "turnhang")]


class Context:
    def __init__(self, args):
        self.args = args
        self.python = args.python
        self.shim = os.path.abspath(args.shim)
        self.sides = SIDES if args.guard else SIDES[:2]
        self.c_binary = None
        self.c_build_error = None
        self.work = None
        self.runs = []
        self.out = args.out
        self.started = time.time()
        self.header = []
        self.stop_note = None
        self.interrupted = False
        self.inprocess = None  # {"rows": [...], "problems": [...], "samples": {...}} once measured
        self.merged = None  # merge.merge()'s result with --merge


# ------------------------------------------------------------------------------------------ usage
def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="run.py", description="pinshim real-workload benchmarks: each workload in fresh processes, "
        "without and with the shim, alternating; one table at the end (tests/bench/workloads/README.md).")
    p.add_argument("--pairs", type=int, default=5, help="runs of each side per workload (default 5)")
    p.add_argument("--only", default="", metavar="NAME[,NAME]",
                   help="run only these workloads (names or shell patterns, comma separated)")
    p.add_argument("--guard", action=argparse.BooleanOptionalAction, default=True,
                   help="also run every workload with PINSHIM_GUARD=warn PINSHIM_GUARD_PAGES=first (default on)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write runs.jsonl (every run), table.md, table.txt and summary.json there "
                        "(default: $OUT/bench-workloads when OUT is set)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help="seconds per run (default 60; a lockstep run's own time: not while it waits for its turn)")
    p.add_argument("--lockstep", action=argparse.BooleanOptionalAction, default=False,
                   help="run the sides of a pair at the same time, taking turns, for the workloads that can "
                        "(default off: one after the other; README.md here, \"Lockstep\")")
    p.add_argument("--budget", type=float, default=540.0, metavar="S",
                   help="start no new pair once the next would end past S seconds (default 540; 0: no limit)")
    p.add_argument("--inprocess", type=int, default=None, metavar="N",
                   help="first measure the small operations inside one process, in N fresh processes "
                        "(inprocess.py; default 3, with --fake 0; 0: not at all)")
    p.add_argument("--inprocess-groups", type=int, default=None, metavar="G",
                   help="groups of blocks per in-process measurement (default %d for PyTorch, %d for the C loop)"
                        % (inprocess.PY_GROUPS, inprocess.C_GROUPS))
    p.add_argument("--inprocess-direct", action="store_true",
                   help="inside one process, also a third side with the shim out of the runtime's calls "
                        "(inprocess_ab.py --direct; groups of six blocks): a fourth table, the whole preload measured")
    p.add_argument("--inprocess-only", default=None, metavar="TEXT",
                   help="measure only the PyTorch rows whose name holds TEXT inside one process (inprocess_ab.py "
                        "--only; the control, the C loop and the per-call rows still run): more processes a call")
    p.add_argument("--shim", default=os.path.join(ROOT, "build", "libpinshim.so"), help="the library to preload")
    p.add_argument("--python", default=os.environ.get("PYTHON") or sys.executable,
                   help="interpreter for the workload scripts (default $PYTHON, else this one)")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--dry-run", action="store_true", help="print what would run and the expected time; run nothing")
    p.add_argument("--fake", action="store_true", help="use the stand-in workloads of fake.py (tests the harness)")
    p.add_argument("--groups", metavar="CPU[,CPU...]",
                   help="the run once per CPU, all at once, each group bound to its CPU, into DIR/g<CPU> under "
                        "--out, then one table of them all merged into --out (groups.py; README.md here, "
                        "\"One CPU per group\")")
    p.add_argument("--merge", nargs="+", metavar="DIR",
                   help="run nothing: one table from the runs in these earlier --out folders, their pairs one "
                        "after another and their in-process processes pooled (merge.py)")
    args = p.parse_args(argv)
    if args.pairs < 1:
        p.error("--pairs must be at least 1")
    if args.timeout <= 0:
        p.error("--timeout must be positive")
    if args.inprocess is None:
        args.inprocess = 0 if args.fake else 3
    if args.inprocess < 0:
        p.error("--inprocess must be 0 or more")
    if args.inprocess_groups is not None and args.inprocess_groups < 4:
        p.error("--inprocess-groups must be at least 4")
    if args.inprocess_only is not None and not args.inprocess_only.strip():
        p.error("--inprocess-only: expected part of a row's name (inprocess.py's rows), not an empty string")
    if args.out is None and os.environ.get("OUT") and not args.merge:
        args.out = os.path.join(os.environ["OUT"], "bench-workloads")
    if args.groups is not None:
        cpus = own_cpu_list(args.groups)
        if not cpus:
            p.error("--groups %s is not a list of this process's CPUs (%s)" % (
                args.groups, cpu_ranges(os.sched_getaffinity(0))))
        if args.merge or args.list or args.dry_run:
            p.error("--groups runs the suite: not with --merge, --list or --dry-run")
        if not args.out:
            p.error("--groups needs --out DIR (each group writes DIR/g<CPU>, the merged table DIR)")
        args.groups = cpus
    if args.merge and args.out and os.path.realpath(args.out) in [os.path.realpath(d) for d in args.merge]:
        p.error("--out %s is one of the folders to merge: write the merged table elsewhere" % args.out)
    return args, p


def chosen_workloads(registry, only, parser):
    if not only:
        return [w for w in registry if w.default]
    chosen = []
    for pat in [s.strip() for s in only.split(",") if s.strip()]:
        hits = [w for w in registry if fnmatch.fnmatchcase(w.name, pat)]
        if not hits:
            parser.error("--only: no workload matches '%s' (workloads: %s)" % (pat, ", ".join(w.name for w in registry)))
        chosen += [w for w in hits if w not in chosen]
    return [w for w in registry if w in chosen]  # the suite's order


# ------------------------------------------------------------------------------------------ running
def side_env(ctx, w, side, pair):
    env = dict(os.environ)
    env.pop("PINSHIM_LOG", None)  # the shim's JSON summary must come on stderr, where it is collected
    env.update(w.extra_env())
    env.update({"BENCH_WL_SIDE": side, "BENCH_WL_PAIR": str(pair), "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1"})  # no __pycache__ in the source tree
    others = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p and p != ctx.shim]
    if side == "noshim":
        if others:
            env["LD_PRELOAD"] = ":".join(others)
        else:
            env.pop("LD_PRELOAD", None)
        return env
    env["LD_PRELOAD"] = ":".join([ctx.shim] + others)
    env["PINSHIM_SUMMARY"] = "json"
    if side == "guard":
        env.update(GUARD_ENV)
    else:
        env["PINSHIM_GUARD"] = "off"
    return env


def env_delta(env):
    """The settings a side adds to or changes in the caller's environment (for the plan)."""
    keys = ["LD_PRELOAD", "PINSHIM_SUMMARY", "PINSHIM_GUARD", "PINSHIM_GUARD_PAGES", "GUARD_COST_ITERS"]
    return " ".join("%s=%s" % (k, env[k]) for k in keys if k in env and os.environ.get(k) != env[k])


def last_json(text, want):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict) and want in d:
                return d
    return None


def c_loop_level(stderr, size):
    """guard_cost's "# level SIZE key=value..." line for that size as a notes.rows entry (what
    row_levels.py reads: control_us, wall_ms, the threads' CPU ms; and cpu), or None."""
    for line in stderr.splitlines():
        f = line.split()
        if f[:3] != ["#", "level", size]:
            continue
        try:
            kv = dict(x.split("=", 1) for x in f[3:])
            level = {k: float(kv[k]) for k in ("control_us", "wall_ms", "main_cpu_ms", "shim_threads_ms",
                                               "other_threads_ms")}
        except (KeyError, ValueError):
            return None
        level.update(busiest_others=[], cpu=kv.get("cpu"))
        return level
    return None


def parse_c_loop(w, stdout, stderr):
    """guard_cost's table (bytes iters pair_all pair_first copy_ns) as a workload result, with the
    level its loop met (notes.rows.iter) where it printed one."""
    if "cannot dlopen libcuda.so.1" in stderr:
        return {"workload": w.name, "skipped": "no CUDA driver: libcuda.so.1 cannot be loaded"}
    rows = [l.split() for l in stdout.splitlines() if l.split() and l.split()[0].isdigit()]
    if not rows or len(rows[-1]) < 5:
        return None
    iters, ns = int(rows[-1][1]), float(rows[-1][4])
    notes = {"iters": iters}
    level = c_loop_level(stderr, rows[-1][0])
    if level:
        notes["rows"] = {"iter": level}
    return {"workload": w.name, "digest": None, "notes": notes,
            "metrics": [{"key": "iter", "label": "C: 4-byte cuMemcpyDtoHAsync into pinned + cuStreamSynchronize",
                         "unit": "ns", "value": ns, "expect": "ns", "ref": False}]}


def tail(text, n):
    return "\n".join(text.splitlines()[-n:])


def new_record(ctx, w, side, pair):
    """A run's record before it starts (run_one, Lockstep), with the command it will run."""
    # started (when it began) and runner (this run.py) tell it apart from every other run (merge.py):
    # groups started at once (--groups) can start runs in the same microsecond
    rec = {"workload": w.name, "side": side, "pair": pair, "status": None, "rc": None, "wall_s": None,
           "metrics": [], "digest": None, "skipped": None, "error": None, "notes": {}, "shim_summary": None,
           "started": round(time.time(), 6), "runner": os.getpid()}
    rec["command"] = " ".join(shlex.quote(a) for a in w.argv(ctx))
    return rec


def run_one(ctx, w, side, pair):
    rec = new_record(ctx, w, side, pair)
    if w.c_loop and not ctx.c_binary:
        rec.update(status="skipped", skipped="cannot build tests/bench/guard_cost.c: %s" % ctx.c_build_error)
        return rec
    argv = w.argv(ctx)
    t0 = time.monotonic()
    timed_out = False
    try:
        proc = subprocess.Popen(argv, cwd=ROOT, env=side_env(ctx, w, side, pair), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        rec.update(status="failed", error="cannot start %s: %s" % (argv[0], e))
        return rec
    try:
        out, err = proc.communicate(timeout=ctx.args.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        turns.kill_group(proc)
        out, err = proc.communicate()
    except BaseException:  # interrupted: take the run's processes down with us
        turns.kill_group(proc)
        proc.communicate()
        raise
    rec["wall_s"] = round(time.monotonic() - t0, 3)
    return conclude(ctx, w, rec, proc.returncode, out, err, timed_out)


def conclude(ctx, w, rec, rc, out, err, timed_out):
    """Fills a finished run's record from its exit status and output (bytes)."""
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    rec["rc"] = rc
    rec["stderr_tail"] = tail(err, STDERR_TAIL)
    rec["shim_summary"] = last_json(err, "transfers") if rec["side"] != "noshim" else None
    result = parse_c_loop(w, out, err) if w.c_loop else last_json(out, "workload")
    if timed_out:
        rec.update(status="timeout", error="timed out after %g s" % ctx.args.timeout)
    elif result is not None and result.get("skipped"):
        rec.update(status="skipped", skipped=str(result["skipped"]))
    elif rc != 0:
        rec.update(status="failed", error="exit status %d%s" % (rc, describe_exit(rc, err)))
    elif result is None or not isinstance(result.get("metrics"), list) or not result["metrics"]:
        rec.update(status="failed", error="printed no result line" + describe_exit(0, err))
        rec["stdout_tail"] = tail(out, 10)
    else:
        rec.update(status="ok", metrics=result["metrics"], digest=result.get("digest"),
                   notes=result.get("notes") or {})
    return rec


class Lockstep(turns.TurnTaker):
    """One side's process of a lockstep pair (run_lockstep), with its record. Its --timeout counts
    its own time only (turns.py)."""

    def __init__(self, ctx, w, side, pair):
        self.rec = new_record(ctx, w, side, pair)
        super().__init__(w.argv(ctx), side_env(ctx, w, side, pair), ROOT, ctx.args.timeout, ctx.work)
        if self.start_error:
            self.rec.update(status="failed", error=self.start_error)

    def record(self, ctx, w):
        """The finished run's record (after turns.take_turns)."""
        if self.proc is None:
            return self.rec
        self.rec["wall_s"] = self.wall_s
        self.rec["turns"] = self.turns
        return conclude(ctx, w, self.rec, self.rc, self.out, self.err, self.timed_out)


def run_lockstep(ctx, w, pair):
    """The sides of one pair as processes alive at the same time, taking turns (wl.turn, turns.py):
    each round gives every side one turn, in the order of sides_in_order in odd rounds and reversed
    in even ones. Adjacent turns are tens of ms apart (what they showed: README.md here,
    "Lockstep"). A process that ends, crashes or runs past its time leaves the others to go on."""
    runs = []
    try:
        for side in sides_in_order(ctx, pair):
            runs.append(Lockstep(ctx, w, side, pair))
    except BaseException:
        for r in runs:
            if r.proc is not None:
                turns.kill_group(r.proc)
        raise
    turns.take_turns(runs)
    return [r.record(ctx, w) for r in runs]


def describe_exit(rc, err):
    lines = [l.strip() for l in err.splitlines() if l.strip() and not l.lstrip().startswith("{")]
    why = ""
    if rc < 0:
        try:
            why = " (%s)" % signal.Signals(-rc).name
        except ValueError:
            pass
    return why + (": " + lines[-1][:200] if lines else "")


def cuda_include():
    """The CUDA headers: $CUDA_HOME/include, else /usr/local/cuda's, else beside the nvcc on PATH."""
    cuda = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    nvcc = shutil.which("nvcc")
    if not os.environ.get("CUDA_HOME") and not os.path.isfile(os.path.join(cuda, "include", "cuda.h")) and nvcc:
        cuda = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return os.path.join(cuda, "include")


def build_bench(ctx, name, libs):
    """Compiles tests/bench/NAME.c with $CC (default gcc) into the run's work folder: (path, None),
    or (None, why not)."""
    cc = os.environ.get("CC") or "gcc"
    exe = os.path.join(ctx.work, name)
    cmd = [cc, "-std=gnu11", "-O2", "-Wall", "-I" + cuda_include(),
           os.path.join(ROOT, "tests", "bench", name + ".c"), "-o", exe] + libs
    try:
        r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "%s: %s" % (cc, e)
    if r.returncode:
        lines = [l for l in r.stdout.decode("utf-8", "replace").splitlines() if l.strip()]
        return None, "%s exited %d%s" % (cc, r.returncode, (": " + lines[0][:160]) if lines else "")
    return exe, None


def build_c_loop(ctx):
    ctx.c_binary, ctx.c_build_error = build_bench(ctx, "guard_cost", ["-ldl"])


# ------------------------------------------------------------------------------------------ statistics
def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def check(expect, base, other):
    """(cell, verdict) for one side against no shim: the ratio or the difference, and PASS/MISS."""
    if base is None or other is None or (expect != "ns" and other <= 0):
        return "-", "-"
    fig = figure(expect, base, other)
    return ("%+.0fns" if expect == "ns" else "%.2fx") % fig, "PASS" if meets_bound(expect, fig) else "MISS"


def figure(expect, base, other):
    """The row's figure: no-shim time / side time, or side - no shim for ns rows."""
    return other - base if expect == "ns" else base / other


def meets_bound(expect, fig):
    if expect == "ns":
        return fig <= NS_MAX
    return fig > RATIO_FASTER if expect == "faster" else fig >= RATIO_SAME


def bootstrap_interval(items, statistic):
    """The 95 % interval of statistic(sample) over BOOTSTRAP_ROUNDS resamples of items (each drawn
    whole, with replacement), or None with fewer than BOOTSTRAP_MIN_PAIRS items. Seeded: the same
    items give the same interval (compare_builds.py uses it too)."""
    if len(items) < BOOTSTRAP_MIN_PAIRS:
        return None
    rng = random.Random(BOOTSTRAP_SEED)
    return central_95(statistic([rng.choice(items) for _ in items]) for _ in range(BOOTSTRAP_ROUNDS))


def two_sample_interval(a, b, statistic):
    """The 95 % interval of statistic(resample of a, resample of b), each sample resampled on its own
    (for runs that have no pairs: row_levels.py's splits), or None with fewer than BOOTSTRAP_MIN_PAIRS
    values in either. Seeded like bootstrap_interval."""
    if min(len(a), len(b)) < BOOTSTRAP_MIN_PAIRS:
        return None
    rng = random.Random(BOOTSTRAP_SEED)
    return central_95(statistic([rng.choice(a) for _ in a], [rng.choice(b) for _ in b])
                      for _ in range(BOOTSTRAP_ROUNDS))


def central_95(figures):
    """The 2.5th and 97.5th percentiles of BOOTSTRAP_ROUNDS figures."""
    figures = sorted(figures)
    return figures[int(0.025 * BOOTSTRAP_ROUNDS)], figures[int(0.975 * BOOTSTRAP_ROUNDS) - 1]


def pair_interval(expect, base_by_pair, other_by_pair):
    """The 95 % interval of the row's figure from resamples of the pairs both sides completed (a pair
    resampled whole: both runs of a pair met the same state of the host), or None with fewer than
    BOOTSTRAP_MIN_PAIRS."""
    pairs = sorted(set(base_by_pair) & set(other_by_pair))
    if any(other_by_pair[p] <= 0 for p in pairs):
        return None
    return bootstrap_interval(pairs, lambda pick: figure(expect, median([base_by_pair[p] for p in pick]),
                                                         median([other_by_pair[p] for p in pick])))


def pair_figures(expect, base_by_pair, other_by_pair):
    """{pair: that pair's own figure} for the pairs both sides completed (a side's time of 0 or less
    has no ratio)."""
    return {p: figure(expect, base_by_pair[p], other_by_pair[p]) for p in sorted(set(base_by_pair) & set(other_by_pair))
            if expect == "ns" or other_by_pair[p] > 0}


def pairs_median_interval(expect, base_by_pair, other_by_pair):
    """The 95 % interval of the pairs' median (pair_by_pair) from resamples of the pairs, or None with
    fewer than BOOTSTRAP_MIN_PAIRS."""
    return bootstrap_interval(list(pair_figures(expect, base_by_pair, other_by_pair).values()), median)


def pair_by_pair(expect, base_by_pair, other_by_pair):
    """Each pair's own figure, read pair by pair: {"n": pairs both sides completed, "faster": pairs
    whose side ran faster than its no-shim run, "median": the median of the pairs' figures}, or None
    without pairs. Unlike the row's figure (one side's median over the other's) it never compares runs
    of different pairs, so a host whose speed drifts, or merged instances of different speeds, move
    it only through what each pair met."""
    figs = pair_figures(expect, base_by_pair, other_by_pair)
    if not figs:
        return None
    return {"n": len(figs), "faster": sum(1 for p in figs if other_by_pair[p] < base_by_pair[p]),
            "median": median(list(figs.values()))}


def folder_by_folder(expect, base_by_pair, other_by_pair, folder_of):
    """A merged row's figure from each folder's pairs alone, [(folder's name, pairs, cell)] in the
    order merged, or None when the pairs came from one folder (or a run that merged nothing). The
    row's figure pools every folder's runs, and folders of instances that ran at different speeds
    move the pooled medians by more than the bound (the DataLoader's three kept folders read 0.93x,
    0.96x and 0.96x and 0.987x pooled, README.md, forty-sixth stop): whether the folders agree is
    part of the reading."""
    own = {}  # folder -> its pairs, in the order merged
    for p in sorted(set(base_by_pair) & set(other_by_pair)):
        own.setdefault(folder_of.get(p), []).append(p)
    if len(own) < 2 or None in own:
        return None
    return [(os.path.basename(os.path.normpath(f)), len(ps),
             check(expect, median([base_by_pair[p] for p in ps]), median([other_by_pair[p] for p in ps]))[0])
            for f, ps in own.items()]


def noise_verdict(expect, verdict, interval):
    """A MISS whose interval still reaches the bound reads WIDE: these pairs cannot tell the side
    from the bound (the runs spread by more than the gap); more pairs narrow it where the runs spread
    around one speed, not where they fall at one of two about half the time (pass_power.py)."""
    if verdict != "MISS" or interval is None:
        return verdict
    nearest = interval[0] if expect == "ns" else interval[1]  # the end on the bound's side
    return "WIDE" if meets_bound(expect, nearest) else verdict


def bound_text(expect):
    return {"ns": "<=+%dns" % NS_MAX, "faster": ">%.2fx" % RATIO_FASTER}.get(expect, ">=%.2fx" % RATIO_SAME)


def aggregate(ctx, workloads):
    """One entry per workload run so far: its rows, its verdict and the problems found."""
    report = []
    for w in workloads:
        rs = sorted((r for r in ctx.runs if r["workload"] == w.name),
                    key=lambda r: (r["pair"], SIDES.index(r["side"])))  # even pairs ran in reverse
        if not rs:
            continue
        ok = [r for r in rs if r["status"] == "ok"]
        skipped = [r for r in rs if r["status"] == "skipped"]
        bad = [r for r in rs if r["status"] in ("failed", "timeout")]
        problems = []
        for r in bad:
            problems.append("%s run %d: %s" % (SIDE_TITLE[r["side"]], r["pair"], r["error"]))
        reasons = sorted(set(r["skipped"] for r in skipped))
        if skipped and (ok or bad):
            problems.append("skipped in %d of %d runs only (%s): %s" % (
                len(skipped), len(rs), ", ".join("%s %d" % (SIDE_TITLE[r["side"]], r["pair"]) for r in skipped),
                " | ".join(reasons)))
        elif len(reasons) > 1:
            problems.append("skipped for different reasons: " + " | ".join(reasons))
        ref = next((r for r in ok if r["side"] == "noshim"), ok[0] if ok else None)
        same = sum(1 for r in ok if r["digest"] == ref["digest"])
        differing = {}  # (side, digest) -> pairs
        for r in ok:
            if r["digest"] != ref["digest"]:
                differing.setdefault((r["side"], r["digest"]), []).append(str(r["pair"]))
        for (side, digest), pairs in sorted(differing.items(), key=lambda kv: (SIDES.index(kv[0][0]), kv[1])):
            what = "%s run%s %s: digest %s, where no-shim run %d gave %s" % (
                SIDE_TITLE[side], "s" if len(pairs) > 1 else "", ", ".join(pairs), digest, ref["pair"], ref["digest"])
            if side == "noshim":
                problems.append("results differ between runs without the shim (%s): the workload is not "
                                "deterministic" % what)
            else:
                problems.append("results differ: " + what)
        keys = []
        for r in ok:
            for m in r["metrics"]:
                if m["key"] not in [k["key"] for k in keys]:
                    keys.append(m)
        folder_of = {r["pair"]: r.get("folder") for r in ok}  # a merge's runs name their folder
        rows = []
        for m in keys:
            row = {"key": m["key"], "label": m.get("label", m["key"]), "unit": m.get("unit", ""),
                   "expect": m.get("expect", "same"), "ref": bool(m.get("ref")), "turn2": w.turn2.get(m["key"], ""),
                   "inside": w.inside.get(m["key"])}
            by_pair = {side: {r["pair"]: x["value"] for r in ok if r["side"] == side for x in r["metrics"]
                              if x["key"] == m["key"]} for side in ctx.sides}  # runs are in pair order
            for side in ctx.sides:
                vals = list(by_pair[side].values())
                row[side] = {"n": len(vals), "values": vals, "median": median(vals) if vals else None,
                             "min": min(vals) if vals else None, "max": max(vals) if vals else None}
            for side in ctx.sides[1:]:
                row[side]["cell"], verdict = check(row["expect"], row["noshim"]["median"], row[side]["median"])
                pairs = pair_by_pair(row["expect"], by_pair["noshim"], by_pair[side])
                # the row's figure and the pairs' own median must both meet the bound (README.md here:
                # "Pair by pair"); a miss gets the interval of the figure that missed
                missed = "figure" if verdict == "MISS" else \
                    "pairs" if pairs and not meets_bound(row["expect"], pairs["median"]) else None
                interval = pair_interval(row["expect"], by_pair["noshim"], by_pair[side]) if missed == "figure" else \
                    pairs_median_interval(row["expect"], by_pair["noshim"], by_pair[side]) if missed else None
                row[side]["interval"] = interval
                row[side]["missed"] = missed
                row[side]["pairs"] = pairs if missed else None
                row[side]["by_folder"] = folder_by_folder(row["expect"], by_pair["noshim"], by_pair[side],
                                                          folder_of) if missed else None
                row[side]["check"] = noise_verdict(row["expect"], "MISS" if missed else verdict, interval)
            rows.append(row)
        races = sum(int(((r.get("shim_summary") or {}).get("guard") or {}).get("races", 0)) for r in rs)
        status = "FAIL" if problems else "skipped" if not ok else "ok"
        if problems:
            verdict = "FAIL"
        elif all(r["digest"] is None for r in ok):
            verdict = "no data (timing only)"
        else:
            verdict = "same %d/%d" % (same, len(ok))
        report.append({"workload": w.name, "status": status, "verdict": verdict, "problems": problems, "rows": rows,
                       "skipped": reasons[0] if reasons and not ok else None, "identical": "%d/%d" % (same, len(ok)),
                       "runs": len(rs), "guard_races": races, "shim_did": shim_did(rs)})
    return report


def shim_did(runs):
    """What the shim's summaries say it did: copies by action, registrations and refusals, failed
    copies (last shim run), and copies guarded (last shim+guard run)."""
    did = {}
    last = {}
    for r in runs:
        if r.get("shim_summary"):
            last[r["side"]] = r["shim_summary"]
    s = last.get("shim")
    if s:
        for t in s.get("transfers", []):
            action = t.get("action", "?")
            did[action] = did.get(action, 0) + int(t.get("count", 0))
        reg = s.get("registration") or {}
        if reg:
            did["registrations"] = reg.get("registrations", 0)
            did["refused"] = reg.get("refused", 0)
        did["failed_copies"] = s.get("failed_copies", 0)
    g = (last.get("guard") or {}).get("guard")
    if g:
        did["guarded (guard run)"] = g.get("guarded", 0)
    return did or None


# ------------------------------------------------------------------------------------------ the table
def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3g" % v


def spread(s):
    if not s or s["median"] is None:
        return "-"
    return "%s (%s-%s)" % (fmt(s["median"]), fmt(s["min"]), fmt(s["max"]))


def table_rows(ctx, report, markdown):
    """The table as a list of cell lists, header first."""
    guard = "guard" in ctx.sides
    head = ["workload", "metric", "unit", "no shim", "shim", "ratio", "check"]
    if guard:
        head += ["shim+guard", "ratio", "check"]
    head += ["bound", "turn 2", "result"]
    out = [head]
    for entry in report:
        if entry["status"] == "skipped" and not entry["rows"]:
            cells = [entry["workload"], "-", "", "", "", "", ""] + (["", "", ""] if guard else [])
            out.append(cells + ["", "", "skipped: " + entry["skipped"]])
            continue
        if not entry["rows"]:
            cells = [entry["workload"], "-", "", "", "", "", ""] + (["", "", ""] if guard else [])
            out.append(cells + ["", "", "FAIL: no run gave a result"])
            continue
        for row in entry["rows"]:
            name = row["label"] if markdown else ("ref " if row["ref"] else "") + row["key"]
            cells = [entry["workload"], name, row["unit"], spread(row["noshim"]), spread(row["shim"]),
                     row["shim"]["cell"], row["shim"]["check"]]
            if guard:
                cells += [spread(row["guard"]), row["guard"]["cell"], row["guard"]["check"]]
            cells += [bound_text(row["expect"]), row["turn2"] or "-", entry["verdict"]]
            out.append(cells)
    return out


def render_text(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for k, r in enumerate(rows):
        cells = [c.ljust(widths[i]) if i < 3 or i == len(r) - 1 else c.rjust(widths[i]) for i, c in enumerate(r)]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(rows):
    esc = [[c.replace("|", "\\|") for c in r] for r in rows]
    lines = ["| " + " | ".join(esc[0]) + " |",
             "|" + "|".join("---" if i < 3 or i == len(esc[0]) - 1 else "---:" for i in range(len(esc[0]))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
    return "\n".join(lines)


def miss_note(workload, row, side, inprocess_rows=()):
    """The note line of a WIDE or MISS row: which figure missed (the row's, or the pairs' own median
    while the row's met the bound), its interval over the pairs, whether that reaches the bound, the
    pairs read one by one (pair_by_pair), folder by folder, and for the shim's side what observing
    costs the same operation inside one process where the in-process table measured it (the row's
    "inside"); None for any other check."""
    cell = row[side]
    if cell.get("check") not in ("WIDE", "MISS"):
        return None
    fig = "%+.0fns" if row["expect"] == "ns" else "%.2fx"
    interval = cell["interval"] and "its 95%% interval over the pairs %s to %s" % (
        fig % cell["interval"][0], fig % cell["interval"][1])
    pairs = cell.get("pairs")
    what = "note %s: %s %s %s" % (workload, row["key"], SIDE_TITLE[side], cell["cell"])
    if cell.get("missed") == "pairs":
        what += ", but the pairs' own median %s (%s faster in %d of %d)" % (
            fig % pairs["median"], SIDE_TITLE[side], pairs["faster"], pairs["n"])
    if cell["check"] == "WIDE":
        what += (", %s, reaches the bound %s: the runs spread by more than the gap; whether more pairs can settle "
                 "it: pass_power.py") % (interval, bound_text(row["expect"]))
    else:
        what += " misses the bound %s" % bound_text(row["expect"]) + (", " + interval if interval else "")
    if pairs and cell.get("missed") != "pairs":
        what += "; pair by pair, %s faster in %d of %d, the pairs' median %s" % (
            SIDE_TITLE[side], pairs["faster"], pairs["n"], fig % pairs["median"])
    if cell.get("by_folder"):
        what += "; folder by folder, %s" % ", ".join("%s %s (%d pair%s)" % (name, figure_cell, n, "" if n == 1 else "s")
                                                     for name, n, figure_cell in cell["by_folder"])
    inside = next((r for r in inprocess_rows if r["key"] == row.get("inside") and r.get("check")), None)
    if inside and side == "shim":
        what += "; inside one process (its row %s), observing costs it %+.1f +- %.1f ns%s: %s" % (
            inside["key"], inside["cost_ns"], inside["se2_ns"], share_text(inside), inside["check"])
        whole = inside.get("whole")
        if whole:
            what += ", and the whole preload %+.1f +- %.1f ns%s: %s" % (whole["cost_ns"], whole["se2_ns"],
                                                                       share_text(whole), whole["check"])
    return what


def share_text(figure):
    return " (%.2f%%)" % figure["share_pct"] if figure.get("share_pct") is not None else ""


def footer(ctx, report):
    lines = []
    for e in report:
        for p in e["problems"]:
            lines.append("FAIL %s: %s" % (e["workload"], p))
    for e in report:
        if e["guard_races"]:
            lines.append("note %s: the guard reported %d unsynchronized accesses of D2H destinations "
                         "(stderr of the shim+guard runs in runs.jsonl)" % (e["workload"], e["guard_races"]))
    for e in report:
        for row in e["rows"]:
            for side in ctx.sides[1:]:
                note = miss_note(e["workload"], row, side, ctx.inprocess["rows"] if ctx.inprocess else ())
                if note:
                    lines.append(note)
    if ctx.inprocess:
        for p in ctx.inprocess["problems"]:
            lines.append("FAIL inprocess: " + p)
        if any("UNFAIR" in (r.get("check"), (r.get("measured") or {}).get("check")) for r in ctx.inprocess["rows"]):
            lines.append("note inprocess: the control row differs by more than its error: the blocks were "
                         "not timed alike; read the in-process rows with care")
    if ctx.stop_note:
        lines.append("note: " + ctx.stop_note)
    for note in (ctx.merged or {}).get("notes", []):
        lines.append("note merge: " + note)
    failed = [e["workload"] for e in report if e["status"] == "FAIL"]
    if ctx.inprocess and ctx.inprocess["problems"]:
        failed.append("inprocess")
    skipped = [e["workload"] for e in report if e["status"] == "skipped"]
    pairs = max([r["pair"] for r in ctx.runs] or [0])
    tally = "%d workloads, %d pair%s, %s" % (len(report), pairs, "" if pairs == 1 else "s",
                                             "merged from %d runs" % len(ctx.merged["folders"]) if ctx.merged
                                             else elapsed(ctx))
    if skipped:
        tally += ", %d skipped (%s)" % (len(skipped), ", ".join(skipped))
    if failed:
        lines.append("RESULT: FAIL: %s; %s" % (", ".join(failed), tally))
    elif ctx.interrupted:
        lines.append("RESULT: INTERRUPTED: no result differed and no run failed so far; %s" % tally)
    else:
        lines.append("RESULT: ok: no result differed and no run failed; %s" % tally)
    return lines


def elapsed(ctx):
    s = int(time.time() - ctx.started)
    return "%dm%02ds" % (s // 60, s % 60)


# The in-process tables after the first, each printed when a row has its figures: (rows, title).
INPROCESS_MORE_TABLES = [
    (inprocess.whole_table_rows, "# the whole preload inside one process: observing, plus each driver call's forwarding "
                                 "and each allocator call's hooks (the C side's forward - direct), ns per operation"),
    (inprocess.measured_table_rows, "# the whole preload measured inside one process: observe - direct (the shim out of "
                                    "the runtime's calls, --inprocess-direct), plus each allocator call's hooks, ns per "
                                    "operation"),
]


def inprocess_tables(ctx):
    """The in-process table as text and as markdown (both "" when it was not measured)."""
    if not ctx.inprocess:
        return "", ""
    rows = ctx.inprocess["rows"]
    title = ("# inside one process: observing against forwarding, ns per operation: the mean of %d processes' "
             "median differences +- 2 standard errors (tests/bench/workloads/inprocess.py)"
             % max(r.get("processes", 0) for r in rows))
    text = ["", "", title, render_text(inprocess.table_rows(rows, markdown=False))]
    markdown = [title.lstrip("# ").capitalize() + ":", "", render_markdown(inprocess.table_rows(rows, markdown=True)), ""]
    for rows_fn, more_title in INPROCESS_MORE_TABLES:
        more = rows_fn(rows, markdown=False)
        if more:
            text += ["", more_title, render_text(more)]
            markdown += [more_title.lstrip("# ").capitalize() + ":", "", render_markdown(rows_fn(rows, markdown=True)),
                         ""]
    return "\n".join(text), "\n".join(markdown)


def write_outputs(ctx, head, report, text, markdown_table, foot):
    if not ctx.out:
        return
    os.makedirs(ctx.out, exist_ok=True)
    in_text, in_md = inprocess_tables(ctx)
    with open(os.path.join(ctx.out, "table.txt"), "w") as f:
        f.write("\n".join(head + [text + in_text] + foot) + "\n")
    md = ["# pinshim real-workload benchmarks", ""] + ["- " + h.lstrip("# ") for h in head[1:]] + ["", markdown_table, ""]
    if in_md:
        md += [in_md]
    md += ["- " + l for l in foot] + [""]
    did = [(e["workload"], e["shim_did"]) for e in report if e["shim_did"]]
    if did:
        md += ["What the shim did (its summary, last shim run of each workload: copies by action, registrations):", ""]
        md += ["- %s: %s" % (name, ", ".join("%s %s" % kv for kv in d.items())) for name, d in did] + [""]
    md += ["Columns: tests/bench/workloads/README.md. Every run: runs.jsonl.", ""]
    with open(os.path.join(ctx.out, "table.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(ctx.out, "summary.json"), "w") as f:
        instances = (ctx.merged["instances"] if ctx.merged
                     else [merge.machine_instance(merge.header_field(head, "# machine:"))])
        json.dump({"header": head, "workloads": report, "footer": foot, "inprocess": ctx.inprocess,
                   "instances": instances}, f, indent=1, sort_keys=True)
        f.write("\n")


def show(ctx, workloads, final):
    """Rewrites the output files with every run so far; prints the table when final."""
    report = aggregate(ctx, workloads)
    head = ctx.header + [versions_line(ctx)]
    text = render_text(table_rows(ctx, report, markdown=False))
    markdown_table = render_markdown(table_rows(ctx, report, markdown=True))
    foot = footer(ctx, report)
    write_outputs(ctx, head, report, text, markdown_table, foot)
    if final:
        print("\n".join([""] + head + [text + inprocess_tables(ctx)[0]] + foot), flush=True)
    return report


# ------------------------------------------------------------------------------------------ main
BUILD_MARKER = b"pinshim-build-commit="


def build_commit(path):
    """The commit the library names as its build (shim/base/build_commit.h), read from the file
    rather than from this checkout, whose HEAD may differ from the build's; "" if it names none."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    at = data.find(BUILD_MARKER)
    if at < 0:
        return ""
    end = data.find(b"\0", at)
    return data[at + len(BUILD_MARKER):end].decode("ascii", "replace")


def cpu_list(text):
    """The set of CPUs a Linux CPU list names (2-5,8), or None when it is not one."""
    cpus = set()
    for part in text.split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or (dash and int(high) < int(low)):
            return None
        cpus.update(range(int(low), int(high if dash else low) + 1))
    return cpus


def own_cpu_list(text):
    """The CPUs a Linux CPU list names when each is one this process may run on, else None."""
    cpus = cpu_list(text)
    return cpus if cpus and cpus <= os.sched_getaffinity(0) else None


def cpu_ranges(cpus):
    """A set of CPUs as a Linux CPU list, runs of neighbours as ranges: {2, 3, 4, 5, 8} -> "2-5,8"."""
    parts, ordered = [], sorted(cpus)
    for k, c in enumerate(ordered):
        if k and c == ordered[k - 1] + 1:
            parts[-1][1] = c
        else:
            parts.append([c, c])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in parts)


def bound_cpus():
    """", runs on CPUs 4-11" when this process (and so every run it starts, which inherits it) may run
    on only some of the machine's CPUs (taskset -c 4-11 make bench-workloads ...), else ""."""
    mine = os.sched_getaffinity(0)
    return ", runs on CPUs %s" % cpu_ranges(mine) if len(mine) < (os.cpu_count() or 0) else ""


def header(ctx, workloads):
    h = ["# pinshim real-workload benchmarks, %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M")]
    gpu = "no GPU seen by nvidia-smi"
    try:
        r = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20)
        first = r.stdout.decode("utf-8", "replace").strip().splitlines()
        if r.returncode == 0 and first:
            gpu = first[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    h.append("# machine: %s; %d cores%s" % (gpu, os.cpu_count() or 0, bound_cpus()))
    try:
        st = os.stat(ctx.shim)
        lib = "%s (%d bytes, %s)" % (ctx.shim, st.st_size,
                                     datetime.datetime.fromtimestamp(st.st_mtime).strftime("%Y-%m-%d %H:%M"))
    except OSError:
        lib = ctx.shim + " (MISSING)"
    rev = build_commit(ctx.shim)
    h.append("# shim: %s, %s" % (lib, ("built from " + rev) if rev else "build commit unknown"))
    user = " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items())
                    if k.startswith("PINSHIM_") and k not in ("PINSHIM_SUMMARY", "PINSHIM_LOG"))
    h.append("# sides: %s; %d pairs; guard side: %s; shim settings from the environment: %s" % (
        ", ".join(SIDE_TITLE[s] for s in ctx.sides), ctx.args.pairs,
        " ".join("%s=%s" % kv for kv in GUARD_ENV.items()) if "guard" in ctx.sides else "off", user or "none"))
    turns = [w.name for w in workloads if w.lockstep]
    h.append("# lockstep: %s" % ("on (the sides of a pair at once, taking turns: %s)" % ", ".join(turns)
                                 if ctx.args.lockstep and turns else "off"))
    h.append("# ratio = no-shim median / side median (>1: faster with the shim); ns rows: side - no shim")
    return h


def versions_line(ctx):
    seen = {}
    for r in ctx.runs:
        for k, v in (r.get("notes") or {}).items():
            if k in ("torch", "cuda", "gpu", "cupy", "jax", "numpy") and k not in seen:
                seen[k] = v
    return "# versions: " + (", ".join("%s %s" % kv for kv in sorted(seen.items())) or "none seen")


INPROCESS_EST_S = 75.0  # one process of inprocess_ab.py and observe_ab (an H200 instance, 2026-11-28: 3 processes
# and a C-loop pair in 3m46s, the DataLoader and JAX rows with a third of the groups)


def plan_line(ctx, workloads):
    per_pair = sum(w.est_s for w in workloads) * len(ctx.sides)
    runs = len(workloads) * len(ctx.sides) * ctx.args.pairs
    first = ctx.args.inprocess * INPROCESS_EST_S
    return ("# plan: %s%d workloads x %d sides x %d pairs = %d runs; expected about %.0f s on the GPU machine "
            "(%.0f s a pair; --budget %g s)" % (
                "in-process measurements in %d processes (~%.0f s), then " % (ctx.args.inprocess, first)
                if first else "", len(workloads), len(ctx.sides), ctx.args.pairs, runs,
                first + per_pair * ctx.args.pairs, per_pair, ctx.args.budget))


def plan(ctx, workloads):
    print("\n".join(ctx.header + [plan_line(ctx, workloads)]))
    for w in workloads:
        print("%-24s ~%4.1f s/run  %s" % (w.name, w.est_s, " ".join(shlex.quote(a) for a in w.argv(ctx))))
    for side in ctx.sides:
        print("  %-10s %s" % (SIDE_TITLE[side], env_delta(side_env(ctx, workloads[0], side, 1)) or "(environment as is)"))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args, parser = parse_args(argv)
    if args.groups:
        return run_groups(args, argv)
    if args.merge:
        return merge_runs(args)
    registry = FAKE_WORKLOADS if args.fake else WORKLOADS
    if args.list:
        for w in registry:
            print("%-24s %s" % (w.name, "" if w.default else "(only with --only)"))
        return 0
    workloads = chosen_workloads(registry, args.only, parser)
    ctx = Context(args)
    ctx.header = header(ctx, workloads)
    if args.dry_run:
        plan(ctx, workloads)
        return 0
    if not os.path.isfile(ctx.shim):
        sys.stderr.write("run.py: %s is missing: build it with make and bring build/ along\n"
                         % ctx.shim)
        return 2
    ctx.work = tempfile.mkdtemp(prefix="pinshim-workloads.")
    if ctx.out:
        os.makedirs(ctx.out, exist_ok=True)
        open(os.path.join(ctx.out, "runs.jsonl"), "w").close()
    print("\n".join(ctx.header + [plan_line(ctx, workloads)]), flush=True)
    if any(w.c_loop for w in workloads):
        build_c_loop(ctx)

    def on_term(signum, _frame):
        raise KeyboardInterrupt("signal %d" % signum)

    signal.signal(signal.SIGTERM, on_term)
    status = 0
    try:
        if args.inprocess:
            run_inprocess(ctx)
        run_pairs(ctx, workloads)
    except KeyboardInterrupt as e:
        ctx.stop_note = "interrupted (%s) during pair %d: the table has the runs that finished" % (
            str(e) or "SIGINT", max([r["pair"] for r in ctx.runs] or [0]))
        ctx.interrupted = True
        status = 130
    finally:
        shutil.rmtree(ctx.work, ignore_errors=True)
    report = show(ctx, workloads, final=True)
    if status == 0 and (any(e["status"] == "FAIL" for e in report) or (ctx.inprocess and ctx.inprocess["problems"])):
        status = 1
    if ctx.out:
        print("# written: %s/{table.md,table.txt,summary.json,runs.jsonl}" % ctx.out, flush=True)
    return status


def run_inprocess(ctx):
    """The in-process table's measurements (inprocess.py), before the pairs."""
    observe_ab = build_bench(ctx, "observe_ab", ["-ldl", "-lm"])
    alloc_count = build_bench(ctx, "alloc_count", ["-shared", "-fPIC", "-ldl"])
    rows, problems, samples = inprocess.measure(ctx.args.inprocess, ctx.args.inprocess_groups, ctx.shim,
                                                ctx.python, os.environ, observe_ab, max(ctx.args.timeout, 300.0),
                                                lambda line: print(line, flush=True), alloc_count,
                                                ctx.args.inprocess_only, ctx.args.inprocess_direct)
    ctx.inprocess = {"rows": rows, "problems": problems, "samples": samples}


def run_groups(args, argv):
    """--groups: the run once per CPU at the same time (groups.py), each into OUT/g<CPU>, then their
    folders merged into --out; exit status the worst of the groups' and the merge's."""
    os.makedirs(args.out, exist_ok=True)
    rest = groups.without(groups.without(argv, "--groups"), "--out")
    folders = [os.path.join(args.out, "g%d" % cpu) for cpu in sorted(args.groups)]
    statuses = groups.run([(cpu, [sys.executable, os.path.abspath(__file__)] + rest + ["--out", f], f + ".log")
                           for cpu, f in zip(sorted(args.groups), folders)])
    args.merge = [f for f in folders if os.path.isfile(os.path.join(f, "summary.json"))]
    if not args.merge:
        sys.stderr.write("run.py: --groups: no group wrote its folder (their output: %s/g*.log)\n" % args.out)
        return 2
    return max([merge_runs(args)] + statuses)


def merge_runs(args):
    """--merge: the table of earlier runs' folders as one run (merge.py); exit status as a run's."""
    try:
        merged = merge.merge(args.merge)
    except merge.MergeError as e:
        sys.stderr.write("run.py: --merge: %s\n" % e)
        return 2
    ctx = Context(args)
    ctx.merged, ctx.runs, ctx.inprocess = merged, merged["runs"], merged["inprocess"]
    present = set(r["workload"] for r in ctx.runs)
    workloads = [w for w in WORKLOADS + FAKE_WORKLOADS if w.name in present]
    workloads += [Workload(name) for name in sorted(present - set(w.name for w in workloads))]
    ctx.sides = tuple(s for s in SIDES if any(r["side"] == s for r in ctx.runs))
    pairs = max(r["pair"] for r in ctx.runs)
    head = [h for h in merged["header"][1:] if not h.startswith("# versions:")]
    ctx.header = ["# pinshim real-workload benchmarks, %s: %d pairs merged from %s" % (
        datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), pairs,
        ", ".join("%s (%d)" % f for f in merged["folders"]))]
    ctx.header += [re.sub(r"; \d+ pairs;", "; %d pairs;" % pairs, h) if h.startswith("# sides:") else h for h in head]
    report = show(ctx, workloads, final=True)
    if ctx.out:
        with open(os.path.join(ctx.out, "runs.jsonl"), "w") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in ctx.runs)
        print("# written: %s/{table.md,table.txt,summary.json,runs.jsonl}" % ctx.out, flush=True)
    failed = any(e["status"] == "FAIL" for e in report) or (ctx.inprocess and ctx.inprocess["problems"])
    return 1 if failed else 0


def sides_in_order(ctx, pair):
    """The sides of a pair in the order they run: as listed in odd pairs, reversed in even ones, so
    that whatever drifts with position in a pair (clocks, caches, the machine's other load) falls on
    every side alike (with the no-shim side always first, the shim side of a 16 MiB pinned copy read
    1% slower in 5 pairs on an H200)."""
    return ctx.sides if pair % 2 else tuple(reversed(ctx.sides))


def run_pairs(ctx, workloads):
    """Pair after pair, every workload on every side; the output files are rewritten after each pair.
    A workload skipped alike on every side, or one that timed out, is not run again; --budget stops
    before a pair that would end past it, or between workloads once it has passed."""
    args = ctx.args
    dropped = set()
    round_s = None
    for pair in range(1, args.pairs + 1):
        if args.budget and round_s is not None and time.time() - ctx.started + round_s > args.budget:
            ctx.stop_note = ("stopped after %d of %d pairs: another (about %.0f s) would end past --budget %g s"
                             % (pair - 1, args.pairs, round_s, args.budget))
            print("# " + ctx.stop_note, flush=True)
            return
        t_round = time.time()
        for w in workloads:
            if w.name in dropped:
                continue
            if args.budget and ctx.runs and time.time() - ctx.started > args.budget:
                ctx.stop_note = "stopped during pair %d, before %s: past --budget %g s" % (pair, w.name, args.budget)
                print("# " + ctx.stop_note, flush=True)
                return
            if args.lockstep and w.lockstep:
                recs = [keep_run(ctx, rec) for rec in run_lockstep(ctx, w, pair)]
            else:  # each run kept as it ends: an interrupted pair keeps the runs that finished
                recs = [keep_run(ctx, run_one(ctx, w, side, pair)) for side in sides_in_order(ctx, pair)]
            recs.sort(key=lambda r: SIDES.index(r["side"]))
            progress(args, w, pair, recs)
            if all(r["status"] == "skipped" for r in recs) or any(r["status"] == "timeout" for r in recs):
                dropped.add(w.name)  # the next pairs would say the same, or cost another timeout
        round_s = time.time() - t_round
        if pair == 1 and args.pairs > 1:
            total = round_s * args.pairs
            print("# pair 1 took %.0f s; %d pairs: about %.0f s%s" % (
                round_s, args.pairs, total, " (past --budget %g s: fewer pairs will run)" % args.budget
                if args.budget and total > args.budget else ""), flush=True)
        show(ctx, workloads, final=False)


def keep_run(ctx, rec):
    """Adds a finished run to ctx.runs and to runs.jsonl; returns it."""
    ctx.runs.append(rec)
    if ctx.out:
        with open(os.path.join(ctx.out, "runs.jsonl"), "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
    return rec


def progress(args, w, pair, recs):
    parts = []
    for r in recs:
        what = r["status"] if r["status"] != "skipped" else "skipped"
        parts.append("%s %s %s" % (SIDE_TITLE[r["side"]], "%.1fs" % r["wall_s"] if r["wall_s"] is not None else "-", what))
    print("[%d/%d] %-24s %s" % (pair, args.pairs, w.name, " | ".join(parts)), flush=True)
    for r in recs:
        if r["status"] in ("failed", "timeout"):
            print("#   %s run %d: %s" % (SIDE_TITLE[r["side"]], pair, r["error"]), flush=True)
            for line in tail(r.get("stderr_tail") or "", 6).splitlines():
                print("#     " + line[:200], flush=True)
        elif r["status"] == "skipped" and pair == 1 and r["side"] == "noshim":
            print("#   skipped: %s" % r["skipped"], flush=True)


if __name__ == "__main__":
    sys.exit(main())
