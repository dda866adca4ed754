#!/usr/bin/env bash
# run_c_loop_variants.sh: the suite's C loop (tests/bench/guard_cost.c: a 4-byte cuMemcpyDtoHAsync
# into pinned memory + cuStreamSynchronize, ITERS times) under several variants, a fresh process
# each, the variants in turn, ROUNDS rounds; then each variant's median and, round by round, its
# difference from the first variant: the median and a 95 % interval (resampled rounds), in ns an
# iteration. Never asserts a timing.
#   tests/bench/run_c_loop_variants.sh NAME=SPEC [NAME=SPEC ...]
#   SPEC: none (no preload), or LIBRARY[,VAR=value...] (preloaded, with those settings), e.g.
#   none=none shim=build/libpinshim.so off=build/libpinshim.so,PINSHIM_INTERCEPT=off
# Environment: ROUNDS (default 20), ITERS (default 20000), CPU (bind every run to this CPU),
# CC, CUDA_HOME. Without a GPU it runs on the fake driver (build/fakecuda: its numbers are the
# fake's, not a GPU's).
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
    for i in "${!names[@]}"; do
        spec=${specs[$i]} envs=()
        if [ "${spec%%,*}" != none ]; then
            envs=("LD_PRELOAD=$(realpath "${spec%%,*}")")
            IFS=, read -r -a extra <<<"${spec#*,}"
            [ "$spec" != "${spec%%,*}" ] && envs+=("${extra[@]}")
        fi
        ns=$(env "${envs[@]}" PINSHIM_SUMMARY=none GUARD_COST_ITERS="${ITERS:-20000}" "${bind[@]}" "$WORK/loop" 4 2>/dev/null |
            awk '$1 == 4 { print $5 }')
        echo "$round ${names[$i]} ${ns:-failed}" >>"$WORK/runs.txt"
    done
done
python3 - "$WORK/runs.txt" "${names[@]}" <<'PY'
import random, statistics, sys
path, names = sys.argv[1], sys.argv[2:]
runs = {n: {} for n in names}
failed = {n: 0 for n in names}
for line in open(path):
    rnd, name, ns = line.split()
    if ns == "failed":
        failed[name] += 1
    else:
        runs[name][rnd] = float(ns)
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
PY
