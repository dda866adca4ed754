#!/usr/bin/env bash
# tests/bench/run_passthrough.sh: the shim's cost per copy call on its pass-through path.
#
#   tests/bench/run_passthrough.sh [calls]          (or: make bench)
#
# Builds passthrough.c against the system libcuda, then runs it in alternating
# pairs (no shim, shim) and prints a table of ns per 4-byte cuMemcpyHtoDAsync_v2
# call, the medians, their difference and ratio. It never asserts a timing.
# Skips (exit 0) without a GPU.
#
# Environment:
#   BENCH_N          calls per run (default 200000; the first argument wins)
#   BENCH_PAIRS      number of alternating pairs (default 7)
#   BENCH_EXTRA_ENV  extra VAR=value settings for the shim runs only, space separated,
#                    e.g. BENCH_EXTRA_ENV="PINSHIM_LOG=/tmp/bench.jsonl" to measure per-transfer
#                    logging; without it the shim runs summary-only (JSON summary on stderr)
#   LIBCUDA_DIR      folder holding libcuda.so / libcuda.so.1 to link against (also used as rpath)
#   CUDA_HOME        default /usr/local/cuda (for cuda.h)
#   CC               default gcc
#   PINSHIM_LIB      default <repo>/build/libpinshim.so
#   OUT              when set, the table and the last shim summary go to $OUT/bench/
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
SHIM=${PINSHIM_LIB:-$ROOT/build/libpinshim.so}
N=${1:-${BENCH_N:-200000}}
PAIRS=${BENCH_PAIRS:-7}
CC=${CC:-gcc}
EXTRA=${BENCH_EXTRA_ENV:-}
WARMUP=2000   # must match passthrough.c

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    if [ -z "${LIBCUDA_DIR:-}" ]; then
        echo "SKIP: no GPU"
        exit 0
    fi
    echo "# no GPU seen by nvidia-smi; running against LIBCUDA_DIR=$LIBCUDA_DIR anyway"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-bench.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
RES=""
if [ -n "${OUT:-}" ]; then
    RES="$OUT/bench"
    mkdir -p "$RES" || exit 1
    : >"$RES/passthrough.txt"
fi
say() {
    echo "$*"
    if [ -n "$RES" ]; then echo "$*" >>"$RES/passthrough.txt"; fi
}

# ---------------------------------------------------------------- shim
if [ ! -f "$SHIM" ] && [ -z "${PINSHIM_LIB:-}" ] && [ -f "$ROOT/Makefile" ]; then
    echo "# $SHIM missing: running make"
    make -C "$ROOT" >"$WORK/make.log" 2>&1 || tail -n 20 "$WORK/make.log"
fi
if [ ! -f "$SHIM" ]; then
    echo "error: shim library $SHIM not found (run make)" >&2
    exit 1
fi

# ---------------------------------------------------------------- find libcuda and build
rpath=()
if [ -n "${LIBCUDA_DIR:-}" ]; then
    libdir=$LIBCUDA_DIR
    rpath=("-Wl,-rpath,$LIBCUDA_DIR")
else
    libdir=""
    real=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ { print $NF; exit }')
    [ -n "$real" ] && libdir=$(dirname "$real")
    if [ -z "$libdir" ]; then
        for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/lib/wsl/lib; do
            if [ -e "$d/libcuda.so.1" ]; then libdir=$d; break; fi
        done
    fi
    if [ -z "$libdir" ] && [ -e "$CUDA_HOME/lib64/stubs/libcuda.so" ]; then
        # link-time only: the stub's soname is libcuda.so.1, the loader finds the real one
        libdir="$CUDA_HOME/lib64/stubs"
        echo "# linking against the stub $libdir/libcuda.so (no libcuda.so.1 found in the system)"
    fi
fi
if [ -n "$libdir" ] && [ -e "$libdir/libcuda.so" ]; then
    link=(-L"$libdir" -lcuda)
elif [ -n "$libdir" ] && [ -e "$libdir/libcuda.so.1" ]; then
    link=(-L"$libdir" -l:libcuda.so.1)
else
    link=(-lcuda)
