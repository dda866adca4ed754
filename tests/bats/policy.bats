#!/usr/bin/env bats
# Bad policy input gets a clear message naming what was wrong and what was expected; the program
# still runs unaffected (or exits 2 in strict mode).
load common

# runs the copy suite under the shim with the given environment; compares data with a plain run
run_with() {
    run_app plain noshim "$T/routes" getproc
    local rc=0
    env "$@" LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" "$T/routes" getproc >"$WORK/shim.out" 2>"$WORK/shim.err" || rc=$?
    echo "$rc" >"$WORK/shim.rc"
    show shim
}

@test "a policy file with an unknown key names file, line and key; program unaffected" {
    printf 'summary = json\n# comment\nsumary = text\n' >"$WORK/p.conf"
    run_with PINSHIM_POLICY="$WORK/p.conf" PINSHIM_LOG="$WORK/s.json"
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -q "policy error: $WORK/p.conf:3: unknown key 'sumary' (known keys: intercept, summary, log, .*strict, " "$WORK/shim.err"
    grep -q "running with the defaults" "$WORK/shim.err"
}

@test "a bad value names the key, the value and what was expected" {
    printf 'intercept = maybe\n' >"$WORK/p.conf"
    run_with PINSHIM_POLICY="$WORK/p.conf"
    grep -q "p.conf:1: key 'intercept': value 'maybe' is not valid (expected on or off" "$WORK/shim.err"
    diff "$WORK/plain.out" "$WORK/shim.out"
}

@test "a bad enum value in the environment lists the choices" {
    run_with PINSHIM_SUMMARY=xml
    grep -q "PINSHIM_SUMMARY='xml' is not valid (expected one of text|json|none)" "$WORK/shim.err"
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    grep -q "transfer summary" "$WORK/shim.err"   # defaults: the text table
}

@test "a line that is not key = value is reported" {
    printf 'just words\n' >"$WORK/p.conf"
    run_with PINSHIM_POLICY="$WORK/p.conf"
    grep -q "p.conf:1: 'just words' is not a 'key = value' line" "$WORK/shim.err"
}

@test "a missing policy file is named, with the presets it could have been" {
    run_with PINSHIM_POLICY="$WORK/nope.conf"
    grep -q "PINSHIM_POLICY='$WORK/nope.conf': cannot read it: No such file or directory (expected a readable policy file or a preset: default, off)" "$WORK/shim.err"
    diff "$WORK/plain.out" "$WORK/shim.out"
}

@test "a folder given as policy file is refused clearly" {
    run_with PINSHIM_POLICY="$WORK"
    grep -q "not a regular file" "$WORK/shim.err"
    diff "$WORK/plain.out" "$WORK/shim.out"
}

@test "strict mode: any policy error exits with status 2 before the program runs" {
    run_with PINSHIM_STRICT=1 PINSHIM_SUMMARY=xml
    [ "$(cat "$WORK/shim.rc")" = 2 ]
    [ ! -s "$WORK/shim.out" ]
    grep -q "strict mode: exiting with status 2" "$WORK/shim.err"
}

@test "strict mode from the policy file itself" {
    printf 'strict = on\nsummary = loud\n' >"$WORK/p.conf"
    run_with PINSHIM_POLICY="$WORK/p.conf"
    [ "$(cat "$WORK/shim.rc")" = 2 ]
}

@test "an unknown PINSHIM_* variable gets a one-line warning with a suggestion" {
    run_with PINSHIM_SUMARY=json
    [ "$(grep -c "unknown environment variable" "$WORK/shim.err")" = 1 ]
    grep -q "unknown environment variable PINSHIM_SUMARY ignored (did you mean PINSHIM_SUMMARY?)" "$WORK/shim.err"
    [ "$(cat "$WORK/shim.rc")" = 0 ]
}

@test "sizes, booleans and comments parse; environment overrides the file" {
    printf '# a comment\n  summary = json   # trailing comment\nintercept=YES\n' >"$WORK/p.conf"
    run_with PINSHIM_POLICY="$WORK/p.conf" PINSHIM_SUMMARY=text
    ! grep -q "policy error" "$WORK/shim.err"
    grep -q "transfer summary" "$WORK/shim.err"
}

@test "preset names resolve; presets are the files in policy/" {
    run_with PINSHIM_POLICY=default
    ! grep -q "policy error" "$WORK/shim.err"
    grep -q "transfer summary" "$WORK/shim.err"
    grep -q '^intercept = on' "$ROOT/policy/default.conf"
    grep -q '^intercept = off' "$ROOT/policy/off.conf"
}

@test "README's key table matches the key table in policy/keys.h" {
    python3 - "$ROOT/policy/keys.h" "$ROOT/README.md" <<'PY'
import re, sys
keys = re.findall(r'X\((\w+), (\w+), "([^"]*)"', open(sys.argv[1]).read())
readme = open(sys.argv[2]).read()
assert keys, "no keys parsed"
for typ, name, default in keys:
    shown = f"`{default}`" if default else "(empty)"
    row = f"| `{name}` | `PINSHIM_{name.upper()}` | {shown} |"
    assert row in readme, f"README lacks the row for {name}: {row}"
rows = re.findall(r"^\| `(\w+)` \| `PINSHIM_", readme, re.M)
assert sorted(rows) == sorted(k[1] for k in keys), (rows, keys)
PY
}
