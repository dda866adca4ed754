#!/usr/bin/env bats
# The driver conformance suite (tests/conformance) on the fake driver: the fake agrees with the
# recorded output (expected.txt, less the lines deviations.txt names), and the shim, at its default
# policy and at tiny thresholds, changes no return code and no byte of it.
load common

conformance() {
    run bash "$ROOT/tests/conformance/run.sh" --driver fake --out "$WORK/out" "$@"
    echo "$output"
    for f in "$WORK"/out/*.diff; do [ -f "$f" ] && { echo "--- $f"; head -n 60 "$f"; }; done
    return 0
}

@test "conformance: the fake driver's output matches expected.txt, less deviations.txt" {
    conformance --check expected
    [ "$status" -eq 0 ]
    grep -q '^ok - fake driver output matches expected.txt' "$WORK/out/results.txt"
}

@test "conformance: the shim (default policy and tiny thresholds) changes no line of the suite's output" {
    # capture.mode_after_copies among them: the shim once left the program's thread in relaxed capture
    # mode after its own driver calls (real_relaxed_end), which this suite found
    conformance --check shim
    [ "$status" -eq 0 ]
    [ "$(grep -c '^ok - the shim' "$WORK/out/results.txt")" -eq 2 ]
}

@test "conformance: on fewer devices than the recording, the multi-device cases are named, not compared" {
    # what a one-GPU machine sees against expected.txt's two-GPU recording
    CONF_FAKE_DEVICES=1 conformance --check expected
    [ "$status" -eq 0 ]
    grep -q '^# not compared: cases this machine skips (devices: 1; expected.txt has 2): multidev.registered ' \
        "$WORK/out/results.txt"
    grep -qx 'multidev.registered.devices = skipped: 1 device' "$WORK/out/plain.txt"
    ! grep -q '^multidev\.' "$WORK/out/plain.ran"
    grep -q '^memory.free_reuse.rounds_with_lost_bytes = 0 of 200$' "$WORK/out/plain.ran"
}

@test "conformance: every case ran to its end, each in a process of its own" {
    run bash -c "LD_LIBRARY_PATH='$FAKE' '$BUILD/conformance/conform'"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c ' = exit 0$')" -eq "$("$BUILD/conformance/conform" --list | wc -l)" ]
    echo "$output" | grep -v '^#' | head -n 1 | grep -qx 'devices: 2'
}

@test "conformance: a case that crashes or hangs is reported, and the cases after it still run" {
    run bash -c "LD_LIBRARY_PATH='$FAKE' CONF_SELFTEST_CRASH=edges.reg_pages CONF_SELFTEST_HANG=attrs.kinds \
        CONF_CASE_TIMEOUT=2 '$BUILD/conformance/conform' edges.reg_pages attrs.kinds register.overlap"
    echo "$output"
    [ "$status" -eq 1 ]
    echo "$output" | grep -qx 'edges.reg_pages = signal 11 (SEGV)'
    echo "$output" | grep -qx 'attrs.kinds = timeout'
    echo "$output" | grep -qx 'register.overlap = exit 0'
}

@test "conformance: deviations.txt drops only the lines it names, and each entry needs a reason" {
    cp "$ROOT/tests/conformance/deviations.txt" "$WORK/dev.bak"
    conformance --check expected
    [ "$status" -eq 0 ]
    # the fake disagreeing on one line is caught ...
    sed 's/^\(edges.batch.no_attributes = \)1 CUDA_ERROR_INVALID_VALUE/\10 CUDA_SUCCESS/' \
        "$ROOT/tests/conformance/expected.txt" >"$WORK/expected.alt"
    ! diff -q "$WORK/expected.alt" "$ROOT/tests/conformance/expected.txt" >/dev/null
    # ... through a copy of the suite's directory that uses the altered files
    mkdir -p "$WORK/repo/tests/conformance" "$WORK/repo/build"
    cp "$ROOT/tests/conformance/run.sh" "$WORK/repo/tests/conformance/"
    cp "$WORK/expected.alt" "$WORK/repo/tests/conformance/expected.txt"
    cp "$WORK/dev.bak" "$WORK/repo/tests/conformance/deviations.txt"
    ln -s "$BUILD/conformance" "$WORK/repo/build/conformance"
    ln -s "$BUILD/fakecuda" "$WORK/repo/build/fakecuda"
    ln -s "$SHIM" "$WORK/repo/build/libpinshim.so"
    run bash "$WORK/repo/tests/conformance/run.sh" --driver fake --check expected --out "$WORK/alt"
    echo "$output"
    [ "$status" -eq 1 ]
    echo "$output" | grep -q '^not ok - fake driver output matches expected.txt'
    # ... and named with a reason, it is dropped from the comparison
    echo 'edges.batch.no_attributes  the recording says a batch without attributes is accepted (test of the test)' \
        >>"$WORK/repo/tests/conformance/deviations.txt"
    run bash "$WORK/repo/tests/conformance/run.sh" --driver fake --check expected --out "$WORK/alt2"
    echo "$output"
    [ "$status" -eq 0 ]
    # an entry without a reason is refused
    echo 'edges.batch.legacy_stream' >>"$WORK/repo/tests/conformance/deviations.txt"
    run bash "$WORK/repo/tests/conformance/run.sh" --driver fake --check expected --out "$WORK/alt3"
    echo "$output"
    [ "$status" -eq 1 ]
    echo "$output" | grep -q 'entries without a reason'
}