fi
BIN="$WORK/passthrough"
if ! "$CC" -O2 -std=c11 -Wall -I"$CUDA_HOME/include" "$ROOT/tests/bench/passthrough.c" \
        "${link[@]}" ${rpath[@]+"${rpath[@]}"} -o "$BIN" >"$WORK/build.log" 2>&1; then
    echo "error: building passthrough.c failed:" >&2
    cat "$WORK/build.log" >&2
    exit 1
fi

# ---------------------------------------------------------------- runs
LOG="$WORK/shim-summary.jsonl"
ns_of() { awk '/^ns_per_call / { print $2; found = 1 } END { if (!found) print "-" }' "$1"; }

run_noshim() {
    env -u LD_PRELOAD "$BIN" "$N" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    [ $rc -eq 0 ] || { echo "# no-shim run failed (exit $rc):" >&2; tail -n 5 "$WORK/err" >&2; }
    ns_of "$WORK/out"
}
run_shim() {
    rm -f "$LOG"
    # Summary only (on stderr) unless BENCH_EXTRA_ENV turns the per-transfer log on.
    # shellcheck disable=SC2086  # BENCH_EXTRA_ENV is a list of VAR=value words
    env LD_PRELOAD="$SHIM" PINSHIM_SUMMARY=json $EXTRA "$BIN" "$N" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    local logfile
    logfile=$(printf '%s\n' $EXTRA | sed -n 's/^PINSHIM_LOG=//p' | tail -n 1)
    if [ -n "$logfile" ] && [ -f "$logfile" ]; then
        tail -n 1 "$logfile" >"$LOG"; rm -f "$logfile"
    else
        grep '^{' "$WORK/err" >"$LOG" || true
    fi
    [ $rc -eq 0 ] || { echo "# shim run failed (exit $rc):" >&2; tail -n 5 "$WORK/err" >&2; }
    ns_of "$WORK/out"
}

say "# pinshim pass-through benchmark: $N x 4-byte pinned cuMemcpyHtoDAsync_v2 per run, $PAIRS pairs"
say "# $(nvidia-smi -L 2>/dev/null | head -n 1)"
say "# shim: $SHIM${EXTRA:+ (shim runs also get: $EXTRA)}"
say "# libcuda linked from: ${libdir:-default search path}"
say "$(printf '%-5s %16s %16s' run no-shim_ns/call shim_ns/call)"
a_all=() b_all=()
for ((i = 1; i <= PAIRS; i++)); do
    a=$(run_noshim)
    b=$(run_shim)
    say "$(printf '%-5s %16s %16s' "$i" "$a" "$b")"
    [ "$a" != "-" ] && a_all+=("$a")
    [ "$b" != "-" ] && b_all+=("$b")
done

median() {
    [ $# -gt 0 ] || { echo "-"; return; }
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR % 2) printf "%.1f\n", v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ma=$(median "${a_all[@]+"${a_all[@]}"}")
mb=$(median "${b_all[@]+"${b_all[@]}"}")
say "$(printf '%-5s %16s %16s' median "$ma" "$mb")"
if [ "$ma" != "-" ] && [ "$mb" != "-" ]; then
    say "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "shim - no-shim: %+.1f ns/call; shim / no-shim: %.3f\n", b - a, (a > 0 ? b / a : 0) }')"
else
    say "no median difference: some runs failed"
fi

# What did the shim see in its last run? (information only)
if [ -s "$LOG" ]; then
    [ -n "$RES" ] && cp "$LOG" "$RES/last-shim-summary.jsonl"
    say "$(python3 - "$LOG" "$N" "$WARMUP" <<'PYEOF'
import json, sys
log, n, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = [l for l in open(log, errors="replace") if l.lstrip().startswith("{")]
try:
    s = json.loads(lines[-1])
    c = {}
    for r in s.get("transfers", []):
        k = "%s %s" % (r.get("dir"), r.get("host_kind"))
        c[k] = c.get(k, 0) + int(r.get("count", 0))
    print("# shim summary of the last shim run: %s (the program made h2d pinned %d, d2h pageable 1)"
          % (", ".join("%s %d" % kv for kv in sorted(c.items())) or "no transfers", n + warm + 1))
except Exception as e:
    print("# shim summary of the last shim run: unreadable (%s)" % e)
PYEOF
)"
else
    say "# the shim wrote no summary in its last run"
fi
[ ${#a_all[@]} -eq "$PAIRS" ] && [ ${#b_all[@]} -eq "$PAIRS" ]
