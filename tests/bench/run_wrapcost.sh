#!/usr/bin/env bash
# run_wrapcost.sh: wrapcost.c without and with the shim, alternating, PAIRS pairs (default 5); then
# the median of each line on each side and the difference per call. Never asserts a timing.
# WRAPCOST_ENV: extra VAR=value settings for the shim runs (to bisect with policy keys).
# Without a GPU it runs on the fake driver (the differences are then the shim's CPU cost on top of
# a CPU driver, not a GPU's, and the copy line is dominated by the fake's stream threads).
# WRAPCOST_DRIVER=null runs both sides on tests/bench/nullcuda.c, a driver whose calls do nothing:
# every difference is then the shim's own CPU cost per call, free of any driver's noise, and rounds
# are timed in thread CPU time (nothing waits), which other processes on a busy machine do not inflate.
# WRAPCOST_SHIM: the library to measure (default build/libpinshim.so), e.g. a build of another
# commit, to compare two versions in the same time window.
# Environment: CUDA_HOME, CC, PAIRS, N (iterations, default 20000).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
SHIM=${WRAPCOST_SHIM:-$ROOT/build/libpinshim.so}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-wrapcost.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
${CC:-gcc} -std=gnu11 -O2 -I"${CUDA_HOME:-/usr/local/cuda}/include" tests/bench/wrapcost.c -o "$WORK/wrapcost" -ldl || exit 1
if [ "${WRAPCOST_DRIVER:-}" = null ]; then
    mkdir -p "$WORK/null"
    ${CC:-gcc} -std=gnu11 -O2 -shared -fPIC tests/bench/nullcuda.c -o "$WORK/null/libcuda.so.1" || exit 1
    export LD_LIBRARY_PATH="$WORK/null${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" WRAPCOST_CPUTIME=1
    echo "# the null driver (tests/bench/nullcuda.c): differences are the shim's own cost (thread CPU time)"
elif ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    export LD_LIBRARY_PATH="$ROOT/build/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKECUDA_GBPS=0 FAKECUDA_LATENCY_US=0
    echo "# no GPU: the fake driver"
fi
for i in $(seq "${PAIRS:-5}"); do
    "$WORK/wrapcost" "${N:-20000}" >>"$WORK/plain.txt"
    env PINSHIM_SUMMARY=none ${WRAPCOST_ENV:-} LD_PRELOAD="$SHIM" "$WORK/wrapcost" "${N:-20000}" >>"$WORK/shim.txt"
done
python3 - "$WORK/plain.txt" "$WORK/shim.txt" <<'PY'
import statistics, sys
def read(path):
    rows = {}
    for line in open(path):
        label, ns = line[9:].rsplit(None, 2)[0].strip(), float(line.split()[-2])
        rows.setdefault(label, []).append(ns)
    return rows
a, b = read(sys.argv[1]), read(sys.argv[2])
print(f"{'call':50} {'no shim':>10} {'shim':>10} {'shim - no shim':>15}")
for label in a:
    x, y = statistics.median(a[label]), statistics.median(b[label])
    print(f"{label:50} {x:10.1f} {y:10.1f} {y - x:+15.1f}  ({min(a[label]):.0f}-{max(a[label]):.0f} / {min(b[label]):.0f}-{max(b[label]):.0f})")
PY
