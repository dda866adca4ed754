#!/usr/bin/env bash
# run_staging.sh: pageable H2D/D2H bandwidth without and with the shim (staging on, registration
# off), side by side in one run, with the ratio. Prints a table; never asserts a number.
# Environment: BENCH_REPS (default 5), BENCH_MAX (default 1 GiB), LIBCUDA_DIR (where libcuda is;
# default: found with ldconfig), BENCH_EXTRA_ENV ("VAR=value ..." for the shim run), OUT.
set -eu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
REPS=${BENCH_REPS:-5}
MAX=${BENCH_MAX:-1073741824}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
libdir=${LIBCUDA_DIR:-$(dirname "$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')")}
gcc -std=gnu11 -O2 -I"$CUDA_HOME/include" "$ROOT/tests/bench/staging_bench.c" -o "$WORK/bench" \
    -L"$libdir" -lcuda -Wl,-rpath,"$libdir"
"$WORK/bench" "$REPS" "$MAX" >"$WORK/plain.txt"
# shellcheck disable=SC2086
env ${BENCH_EXTRA_ENV:-} PINSHIM_SUMMARY=none LD_PRELOAD="$ROOT/build/libpinshim.so" \
    "$WORK/bench" "$REPS" "$MAX" >"$WORK/shim.txt"
echo "# pageable copies, fresh buffers, best of $REPS; shim settings: ${BENCH_EXTRA_ENV:-defaults}"
paste "$WORK/plain.txt" "$WORK/shim.txt" | awk 'NR == 1 { printf "%-4s %-5s %12s %12s %12s %7s\n", "dir", "mode", "bytes", "no-shim GB/s", "shim GB/s", "ratio"; next }
    { printf "%-4s %-5s %12s %12.2f %12.2f %7.2f\n", $1, $2, $3, $4, $8, ($4 > 0 ? $8 / $4 : 0) }' | tee "$WORK/table.txt"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT/bench"; cp "$WORK/table.txt" "$OUT/bench/staging${BENCH_TAG:-}.txt"; fi
