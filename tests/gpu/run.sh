#!/usr/bin/env bash
# tests/gpu/run.sh: pinshim's GPU-only tests (needs an NVIDIA GPU; skips without one).
#
#   tests/gpu/run.sh            (or: make gpu-test)
#
# For copies.cu (built with the static and with the shared CUDA runtime) and,
# when PyTorch with CUDA is importable, torch_copies.py:
#   - run without the shim, with the shim switched off (PINSHIM_POLICY=off),
#     and with the shim writing a JSON summary (PINSHIM_SUMMARY=json PINSHIM_LOG=file);
#   - stdout must be identical in all three runs;
#   - the shim-off run must print nothing of pinshim's on stderr;
#   - each "expect <dir> <host_kind> <count>" line the program prints must match
#     the summary: equal for copies.cu (plus: no copies beyond the expected ones
#     in any direction), >= for torch (PyTorch makes extra copies of its own).
#     host_kind "any" means the sum over all host kinds of that direction.
# Prints "ok - ..." / "not ok - ..." per check, "# ..." for diagnostics, and a
# final line "N passed, M failed[, K skipped]". Exit status 1 when any check failed.
#
# Environment:
#   OUT              when set, outputs, stderr, summaries and build logs go to $OUT/gpu/
#   CUDA_HOME        default /usr/local/cuda
#   NVCC             default $CUDA_HOME/bin/nvcc (then nvcc on PATH)
#   PINSHIM_LIB      default <repo>/build/libpinshim.so
#   PYTHON           interpreter for the torch test (default python3)
#   GPU_TEST_TIMEOUT seconds per program run (default 300)
# Other PINSHIM_* settings in the environment reach the shim runs unchanged
# (the shim-off run always gets PINSHIM_POLICY=off and no PINSHIM_LOG).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
SHIM=${PINSHIM_LIB:-$ROOT/build/libpinshim.so}
PY=${PYTHON:-python3}
RUN_TIMEOUT=${GPU_TEST_TIMEOUT:-300}
HERE="$ROOT/tests/gpu"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "SKIP: no GPU"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi

PASS=0 FAIL=0 SKIPPED=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pinshim-gpu.XXXXXX") || exit 1
if [ -n "${OUT:-}" ]; then
    RES="$OUT/gpu"
    mkdir -p "$RES" || exit 1
else
    RES="$WORK/res"
    mkdir -p "$RES"
