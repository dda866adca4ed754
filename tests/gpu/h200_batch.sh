#!/usr/bin/env bash
# h200_batch.sh: everything this project measures and checks on the GPU machine, in one call
# (device time is scarce). Writes results under $OUT (default /tmp/pinshim-gpu) and prints the
# tables last. Usage, from the repository root: bash tests/gpu/h200_batch.sh
set -u
OUT=${OUT:-/tmp/pinshim-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.." || exit 1
echo "== machine"; nvidia-smi -L; nproc
make -s all build/tests/demo 2>&1 | tail -3
echo "== gpu tests (CUDA C static/shared/per-thread runtime, PyTorch)"
OUT="$OUT" bash tests/gpu/run.sh | grep -v '^ok'
echo "== JAX and CuPy under the shim"
bash tests/gpu/frameworks.sh
echo "== runner and report on a real PyTorch run"
rm -rf /tmp/pinshim-logs
scripts/pinshim --log /tmp/pinshim-logs -- python3 tests/gpu/torch_copies.py >/dev/null
scripts/pinshim-report /tmp/pinshim-logs --html "$OUT/report.html" --trace "$OUT/trace.json" | head -40
python3 -c "import json,sys; t=json.load(open(sys.argv[1])); print('trace events:', len(t['traceEvents']))" "$OUT/trace.json"
echo "== pass-through overhead, summary only"
BENCH_PAIRS=7 bash tests/bench/run_passthrough.sh | tail -2
echo "== pass-through overhead, logging every transfer"
BENCH_PAIRS=7 BENCH_EXTRA_ENV="PINSHIM_LOG=/tmp/pinshim-bench.jsonl" bash tests/bench/run_passthrough.sh | tail -2
echo "== staging: pageable copies, no shim vs shim (defaults)"
OUT="$OUT" bash tests/bench/run_staging.sh
echo "== the guard on the GPU (PyTorch non_blocking D2H read, CUDA C runtime API)"
bash tests/gpu/guard_gpu.sh
echo "== guard cost per copy (protect + release), guard_pages all vs first"
OUT="$OUT" bash tests/bench/run_guard_cost.sh
echo "== pin-on-reuse: C reuse loop, PyTorch reuse loop, small malloc cost"
OUT="$OUT" bash tests/bench/run_reuse.sh
echo "== what cuMemHostRegister does to a malloc'd buffer (fork, error codes, cost)"
${CC:-gcc} -std=gnu11 -O2 -I"${CUDA_HOME:-/usr/local/cuda}/include" tests/gpu/register_probe.c -o /tmp/register_probe -ldl &&
    /tmp/register_probe
