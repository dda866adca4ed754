#!/usr/bin/env bats
# The shim changes nothing a program can observe: programs without CUDA, error codes, dlsym
# forwarding, concurrency.
load common

@test "a program with no CUDA prints exactly what it prints without the shim" {
    run_app plain noshim ls -la /usr/bin
    run_app shim shim ls -la /usr/bin
    diff "$WORK/plain.out" "$WORK/shim.out"
    diff "$WORK/plain.err" "$WORK/shim.err"
    [ ! -s "$WORK/shim.err" ]
}

@test "python (heavy dlsym user) runs unchanged under the shim" {
    run_app plain noshim python3 -c 'import ctypes, json, sqlite3; print(json.dumps({"a": 1}))'
    run_app shim shim python3 -c 'import ctypes, json, sqlite3; print(json.dumps({"a": 1}))'
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ ! -s "$WORK/shim.err" ]
}

@test "error codes: invalid pointers, sizes, streams and events give the same CUresult with the shim" {
    run_app plain noshim "$T/errors"
    PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/s.json" run_app shim shim "$T/errors"
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -q -- '-> 0$' "$WORK/plain.out"                      # zero-byte copy succeeds
    [ "$(grep -c -- '-> [1-9]' "$WORK/plain.out")" -ge 15 ]  # and the rest really fail
    python3 "$ROOT/tests/helpers/summary_check.py" "$WORK/s.json" "$WORK/shim.out"
}

@test "a copy's device: with one device the shim never asks the driver which context is current; the error codes stay the same" {
    for n in 1 2; do
        FAKECUDA_DEVICES=$n run_app plain$n noshim "$T/errors"
        FAKECUDA_DEVICES=$n FAKECUDA_CALL_LOG="$WORK/calls$n" PINSHIM_SUMMARY=json run_app dev$n shim "$T/errors"
        show dev$n
        diff "$WORK/plain$n.out" "$WORK/dev$n.out"
        python3 - "$WORK/dev$n.err" "$(sed -n 's/^expect failed //p' "$WORK/plain$n.out")" <<'PY'
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
assert s["failed_copies"] == int(sys.argv[2]), (s["failed_copies"], sys.argv[2])
assert [(t["dir"], t["device"], t["count"]) for t in s["transfers"]] == [("h2d", 0, 1)], s["transfers"]
PY
    done
    # two devices: the current context asked for each described copy and each counted one that
    # succeeded (a failed copy counted without a description has no device to find); one device:
    # never per copy
    local one two
    one=$(awk '$1 == "cuCtxGetCurrent" {print $2}' "$WORK/calls1")
    two=$(awk '$1 == "cuCtxGetCurrent" {print $2}' "$WORK/calls2")
    echo "cuCtxGetCurrent calls: one device ${one:-0}, two $two"
    [ "$two" -ge $(( ${one:-0} + 5 )) ]
}

@test "error codes are the same through the per-thread route" {
    run_app plain noshim "$T/errors" getproc_ptds
    run_app shim shim "$T/errors" getproc_ptds
    diff "$WORK/plain.out" "$WORK/shim.out"
}

@test "driver symbols the shim calls: looked up again until libcuda is loaded, never again once it lacks them" {
    run "$T/real_check" "$FAKE/libcuda.so.1"
    echo "$output"
    [ "$status" = 0 ]
    [ "$output" = "real: symbol cache as specified" ]
}

@test "the malloc family through the shim's hooks: the same results and errno as without it, at every size and edge" {
    run_app plain noshim "$T/allocprog"
    run_app shim shim "$T/allocprog"
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(grep -c ' ok$' "$WORK/shim.out")" = 45 ]
    ! grep -q WRONG "$WORK/shim.out"
}