fi
cleanup() {
    if [ -z "${OUT:-}" ] && [ "$FAIL" -gt 0 ]; then
        echo "# outputs kept in $RES"
        rm -rf "${WORK:?}/bin"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

say() { echo "$*"; echo "$*" >>"$RES/results.txt"; }
ok() { PASS=$((PASS + 1)); say "ok - $*"; }
notok() { FAIL=$((FAIL + 1)); say "not ok - $*"; }
skip() { SKIPPED=$((SKIPPED + 1)); say "ok - # SKIP $*"; }
# diag FILE [N]: the last N lines of FILE as "# " lines
diag() { [ -s "$1" ] && tail -n "${2:-15}" "$1" | sed 's/^/#   /' | tee -a "$RES/results.txt"; return 0; }

: >"$RES/results.txt"
say "# pinshim GPU tests, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
nvidia-smi -L 2>/dev/null | head -n 8 | sed 's/^/# /' | tee -a "$RES/results.txt"

# --------------------------------------------------------------- the summary checker
cat >"$WORK/check.py" <<'PYEOF'
import json, re, sys
from collections import defaultdict

mode, label, logfile, stdoutfile = sys.argv[1:5]
out = []
def ok(msg): out.append("ok - %s: %s" % (label, msg))
def notok(msg): out.append("not ok - %s: %s" % (label, msg))

def finish(show_rows=None):
    bad = any(l.startswith("not ok") for l in out)
    if bad and show_rows is not None:
        out.append("# summary rows (dir host_kind bucket_min action count bytes):")
        for r in show_rows:
            out.append("#   %s %s %s %s %s %s" % (r.get("dir"), r.get("host_kind"), r.get("bucket_min"),
                                                  r.get("action"), r.get("count"), r.get("bytes")))
    print("\n".join(out))
    sys.exit(0)

expects = []
with open(stdoutfile, errors="replace") as f:
    for line in f:
        m = re.match(r"^expect (\S+) (\S+) (\d+)\s*$", line)
        if m:
            expects.append((m.group(1), m.group(2), int(m.group(3))))
if not expects:
    notok("program printed no expect lines")
    finish()

try:
    with open(logfile, errors="replace") as f:
        lines = [l.strip() for l in f if l.lstrip().startswith("{")]
except OSError as e:
    notok("cannot read summary log %s (%s)" % (logfile, e.strerror))
    finish()
if not lines:
    notok("no JSON summary line in %s" % logfile)
    finish()
try:
    summary = json.loads(lines[-1])
except ValueError as e:
    notok("last summary line is not valid JSON (%s)" % e)
    finish()
rows = summary.get("transfers") if isinstance(summary, dict) else None
if not isinstance(rows, list):
    notok("summary has no \"transfers\" list")
    finish()
ok("summary JSON parsed (%d transfer rows)" % len(rows))

by_kind = defaultdict(int)
by_dir = defaultdict(int)
for r in rows:
    try:
        c = int(r.get("count", 0))
    except (TypeError, ValueError):
        notok("row with a bad count: %r" % (r,))
        continue
    by_kind[(r.get("dir"), r.get("host_kind"))] += c
    by_dir[r.get("dir")] += c

for d, k, n in expects:
    got = by_dir[d] if k == "any" else by_kind[(d, k)]
    what = "%s %s" % (d, k)
    if mode == "exact":
        if got == n:
            ok("%s count %d" % (what, n))
        else:
            notok("%s count: expected %d, summary has %d" % (what, n, got))
    else:
        if got >= n:
            ok("%s count >= %d (summary %d)" % (what, n, got))
        else:
            notok("%s count: expected at least %d, summary has %d" % (what, n, got))

if mode == "exact":
    want_dir = defaultdict(int)
    for d, k, n in expects:
        want_dir[d] += n
    for d in sorted(set(want_dir) | set(k for k, v in by_dir.items() if v)):
        if by_dir[d] == want_dir[d]:
            ok("%s total %d, no unexpected copies" % (d, want_dir[d]))
        else:
            detail = ", ".join("%s=%d" % (k[1], v) for k, v in sorted(by_kind.items(), key=str)
                               if k[0] == d and v)
            notok("%s total: program made %d, summary has %d (%s)" % (d, want_dir[d], by_dir[d], detail))
finish(rows)
PYEOF

# record_checker_output: tally the checker's lines
record_checker_output() {
    local line
    while IFS= read -r line; do
        case "$line" in
            "ok - "*) ok "${line#ok - }" ;;
            "not ok - "*) notok "${line#not ok - }" ;;
            *) say "$line" ;;
        esac
    done
}

# --------------------------------------------------------------- running one program three ways
# run_one LABEL MODE(exact|min) CMD...
run_one() {
    local label=$1 mode=$2
    shift 2
    local base="$RES/$label" rc

    # 1. without the shim
    timeout -k 10 "$RUN_TIMEOUT" env -u LD_PRELOAD "$@" >"$base.noshim.stdout" 2>"$base.noshim.stderr"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        ok "$label: runs without the shim"
    else
        notok "$label: runs without the shim (exit status $rc)"
        diag "$base.noshim.stderr"
        return
    fi
    if grep -qi 'pinshim' "$base.noshim.stderr"; then
        notok "$label: no pinshim output on stderr without the shim"
    else
        ok "$label: no pinshim output on stderr without the shim"
    fi
    if grep -q '^expect ' "$base.noshim.stdout"; then
        ok "$label: prints expect lines"
    else
        notok "$label: prints expect lines"
    fi

    if [ ! -f "$SHIM" ]; then
        skip "$label: shim runs ($SHIM missing)"
        return
    fi

    # 2. shim loaded but switched off: pure pass-through, no output
    timeout -k 10 "$RUN_TIMEOUT" env -u PINSHIM_LOG -u PINSHIM_SUMMARY LD_PRELOAD="$SHIM" PINSHIM_POLICY=off "$@" \
        >"$base.off.stdout" 2>"$base.off.stderr"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        ok "$label: runs with the shim off (PINSHIM_POLICY=off)"
    else
        notok "$label: runs with the shim off (PINSHIM_POLICY=off) (exit status $rc)"
        diag "$base.off.stderr"
    fi
    if diff -u "$base.noshim.stdout" "$base.off.stdout" >"$base.off.diff" 2>&1; then
        ok "$label: stdout identical with the shim off"
        rm -f "$base.off.diff"
    else
        notok "$label: stdout identical with the shim off"
        diag "$base.off.diff" 20
    fi
    if grep -qi -e 'pinshim' -e '"transfers"' "$base.off.stderr"; then
        notok "$label: no pinshim output on stderr with the shim off"
        diag "$base.off.stderr" 10
    else
        ok "$label: no pinshim output on stderr with the shim off"
    fi

    # 3. shim on, JSON summary to a log file
    local log="$base.summary.jsonl"
    rm -f "$log"
    timeout -k 10 "$RUN_TIMEOUT" env LD_PRELOAD="$SHIM" PINSHIM_SUMMARY=json PINSHIM_LOG="$log" "$@" \
        >"$base.shim.stdout" 2>"$base.shim.stderr"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        ok "$label: runs with the shim"
    else
        notok "$label: runs with the shim (exit status $rc$([ "$rc" -eq 124 ] && echo ', timed out'))"
        diag "$base.shim.stderr"
    fi
    if diff -u "$base.noshim.stdout" "$base.shim.stdout" >"$base.shim.diff" 2>&1; then
        ok "$label: stdout identical with the shim"
        rm -f "$base.shim.diff"
    else
        notok "$label: stdout identical with the shim"
        diag "$base.shim.diff" 20
    fi
    if grep -q '^{.*"transfers"' "$base.shim.stderr"; then
        notok "$label: summary goes to PINSHIM_LOG, not to stderr"
    else
        ok "$label: summary goes to PINSHIM_LOG, not to stderr"
    fi
    # expectations come from the no-shim run's stdout (identical if the diff passed)
    record_checker_output < <(python3 "$WORK/check.py" "$mode" "$label" "$log" "$base.noshim.stdout" 2>&1)
}

