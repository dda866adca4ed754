#!/usr/bin/env bats
# Pin-on-reuse: buffers copied again and again are registered and then copied directly; every way
# their memory goes back (free, realloc, munmap, mremap, madvise, the program's own registration,
# eviction, fork) leaves no registration behind; the bytes are the same as without the shim.
# reuseprog asks the driver after each release whether a page is still registered ("STALE").
load common

# reused NAME SCENARIO [ARGS...]: runs reuseprog without and with the shim (JSON summary on stderr)
# and requires identical stdout and status 0 from both.
reused() {
    local name="$1"
    shift
    run_app "$name.plain" noshim "$T/reuseprog" "$@"
    PINSHIM_SUMMARY=json run_app "$name" shim timeout 120 "$T/reuseprog" "$@"
    show "$name"
    [ "$(cat "$WORK/$name.plain.rc")" = 0 ]
    [ "$(cat "$WORK/$name.rc")" = 0 ]
    diff "$WORK/$name.plain.out" "$WORK/$name.out"
    ! grep -q STALE "$WORK/$name.out"
}

# reg NAME EXPR: a Python expression over the run's summary: `r` its "registration" object, `t` the
# transfer rows.
reg() {
    python3 - "$WORK/$1.err" "$2" <<'PY'
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
r, t = s["registration"], s["transfers"]
def copies(action): return sum(x["count"] for x in t if x["action"] == action)
print(eval(sys.argv[2]))
PY
}

@test "the page memo answers as a model of its slots, and holds() as get() == answer, pages past 48 bits never remembered" {
    run "$T/page_memo_check"
    echo "$output"
    [ "$status" = 0 ]
    [[ "$output" == "page_memo: "*" checks as the model" ]]
}

@test "the allocation table answers as a plain list through random allocations, frees and registrations" {
    run "$T/alloc_table_check"
    echo "$output"
    [ "$status" = 0 ]
    [[ "$output" == "alloc_table: "*" steps as the list ("* ]]
}

@test "reuse: 8 buffers x 10 round trips are registered at the 3rd copy, then copied directly; bytes identical" {
    reused reuse reuse 8 10
    [ "$(reg reuse 'r["registrations"]')" = 8 ]
    [ "$(reg reuse 'copies("registered")')" = $((8 * 18)) ]
    [ "$(reg reuse 'copies("pass") + copies("staged")')" = 16 ]
    [ "$(reg reuse 'r["released"]["free"]')" = 8 ]
    [ "$(reg reuse 'r["live_bytes"]')" = 0 ]
    [ "$(reg reuse 'r["refused"]')" = 0 ]
    PINSHIM_REGISTER_AFTER=5 PINSHIM_SUMMARY=json run_app after5 shim "$T/reuseprog" reuse 2 10
    [ "$(reg after5 'copies("registered")')" = $((2 * 16)) ]
    # stage = off: staging declines every copy for its size, so the copies before the 3rd are counted
    # in the lookup that finds their kind (copy_host_path), not by a described copy
    PINSHIM_STAGE=off reused reuse_nostage reuse 8 10
    [ "$(reg reuse_nostage 'r["registrations"]')" = 8 ]
    [ "$(reg reuse_nostage 'copies("registered")')" = $((8 * 18)) ]
    [ "$(reg reuse_nostage 'copies("pass")')" = 16 ]
}

@test "heap neighbours of a registered buffer: no copy fails or changes, and most go through registrations" {
    # The real driver refuses a copy that starts inside a registration and runs past its end (FACTS.md);
    # the fake models it. 24 blocks side by side, 288 whole-block copies plus 96 sub-range copies.
    reused neighbours neighbours
    grep -qx 'neighbours: 0 refused copies, 0 wrong round trips' "$WORK/neighbours.out"
    [ "$(python3 -c 'import json,sys; print(json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])["failed_copies"])' "$WORK/neighbours.err")" = 0 ]
    [ "$(reg neighbours 'copies("registered") >= 100')" = True ]
    [ "$(reg neighbours 'r["released"]["edge"]')" = 0 ]
    # stage = off: the bytes outside a registration take the driver's pageable path instead of a pool chunk
    PINSHIM_STAGE=off reused neighbours_nopool neighbours
    grep -qx 'neighbours: 0 refused copies, 0 wrong round trips' "$WORK/neighbours_nopool.out"
    [ "$(reg neighbours_nopool 'copies("registered") >= 100')" = True ]
}

@test "copies passed as they are (2D, host-to-host) that run out of a registration make the cache drop it first" {
    reused edges edges
    grep -qx 'edges: 0 refused' "$WORK/edges.out"
    [ "$(reg edges 'r["released"]["edge"] >= 2')" = True ]
}

@test "the text summary names the registered copies and the cache's work" {
    run_app text shim "$T/reuseprog" reuse 2 5
    show text
    grep -Eq '^==[0-9]+== h2d +pageable +4.0 MiB-16.0 MiB +registered +8 ' "$WORK/text.err"
    grep -Eq '^==[0-9]+== pin-on-reuse: 2 buffers registered after 3 copies' "$WORK/text.err"
}

