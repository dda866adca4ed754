#!/usr/bin/env bash
# tests/bench/run_reuse.sh: pin-on-reuse, measured side by side in one run.
#  1. the C reuse loop (tests/bench/reuse_bench.c, 200 malloc'd 4 MiB buffers, 10 passes of H2D;
#     then 200 heap neighbours of 4,000,000 bytes side by side, H2D and D2H): pageable without the
#     shim, pageable under the shim, pinned without the shim; per-pass GB/s and the ratio of the
#     shim's last passes to pinned;
#  2. PyTorch (when importable): 200 pageable 4 MB tensors .to("cuda"), median ms without the shim,
#     under it, and pinned (tests/gpu/torch_reuse.py);
#  3. small malloc/free pairs with and without the shim, alternating, 5 pairs: ns per pair.
# Without a GPU it runs against the fake driver (FAKECUDA_GBPS=0 unless set): only the malloc
# numbers are meaningful there. Never asserts a timing. Environment: CUDA_HOME, CC, OUT (copies
# the output to $OUT/bench/reuse.txt), REUSE_ARGS (reuse_bench's B S P, default "200 4194304 10").
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CC=${CC:-gcc}
SHIM=$ROOT/build/libpinshim.so
make -s -C "$ROOT" >/dev/null || exit 1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-reuse.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
$CC -std=gnu11 -O2 -Wall -I"$CUDA_HOME/include" tests/bench/reuse_bench.c -o "$WORK/reuse_bench" -ldl || exit 1
$CC -std=gnu11 -O2 -Wall tests/bench/malloc_cost.c -o "$WORK/malloc_cost" -ldl || exit 1
gpu=1
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    gpu=0
    make -s -C "$ROOT" fakecuda >/dev/null || exit 1
    export LD_LIBRARY_PATH="$ROOT/build/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export FAKECUDA_GBPS=${FAKECUDA_GBPS:-0}
fi
[ -n "${OUT:-}" ] && mkdir -p "$OUT/bench"
exec > >(tee ${OUT:+"$OUT/bench/reuse.txt"}) 2>&1
[ "$gpu" = 0 ] && echo "# no GPU: the fake driver (copy rates are not a GPU's; the malloc numbers are real)"
ARGS=${REUSE_ARGS:-200 4194304 10}
HEAP_ARGS=${REUSE_HEAP_ARGS:-200 4000000 10}
# reuse_loop MODE ARGS DIR: pageable without the shim, under it, and pinned, side by side.
reuse_loop() {
    local mode=$1 args=$2 dir=$3
    echo "== C reuse loop: reuse_bench $mode $args $dir (GB/s per pass)"
    PINSHIM_SUMMARY=none "$WORK/reuse_bench" "$mode" $args "$dir" >"$WORK/plain.txt"
    PINSHIM_SUMMARY=none LD_PRELOAD="$SHIM" "$WORK/reuse_bench" "$mode" $args "$dir" >"$WORK/shim.txt"
    PINSHIM_SUMMARY=none "$WORK/reuse_bench" pinned $args "$dir" >"$WORK/pinned.txt"
    printf '%-8s %22s %22s %22s\n' pass "$mode, no shim" "$mode, shim" "pinned, no shim"
    paste "$WORK/plain.txt" "$WORK/shim.txt" "$WORK/pinned.txt" | awk '{printf "%-8s %22s %22s %22s\n", $2, $3, $9, $15}'
    paste "$WORK/shim.txt" "$WORK/pinned.txt" | awk '{n++} n > 3 {s += $3; p += $9; k++}
        END {if (k) printf "passes 4+: shim %.2f GB/s, pinned %.2f GB/s, ratio shim/pinned %.3f\n", s/k, p/k, s/p}'
    paste "$WORK/plain.txt" "$WORK/shim.txt" | awk '{n++} n > 3 {a += $3; s += $9; k++}
        END {if (k) printf "passes 4+: speedup over pageable without the shim %.2fx\n", s/a}'
}
reuse_loop pageable "$ARGS" h2d
reuse_loop heap "$HEAP_ARGS" h2d
reuse_loop heap "$HEAP_ARGS" d2h
if [ "$gpu" = 1 ] && python3 -c 'import torch' 2>/dev/null; then
    echo "== PyTorch: 200 pageable tensors of 4 MB, .to(\"cuda\")"
    python3 tests/gpu/torch_reuse.py | tee "$WORK/t_plain.txt"
    PINSHIM_SUMMARY=none LD_PRELOAD="$SHIM" python3 tests/gpu/torch_reuse.py | tee "$WORK/t_shim.txt"
    PINNED=1 python3 tests/gpu/torch_reuse.py | tee "$WORK/t_pinned.txt"
    a=$(awk '{print $5}' "$WORK/t_plain.txt"); b=$(awk '{print $5}' "$WORK/t_shim.txt")
    awk -v a="$a" -v b="$b" 'BEGIN {printf "PyTorch speedup under the shim: %.2fx\n", a / b}'
fi
echo "== small malloc/free pairs (ns per pair, both pinned to one CPU; 9 alternating pairs, then the medians)"
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 1"
for i in 1 2 3 4 5 6 7 8 9; do
    a=$($PIN "$WORK/malloc_cost" | awk '{print $1}')
    b=$(LD_PRELOAD="$SHIM" PINSHIM_SUMMARY=none $PIN "$WORK/malloc_cost" | awk '{print $1}')
    echo "$a $b" >>"$WORK/malloc.txt"
    awk -v a="$a" -v b="$b" 'BEGIN {printf "no shim %.2f  shim %.2f  difference %+.2f\n", a, b, b - a}'
done
sort -n -k1 "$WORK/malloc.txt" | awk '{a[NR] = $1} END {printf "median no shim %.2f ns", a[5]}'
sort -n -k2 "$WORK/malloc.txt" | awk '{b[NR] = $2} END {printf ", median shim %.2f ns\n", b[5]}'