@test "a C++ program's own operator new and delete stay its own under the shim: libstdc++'s calls reach them too" {
    cat >"$WORK/replaced.cpp" <<'CPP'
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sstream>
#include <string>
static unsigned long news, deletes;
void *operator new(std::size_t n) { news++; if (void *p = std::malloc(n ? n : 1)) return p; throw std::bad_alloc(); }
void operator delete(void *p) noexcept { deletes += p != nullptr; std::free(p); }
void operator delete(void *p, std::size_t) noexcept { deletes += p != nullptr; std::free(p); }
int main()
{
    { std::ostringstream o; for (int i = 0; i < 1000; i++) o << "0123456789abcdefghij"; std::string s = o.str(); }
    std::printf("the program's new ran: %s, every block back through its delete: %s\n", news > 0 ? "yes" : "no",
                news == deletes ? "yes" : "no");
}
CPP
    g++ -O1 "$WORK/replaced.cpp" -o "$WORK/replaced"
    run_app plain noshim "$WORK/replaced"
    run_app shim shim "$WORK/replaced"
    show shim
    grep -Fx "the program's new ran: yes, every block back through its delete: yes" "$WORK/shim.out"
    diff "$WORK/plain.out" "$WORK/shim.out"
    # the stream's buffer, grown inside libstdc++, went to the program's new, not the shim's
    LD_DEBUG=bindings LD_PRELOAD="$SHIM" "$WORK/replaced" 2>&1 >/dev/null | grep -E "binding file .*libstdc\+\+\.so\.6 .* to .*/replaced .*symbol ._Znwm'"
}

@test "dlsym(RTLD_NEXT) from a library loaded after the shim resolves relative to that library" {
    run_app plain noshim "$T/dlnext"
    run_app shim shim "$T/dlnext"
    show shim
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -q 'next probe_target from next_a: B' "$WORK/shim.out"
    grep -q 'next malloc is libc.s: yes' "$WORK/shim.out"
    grep -q 'next getenv is libc.s: yes' "$WORK/shim.out"
    grep -q 'next of a missing name: NULL' "$WORK/shim.out"
}

@test "8 threads x 10,000 mixed copies: exact counts, correct data, no deadlock" {
    FAKECUDA_GBPS=0 PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/s.json" run_app shim shim timeout 120 "$T/threads"
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    python3 "$ROOT/tests/helpers/summary_check.py" "$WORK/s.json" "$WORK/shim.out"
}

@test "300 threads counting at once (more than the per-thread counter copies): exact counts" {
    FAKECUDA_GBPS=0 PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/s.json" run_app shim shim timeout 120 "$T/threads" 300 8
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    python3 "$ROOT/tests/helpers/summary_check.py" "$WORK/s.json" "$WORK/shim.out"
}

@test "pinshim.h API through dlsym: counters visible with the shim, absent without" {
    run_app plain noshim "$T/apiprog"
    grep -qx 'pinshim absent' "$WORK/plain.out"
    PINSHIM_SUMMARY=none run_app shim shim "$T/apiprog"
    show shim
    grep -qx 'version 0.1.0' "$WORK/shim.out"
    grep -qx 'too-small struct -> -1' "$WORK/shim.out"
    grep -qx 'get -> 0' "$WORK/shim.out"
    grep -qx 'h2d count 3 bytes 3000' "$WORK/shim.out"
}

@test "the benchmarks' switch: copies while forwarding are not counted, nor allocations tracked; refused with the guard on, registrations held or interception off" {
    PINSHIM_SUMMARY=none run_app shim shim "$T/apiprog" bench
    show shim
    grep -qx 'observe(0) -> 0' "$WORK/shim.out"
    grep -qx 'observe(1) -> 0' "$WORK/shim.out"
    grep -qx 'h2d count 2 bytes 2000' "$WORK/shim.out"
    PINSHIM_GUARD=warn PINSHIM_SUMMARY=none run_app shim shim "$T/apiprog" bench
    grep -qx 'observe(0) -> -1' "$WORK/shim.out"
    grep -qx 'h2d count 5 bytes 5000' "$WORK/shim.out"
    PINSHIM_SUMMARY=json run_app shim shim "$T/apiprog" bench registered # a buffer the cache registered
    grep -qx 'observe(0) -> -1' "$WORK/shim.out"
    grep -q '"registrations":1,' "$WORK/shim.err"
    PINSHIM_SUMMARY=json run_app shim shim "$T/apiprog" bench untracked # allocated while forwarding
    show shim
    grep -qx 'observe(1) -> 0' "$WORK/shim.out"
    grep -q '"registrations":0,' "$WORK/shim.err"
    PINSHIM_INTERCEPT=off run_app shim shim "$T/apiprog" bench
    grep -qx 'observe(0) -> -1' "$WORK/shim.out"
    grep -qx 'observe(1) -> -1' "$WORK/shim.out"
    grep -qx 'h2d count 0 bytes 0' "$WORK/shim.out"
}

