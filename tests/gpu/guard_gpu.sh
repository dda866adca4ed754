#!/usr/bin/env bash
# guard_gpu.sh: the guard on the GPU: PyTorch's non_blocking D2H read without a synchronize and
# the same through the CUDA runtime in CUDA C; race and synchronized runs, warn and repair modes.
# Prints one line per run: the program's own verdict and the guard's race count from the summary.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$CUDA_HOME/bin/nvcc" -O2 -arch=native "$ROOT/tests/gpu/guard_race.cu" -o "$WORK/guard_race" 2>"$WORK/nvcc.log" ||
    "$CUDA_HOME/bin/nvcc" -O2 -arch=sm_90 "$ROOT/tests/gpu/guard_race.cu" -o "$WORK/guard_race"
races() {
    python3 -c 'import json,sys
lines=[l for l in open(sys.argv[1]) if l.startswith("{")]
g=json.loads(lines[-1]).get("guard",{}) if lines else {}
print("races", g.get("races"), "repaired", g.get("repaired"), "reports", g.get("reports"))' "$1"
}
run() { # label, mode, command...
    local label=$1 mode=$2
    shift 2
    local out
    out=$(PINSHIM_GUARD=$mode PINSHIM_SUMMARY=json LD_PRELOAD="$ROOT/build/libpinshim.so" "$@" 2>"$WORK/err")
    echo "$label guard=$mode: $out; $(races "$WORK/err"); report lines $(grep -c 'unsynchronized' "$WORK/err")"
    grep -m1 -A12 'unsynchronized' "$WORK/err" | sed 's/^/    /' >"$WORK/first-report"
}
echo "without the shim: torch $(python3 "$ROOT/tests/gpu/torch_guard.py" race 20), cuda-c $("$WORK/guard_race" race 20)"
run torch-race warn python3 "$ROOT/tests/gpu/torch_guard.py" race 20
cat "$WORK/first-report"
run torch-sync warn python3 "$ROOT/tests/gpu/torch_guard.py" sync 20
run torch-race repair python3 "$ROOT/tests/gpu/torch_guard.py" race 20
run cudac-race warn "$WORK/guard_race" race 20
run cudac-sync warn "$WORK/guard_race" sync 20
run cudac-race repair "$WORK/guard_race" race 20
