#!/usr/bin/env bats
# The unsynchronized-read guard: reads and writes of an async D2H destination before a sync are
# reported every time, never after a sync of any style; repair makes the data correct; write(2)
# of a guarded buffer works; the program's own SIGSEGV handling is unchanged.
# The fake driver's copies run at FAKECUDA_GBPS, so each 2 MiB copy takes about 1 ms: the
# program's read right after the call always comes first.
load common

export FAKECUDA_GBPS=2
export BYTES=$((2 << 20))
export TRIALS=200

# guarded NAME MODE ARGS...: runs guardprog under the shim with guard = MODE and a JSON summary.
guarded() {
    local name="$1" mode="$2"
    shift 2
    PINSHIM_GUARD="$mode" PINSHIM_SUMMARY=json run_app "$name" shim timeout 120 "$T/guardprog" "$@"
}

# guard_field NAME EXPR: a Python expression over the run's summary "guard" object `g`.
guard_field() {
    python3 - "$WORK/$1.err" "$2" <<'PY'
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
g = s["guard"]
print(eval(sys.argv[2]))
PY
}

@test "a read of a pinned D2H destination before syncing is reported in every one of 200 trials" {
    guarded race warn race
    show race
    [ "$(cat "$WORK/race.rc")" = 0 ]
    [ "$(guard_field race 'g["guarded"]')" = 200 ]
    [ "$(guard_field race 'g["races"]')" = 200 ]
    [ "$(guard_field race 'g["reads"]')" = 200 ]
    [ "$(guard_field race 'g["reports"] + g["rate_limited"]')" = 200 ]
    grep -Eq '^==[0-9]+== pinshim: unsynchronized READ of D2H destination at 0x[0-9a-f]+$' "$WORK/race.err"
    grep -Eq '^==[0-9]+==   read at:     guardprog\+0x[0-9a-f]+ \(frame #0 below\)$' "$WORK/race.err"
    grep -Eq '^==[0-9]+==   copy from:   guardprog\+0x[0-9a-f]+$' "$WORK/race.err"
    grep -Eq '^==[0-9]+==   on stream:   0x[0-9a-f]+: the copy had NOT completed' "$WORK/race.err"
    grep -Eq '^==[0-9]+==   fix:         synchronize that stream before the access' "$WORK/race.err"
    grep -Eq '^==[0-9]+==   the copy:    #1 cuMemcpyDtoHAsync_v2, 2097152 bytes into 0x[0-9a-f]+; the access is at offset 0$' "$WORK/race.err"
    grep -Eq '^==[0-9]+==     #0 0x[0-9a-f]+ \(guardprog\+0x[0-9a-f]+\)$' "$WORK/race.err"
    grep -Eq '^==[0-9]+== pinshim: SUMMARY: 200 unsynchronized accesses of D2H destinations \(200 READ, 0 WRITE; 3 reported, 197 rate-limited\)$' "$WORK/race.err"
}

@test "with each sync style before the read: zero reports in 200 trials, data correct" {
    for style in stream ctx event_sync event_query stream_query sync_copy host_fn callback; do
        guarded "$style" warn sync "$style"
        show "$style"
        [ "$(cat "$WORK/$style.rc")" = 0 ]
        [ "$(guard_field "$style" 'g["guarded"]')" = 200 ]
        [ "$(guard_field "$style" 'g["races"]')" = 0 ]
        [ "$(guard_field "$style" 'g["released_sync"]')" = 200 ]
        ! grep -q 'unsynchronized' "$WORK/$style.err"
    done
}

