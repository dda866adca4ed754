#!/usr/bin/env bats
# layering.bats: shim/ stays layered (README "Architecture"): tests/helpers/check_layers.py reads the
# #include lines of shim/ and policy/ and fails on an include from a lower layer to a higher one,
# between two layers of one rank, or on a cycle between folders. The order is declared there.

load common

@test "shim/ includes run one way, top to bottom, with no cycle between folders" {
    run python3 "$ROOT/tests/helpers/check_layers.py" "$ROOT"
    echo "$output"
    [ "$status" = 0 ]
    [[ "$output" == "check_layers: ok"* ]]
}

# A copy of the sources with one line added, checked.
check_with() {
    local file="$1" line="$2"
    cp -r "$ROOT/shim" "$ROOT/policy" "$ROOT/include" "$WORK/"
    printf '%s\n' "$line" >>"$WORK/$file"
    run python3 "$ROOT/tests/helpers/check_layers.py" "$WORK"
    echo "$output"
}

@test "the layering check fails on an include from a lower layer to a higher one" {
    check_with shim/base/real.h '#include "guard/guard.h"'
    [ "$status" = 1 ]
    echo "$output" | grep -q '^check_layers: shim/base/real.h:[0-9]*: #include "guard/guard.h": base is below guard'
}

@test "the layering check fails on a cycle and on layers of one rank that include each other" {
    check_with shim/stage/pool.h '#include "guard/guard.h"'
    printf '%s\n' '#include "stage/pool.h"' >>"$WORK/shim/guard/guard.h"
    run python3 "$ROOT/tests/helpers/check_layers.py" "$WORK"
    echo "$output"
    [ "$status" = 1 ]
    echo "$output" | grep -q 'stage and guard are independent layers of one rank'
    echo "$output" | grep -Eq '^check_layers: cycle between folders: (guard -> stage -> guard|stage -> guard -> stage)$'
}

@test "the layering check fails on a folder it does not know and on an include that resolves nowhere" {
    check_with shim/copy/copy.h '#include "nowhere/missing.h"'
    mkdir "$WORK/shim/extra"
    echo '/* extra.c */' >"$WORK/shim/extra/extra.c"
    run python3 "$ROOT/tests/helpers/check_layers.py" "$WORK"
    echo "$output"
    [ "$status" = 1 ]
    echo "$output" | grep -q 'shim/copy/copy.h:[0-9]*: #include "nowhere/missing.h" resolves to no file'
    echo "$output" | grep -q 'folder shim/extra is not a declared layer'
}
