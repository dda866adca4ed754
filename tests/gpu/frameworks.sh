#!/usr/bin/env bash
# frameworks.sh: runs frameworks.py for JAX and CuPy without and with the shim; reports whether
# stdout is identical and what the shim counted (h2d/d2h per host kind). Informational: prints,
# does not judge counts (the frameworks make copies of their own). Skips a missing framework.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PYTHON:-python3}
for fw in jax cupy; do
    if ! "$PY" -c "import $fw" >/dev/null 2>&1; then echo "SKIP $fw: not importable"; continue; fi
    plain=$("$PY" "$ROOT/tests/gpu/frameworks.py" "$fw" 2>/dev/null)
    log=$(mktemp)
    shim=$(PINSHIM_SUMMARY=json PINSHIM_LOG="$log" LD_PRELOAD="$ROOT/build/libpinshim.so" \
        "$PY" "$ROOT/tests/gpu/frameworks.py" "$fw" 2>/dev/null)
    [ "$plain" = "$shim" ] && same=identical || same=DIFFERENT
    echo "$fw: output $same: $shim"
    "$PY" - "$log" <<'PY'
import collections, json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
if not lines:
    print("  no summary written"); sys.exit(0)
s = json.loads(lines[-1])
c = collections.Counter()
for r in s["transfers"]:
    c[(r["dir"], r["host_kind"])] += r["count"]
print("  counted:", ", ".join(f"{d} {k} {n}" for (d, k), n in sorted(c.items())) or "nothing")
print("  entry points:", ", ".join(f"{k} {v}" for k, v in sorted(s["entry_points"].items())))
PY
    rm -f "$log"
done
