# common.bash: loaded by every suite. Paths to the build, and `run_app` to run a program with the
# fake driver with or without the shim, capturing stdout and stderr in separate files.
ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
BUILD="$ROOT/build"
SHIM="$BUILD/libpinshim.so"
FAKE="$BUILD/fakecuda"
T="$BUILD/tests"
export FAKECUDA_GBPS="${FAKECUDA_GBPS:-50}"

setup() {
    WORK="$(mktemp -d "$BATS_TMPDIR/pinshim.XXXXXX")"
}

teardown() {
    rm -rf "$WORK"
}

# run_app NAME (shim|noshim) CMD...: stdout -> $WORK/NAME.out, stderr -> $WORK/NAME.err,
# exit status -> $WORK/NAME.rc; returns 0 so callers can inspect everything.
run_app() {
    local name="$1" mode="$2"
    shift 2
    local preload=""
    [ "$mode" = shim ] && preload="$SHIM"
    set +e
    LD_LIBRARY_PATH="$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_PRELOAD="$preload" \
        "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    echo $? >"$WORK/$name.rc"
    set -e
}

# show NAME: prints a run's files (bats shows them when a test fails).
show() {
    echo "--- $1 rc=$(cat "$WORK/$1.rc")"; echo "--- stdout"; cat "$WORK/$1.out"
    echo "--- stderr"; cat "$WORK/$1.err"
}
