#!/usr/bin/env bats
# Two devices (FAKECUDA_DEVICES=2): registrations made while one device is current serve copies to
# the other, staging to both, two threads on two devices, peer copies, contexts created, destroyed
# and reset while the shim holds pool memory, events and registrations. Output identical without
# and with the shim (the same program runs on two GPUs: tests/gpu/multigpu.sh).
load common

same_on_two() {
    local name="$1"
    shift
    FAKECUDA_DEVICES=2 run_app "$name.plain" noshim timeout 120 "$T/multidev" "$@"
    FAKECUDA_DEVICES=2 PINSHIM_SUMMARY=json run_app "$name" shim timeout 120 "$T/multidev" "$@"
    show "$name"
    [ "$(cat "$WORK/$name.plain.rc")" = 0 ]
    [ "$(cat "$WORK/$name.rc")" = 0 ]
    diff "$WORK/$name.plain.out" "$WORK/$name.out"
    ! grep -v '^{' "$WORK/$name.err" | grep -q .   # no warning of the shim's
}

# summary NAME EXPR: a Python expression over the run's JSON summary `s`.
summary() {
    python3 - "$WORK/$1.err" "$2" <<'PY'
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
def copies(action): return sum(x["count"] for x in s["transfers"] if x["action"] == action)
print(eval(sys.argv[2]))
PY
}

@test "a buffer registered while device 0 is current is copied directly to and from device 1" {
    same_on_two regdev regdev
    [ "$(summary regdev 'copies("registered") >= 14 and s["failed_copies"] == 0')" = True ]
}

@test "staging to two devices in turn, switching the current context" {
    same_on_two stage stage
    [ "$(summary stage 'copies("staged") >= 14')" = True ]
}

@test "two threads on two devices copy at once" {
    same_on_two threads threads
}

@test "peer copies between the devices mixed with pageable copies; each copy counted on its context's device" {
    same_on_two peer peer
    # host -> device 0 with device 0 current, device 1 -> host with device 1 current
    [ "$(summary peer 'sorted({(x["dir"], x["device"]) for x in s["transfers"] if x["dir"] != "peer"})')" = \
        "[('d2h', 1), ('h2d', 0)]" ]
}

@test "a context created, used and destroyed, then a primary context reset, while the shim holds memory in them" {
    same_on_two ctxlife ctxlife
    [ "$(summary ctxlife 'copies("staged") > 0 and copies("registered") > 0 and s["failed_copies"] == 0')" = True ]
}

@test "one device: the program says skipped, the shim stays quiet" {
    FAKECUDA_DEVICES=1 run_app one shim "$T/multidev" regdev
    grep -qx 'skipped: 1 device' "$WORK/one.out"
}

@test "run_multidev.sh (several GPUs copying at once) runs its three sides on two fake devices, bytes identical" {
    run env LIBCUDA_DIR="$FAKE" FAKECUDA_DEVICES=2 BYTES=$((8 << 20)) ROUNDS=2 PAIRS=1 \
        bash "$ROOT/tests/bench/run_multidev.sh"
    echo "$output"
    [ "$status" = 0 ]
    [[ "$output" == *"multidev pageable devices 2 bytes 8388608 rounds 2"* ]]
    [[ "$output" == *"every run's bytes came back identical"* ]]
    grep -Eq '^h2d +[0-9.]+ +[0-9.]+ +[0-9.]+ .* dev0 [0-9.]+ dev1 [0-9.]+$' <<<"$output"
    grep -Eq '^d2h +[0-9.]+ +[0-9.]+ +[0-9.]+ .* dev0 [0-9.]+ dev1 [0-9.]+$' <<<"$output"
    # each shim run says what became of each device's copies, from the shim's summary
    grep -Eq '^shim run 1: dev0 d2h .*staged [0-9]+.*; dev1 h2d .*; not staged: ' <<<"$output"
}