# --------------------------------------------------------------- the shim library
if [ ! -f "$SHIM" ] && [ -z "${PINSHIM_LIB:-}" ] && [ -f "$ROOT/Makefile" ]; then
    say "# $SHIM missing: running make"
    make -C "$ROOT" >"$RES/make.log" 2>&1
fi
if [ -f "$SHIM" ]; then
    ok "shim library present ($SHIM)"
else
    notok "shim library present ($SHIM)"
    diag "$RES/make.log"
fi

# --------------------------------------------------------------- copies.cu, static and shared cudart
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
[ -x "$NVCC" ] || NVCC=$(command -v nvcc 2>/dev/null || true)
mkdir -p "$WORK/bin"

# build NAME EXTRA_FLAGS...: -arch=native, falling back to sm_90
build() {
    local name=$1 arch
    shift
    : >"$RES/build-$name.log"
    for arch in native sm_90; do
        echo "+ $NVCC -O2 -arch=$arch $* $HERE/copies.cu -o $WORK/bin/$name" >>"$RES/build-$name.log"
        if "$NVCC" -O2 -arch="$arch" "$@" "$HERE/copies.cu" -o "$WORK/bin/$name" >>"$RES/build-$name.log" 2>&1; then
            ok "build copies.cu ($name, -arch=$arch)"
            return 0
        fi
    done
    notok "build copies.cu ($name)"
    diag "$RES/build-$name.log"
    return 1
}

if [ -z "$NVCC" ]; then
    notok "nvcc found (looked in $CUDA_HOME/bin and PATH)"
else
    if build copies-static; then
        run_one copies-static exact "$WORK/bin/copies-static"
    fi
    if build copies-shared -cudart shared -Xlinker -rpath -Xlinker "$CUDA_HOME/lib64"; then
        run_one copies-shared exact "$WORK/bin/copies-shared"
    fi
    # per-thread default stream: the runtime then reaches the driver's _ptds/_ptsz entry points
    if build copies-ptds --default-stream per-thread; then
        run_one copies-ptds exact "$WORK/bin/copies-ptds"
    fi
fi

# --------------------------------------------------------------- PyTorch
if ! command -v "$PY" >/dev/null 2>&1 || ! "$PY" -c "import torch" >/dev/null 2>&1; then
    skip "torch: PyTorch not importable with $PY"
elif ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
    skip "torch: torch.cuda.is_available() is False"
else
    say "# $("$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1)"
    run_one torch min "$PY" "$HERE/torch_copies.py"
fi

# --------------------------------------------------------------- total
if [ "$SKIPPED" -gt 0 ]; then
    say "$PASS passed, $FAIL failed, $SKIPPED skipped"
else
    say "$PASS passed, $FAIL failed"
fi
[ "$FAIL" -eq 0 ]
