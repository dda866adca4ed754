#!/usr/bin/env bash
# run_pysite_cost.sh: the cost per copy of Python call sites. pysite_cost.py (4-byte copies from
# Python through ctypes) under four settings, alternating, PAIRS rounds (default 5): no shim; the
# shim without a log; with a log and python_sites=off; with a log and python_sites=on. Prints the
# median ns per copy of each loop under each setting and the difference python_sites on - off
# (what Python sites add to a logged copy). Never asserts a timing.
# Without a GPU it runs on the fake driver (FAKECUDA_GBPS=0, no latency): the differences are the
# shim's CPU cost. Environment: PYTHON (default python3), PAIRS, N (copies per timing, default 20000).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SHIM=$ROOT/build/libpinshim.so
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-pysite.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    export LD_LIBRARY_PATH="$ROOT/build/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKECUDA_GBPS=0 FAKECUDA_LATENCY_US=0
    echo "# no GPU: the fake driver"
fi
echo "# $("$PY" -c 'import sys; print("Python", sys.version.split()[0])'), N=${N:-20000}, PAIRS=${PAIRS:-5}"
run() { # run NAME ENV...
    local name=$1
    shift
    env "$@" "$PY" "$ROOT/tests/bench/pysite_cost.py" "${N:-20000}" >>"$WORK/$name.txt"
    rm -f "$WORK"/log-*.jsonl
}
for _ in $(seq "${PAIRS:-5}"); do
    run noshim
    run nolog PINSHIM_SUMMARY=none LD_PRELOAD="$SHIM"
    run log_off PINSHIM_LOG="$WORK/log-%p.jsonl" PINSHIM_PYTHON_SITES=off LD_PRELOAD="$SHIM"
    run log_on PINSHIM_LOG="$WORK/log-%p.jsonl" PINSHIM_PYTHON_SITES=on LD_PRELOAD="$SHIM"
done
python3 - "$WORK" <<'PY'
import os, statistics, sys
names = ["noshim", "nolog", "log_off", "log_on"]
rows = {}
for n in names:
    for line in open(os.path.join(sys.argv[1], n + ".txt")):
        label, ns = line.rsplit(None, 1)
        rows.setdefault(label.strip(), {}).setdefault(n, []).append(float(ns))
print("%-12s %10s %10s %16s %16s %12s" % ("loop (ns)", "no shim", "shim", "log, py off", "log, py on", "py on - off"))
for label, r in rows.items():
    m = {n: statistics.median(r[n]) for n in names}
    print("%-12s %10.1f %10.1f %16.1f %16.1f %+12.1f" % (label, m["noshim"], m["nolog"], m["log_off"], m["log_on"],
                                                         m["log_on"] - m["log_off"]))
PY
