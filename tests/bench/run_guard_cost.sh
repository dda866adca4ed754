#!/usr/bin/env bash
# tests/bench/run_guard_cost.sh: the guard's cost per guarded copy, guard_pages = all vs first.
#
#   tests/bench/run_guard_cost.sh [bytes...]     (default 4 KiB, 1 MiB, 64 MiB)
#
# Builds guard_cost.c, then runs it under the shim three times: guard off, guard = warn with
# guard_pages = all, and with guard_pages = first (a synchronized loop: no races, so the difference
# is the protect + release work of each copy). Prints each run's table and, per size, the median
# copy+sync time of each mode and the differences. Never asserts a timing.
# Without a GPU it runs against the fake driver (build/fakecuda, FAKECUDA_GBPS=0 unless set):
# the mprotect numbers are real, the copy times are not a GPU's.
# Environment: CUDA_HOME (default /usr/local/cuda), CC (default gcc), GUARD_COST_ITERS,
#              OUT (when set, the output also goes to $OUT/bench/guard_cost.txt).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CC=${CC:-gcc}
SHIM=$ROOT/build/libpinshim.so
[ -f "$SHIM" ] || make -C "$ROOT" >/dev/null || exit 1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-guard-cost.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
$CC -std=gnu11 -O2 -Wall -Wextra -I"$CUDA_HOME/include" tests/bench/guard_cost.c -o "$WORK/guard_cost" -ldl || exit 1

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    make -C "$ROOT" fakecuda >/dev/null || exit 1
    export LD_LIBRARY_PATH="$ROOT/build/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export FAKECUDA_GBPS=${FAKECUDA_GBPS:-0}
    echo "# no GPU: the fake driver (copy times are not a GPU's; mprotect times are real)"
fi

out() {
    echo "$*"
    if [ -n "${OUT:-}" ]; then mkdir -p "$OUT/bench" && echo "$*" >>"$OUT/bench/guard_cost.txt"; fi
}

for mode in off all first; do
    guard=warn
    [ "$mode" = off ] && guard=off
    PINSHIM_SUMMARY=none PINSHIM_GUARD=$guard PINSHIM_GUARD_PAGES=${mode/off/all} LD_PRELOAD="$SHIM" \
        "$WORK/guard_cost" "$@" >"$WORK/$mode.txt" || { cat "$WORK/$mode.txt"; exit 1; }
    out "# guard $mode"
    while read -r line; do out "$line"; done <"$WORK/$mode.txt"
done
out "# per guarded copy (copy+sync median, ns): off, all, first, all-off, first-off"
paste "$WORK/off.txt" "$WORK/all.txt" "$WORK/first.txt" | awk 'NR > 1 {
    printf "%12s %12.0f %12.0f %12.0f %12.0f %12.0f\n", $1, $5, $10, $15, $10 - $5, $15 - $5 }' |
    while read -r line; do out "$line"; done