@test "the benchmarks' direct switch: driver functions the program kept take the shim out of its calls and back; refused with the guard on, registrations held or interception off" {
    PINSHIM_SUMMARY=none run_app shim shim "$T/apiprog" direct
    show shim
    grep -qx 'direct(1) -> rewrote' "$WORK/shim.out"
    grep -qx 'htod is another function' "$WORK/shim.out"
    grep -qx 'direct(0) -> rewrote' "$WORK/shim.out"
    grep -qx 'table restored' "$WORK/shim.out"
    grep -qx 'h2d count 4 bytes 4000' "$WORK/shim.out" # 3 before, 1 after: the 2 direct ones unseen
    PINSHIM_GUARD=warn PINSHIM_SUMMARY=none run_app shim shim "$T/apiprog" direct
    grep -qx 'direct(1) -> nothing' "$WORK/shim.out"
    grep -qx 'htod is the wrapper' "$WORK/shim.out"
    grep -qx 'h2d count 6 bytes 6000' "$WORK/shim.out"
    PINSHIM_SUMMARY=json run_app shim shim "$T/apiprog" direct registered # a buffer the cache registered
    grep -qx 'direct(1) -> nothing' "$WORK/shim.out"
    grep -q '"registrations":1,' "$WORK/shim.err"
    PINSHIM_INTERCEPT=off run_app shim shim "$T/apiprog" direct # the driver's own functions kept: no wrapper to find
    grep -qx 'direct(1) -> nothing' "$WORK/shim.out"
    grep -qx 'h2d count 0 bytes 0' "$WORK/shim.out"
}

@test "the benchmarks' direct switch looks again for kept driver functions in a library loaded after its first look, while no word is switched" {
    PINSHIM_SUMMARY=none run_app shim shim "$T/apiprog" direct late "$T/liblatetable.so"
    show shim
    grep -qx 'first direct(1) -> rewrote' "$WORK/shim.out" # the program's own table, found at the first look
    grep -qx 'first direct(0) -> rewrote' "$WORK/shim.out"
    grep -qx 'second direct(1) -> rewrote' "$WORK/shim.out" # the library is loaded while the switch is on:
    grep -qx 'second direct(0) -> rewrote' "$WORK/shim.out" # no new look until every word is back
    grep -qx "program's table restored" "$WORK/shim.out"
    grep -qx 'direct(1) -> rewrote' "$WORK/shim.out"
    grep -qx 'late table holds another function' "$WORK/shim.out"
    grep -qx 'direct(0) -> rewrote' "$WORK/shim.out"
    grep -qx 'late table restored' "$WORK/shim.out"
    grep -qx 'h2d count 4 bytes 4000' "$WORK/shim.out" # 3 before, 1 after: the 2 through the late table unseen
}

