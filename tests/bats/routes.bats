#!/usr/bin/env bats
# Every route to the driver reaches the shim's wrappers; data identical with and without the shim;
# the JSON summary counts exactly the copies made, per direction and host memory kind.
load common

check_route() {
    run_app plain noshim "$@"
    show plain
    [ "$(cat "$WORK/plain.rc")" = 0 ]
    PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/summary.json" run_app shim shim "$@"
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ ! -s "$WORK/shim.err" ]
    python3 "$ROOT/tests/helpers/summary_check.py" "$WORK/summary.json" "$WORK/shim.out"
}

@test "route 1, exported symbols (-lcuda): bytes identical, every copy counted once" {
    check_route "$T/routes_linked"
}

@test "route 2, dlsym on a libcuda handle (JAX style): bytes identical, every copy counted once" {
    check_route "$T/routes" dlsym
}

@test "route 2, dlsym of the _ptds/_ptsz symbols: bytes identical, every copy counted once" {
    check_route "$T/routes" dlsym_ptds
}

@test "route 3, cuGetProcAddress self-lookup at 12000 (CUDA runtime style): every copy counted once" {
    check_route "$T/routes" getproc
}

@test "route 3, per-thread default stream flavour: every copy counted once" {
    check_route "$T/routes" getproc_ptds
}

@test "route 3, self-lookup at 11030 answers the v1 cuGetProcAddress ABI" {
    check_route "$T/routes" getproc_v1
}

# The fake driver counts calls per exported symbol: with the shim (staging and pin-on-reuse off, so
# that it makes no copies or registrations of its own), the driver must see the same calls as without it plus the shim's own pointer
# queries, current-context queries and device count (the copy's device, observe/ctxdev.c), so each wrapper called its own variant.
check_same_driver_calls() {
    FAKECUDA_CALL_LOG="$WORK/calls.plain" run_app plain noshim "$T/routes" "$1"
    PINSHIM_STAGE=off PINSHIM_PIN_ON_REUSE=off FAKECUDA_CALL_LOG="$WORK/calls.shim" run_app shim shim "$T/routes" "$1"
    show shim
    grep -v '^cuDeviceGetCount ' "$WORK/calls.plain" | sort >"$WORK/a"
    grep -Ev '^(cuPointerGetAttributes|cuCtxGetCurrent|cuCtxGetDevice|cuDeviceGetCount) ' "$WORK/calls.shim" | sort >"$WORK/b"
    diff "$WORK/a" "$WORK/b"
    count_calls() { awk '$1 == "cuDeviceGetCount" { n = $2 } END { print n + 0 }' "$1"; }
    [ "$(count_calls "$WORK/calls.shim")" -ge "$(count_calls "$WORK/calls.plain")" ]
    grep -q "^$2 " "$WORK/b"
}

@test "per-thread wrappers call the per-thread driver functions (getproc_ptds)" {
    check_same_driver_calls getproc_ptds cuMemcpyHtoDAsync_v2_ptsz
    ! grep -q '^cuMemcpyHtoDAsync_v2 ' "$WORK/b"
}

@test "legacy wrappers call the legacy driver functions (getproc)" {
    check_same_driver_calls getproc cuMemcpyHtoDAsync_v2
    ! grep -q '_ptsz \|_ptds ' "$WORK/b"
}

@test "the summary names the per-thread entry points the program used" {
    PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/s.json" run_app shim shim "$T/routes" getproc_ptds
    python3 - "$WORK/s.json" <<'PY'
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
names = set(s["entry_points"])
assert "cuMemcpyHtoD_v2_ptds" in names and "cuMemcpyHtoDAsync_v2_ptsz" in names, names
assert "cuMemcpyHtoD_v2" not in names, names
PY
}