@test "host functions: on another stream their reads are races; a NULL one gets the driver's error; a captured one runs at every replay" {
    run_app plain noshim "$T/guardprog" hostfn_other
    guarded other warn hostfn_other
    show other
    [ "$(cat "$WORK/other.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/other.out"
    grep -q '^host function NULL: [1-9]' "$WORK/other.out"
    grep -q '^stream callback NULL: [1-9]' "$WORK/other.out"
    grep -q '^stream callback flags 1: [1-9]' "$WORK/other.out"
    [ "$(guard_field other 'g["races"]')" = 200 ]
    [ "$(guard_field other 'g["released_sync"]')" = 0 ]
    grep -Eq '^==[0-9]+== pinshim: SUMMARY: 200 unsynchronized accesses of D2H destinations' "$WORK/other.err"
    # a wrapper would be freed after the first replay (glibc aborts on the second free)
    guarded capture warn hostfn_capture
    show capture
    [ "$(cat "$WORK/capture.rc")" = 0 ]
    grep -q '^captured host function ran 3 times, data correct$' "$WORK/capture.out"
    [ "$(guard_field capture 'g["guarded"]')" = 1 ]
}

@test "repair mode: every early read sees the copy's data" {
    guarded repair repair repair
    show repair
    [ "$(cat "$WORK/repair.rc")" = 0 ]
    grep -qx 'repaired reads: 200 of 200' "$WORK/repair.out"
    [ "$(guard_field repair 'g["repaired"]')" = 200 ]
    grep -q 'guard = repair: waiting for the copy' "$WORK/repair.err"
}

@test "a write before syncing is reported as a WRITE" {
    guarded write warn write
    show write
    [ "$(cat "$WORK/write.rc")" = 0 ]
    [ "$(guard_field write 'g["writes"]')" = 200 ]
    [ "$(guard_field write 'g["reads"]')" = 0 ]
    grep -Eq '^==[0-9]+== pinshim: unsynchronized WRITE of D2H destination at 0x' "$WORK/write.err"
}

@test "guard_exitcode: the status when a race was reported, the program's own otherwise" {
    TRIALS=5 PINSHIM_GUARD_EXITCODE=23 guarded race warn race
    [ "$(cat "$WORK/race.rc")" = 23 ]
    grep -q 'pinshim: SUMMARY: 5 unsynchronized' "$WORK/race.err"
    TRIALS=5 PINSHIM_GUARD_EXITCODE=23 guarded clean warn sync stream
    [ "$(cat "$WORK/clean.rc")" = 0 ]
    TRIALS=5 guarded plain warn race
    [ "$(cat "$WORK/plain.rc")" = 0 ]
}

@test "abort mode: the race is reported, then the process aborts" {
    TRIALS=5 guarded abort abort race
    [ "$(cat "$WORK/abort.rc")" = 134 ]
    grep -q 'unsynchronized READ' "$WORK/abort.err"
    grep -q 'guard = abort: aborting' "$WORK/abort.err"
}

@test "the program's own SIGSEGV handler gets its own faults (SA_SIGINFO, signal(), installed first)" {
    for how in siginfo plain early; do
        guarded "h_$how" warn handler "$how"
        show "h_$how"
        [ "$(cat "$WORK/h_$how.rc")" = 0 ]
        grep -q 'own handler: 3 faults' "$WORK/h_$how.out"
    done
    grep -qx 'own handler: 3 faults, 3 with the right si_addr' "$WORK/h_siginfo.out"
    grep -qx 'own handler: 3 faults, 3 with the right si_addr' "$WORK/h_early.out"
}

@test "with a sigaltstack and an SA_ONSTACK handler: its faults reach it on that stack, races still reported" {
    guarded h_alt warn handler altstack
    show h_alt
    [ "$(cat "$WORK/h_alt.rc")" = 0 ]
    grep -qx 'own handler: 3 faults, 3 with the right si_addr' "$WORK/h_alt.out"
    grep -qx 'own handler on the alternate stack: 3' "$WORK/h_alt.out"
    [ "$(guard_field h_alt 'g["races"]')" = 8 ]
}

@test "Python with faulthandler enabled: races reported and repaired; a real segfault still gets its traceback" {
    TRIALS=5 PINSHIM_GUARD=repair PINSHIM_SUMMARY=json run_app py shim python3 "$ROOT/tests/progs/guard_faulthandler.py"
    show py
    [ "$(cat "$WORK/py.rc")" = 0 ]
    grep -qx "early reads with the copy's data: 5 of 5" "$WORK/py.out"
    [ "$(guard_field py 'g["races"]')" = 5 ]
    PINSHIM_GUARD=warn run_app crash shim bash -c 'python3 "$0" crash; exit $?' "$ROOT/tests/progs/guard_faulthandler.py"
    show crash
    [ "$(cat "$WORK/crash.rc")" = 139 ]
    grep -q 'unsynchronized READ' "$WORK/crash.err"
    grep -q 'Fatal Python error: Segmentation fault' "$WORK/crash.err"
    grep -q 'guard_faulthandler.py", line [0-9]* in <module>' "$WORK/crash.err"
    ! grep -q 'still alive' "$WORK/crash.out"
}

@test "an unhandled real segfault still kills the program with SIGSEGV (status 139)" {
    run_app plain noshim bash -c '"$0" segv; exit $?' "$T/guardprog"
    [ "$(cat "$WORK/plain.rc")" = 139 ]
    PINSHIM_GUARD=warn run_app shim shim bash -c '"$0" segv; exit $?' "$T/guardprog"
    show shim
    [ "$(cat "$WORK/shim.rc")" = 139 ]
    grep -qx 'about to fault' "$WORK/shim.out"
    ! grep -q 'still alive' "$WORK/shim.out"
}

@test "write(2) of a guarded buffer: no EFAULT, reported; repair writes the copy's data" {
    guarded io warn io
    show io
    [ "$(cat "$WORK/io.rc")" = 0 ]
    grep -qx 'write(2) of the destination: 200 calls succeeded' "$WORK/io.out"
    [ "$(guard_field io 'g["io_races"]')" = 200 ]
    grep -Eq 'unsynchronized READ of D2H destination at 0x[0-9a-f]+ by pwrite\(2\)' "$WORK/io.err"
    CHECK_IO=1 guarded io_repair repair io
    show io_repair
    [ "$(cat "$WORK/io_repair.rc")" = 0 ]
    grep -qx 'files with the copy.s data: 200 of 200' "$WORK/io_repair.out"
}

@test "a correctly synchronized program: output identical to the run without the shim" {
    run_app plain noshim "$T/guardprog" sync stream
    for mode in warn repair abort; do
        PINSHIM_GUARD=$mode run_app "g_$mode" shim "$T/guardprog" sync stream
        [ "$(cat "$WORK/g_$mode.rc")" = 0 ]
        diff "$WORK/plain.out" "$WORK/g_$mode.out"
        ! grep -Eq 'pinshim: (unsynchronized|SUMMARY)' "$WORK/g_$mode.err"
        grep -q 'guard ('"$mode"'): 200 async D2H copies guarded, 0 unsynchronized' "$WORK/g_$mode.err"
    done
}

@test "registered memory (cuMemHostRegister) is guarded too" {
    guarded reg repair registered
    show reg
    [ "$(cat "$WORK/reg.rc")" = 0 ]
    [ "$(guard_field reg 'g["races"]')" = 200 ]
    grep -qx 'early reads with the copy.s data: 200 of 200' "$WORK/reg.out"
}

@test "cuStreamWriteValue32 failing: the completion markers are host functions" {
    FAKECUDA_FAIL=writevalue guarded wv repair repair
    show wv
    [ "$(cat "$WORK/wv.rc")" = 0 ]
    grep -qx 'repaired reads: 200 of 200' "$WORK/wv.out"
    [ "$(guard_field wv 'g["marker_hostfn"]')" = 200 ]
    [ "$(guard_field wv 'g["races"]')" = 200 ]
}

@test "guard_pages = first protects one page per copy and still catches reads of the start" {
    PINSHIM_GUARD_PAGES=first guarded first warn race
    show first
    [ "$(guard_field first 'g["pages"]')" = first ]
    [ "$(guard_field first 'g["protected_bytes"]')" = $((200 * 4096)) ]
    [ "$(guard_field first 'g["races"]')" = 200 ]
}

@test "the log's summary record carries the guard object; guard = off adds nothing" {
    TRIALS=5 PINSHIM_GUARD=warn PINSHIM_LOG="$WORK/g.jsonl" run_app log shim "$T/guardprog" race
    tail -n 1 "$WORK/g.jsonl" | python3 -c 'import json,sys; g=json.loads(sys.stdin.read())["guard"]; assert g["races"] == 5, g'
    TRIALS=5 PINSHIM_SUMMARY=json run_app off shim "$T/guardprog" race
    ! grep -q '"guard"' "$WORK/off.err"
    ! grep -q 'unsynchronized' "$WORK/off.err"
}

@test "fork while a copy is guarded: the child reads the pages without faulting and exits 0" {
    TRIALS=1 guarded fork warn fork
    show fork
    [ "$(cat "$WORK/fork.rc")" = 0 ]
    grep -qx 'fork: child exited 0' "$WORK/fork.out"
}

@test "8 threads fault on the same guarded range at once: safe, and repair gives every thread the data" {
    TRIALS=50 guarded threads repair threads
    show threads
    [ "$(cat "$WORK/threads.rc")" = 0 ]
    grep -qx "threads: early reads with the copy's data: 400 of 400" "$WORK/threads.out"
    [ "$(guard_field threads 'g["races"] >= 50')" = True ]
}