@test "observe_ab (the C loop, small pageable copies, fresh 1 MiB ones or allocator calls, measured inside one process): observe, forward and direct groups and medians under the shim, nothing without it or with the guard" {
    gcc -std=gnu11 -O2 -Wall -Wextra -Werror -I"${CUDA_HOME:-/usr/local/cuda}/include" \
        "$ROOT/tests/bench/observe_ab.c" -o "$WORK/observe_ab" -ldl -lm
    run_app plain noshim "$WORK/observe_ab" 3 50
    [ "$(cat "$WORK/plain.rc")" = 0 ]
    grep -q 'pinshim_bench_observe not found .*nothing measured' "$WORK/plain.out"
    PINSHIM_SUMMARY=json run_app shim shim "$WORK/observe_ab" 3 50
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    [ "$(grep -cE '^ +[0-2] +[0-9]+ +[0-9]+ +[0-9]+ +[+-][0-9]+ +[+-][0-9]+$' "$WORK/shim.out")" = 3 ]
    grep -qE '^median: observe [0-9]+ ns, forward [0-9]+ ns, observe - forward [+-][0-9]+ ns per iteration .*3 groups of 6 x 50 iterations$' "$WORK/shim.out"
    grep -qE '^median: forward [0-9]+ ns, direct [0-9]+ ns, forward - direct [+-][0-9.]+ ns per iteration .*; 2 driver and 0 allocator calls per iteration \(item\)$' "$WORK/shim.out"
    # only the observing blocks were counted: warm-up 50 + 3 groups x 2 x 50 (and the one H2D); the
    # direct blocks' 300 calls went to the driver past the shim, and so did the direct warm-up's 50
    grep -q '"dir":"d2h","host_kind":"pinned","bucket_min":0,"count":350,' "$WORK/shim.err"
    grep -q '"cuMemcpyDtoHAsync_v2":350,"cuStreamSynchronize":350' "$WORK/shim.err"
    # the driver saw every call, direct ones too: 50 + 50 warm-up + 3 groups x 6 x 50 (and the
    # shim's own few, its link probe's)
    PINSHIM_SUMMARY=none FAKECUDA_CALL_LOG="$WORK/calls" run_app tr shim "$WORK/observe_ab" 3 50
    [ "$(awk '$1 == "cuMemcpyDtoHAsync_v2" { print ($2 >= 1000 && $2 < 1050) }' "$WORK/calls")" = 1 ]
    # the pageable iteration: 4 KiB async H2D copies from 1000 buffers, counted only while observing
    PINSHIM_SUMMARY=json run_app pg shim "$WORK/observe_ab" 3 50 0 pageable
    show pg
    [ "$(cat "$WORK/pg.rc")" = 0 ]
    grep -qE '^median: .*3 groups of 6 x 50 iterations$' "$WORK/pg.out"
    grep -q '"dir":"h2d","host_kind":"pageable","bucket_min":4096,"count":350,' "$WORK/pg.err"
    # fresh 1 MiB buffers: the warm-up and the observing blocks' 25 copies counted, and only their
    # allocations tracked (forwarding pauses tracking)
    PINSHIM_SUMMARY=json run_app fr shim "$WORK/observe_ab" 3 5 0 fresh
    show fr
    grep -qE '^median: .*3 groups of 6 x 5 iterations$' "$WORK/fr.out"
    grep -q '"dir":"h2d","host_kind":"pageable","bucket_min":1048576,"count":35,' "$WORK/fr.err"
    grep -q '"tracked_allocations":35,' "$WORK/fr.err"
    # allocator calls: no driver call, the hooks' own forward - direct priced per call
    PINSHIM_SUMMARY=json run_app al shim "$WORK/observe_ab" 2 50 0 alloc
    show al
    grep -qE '^median: forward [0-9]+ ns, direct [0-9]+ ns, .*; 0 driver and 4 allocator calls per iteration \(alloc\)$' "$WORK/al.out"
    grep -q '"tracked_allocations":0,' "$WORK/al.err"
    # its halves, each priced apart: a malloc and its free; a new and its delete
    run_app al shim "$WORK/observe_ab" 2 50 0 malloc
    grep -qE '^median: forward [0-9]+ ns, direct [0-9]+ ns, .*; 0 driver and 2 allocator calls per iteration \(malloc\)$' "$WORK/al.out"
    run_app al shim "$WORK/observe_ab" 2 50 0 new
    grep -qE '^median: forward [0-9]+ ns, direct [0-9]+ ns, .*; 0 driver and 2 allocator calls per iteration \(new\)$' "$WORK/al.out"
    # with data and code evicted before each iteration (x86-64: the generated code runs); 2 groups
    # are rounded up to a whole cycle of the three group orders
    run_app pg shim "$WORK/observe_ab" 2 20 64 pageable 64
    [ "$(cat "$WORK/pg.rc")" = 0 ]
    grep -qE '^median: .*3 groups of 6 x 20 iterations$' "$WORK/pg.out"
    run_app pg shim "$WORK/observe_ab" 2 50 0 pageable many
    [ "$(cat "$WORK/pg.rc")" = 2 ]
    grep -q "argument 5 is 'many': expected a whole number" "$WORK/pg.err"
    run_app pg shim "$WORK/observe_ab" 2 50 0 sideways
    [ "$(cat "$WORK/pg.rc")" = 2 ]
    grep -q "argument 4 is 'sideways': expected item, pageable, fresh, alloc, pinned, malloc or new" "$WORK/pg.err"
    # the program's pinned memory, with the evicting writes one per page
    PINSHIM_SUMMARY=json run_app pn shim "$WORK/observe_ab" 2 20 64 pinned 0 4096
    show pn
    grep -qE '^median: forward [0-9]+ ns, direct [0-9]+ ns, .*; 1 driver and 0 allocator calls per iteration \(pinned\)$' "$WORK/pn.out"
    # counted: its first copy, the warm-up's 20, and 3 groups (2 rounded up) x 2 observing blocks x 20
    grep -q '"dir":"h2d","host_kind":"pinned","bucket_min":4096,"count":141,' "$WORK/pn.err"
    run_app pn shim "$WORK/observe_ab" 2 20 64 pinned 0 0
    [ "$(cat "$WORK/pn.rc")" = 2 ]
    grep -q "argument 6 is '0': expected a whole number" "$WORK/pn.err"
    PINSHIM_GUARD=warn PINSHIM_SUMMARY=none run_app shim shim "$WORK/observe_ab" 3 50
    grep -q 'refused to switch.*nothing measured' "$WORK/shim.out"
    run_app shim shim "$WORK/observe_ab" 3 zero
    [ "$(cat "$WORK/shim.rc")" = 2 ]
    grep -q "argument 2 is 'zero': expected a whole number" "$WORK/shim.err"
}

