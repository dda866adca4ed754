#!/usr/bin/env bash
# multigpu.sh: the shim on two GPUs, in one call. Each multidev scenario (tests/progs/multidev.c)
# without and with the shim must print the same; then DDP over every GPU with pageable batches
# (tests/gpu/ddp_pageable.py) must give bit-identical losses; then the aggregate bandwidth of
# concurrent staged copies (staging_bench on each GPU at once is not built yet: the DDP step time
# is the workload figure). Prints "ok"/"not ok" lines and "N passed, M failed".
# Usage, from the repository root with build/ made (make test-build): bash tests/gpu/multigpu.sh
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
SHIM=$ROOT/build/libpinshim.so
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-multigpu.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
compare() { # NAME: $WORK/NAME.plain against $WORK/NAME.shim
    if cmp -s "$WORK/$1.plain" "$WORK/$1.shim"; then
        pass=$((pass + 1)); echo "ok - $1"
    else
        fail=$((fail + 1)); echo "not ok - $1"; diff "$WORK/$1.plain" "$WORK/$1.shim" | head -8
    fi
}
nvidia-smi -L
for sc in regdev stage threads peer ctxlife; do
    timeout 300 build/tests/multidev $sc >"$WORK/$sc.plain" 2>&1; echo "rc $?" >>"$WORK/$sc.plain"
    PINSHIM_SUMMARY=json timeout 300 env LD_PRELOAD="$SHIM" build/tests/multidev $sc >"$WORK/$sc.shim" 2>"$WORK/$sc.err"
    echo "rc $?" >>"$WORK/$sc.shim"
    compare "$sc"
    head -1 "$WORK/$sc.shim"
    grep -v '^{' "$WORK/$sc.err" | head -3
    python3 - "$WORK/$sc.err" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
if lines:
    s = json.loads(lines[-1])
    acts = {}
    for t in s["transfers"]:
        acts[t["action"]] = acts.get(t["action"], 0) + t["count"]
    print(f"#   {acts}, failed {s['failed_copies']}, registration released {s.get('registration', {}).get('released')}")
PY
done
n=$(nvidia-smi -L | grep -c '^GPU ')
if [ "$n" -ge 2 ] && python3 -c 'import torch.distributed' 2>/dev/null; then
    torchrun --standalone --nproc_per_node="$n" tests/gpu/ddp_pageable.py >"$WORK/ddp.out.plain" 2>"$WORK/ddp.err.plain"
    PINSHIM_SUMMARY=none LD_PRELOAD="$SHIM" torchrun --standalone --nproc_per_node="$n" tests/gpu/ddp_pageable.py \
        >"$WORK/ddp.out.shim" 2>"$WORK/ddp.err.shim"
    cat "$WORK/ddp.out.plain" "$WORK/ddp.out.shim"
    grep '^ddp losses' "$WORK/ddp.out.plain" >"$WORK/ddp.plain"
    grep '^ddp losses' "$WORK/ddp.out.shim" >"$WORK/ddp.shim"
    [ -s "$WORK/ddp.plain" ] || { tail -5 "$WORK/ddp.err.plain"; tail -5 "$WORK/ddp.err.shim"; }
    compare ddp
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
