#!/usr/bin/env bash
# regcache_gpu.sh: pin-on-reuse against the real driver, in one call. For every reuseprog scenario
# (heap neighbours and edge copies included), the output with the shim (default policy, and a
# policy that registers at the first copy) must equal the output without it; then edge_probe's
# costs of copies crossing a registration's edge; then PyTorch's heap-neighbour program (issue #10)
# with and without the shim. Prints "ok"/"not ok" lines and "N passed, M failed".
# Usage, from the repository root with build/ made (make test-build): bash tests/gpu/regcache_gpu.sh
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
SHIM=$ROOT/build/libpinshim.so
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-regcache.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
check() { # NAME: compares $WORK/NAME.plain with $WORK/NAME.shim*
    local name=$1 f
    for f in "$WORK/$name".shim "$WORK/$name".shim-eager; do
        [ -e "$f" ] || continue
        if cmp -s "$WORK/$name.plain" "$f"; then
            pass=$((pass + 1)); echo "ok - $name ($(basename "$f"))"
        else
            fail=$((fail + 1)); echo "not ok - $name ($(basename "$f"))"; diff "$WORK/$name.plain" "$f" | head -8
        fi
    done
}
for sc in neighbours edges "reuse 8 10" async free realloc munmap mremap madvise sameaddr budget own beside threads fork \
    "cxx build/tests/libcxxalloc.so"; do
    name=${sc%% *}
    build/tests/reuseprog $sc >"$WORK/$name.plain" 2>"$WORK/$name.plain.err"; echo "rc $?" >>"$WORK/$name.plain"
    PINSHIM_SUMMARY=json PINSHIM_REGISTER_MAX_BYTES=10M LD_PRELOAD="$SHIM" build/tests/reuseprog $sc \
        >"$WORK/$name.shim" 2>"$WORK/$name.err"; echo "rc $?" >>"$WORK/$name.shim"
    PINSHIM_SUMMARY=none PINSHIM_REGISTER_AFTER=1 PINSHIM_TRACK_MIN_BYTES=4096 LD_PRELOAD="$SHIM" \
        build/tests/reuseprog $sc >"$WORK/$name.shim-eager" 2>"$WORK/$name.eager.err"; echo "rc $?" >>"$WORK/$name.shim-eager"
    check "$name"
    grep -h '^neighbours:\|^edges:' "$WORK/$name.shim" | tail -1
    python3 - "$WORK/$name.err" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
if lines:
    s = json.loads(lines[-1]); t = s["transfers"]
    reg = sum(x["count"] for x in t if x["action"] == "registered"); tot = sum(x["count"] for x in t)
    print(f"#   {tot} copies, {reg} through registrations, failed {s['failed_copies']}, released {s.get('registration', {}).get('released')}")
PY
done
echo "== edge_probe (real driver, no shim)"
${CC:-gcc} -std=gnu11 -O2 -I"${CUDA_HOME:-/usr/local/cuda}/include" tests/gpu/edge_probe.c -o "$WORK/edge_probe" -ldl &&
    "$WORK/edge_probe" 4000000 && "$WORK/edge_probe" 4194304 && "$WORK/edge_probe" 67108864
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "== PyTorch heap neighbours (issue #10)"
    python3 tests/gpu/torch_neighbours.py >"$WORK/tn.plain" 2>&1; echo "rc $?" >>"$WORK/tn.plain"
    PINSHIM_SUMMARY=json LD_PRELOAD="$SHIM" python3 tests/gpu/torch_neighbours.py >"$WORK/tn.shim" 2>"$WORK/tn.err"
    echo "rc $?" >>"$WORK/tn.shim"
    cat "$WORK/tn.plain" "$WORK/tn.shim"
    sed 's/median [0-9.]* ms/median - ms/g' "$WORK/tn.plain" >"$WORK/tnd.plain"
    sed 's/median [0-9.]* ms/median - ms/g' "$WORK/tn.shim" >"$WORK/tnd.shim"
    check tnd
    grep -o '"failed_copies":[0-9]*' "$WORK/tn.err"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