@test "footprint.py: the lines one small copy touches, by region and by the shim's functions; bad usage named" {
    python3 "$ROOT/tests/bench/footprint.py" --lib "$SHIM" --mode h --iterations 12 >"$WORK/fp.out" 2>&1
    cat "$WORK/fp.out"
    python3 - "$WORK/fp.out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
assert re.search(r"mean over iterations 8-11 of 12", text), text
shim = float(re.search(r"^ +([0-9.]+) code libpinshim.so$", text, re.M).group(1))
assert shim >= 8, shim  # the observing path (the forwarding wrapper alone: 4 lines)
functions = text.split("shim code lines by function")[1].split("shim data lines")[0]
assert re.search(r"^ +[0-9.]+ shape_htod_async$", functions, re.M), functions
flow = re.search(r"^the shim's code: ([0-9.]+) instructions, ([0-9.]+) taken transfers", text, re.M)
assert flow and float(flow.group(1)) > 20 and float(flow.group(2)) >= 2, text  # at least into the handler and back
assert re.search(r"^those 4 iterations together: [0-9]+ lines$", text, re.M), text
PY
    run python3 "$ROOT/tests/bench/footprint.py" --mode p --iterations 100
    [ "$status" = 2 ]
    [[ "$output" == *"--iterations 100: expected 3000 or more for mode p"* ]]
    run python3 "$ROOT/tests/bench/footprint.py" --mode x
    [ "$status" = 2 ]
    [[ "$output" == *"invalid choice: 'x'"* ]]
}

@test "small_tensor_layout.py: steps between tensors and what one growing range would answer, from a list of addresses; bad usage named" {
    # two clusters of 100 tensors 4160 bytes apart (a page skipped every 64), far from each other
    python3 -c 'for base in (0x555500000000, 0x7f0000000000):
    for i in range(100): print(hex(base + i * 4160))' >"$WORK/addresses"
    run python3 "$ROOT/tests/bench/small_tensor_layout.py" --addresses "$WORK/addresses" --reach 0,8
    echo "$output"
    [ "$status" = 0 ]
    [[ "$output" == *"199 of 199 steps go up"* ]]
    [[ "$output" == *"steps of at most 32 KiB:    198"* ]]
    [[ "$output" == *"steps of more than 64 MiB:  1"* ]]
    [[ "$output" == *"at most 0 pages answers 36 of 200"* ]]   # the last cluster from its last skipped page
    [[ "$output" == *"at most 8 pages answers 100 of 200"* ]]  # the last cluster whole
    run python3 "$ROOT/tests/bench/small_tensor_layout.py" --reach 8,x
    [ "$status" = 2 ]
    [[ "$output" == *"'8,x': expected pages, comma-separated whole numbers >= 0"* ]]
    printf '0x1000\nzz\n' >"$WORK/bad"
    run python3 "$ROOT/tests/bench/small_tensor_layout.py" --addresses "$WORK/bad"
    [ "$status" = 2 ]
    [[ "$output" == *"expected one address a line"* ]]
}

