#!/usr/bin/env bash
# torch_pysites.sh: the Python call sites of issue #14 on a GPU with PyTorch: the guard's report of
# a non_blocking D2H read without a sync, and a DataLoader run's logged sites, must name
# tests/gpu/torch_pysites.py's own lines. Prints the Python and torch versions, the lines to
# expect, the first guard report, the report's site tables, and a verdict line for each check.
# Needs build/libpinshim.so (built with make, here or elsewhere). Never asserts timings.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PYTHON:-python3}
PROG=$ROOT/tests/gpu/torch_pysites.py
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { echo "SKIP: no GPU"; exit 0; }
line() { sed -n "s/^line $1 = //p" "$2"; }
# verdict ERE FILE WHAT: "PASS WHAT" when FILE has a line matching ERE, else "FAIL WHAT (no ERE)"
verdict() { grep -Eq "$1" "$2" && echo "PASS $3" || echo "FAIL $3 (no '$1' in $(basename "$2"))"; }

echo "== guard: c = t.to(\"cpu\", non_blocking=True); c.mean() without a sync"
PINSHIM_GUARD=warn PINSHIM_SUMMARY=json LD_PRELOAD="$ROOT/build/libpinshim.so" "$PY" "$PROG" race \
    >"$WORK/race.out" 2>"$WORK/race.err"
echo "exit status $?"
cat "$WORK/race.out"
grep -m1 -A30 'unsynchronized' "$WORK/race.err" | grep -v '^==[0-9]*==  *fix:' | head -n 30
read_line=$(line race_read "$WORK/race.out")
copy_line=$(line race_copy "$WORK/race.out")
verdict "read at: +$PROG:$read_line in race" "$WORK/race.err" "read at names line $read_line"
verdict "copy from: +$PROG:$copy_line in race" "$WORK/race.err" "copy from names line $copy_line"

echo "== DataLoader: logged sites"
mkdir -p "$WORK/logs"
PINSHIM_LOG="$WORK/logs/pinshim-%p.jsonl" LD_PRELOAD="$ROOT/build/libpinshim.so" "$PY" "$PROG" loader \
    >"$WORK/loader.out" 2>"$WORK/loader.err"
echo "exit status $?"
cat "$WORK/loader.out"
tail -n 5 "$WORK/loader.err"
"$ROOT/scripts/pinshim-report" "$WORK/logs" --top 8 >"$WORK/report.txt" 2>&1
sed -n '/Top call sites and the fix/,/^\*\* Sync/p' "$WORK/report.txt"
h2d=$(line loader_h2d "$WORK/loader.out")
d2h=$(line loader_d2h "$WORK/loader.out")
verdict "torch_pysites.py:$h2d in loader" "$WORK/report.txt" "the report names line $h2d (.to(\"cuda\"))"
verdict "torch_pysites.py:$d2h in loader" "$WORK/report.txt" "the report names line $d2h (.to(\"cpu\"))"
echo "py_site values in the logs (count, site):"
cat "$WORK"/logs/*.jsonl | grep -o '"py_site":"[^"]*","py_func":"[^"]*"' | sort | uniq -c | sort -rn | head -n 10
