#!/usr/bin/env bash
# run_multidev.sh: several GPUs of one process copying at once (multidev_bench.c), three ways side by
# side, alternating PAIRS times: pageable without the shim (the driver's pageable path), pageable
# with the shim (staging; registration off, so that every round is a fresh buffer's copy), and pinned
# without the shim (the ceiling). Prints the median aggregate GB/s per direction, each device's own
# GB/s with the shim (the pool's fairness between devices), the ratios, and per shim run what became
# of each device's copies (staged or passed through, and why, from the shim's summary). Never
# asserts a number.
# Environment: BYTES (per device and copy, default 256 MiB), ROUNDS (default 5), PAIRS (default 3),
# MULTIDEV_DEVICES (at most this many devices), LIBCUDA_DIR (where libcuda is; default: found with
# ldconfig), CUDA_HOME. On the fake: LIBCUDA_DIR=build/fakecuda FAKECUDA_DEVICES=2.
set -eu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
BYTES=${BYTES:-268435456} ROUNDS=${ROUNDS:-5} PAIRS=${PAIRS:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
libdir=${LIBCUDA_DIR:-$(dirname "$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')")}
libdir=$(cd "$libdir" && pwd)
gcc -std=gnu11 -O2 -pthread -I"$CUDA_HOME/include" -I"$ROOT/tests/progs" "$ROOT/tests/bench/multidev_bench.c" \
    -o "$WORK/bench" -L"$libdir" -lcuda -Wl,-rpath,"$libdir"
for ((i = 1; i <= PAIRS; i++)); do # alternate, so drift hits every side alike
    "$WORK/bench" "$BYTES" "$ROUNDS" pageable >"$WORK/driver.$i.txt"
    env PINSHIM_PIN_ON_REUSE=off PINSHIM_SUMMARY=json LD_PRELOAD="$ROOT/build/libpinshim.so" \
        "$WORK/bench" "$BYTES" "$ROUNDS" pageable >"$WORK/shim.$i.txt" 2>"$WORK/shim.$i.err"
    "$WORK/bench" "$BYTES" "$ROUNDS" pinned >"$WORK/pinned.$i.txt"
done
head -1 "$WORK/driver.1.txt"
python3 - "$WORK" "$PAIRS" <<'PY'
import statistics, sys
work, pairs = sys.argv[1], int(sys.argv[2])
def load(side):
    runs = []
    for i in range(1, pairs + 1):
        lines = open(f"{work}/{side}.{i}.txt").read().splitlines()
        if lines[-1] != "bytes ok":
            sys.exit(f"{side} run {i}: {lines[-1]}")
        runs.append({l.split()[0]: dict(zip(l.split()[1::2], map(float, l.split()[2::2]))) for l in lines[1:3]})
    return {d: {k: statistics.median(r[d][k] for r in runs) for k in runs[0][d]} for d in runs[0]}
driver, shim, pinned = load("driver"), load("shim"), load("pinned")
print(f"median of {pairs} alternating runs, GB/s; every run's bytes came back identical")
print(f"{'dir':4} {'driver':>8} {'shim':>8} {'pinned':>8} {'shim/driver':>12} {'shim/pinned':>12}  shim per device")
for d in ("h2d", "d2h"):
    a, b, c = driver[d]["aggregate"], shim[d]["aggregate"], pinned[d]["aggregate"]
    per = " ".join(f"{k} {v:.2f}" for k, v in shim[d].items() if k != "aggregate")
    print(f"{d:4} {a:8.2f} {b:8.2f} {c:8.2f} {b / a:12.2f} {b / c:12.2f}  {per}")
# what the shim did with each device's copies, run by run (its JSON summary): a device whose copies
# passed through shows why here
import json
for i in range(1, pairs + 1):
    lines = [l for l in open(f"{work}/shim.{i}.err") if l.startswith("{")]
    if not lines:
        print(f"shim run {i}: no summary")
        continue
    s = json.loads(lines[-1])
    done = {}
    for r in s["transfers"]:
        if r["host_kind"] == "pageable" and r["dir"] in ("h2d", "d2h"):
            key = f"dev{r['device']} {r['dir']}"
            done.setdefault(key, {}).setdefault(r["action"], 0)
            done[key][r["action"]] += r["count"]
    why = ", ".join(f"{u['reason']} {u['count']}" for u in s["staging"]["unstaged"]) or "none"
    print(f"shim run {i}: " + "; ".join(f"{k} " + " ".join(f"{a} {n}" for a, n in sorted(v.items()))
                                      for k, v in sorted(done.items())) + f"; not staged: {why}")
PY