@test "footprint.py --mode h: the profile-guided library runs a pinned counted copy straight (few lines, no jump but into the handler, the driver and back)" {
    command -v valgrind >/dev/null || skip "valgrind is not installed"
    [ -e "$BUILD/pgo/trained" ] || skip "the library was built without its profile (PGO=off): its layout is the compiler's guess"
    python3 "$ROOT/tests/bench/footprint.py" --lib "$SHIM" --mode h >"$WORK/fp.out" 2>&1 || { cat "$WORK/fp.out"; false; }
    cat "$WORK/fp.out"
    python3 - "$WORK/fp.out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
lines = float(re.search(r"^ +([0-9.]+) code libpinshim.so$", text, re.M).group(1))
taken = float(re.search(r"^the shim's code: [0-9.]+ instructions, ([0-9.]+) taken transfers", text, re.M).group(1))
# fb1b264: 10 lines, 3 transfers (one call in 16 is timed: a little more); 955b2f0 took 17 and 10.
# A layout change that sends this path out of line again fails here: see copy_entry.c, host_path().
assert taken <= 5, "the pinned counted path takes %.1f transfers a copy, expected at most 5" % taken
assert lines <= 13, "the pinned counted path runs %.1f lines of the shim's code, expected at most 13" % lines
PY
}

@test "footprint.py --mode t: frees of a thousand tensors' small blocks read a few lines of the shim's filter of watched bases, not a line each" {
    command -v valgrind >/dev/null || skip "valgrind is not installed"
    python3 "$ROOT/tests/bench/footprint.py" --lib none --mode t >"$WORK/none.out" 2>&1 || { cat "$WORK/none.out"; false; }
    python3 "$ROOT/tests/bench/footprint.py" --lib "$SHIM" --mode t >"$WORK/shim.out" 2>&1 || { cat "$WORK/shim.out"; false; }
    together() { awk '/together:/ {f=1; next} f && / data anonymous/ {print $1}' "$1"; }
    local none shim
    none=$(together "$WORK/none.out")
    shim=$(together "$WORK/shim.out")
    echo "anonymous data lines of 1000 iterations together: $none without the shim, $shim with it"
    [ -n "$none" ] && [ -n "$shim" ]
    # 3000 frees a pass: a slot per 16 bytes, hashed, read some 1,700 more lines (2026-11-29)
    [ "$shim" -lt $((none + 200)) ]
}

@test "make bench-hook-variants: the library with a family of allocation hooks kept local, interception forced off" {
    bench="$ROOT/build/bench"
    exported() { nm -D --defined-only "$1" | awk '$2 ~ /^[A-Z]$/ {print $3}' | grep -xE "$2" | LC_ALL=C sort | tr '\n' ' '; }
    some='malloc|free|_Znwm|_ZdlPv|mmap|munmap|read'
    [ "$(exported "$SHIM" "$some")" = "_ZdlPv _Znwm free malloc mmap munmap read " ]
    [ "$(exported "$bench/libpinshim-no-malloc-hooks.so" "$some")" = "mmap munmap read " ]
    [ "$(exported "$bench/libpinshim-no-mmap-hooks.so" "$some")" = "_ZdlPv _Znwm free malloc read " ]
    [ "$(exported "$bench/libpinshim-no-alloc-hooks.so" "$some")" = "read " ]
    # the program's malloc goes where the exports say (the dynamic linker's own account)
    binding() { LD_DEBUG=bindings LD_PRELOAD="$1" /bin/true 2>&1 | grep -F "binding file /bin/true " |
        grep -F "symbol \`$2'" | sed 's/.* to \([^ ]*\) .*/\1/' | xargs -r basename; }
    [ "$(binding "$bench/libpinshim-no-malloc-hooks.so" malloc)" = libc.so.6 ]
    [ "$(binding "$bench/libpinshim-no-mmap-hooks.so" malloc)" = libpinshim-no-mmap-hooks.so ]
    # interception off whatever the environment says: the copies pass unseen, no summary, same output
    run_app plain noshim "$T/errors"
    for v in malloc mmap alloc; do
        SHIM="$bench/libpinshim-no-$v-hooks.so" PINSHIM_INTERCEPT=on PINSHIM_SUMMARY=text run_app "$v" shim "$T/errors"
        show "$v"
        [ "$(cat "$WORK/$v.rc")" = "$(cat "$WORK/plain.rc")" ]
        diff "$WORK/plain.out" "$WORK/$v.out"
        [ ! -s "$WORK/$v.err" ]
    done
    PINSHIM_SUMMARY=text run_app full shim "$T/errors"
    grep -q "transfer summary" "$WORK/full.err" # the full library under the same settings does observe
}

