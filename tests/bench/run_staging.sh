#!/usr/bin/env bash
# run_staging.sh: pageable H2D/D2H bandwidth without and with the shim (staging on, registration
# off), side by side in one run, with the ratio. Prints a table; never asserts a number.
# Environment: BENCH_REPS (default 5), BENCH_MAX (default 1 GiB), BENCH_PAIRS (alternating runs of
# each, default 1; the table shows per-size medians), LIBCUDA_DIR (where libcuda is;
# default: found with ldconfig), BENCH_EXTRA_ENV ("VAR=value ..." for the shim run), OUT.
set -eu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
REPS=${BENCH_REPS:-5}
MAX=${BENCH_MAX:-1073741824}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
libdir=${LIBCUDA_DIR:-$(dirname "$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')")}
gcc -std=gnu11 -O2 -I"$CUDA_HOME/include" -I"$ROOT/tests/progs" "$ROOT/tests/bench/staging_bench.c" -o "$WORK/bench" \
    -L"$libdir" -lcuda -Wl,-rpath,"$libdir"
PAIRS=${BENCH_PAIRS:-1}
for ((i = 1; i <= PAIRS; i++)); do   # alternate the two, so drift hits both alike
    "$WORK/bench" "$REPS" "$MAX" >"$WORK/plain.$i.txt"
    # shellcheck disable=SC2086
    env PINSHIM_PIN_ON_REUSE=off ${BENCH_EXTRA_ENV:-} PINSHIM_SUMMARY=none LD_PRELOAD="$ROOT/build/libpinshim.so" \
        "$WORK/bench" "$REPS" "$MAX" >"$WORK/shim.$i.txt"
done
echo "# pageable copies, fresh buffers, best of $REPS tries (4x that up to 16 MiB), median over $PAIRS alternating runs;"
echo "# shim settings: ${BENCH_EXTRA_ENV:-defaults}"
python3 - "$WORK" "$PAIRS" <<'PY' | tee "$WORK/table.txt"
import statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
def load(kind):
    runs = []
    for i in range(1, pairs + 1):
        rows = [l.split() for l in open(f"{work}/{kind}.{i}.txt").read().splitlines()[1:]]
        runs.append({(r[0], r[1], int(r[2])): float(r[3]) for r in rows})
    return {k: statistics.median(run[k] for run in runs) for k in runs[0]}
plain, shim = load("plain"), load("shim")
print(f"{'dir':4} {'mode':5} {'bytes':>12} {'no-shim GB/s':>12} {'shim GB/s':>12} {'ratio':>7}")
for key in plain:
    a, b = plain[key], shim[key]
    print(f"{key[0]:4} {key[1]:5} {key[2]:>12} {a:12.2f} {b:12.2f} {b / a if a else 0:7.2f}")
PY
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT/bench"; cp "$WORK/table.txt" "$OUT/bench/staging${BENCH_TAG:-}.txt"; fi
