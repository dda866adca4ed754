#!/usr/bin/env bash
# run_c_loop_variants.sh: the suite's C loop (tests/bench/guard_cost.c: a 4-byte cuMemcpyDtoHAsync
# into pinned memory + cuStreamSynchronize, ITERS times) under several variants, a fresh process
# each, the variants in turn, ROUNDS rounds; then each variant's median and, round by round, its
# difference from the first variant: the median and a 95 % interval (resampled rounds), in ns an
# iteration; then every variant's runs split at the widest step between neighbouring times of all
# runs pooled (row_levels.py's rule: a loop that runs at one of two CPU speeds splits between
# them), per speed each variant's runs, median time and median control (guard_cost.c's level line),
# and its median's difference from the first variant's at that speed: a variant that lands at the
# slow speed more often is told apart from one slower at a speed. Never asserts a timing.
#   tests/bench/run_c_loop_variants.sh NAME=SPEC [NAME=SPEC ...]
#   SPEC: none (no preload), or LIBRARY[,VAR=value...] (preloaded, with those settings), e.g.
#   none=none shim=build/libpinshim.so off=build/libpinshim.so,PINSHIM_INTERCEPT=off
# Environment: ROUNDS (default 20), ITERS (default 20000), CPU (bind every run to this CPU),
# RUNS_FILE (also keep the runs there: "round variant ns control_us cpu" a line), BUDGET_S (start
# no round after this many seconds), CC, CUDA_HOME. Without a GPU it runs on the fake driver
# (build/fakecuda: its numbers are the fake's, not a GPU's).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 NAME=SPEC NAME=SPEC... (at least two variants; SPEC: none or LIBRARY[,VAR=value...])" >&2; exit 2; }
names=() specs=()
for arg in "$@"; do
    name=${arg%%=*} spec=${arg#*=}
    if [ "$name" = "$arg" ] || [ -z "$name" ] || [ -z "$spec" ]; then
        echo "$0: '$arg': expected NAME=SPEC, SPEC none or LIBRARY[,VAR=value...]" >&2
        exit 2
    fi
    lib=${spec%%,*}
    if [ "$lib" != none ] && [ ! -f "$lib" ]; then
        echo "$0: variant $name: no library at '$lib' (expected none or a built library, e.g. build/libpinshim.so)" >&2
        exit 2
    fi
    names+=("$name") specs+=("$spec")
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-cloop.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
${CC:-gcc} -std=gnu11 -O2 -I"${CUDA_HOME:-/usr/local/cuda}/include" "$ROOT/tests/bench/guard_cost.c" -o "$WORK/loop" -ldl || exit 1
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    export LD_LIBRARY_PATH="$ROOT/build/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "# no GPU: the fake driver"
fi
bind=()
[ -n "${CPU:-}" ] && bind=(taskset -c "$CPU")
for round in $(seq "${ROUNDS:-20}"); do
    if [ -n "${BUDGET_S:-}" ] && [ "$SECONDS" -ge "$BUDGET_S" ]; then
        echo "# BUDGET_S=$BUDGET_S: stopped after $((round - 1)) rounds"
        break
    fi
    for i in "${!names[@]}"; do
        spec=${specs[$i]} envs=()
        if [ "${spec%%,*}" != none ]; then
            envs=("LD_PRELOAD=$(realpath "${spec%%,*}")")
            IFS=, read -r -a extra <<<"${spec#*,}"
            [ "$spec" != "${spec%%,*}" ] && envs+=("${extra[@]}")
        fi
        ns=$(env "${envs[@]}" PINSHIM_SUMMARY=none GUARD_COST_ITERS="${ITERS:-20000}" "${bind[@]}" "$WORK/loop" 4 2>"$WORK/err" |
            awk '$1 == 4 { print $5 }')
        level=$(awk '$1 == "#" && $2 == "level" && $3 == 4 {
            for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            print v["control_us"], v["cpu"] }' "$WORK/err")
        echo "$round ${names[$i]} ${ns:-failed} ${level:-- -}" >>"$WORK/runs.txt"
    done
done
[ -n "${RUNS_FILE:-}" ] && cp "$WORK/runs.txt" "$RUNS_FILE"
PYTHONPATH="$ROOT/tests/bench/workloads" python3 - "$WORK/runs.txt" "${names[@]}" <<'PY'
import random, statistics, sys
from row_levels import widest_step
path, names = sys.argv[1], sys.argv[2:]
runs = {n: {} for n in names}
controls = {n: {} for n in names}
failed = {n: 0 for n in names}
for line in open(path):
    rnd, name, ns, control, cpu = line.split()
    if ns == "failed":
        failed[name] += 1
    else:
        runs[name][rnd] = float(ns)
        if control != "-":
            controls[name][rnd] = float(control)
first = names[0]
print("%-12s %6s %10s %24s %s" % ("variant", "runs", "median ns", "- %s, median (95%%)" % first, "failed"))
rng = random.Random(1)
for n in names:
    vals = list(runs[n].values())
    if not vals:
        print("%-12s %6d %10s %24s %d" % (n, 0, "-", "-", failed[n]))
        continue
    rounds = [r for r in runs[n] if r in runs[first]]
    diff = [runs[n][r] - runs[first][r] for r in rounds]
    cell = "-"
    if n != first and diff:
        boot = sorted(statistics.median(rng.choices(diff, k=len(diff))) for _ in range(2000))
        cell = "%+.0f (%+.0f..%+.0f)" % (statistics.median(diff), boot[50], boot[1949])
    print("%-12s %6d %10.0f %24s %d" % (n, len(vals), statistics.median(vals), cell, failed[n]))
step = widest_step([v for n in names for v in runs[n].values()])
if step:
    cut, ratio = step
    print()
    print("by speed: every run split at %.0f ns (the widest step between neighbouring times, %.3fx)" % (cut, ratio))
    print("%-12s %-5s %6s %10s %12s %14s" % ("variant", "speed", "runs", "median ns", "control_us", "- %s (ns)" % first))
    for speed, inside in (("fast", lambda v: v <= cut), ("slow", lambda v: v > cut)):
        base = [v for v in runs[first].values() if inside(v)]
        base_median = statistics.median(base) if base else None
        for n in names:
            at = [r for r, v in runs[n].items() if inside(v)]
            if not at:
                print("%-12s %-5s %6d %10s %12s %14s" % (n, speed, 0, "-", "-", "-"))
                continue
            m = statistics.median(runs[n][r] for r in at)
            ctl = [controls[n][r] for r in at if r in controls[n]]
            print("%-12s %-5s %6d %10.0f %12s %14s" % (n, speed, len(at), m,
                  "%.1f" % statistics.median(ctl) if ctl else "-",
                  "%+.0f" % (m - base_median) if n != first and base else "-"))
PY