@test "the library is built from a profile of its hot loops; PGO=off builds it without one; a failed training is named" {
    echo 'int main(void){return 0;}' | "${CC:-cc}" -fprofile-use -fprofile-partial-training -x c - -o /dev/null 2>/dev/null ||
        skip "this compiler cannot build from a profile (gcc 10 or later can)"
    # make's library: trained, the profiles of the hot paths' sources written where their objects
    # were compiled (a file of data alone has none), the objects compiled from them
    [ -f "$ROOT/build/pgo/trained" ]
    for src in interpose/driver_wrappers copy/copy_entry copy/copy copy/sync_entry hostmem/memkind \
        hostmem/plain_pages observe/stats observe/ctxdev stage/stage; do
        [ -s "$ROOT/build/obj/shim/$src.gcda" ] || { echo "no profile for shim/$src.c"; false; }
    done
    readelf --debug-dump=info "$SHIM" | grep DW_AT_producer >"$WORK/producers"
    grep -q -- '-fprofile-use' "$WORK/producers"
    # PGO=off: one build, no profile
    make -s -C "$ROOT" BUILD="$WORK/plain" PGO=off "$WORK/plain/libpinshim.so" >"$WORK/plain.out" 2>&1 ||
        { cat "$WORK/plain.out"; false; }
    readelf --debug-dump=info "$WORK/plain/libpinshim.so" | grep DW_AT_producer >"$WORK/plain.producers"
    [ -s "$WORK/plain.producers" ]
    ! grep -q -- '-fprofile' "$WORK/plain.producers"
    [ ! -e "$WORK/plain/pgo" ]
    # a training that fails stops the build, naming the mode and what the loop said
    run make -s -C "$ROOT" BUILD="$WORK/bad" PGO_MODES=x "$WORK/bad/libpinshim.so"
    [ "$status" != 0 ]
    [[ "$output" == *"profile training failed in mode x (make PGO=off builds without it):"* ]]
    [[ "$output" == *"footprint_loop: usage: footprint_loop N d|h|p|q|e|f|g|t, not 20000 x"* ]]
    [ ! -e "$WORK/bad/libpinshim.so" ]
}

@test "the library links neither libcuda nor libcudart and exports only its interface" {
    run readelf -d "$SHIM"
    [ "$status" = 0 ]
    ! echo "$output" | grep -E 'NEEDED.*(libcuda|libcudart)'
    nm -D --defined-only "$SHIM" | awk '{print $3}' | while read -r sym; do
        case "$sym" in
        cu*|dlsym|pinshim_*) ;;
        sigaction|signal) ;; # the guard keeps its SIGSEGV handler first (shim/guard/guard_signal.c)
        read|write|pread|pread64|pwrite|pwrite64|readv|writev|send|sendto|sendmsg|recv|recvfrom|recvmsg) ;; # shim/guard/io_hooks.c
        malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc) ;; # shim/hostmem/alloc.c
        _Znwm|_ZdlPv) ;; # C++'s operator new(size_t) and delete(void *): shim/hostmem/alloc.c
        mmap|mmap64|munmap|mremap|madvise) ;; # shim/hostmem/alloc.c
        __start_pinshim_tally|__stop_pinshim_tally) # the linker's bounds of the counters' section
            readelf --dyn-syms -W "$SHIM" | grep -E " (LOCAL|HIDDEN) .* $sym\$" >/dev/null || { echo "$sym is visible"; exit 1; };;
        *) echo "unexpected export: $sym"; exit 1;; esac
    done
}

@test "the preset 'off' is pure pass-through: no output, same data" {
    run_app plain noshim "$T/routes" getproc
    PINSHIM_POLICY=off run_app shim shim "$T/routes" getproc
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ ! -s "$WORK/shim.err" ]
}

@test "another interposer of the same driver symbols, preloaded before or after the shim: no recursion" {
    run_app plain noshim "$T/routes_linked"
    for order in "$SHIM:$T/libstack_probe.so" "$T/libstack_probe.so:$SHIM"; do
        for intercept in on off; do
            LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$order" PINSHIM_INTERCEPT=$intercept PINSHIM_SUMMARY=none \
                timeout 60 "$T/routes_linked" >"$WORK/stack.out" 2>"$WORK/stack.err"
            cat "$WORK/stack.err"
            diff "$WORK/plain.out" "$WORK/stack.out"
            grep -Eq '^stack_probe: [1-9][0-9]* calls$' "$WORK/stack.err"
        done
    done
}