@test "the program's pinned copies beside a live registration are counted as pinned; small async copies into the registration still complete on return" {
    reused beside beside
    grep -qx 'beside: 0 wrong of 32 checks' "$WORK/beside.out"
    # 16 H2D and 16 D2H of the program's pinned memory; the 16 small D2H into the cache's
    # registration are pageable to the program, go direct and are waited for
    [ "$(reg beside 'sum(x["count"] for x in t if x["host_kind"] == "pinned")')" = 32 ]
    [ "$(reg beside 'sum(x["count"] for x in t if x["host_kind"] == "pageable" and x["action"] == "registered" and x["bytes"] == 4096 * x["count"])')" -ge 16 ]
    [ "$(reg beside 'r["async_waits"] >= 16')" = True ]
}

@test "async copies from and into a registered buffer keep the pageable promises" {
    reused async async
    grep -qx 'async: 0 wrong of 16 checks' "$WORK/async.out"
    [ "$(reg async 'r["async_waits"] > 0')" = True ]
}

@test "free, realloc, munmap (whole and partial), mremap and madvise(DONTNEED) unregister first" {
    reused free free
    [ "$(reg free 'r["released"]["free"]')" = 1 ]
    reused realloc realloc
    [ "$(reg realloc 'r["registrations"] >= 2 and r["live_bytes"] == 0')" = True ]
    reused munmap munmap
    [ "$(reg munmap 'r["registrations"]')" = 4 ]
    [ "$(reg munmap 'r["released"]["munmap"]')" = 4 ]
    reused mremap mremap
    [ "$(reg mremap 'r["released"]["munmap"]')" = 2 ]
    reused madvise madvise
    grep -qx 'madvise: pages read back as zero: yes' "$WORK/madvise.out"
    [ "$(reg madvise 'r["released"]["madvise"]')" = 1 ]
}

@test "C++: new[] and a vector's storage, from a library dlopened RTLD_LOCAL, are registered and unregistered; operator new's failure promises kept" {
    reused cxx cxx "$T/libcxxalloc.so"
    grep -Fx 'cxx: bad_alloc caught 1, new-handler calls before bad_alloc 1, nothrow null 1' "$WORK/cxx.out"
    [ "$(reg cxx 'r["registrations"], r["released"]["free"], r["live_bytes"]')" = "(2, 2, 0)" ]
    # the C++ runtime's new and delete reach the shim's in one call (the dynamic linker's account)
    LD_DEBUG=bindings LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" PINSHIM_SUMMARY=none \
        "$T/reuseprog" cxx "$T/libcxxalloc.so" 2>"$WORK/bindings" >/dev/null
    for sym in _Znwm _ZdlPv; do
        grep -E "binding file .*libstdc\+\+\.so\.6 .* to .*/libpinshim\.so .*symbol .$sym'" "$WORK/bindings"
    done
}

@test "memory freed and allocated again at the same address with another size: no stale registration" {
    reused sameaddr sameaddr
    [ "$(reg sameaddr 'r["refused"]')" = 0 ]
    [ "$(reg sameaddr 'r["registrations"]')" = 12 ]
}

@test "register_max_bytes: least recently used registrations are evicted, the cap holds" {
    PINSHIM_REGISTER_MAX_BYTES=10M reused budget budget
    [ "$(reg budget 'r["released"]["evicted"] > 0')" = True ]
    [ "$(reg budget 'r["high_water_bytes"] <= 10 << 20')" = True ]
    [ "$(reg budget 'r["live_bytes"]')" = 0 ]
}

@test "registration refused by the driver: one warning, copies still correct" {
    FAKECUDA_FAIL=register reused refused reuse 4 5
    [ "$(reg refused 'r["registrations"]')" = 0 ]
    [ "$(reg refused 'r["refused"]')" = 4 ]
    [ "$(grep -c 'pin-on-reuse: cuMemHostRegister' "$WORK/refused.err")" = 1 ]
}

@test "the program's own registrations are never touched; registering inside a cached one succeeds" {
    reused own own
    grep -qx 'own: program registers inside a reused buffer -> 0' "$WORK/own.out"
    grep -qx 'own: program unregisters it -> 0' "$WORK/own.out"
    [ "$(reg own 'r["released"]["program_register"]')" = 1 ]
}

@test "16 threads allocating, copying and freeing at once: bytes right, nothing left registered" {
    PINSHIM_REGISTER_AFTER=2 reused threads threads
    [ "$(reg threads 'r["registrations"] > 0 and r["live_bytes"] == 0')" = True ]
}

@test "fork: the child frees and unmaps registered memory without any CUDA call" {
    reused fork fork
    grep -qx 'fork: child exited 0' "$WORK/fork.out"
    # the fake appends each process's calls at exit: the child called nothing, so no symbol twice
    FAKECUDA_CALL_LOG="$WORK/calls" run_app logged shim "$T/reuseprog" fork
    grep -q '^cuMemHostUnregister ' "$WORK/calls"
    [ -z "$(awk '{print $1}' "$WORK/calls" | sort | uniq -d)" ]
}

@test "a malloc-heavy program (10 million small allocations) runs correctly" {
    run_app plain noshim "$T/reuseprog" mallocs 10000000
    run_app shim shim "$T/reuseprog" mallocs 10000000
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/shim.out"
}

@test "pin_on_reuse = off: nothing registered, every copy passes" {
    PINSHIM_PIN_ON_REUSE=off reused off reuse 2 5
    run python3 -c 'import json,sys; s=json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1]); print("registration" in s)' "$WORK/off.err"
    [ "$output" = False ]
}
