#!/usr/bin/env bats
# scripts/pinshim, the runner: preloads the shim, turns options into PINSHIM_* variables, passes
# the command's exit status through, lists the logs it wrote, and says clearly what is wrong.
load common
PINSHIM="$ROOT/scripts/pinshim"

# pin NAME ARGS...: runs the runner; stdout, stderr and exit status in $WORK/NAME.{out,err,rc}.
pin() {
    local name="$1"
    shift
    local rc=0
    LD_LIBRARY_PATH="$FAKE" "$PINSHIM" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
    echo "$rc" >"$WORK/$name.rc"
    show "$name"
}

@test "runner: the command's exit status passes through: 0, 3, and 128+N for a signal" {
    pin ok -- sh -c 'exit 0'
    [ "$(cat "$WORK/ok.rc")" = 0 ]
    pin three -- sh -c 'echo out; echo err >&2; exit 3'
    [ "$(cat "$WORK/three.rc")" = 3 ]
    [ "$(cat "$WORK/three.out")" = out ]
    [ "$(cat "$WORK/three.err")" = err ]
    pin term -- sh -c 'kill -TERM $$'
    [ "$(cat "$WORK/term.rc")" = 143 ]
    pin killed -- sh -c 'kill -KILL $$'
    [ "$(cat "$WORK/killed.rc")" = 137 ]
}

