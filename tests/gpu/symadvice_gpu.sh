#!/usr/bin/env bash
# symadvice_gpu.sh: issue #14 items 2, 4 and 6 on real programs. PyTorch copies a tensor to the host
# with .to("cpu") into fresh tensors and from pageable tensors to the GPU, and CuPy does
# cp.asnumpy, each with a log; the exit advice must name the framework's fix and what the shim
# staged, and pinshim-report must name libtorch's / CuPy's call sites (function, and file:line
# where the wheel has debug information) or say why not. With two or more GPUs, symprog's devices
# mode and a PyTorch loop over every GPU must show one row per device in the summary and the report.
# Prints the advice and report excerpts (to put in the issue's note), then "ok"/"not ok" lines.
# Usage, from the repository root with build/ made (make test-build; carry build/):
#   bash tests/gpu/symadvice_gpu.sh
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
SHIM=$ROOT/build/libpinshim.so
REPORT=$ROOT/scripts/pinshim-report
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-symadvice.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
check() { # NAME COMMAND...: ok when the command succeeds
    local name="$1"
    shift
    if "$@"; then pass=$((pass + 1)); echo "ok - $name"; else fail=$((fail + 1)); echo "not ok - $name"; fi
}
nvidia-smi -L
GPUS=$(nvidia-smi -L | grep -c '^GPU')

cat >"$WORK/torch_offload.py" <<'PY'
import sys, torch
n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())] if "--all" in sys.argv else [torch.device("cuda", 0)]
for dev in devices:
    x = torch.randn(16 << 20, device=dev)              # 64 MiB
    for i in range(n):
        host = x.to("cpu")                             # a fresh pageable tensor each time
        back = host.to(dev)                            # pageable H2D
    torch.cuda.synchronize(dev)
    print(dev, float(back.sum()))
PY
cat >"$WORK/cupy_copy.py" <<'PY'
import numpy as np, cupy as cp
a = cp.arange(64 << 20, dtype=cp.float32)
for i in range(8):
    h = cp.asnumpy(a)
    b = cp.asarray(np.ascontiguousarray(h))
print(float(b.sum()))
PY

echo "=== PyTorch: .to(\"cpu\") into fresh tensors and back, with a log"
PINSHIM_LOG="$WORK/torch.jsonl" LD_PRELOAD="$SHIM" timeout 300 python3 "$WORK/torch_offload.py" 8
python3 - "$WORK/torch.jsonl" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"type":"summary"' in l][-1]
for a in s["advice"]:
    print("advice[%s]: %s" % (a["rule"], a["message"]))
mods = [json.loads(l) for l in open(sys.argv[1]) if '"type":"module"' in l]
for m in mods:
    print("module: %s %s build_id=%s framework=%s" % (m["name"], m["path"], m["build_id"], m["framework"]))
PY
check "torch: a site's advice names PyTorch and the pinned-tensor copy_ fix" \
    grep -q '(PyTorch): .*copy_(t, non_blocking=True)' "$WORK/torch.jsonl"
check "torch: the shim's advice says what staging saved (an estimate)" grep -q '"rule":"shim","message":"the shim staged' "$WORK/torch.jsonl"
"$REPORT" "$WORK/torch.jsonl" >"$WORK/torch.report" 2>&1
sed -n '/Top call sites and the fix/,/^$/p;/^ *libtorch\|module changed\|not on this machine\|addr2line/p' "$WORK/torch.report" | head -30
check "torch: the report names libtorch's site as a function (or says why not)" \
    grep -Eq ' at .*\(libtorch[^ ]*\+0x|^  libtorch[^:]*: ' "$WORK/torch.report"

if python3 -c 'import cupy' 2>/dev/null; then
    echo "=== CuPy: cp.asnumpy and cp.asarray, with a log"
    PINSHIM_LOG="$WORK/cupy.jsonl" LD_PRELOAD="$SHIM" timeout 300 python3 "$WORK/cupy_copy.py"
    grep -o '"rule":"site","message":"[^"]*' "$WORK/cupy.jsonl" | head -3
    check "cupy: a site's advice names CuPy and cupyx.empty_pinned" grep -q '(CuPy): .*cupyx.empty_pinned' "$WORK/cupy.jsonl"
    "$REPORT" "$WORK/cupy.jsonl" 2>&1 | sed -n '/Top call sites and the fix/,/^$/p' | head -12
fi

if [ "$GPUS" -ge 2 ]; then
    echo "=== $GPUS GPUs: symprog devices, and PyTorch on every GPU"
    PINSHIM_LOG="$WORK/dev.jsonl" LD_PRELOAD="$SHIM" timeout 300 build/tests/symprog devices 3
    LD_PRELOAD="$SHIM" timeout 300 build/tests/symprog devices 3 2>"$WORK/dev.txt" >/dev/null
    grep -E 'device|dir' "$WORK/dev.txt"
    check "symprog devices: the text summary has a device column and two device subtotals" \
        test "$(grep -Ec '^==[0-9]+== device [01] ' "$WORK/dev.txt")" = 2
    PINSHIM_LOG="$WORK/torchall.jsonl" LD_PRELOAD="$SHIM" timeout 300 python3 "$WORK/torch_offload.py" 4 --all
    "$REPORT" "$WORK/torchall.jsonl" >"$WORK/torchall.report" 2>&1
    sed -n '/Copies by device/,/^$/p' "$WORK/torchall.report"
    check "torch on every GPU: the report has rows for $GPUS devices" \
        test "$(sed -n '/Copies by device/,/^$/p' "$WORK/torchall.report" | awk '$3 == "d2h"' | wc -l)" = "$GPUS"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