@test "runner: the CUDA demo runs under the shim and its output is unchanged" {
    run_app plain noshim "$T/demo"
    pin demo -- "$T/demo"
    [ "$(cat "$WORK/demo.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/demo.out"
    grep -q 'pinshim .*: transfer summary for' "$WORK/demo.err"
}

@test "runner: LD_PRELOAD gets the shim first, an existing value kept after it" {
    LD_PRELOAD= pin alone -- sh -c 'echo "$LD_PRELOAD"'
    [ "$(cat "$WORK/alone.out")" = "$SHIM" ]
    LD_PRELOAD="$T/libnext_a.so" pin both -- sh -c 'echo "$LD_PRELOAD"'
    [ "$(cat "$WORK/both.out")" = "$SHIM:$T/libnext_a.so" ]
}

@test "runner: options become PINSHIM_* variables, applied in order" {
    pin env --policy off --summary json --guard warn --set stage_min_bytes=4M --set Strict=on \
        --set summary=none -- env
    grep -qx 'PINSHIM_POLICY=off' "$WORK/env.out"
    grep -qx 'PINSHIM_SUMMARY=none' "$WORK/env.out"
    grep -qx 'PINSHIM_GUARD=warn' "$WORK/env.out"
    grep -qx 'PINSHIM_STAGE_MIN_BYTES=4M' "$WORK/env.out"
    grep -qx 'PINSHIM_STRICT=on' "$WORK/env.out"
    pin eq --summary=text --set=intercept=off -- env
    grep -qx 'PINSHIM_SUMMARY=text' "$WORK/eq.out"
    grep -qx 'PINSHIM_INTERCEPT=off' "$WORK/eq.out"
}

@test "runner: --help lists every key of policy/keys.h with its type, default, variable and help" {
    pin help --help
    [ "$(cat "$WORK/help.rc")" = 0 ]
    grep -q 'usage: pinshim \[options\]' "$WORK/help.out"
    grep -q -- '--guard MODE' "$WORK/help.out"
    grep -q -- '--guard MODE .*off, warn, repair or abort' "$WORK/help.out"
    # keys.h's rows, read here independently of the runner: "X(TYPE, name, ..." at a line start.
    names=$(grep -oE '^[[:space:]]*X\([A-Z]+, *[a-z0-9_]+' "$ROOT/policy/keys.h" | sed -E 's/.*, *//')
    [ -n "$names" ]
    for name in $names; do
        grep -Eq "^  $name +[a-z]+.*, default .*, env PINSHIM_${name^^}\$" "$WORK/help.out" || {
            echo "key $name missing from --help"; false; }
    done
    [ "$(grep -Ec ', env PINSHIM_[A-Z0-9_]+$' "$WORK/help.out")" = "$(echo "$names" | wc -w)" ]
    grep -Eq '^  summary +enum \(text\|json\|none\), default text, env PINSHIM_SUMMARY$' "$WORK/help.out"
    grep -q 'exit summary: a table (text), one JSON object (json), or nothing (none)' "$WORK/help.out"
}

@test "runner: --log DIR gives each process a log named by host and pid, and lists the files" {
    pin log --log "$WORK/logs" --summary json -- "$T/demo"
    [ "$(cat "$WORK/log.rc")" = 0 ]
    f=$(ls "$WORK"/logs/pinshim-*.jsonl)
    [ "$(echo "$f" | wc -l)" = 1 ]
    [ -s "$f" ]
    [[ "$(basename "$f")" =~ ^pinshim-$(hostname)-[0-9]+\.jsonl$ ]]
    grep -q "^pinshim: 1 log written in $WORK/logs:\$" "$WORK/log.err"
    grep -q "^pinshim:   $f\$" "$WORK/log.err"
    # a second run lists only its own file, not the first one
    pin again --log "$WORK/logs" --summary json -- "$T/demo"
    [ "$(ls "$WORK"/logs/pinshim-*.jsonl | wc -l)" = 2 ]
    [ "$(grep -c "^pinshim:   $WORK/logs/" "$WORK/again.err")" = 1 ]
    ! grep -q "$f" "$WORK/again.err" || false
}

@test "runner: --log with a % in the folder name, and a command that writes no log" {
    pin pct --log "$WORK/100%" --summary json -- "$T/demo"
    ls "$WORK"/100%/pinshim-*.jsonl
    pin none --log "$WORK/empty" -- true
    [ "$(cat "$WORK/none.rc")" = 0 ]
    grep -q "no log written in $WORK/empty" "$WORK/none.err"
}

@test "runner: clear errors for no command, an unknown option, a bad value, a missing command" {
    pin nocmd --summary json
    [ "$(cat "$WORK/nocmd.rc")" = 125 ]
    grep -q '^pinshim: no command given' "$WORK/nocmd.err"
    pin unknown --bogus -- true
    [ "$(cat "$WORK/unknown.rc")" = 125 ]
    grep -q "^pinshim: unknown option '--bogus'" "$WORK/unknown.err"
    pin novalue --log
    [ "$(cat "$WORK/novalue.rc")" = 125 ]
    grep -q '^pinshim: option --log needs a value' "$WORK/novalue.err"
    pin badsummary --summary xml -- true
    [ "$(cat "$WORK/badsummary.rc")" = 125 ]
    grep -q "^pinshim: --summary 'xml': expected one of text|json|none" "$WORK/badsummary.err"
    pin badset --set novalue -- true
    [ "$(cat "$WORK/badset.rc")" = 125 ]
    grep -q "^pinshim: --set 'novalue': expected KEY=VALUE" "$WORK/badset.err"
    pin missing -- "$WORK/no-such-program"
    [ "$(cat "$WORK/missing.rc")" = 127 ]
    grep -q "^pinshim: cannot run '$WORK/no-such-program': command not found" "$WORK/missing.err"
}

@test "runner: the library not found next to the script is a clear error" {
    mkdir -p "$WORK/bin"
    cp "$PINSHIM" "$WORK/bin/pinshim"
    local rc=0
    "$WORK/bin/pinshim" -- true 2>"$WORK/err" || rc=$?
    cat "$WORK/err"
    [ "$rc" = 125 ]
    grep -q "^pinshim: libpinshim.so not found (looked in $WORK/build/libpinshim.so, $WORK/lib/libpinshim.so)" "$WORK/err"
}

@test "runner: make install puts the runner, the report and keys.h where the runner finds them" {
    # -o all: installs what test-build built; this checks the install recipe, not the build
    make -s -C "$ROOT" -o all install PREFIX="$WORK/inst" >/dev/null
    for f in bin/pinshim bin/pinshim-report lib/libpinshim.so share/pinshim/keys.h \
             share/pinshim/pinshim_report/cli.py; do
        [ -e "$WORK/inst/$f" ] || { echo "missing $f"; false; }
    done
    LD_PRELOAD= "$WORK/inst/bin/pinshim" -- sh -c 'echo "$LD_PRELOAD"' >"$WORK/out"
    [ "$(cat "$WORK/out")" = "$WORK/inst/lib/libpinshim.so" ]
    "$WORK/inst/bin/pinshim" --help | grep -q "policy keys (from $WORK/inst/share/pinshim/keys.h"
    "$WORK/inst/bin/pinshim-report" "$ROOT/tests/report/cluster/rank0.jsonl" | grep -q 'h2d pageable'
    "$WORK/inst/bin/pinshim-report" --schema | grep -q '"title": "pinshim transfer log, format 1'
}
