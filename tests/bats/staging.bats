#!/usr/bin/env bats
# Staged pageable copies: same bytes as without the shim at every size boundary, stream order kept,
# async sources reusable at once, no deadlock under contention, pass-through where staging must not
# happen (capture, refused pinned memory, stage = off, forked child).
load common

export PINSHIM_PIN_ON_REUSE=off # the buffers here are reused: keep them staged, not registered

# staged SCENARIO [ENV...]: runs the scenario without and with the shim (JSON summary in s.json).
# Slabs are allocated inline so that every candidate is staged and the counts are exact; the
# background allocation (the default) has its own test.
staged() {
    local scenario="$1"
    shift
    set -- PINSHIM_POOL_GROW_INLINE=on "$@"
    env "$@" LD_LIBRARY_PATH="$FAKE" "$T/staging" "$scenario" >"$WORK/plain.out" 2>"$WORK/plain.err" || {
        cat "$WORK/plain.err"; return 1; }
    local rc=0
    env "$@" PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/s.json" LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" \
        timeout 300 "$T/staging" "$scenario" >"$WORK/shim.out" 2>"$WORK/shim.err" || rc=$?
    echo "$rc" >"$WORK/shim.rc"
    show shim
    [ "$rc" = 0 ]
}

# staging_field EXPR: evaluates a Python expression over the summary's "staging" object `st`.
staging_field() {
    python3 - "$WORK/s.json" "$1" <<'PY'
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
st = s["staging"]
why = {u["reason"]: u for u in st["unstaged"]}
print(eval(sys.argv[2]))
PY
}

# need_thp_madvise: skips the test unless the system's THP setting is madvise (otherwise the shim
# gives no huge-page advice at all).
need_thp_madvise() {
    grep -q '\[madvise\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null ||
        skip "the system's THP setting is not madvise: the shim gives no huge-page advice"
}

SMALL_POLICY="PINSHIM_STAGE_MIN_BYTES=64K PINSHIM_STAGE_D2H_MIN_BYTES=32K PINSHIM_STAGE_CHUNK_BYTES=256K PINSHIM_POOL_MAX_BYTES=1M PINSHIM_POOL_SLAB_BYTES=512K"

@test "staged H2D and D2H at every size boundary (small policy): bytes identical, copies staged" {
    staged sizes $SMALL_POLICY
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" -gt 20 ]
    [ "$(staging_field 'why["below the staging threshold"]["count"]')" -gt 0 ]
    [ "$(staging_field 'st["pool_bytes"] <= 1 << 20')" = True ]
}

@test "staged copies at the default policy's boundaries: bytes identical" {
    staged sizes
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" -gt 20 ]
}

@test "stream_copy (streaming stores) equals memcpy at every offset and size, bytes around untouched" {
    run "$T/stream_copy_check"
    echo "$output"
    [ "$status" = 0 ]
    [[ "$output" == "stream_copy: "*" cases identical" ]]
}

@test "workers: parallel copies equal memcpy for 1-16 threads and with an OpenMP team, parts tile the copy, fault-prone ones at 2 MiB boundaries; stage_h2d_threads caps copies into the pool, a borrowed OpenMP team included; units of begun huge-page blocks taken by idle threads; thread counts resolved once, from the CPU affinity; populate faults in its range; an owner helping its pipeline never misses its wake-up" {
    run "$T/workers_check"
    echo "$output"
    [ "$status" = 0 ]
    [[ "${lines[0]}" == "workers: "*" cases identical (the last "*" with an OpenMP team of "* ]]
    [ "${lines[1]}" = "workers: at most 3 of 8 threads at once into resident memory with stage_h2d_threads = 3" ]
    [[ "${lines[3]}" == "workers: an OpenMP team of 8 lends 3 threads with stage_h2d_threads = 3, at most "[23]" copying at once" ]]
    [[ "${lines[4]}" == "workers: stealing: "*" of 8 blocks copied by more than one thread, each after its first unit" ]]
    [ "${lines[5]}" = "workers: thread counts resolved once for 60 copies" ]
    # the default counts follow the CPU affinity (nproc reads it too): one CPU, one thread
    local allowed; allowed=$(nproc)
    [ "${lines[6]}" = "workers: default threads on one allowed CPU: 1 and 1 for copies into the pool ($allowed allowed now: $((allowed < 32 ? allowed : 32)))" ]
    [ "${lines[7]}" = "workers: populate faulted in 8453 pages, no more" ]
    [ "${lines[8]}" = "workers: pipelines of 3 copies with 16 threads, every one ended (1000 rounds)" ]
}

@test "stage_slice_us: the staging threads ask the kernel for that slice; the program's threads keep theirs; not asked by default nor under the program's SCHED_BATCH" {
    slices() { env LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" PINSHIM_SUMMARY=none PINSHIM_STAGE_THREADS=4 \
        SLICES_NS=100000 "$@" "$T/staging" slices | tail -n 1; }
    out=$(slices PINSHIM_STAGE_SLICE_US=100)
    echo "$out"
    [ "$out" != "slices: /proc gives no se.slice" ] || skip "this kernel shows no scheduler slice in /proc"
    [ "$out" = "slices: 3 threads at 100000 ns, this thread not" ]
    out=$(slices)
    [ "$out" = "slices: 0 threads at 100000 ns, this thread not" ]
    out=$(slices PINSHIM_STAGE_SLICE_US=100 SLICES_BATCH=1)
    echo "$out"
    [ "$out" = "slices: 0 threads at 100000 ns, this thread not" ]
}

@test "stage_stores = normal and = streaming: staged bytes identical at every size boundary" {
    for stores in normal streaming; do
        staged sizes $SMALL_POLICY PINSHIM_STAGE_STORES=$stores
        diff "$WORK/plain.out" "$WORK/shim.out"
        [ "$(staging_field 'st["staged_copies"]')" -gt 20 ]
    done
}

@test "staging through the per-thread default stream flavour: bytes identical" {
    staged sizes $SMALL_POLICY ROUTE=getproc_ptds
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" -gt 20 ]
}

@test "stream order: staged copies interleaved with pinned copies, D2D and host functions" {
    staged order FAKECUDA_GBPS=5 PINSHIM_STAGE_MIN_BYTES=1M
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'host functions run: 4' "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" = 8 ]
}

@test "async staged H2D: the source overwritten right after the call, the device keeps the old data" {
    staged overwrite FAKECUDA_GBPS=2 $SMALL_POLICY
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" = 2 ]
}

@test "16 program threads staging at once: bytes identical, no deadlock" {
    staged threads PINSHIM_STAGE_MIN_BYTES=1M
    diff <(sort "$WORK/plain.out") <(sort "$WORK/shim.out")
    [ "$(staging_field 'st["staged_copies"]')" = 192 ]
}

@test "pool exhaustion: a one-chunk pool shared by 16 threads completes correctly, never waiting across streams" {
    staged threads PINSHIM_STAGE_MIN_BYTES=1M PINSHIM_STAGE_CHUNK_BYTES=256K PINSHIM_POOL_MAX_BYTES=256K PINSHIM_POOL_SLAB_BYTES=256K
    diff <(sort "$WORK/plain.out") <(sort "$WORK/shim.out")
    [ "$(staging_field 'st["pool_bytes"]')" = 262144 ]
    # every candidate is staged, or passed to the driver because the chunk was busy elsewhere
    [ "$(staging_field 'st["staged_copies"] + why.get("pool busy on other streams", {"count": 0})["count"]')" = 192 ]
    [ "$(staging_field 'st["staged_copies"]')" -gt 0 ]
    # 16 threads on one chunk: copies were blocked until another gave it back, and the summary says how long
    [ "$(staging_field 'st["chunk_wait_ns"] > 0')" = True ]
}

@test "two copies share a small pool: D2H copies get chunks while another thread stages without pause" {
    staged share PINSHIM_STAGE_MIN_BYTES=1M PINSHIM_STAGE_CHUNK_BYTES=1M PINSHIM_POOL_MAX_BYTES=4M PINSHIM_POOL_SLAB_BYTES=4M
    diff "$WORK/plain.out" "$WORK/shim.out"
    # before copies queued for their first chunk, the stager kept every chunk: 0-2 of the 10 were staged
    d2h=$(python3 -c '
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
print(sum(r["count"] for r in s["transfers"] if r["dir"] == "d2h" and r["action"] == "staged"))' "$WORK/s.json")
    echo "staged D2H copies: $d2h"
    [ "$d2h" -ge 8 ]
}

@test "stage_openmp: copies on the main thread borrow the program's OpenMP team while it spins; the advice where they cannot" {
    # openmp_stage: a parallel region computes 32 MiB, then an H2D and a D2H of it (exit 1 if the
    # bytes differ); built against libgomp (gcc) and LLVM's libomp (clang). The count of copies
    # that borrowed the team, the regions they began (libomp), and the text summary's advice.
    run_openmp() {
        env "$@" PINSHIM_POOL_GROW_INLINE=on LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" "$T/$OMP_PROG" $OMP_ARG \
            >"$WORK/omp.out" 2>"$WORK/omp.err"
        cat "$WORK/omp.err"
        grep -q '^openmp_stage: hash ' "$WORK/omp.out"
        team=$(sed -n 's/.* \([0-9]*\) copies made with the program.s spinning OpenMP threads.*/\1/p' "$WORK/omp.err")
        team=${team:-0}
        echo "$OMP_PROG $OMP_ARG $*: borrowed $team"
        # with libomp the program counts the parallel regions the copies began (OMPT): one per
        # copy that borrowed the team, not one per piece (a 32 MiB round trip made 7 before)
        regions=$(sed -n 's/^openmp_stage: \([0-9]*\) parallel regions in the copies$/\1/p' "$WORK/omp.out")
        [ "$OMP_PROG" = openmp_stage ] || [ "$regions" = "$team" ]
    }
    for OMP_PROG in openmp_stage openmp_stage_llvm; do
        runtime=libgomp
        [ "$OMP_PROG" = openmp_stage ] || runtime=libomp
        advice="advice: the shim staged pageable H2D copies with its own CPU threads while $runtime (OpenMP) is loaded"
        # spinning for as long as it waits (active): borrowed, so its threads never compete: no advice
        OMP_ARG= run_openmp OMP_WAIT_POLICY=active
        [ "$team" -ge 1 ]
        ! grep -q "advice: the shim staged pageable H2D" "$WORK/omp.err"
        # a team asleep at the copies is left asleep: nothing borrowed, nothing to advise (passive:
        # asleep once its last thread ends its part; by default: once it has spun, up to 200 ms)
        OMP_ARG= run_openmp OMP_WAIT_POLICY=passive OPENMP_STAGE_PAUSE_MS=100
        [ "$team" -eq 0 ]
        ! grep -q "advice: the shim staged pageable H2D" "$WORK/omp.err"
        OMP_ARG= run_openmp OMP_WAIT_POLICY= OPENMP_STAGE_PAUSE_MS=1000
        [ "$team" -eq 0 ]
        # the copies made on another thread, or with the key off, use the staging threads: the advice
        OMP_ARG=thread run_openmp OMP_WAIT_POLICY=active
        [ "$team" -eq 0 ]
        grep -q "$advice" "$WORK/omp.err"
        OMP_ARG= run_openmp OMP_WAIT_POLICY=active PINSHIM_STAGE_OPENMP=off
        [ "$team" -eq 0 ]
        grep -q "$advice" "$WORK/omp.err"
        # one OpenMP thread: no team, nothing spins, no advice
        OMP_ARG= run_openmp OMP_WAIT_POLICY=active OMP_NUM_THREADS=1
        [ "$team" -eq 0 ]
        ! grep -q "advice: the shim staged pageable H2D" "$WORK/omp.err"
    done
    # no H2D staged (below the threshold): no such advice either
    OMP_PROG=openmp_stage OMP_ARG= run_openmp OMP_WAIT_POLICY= PINSHIM_STAGE_OPENMP=off PINSHIM_STAGE_MIN_BYTES=64M
    ! grep -q "advice: the shim staged pageable H2D" "$WORK/omp.err"
}

@test "a full pool never makes a copy wait for another stream's work" {
    staged crossstream PINSHIM_STAGE_MIN_BYTES=1M PINSHIM_STAGE_CHUNK_BYTES=1M PINSHIM_POOL_MAX_BYTES=1M PINSHIM_POOL_SLAB_BYTES=1M
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'crossstream: copy on stream T returned while stream S was held' "$WORK/shim.out"
}

@test "a sync H2D into managed memory is complete when it returns (not staged)" {
    staged managed FAKECUDA_GBPS=1 PINSHIM_STAGE_MIN_BYTES=1M
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'why["device side check"]["count"]')" -ge 1 ]
}

@test "a sync H2D waits for earlier work on its stream, as the driver's pageable path does" {
    staged presync FAKECUDA_GBPS=1 PINSHIM_STAGE_MIN_BYTES=1M
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'presync: earlier D2H into pinned memory complete when the sync H2D returned' "$WORK/shim.out"
}

@test "pinned memory refused: one warning, copies pass through with identical bytes" {
    staged sizes FAKECUDA_FAIL=hostalloc,register $SMALL_POLICY
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(grep -c 'pinned memory for staging was refused' "$WORK/shim.err")" = 1 ]
    [ "$(staging_field 'st["staged_copies"]')" = 0 ]
    [ "$(staging_field 'why["no pinned memory"]["count"]')" -gt 0 ]
}

# calls NAME: the fake driver's call log of the last staged run (FAKECUDA_CALL_LOG=$WORK/NAME)
# as "symbol count" lines; the staging program itself pins nothing, so these are the shim's.
calls_of() { awk -v s="$2" '$1 == s { n += $2 } END { print n + 0 }' "$WORK/$1"; }

@test "pool_pin = register: slabs are the shim's own memory, registered; alloc: cuMemHostAlloc; a refused registration falls back to it" {
    staged sizes FAKECUDA_CALL_LOG="$WORK/calls.register" $SMALL_POLICY
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" -gt 0 ]
    [ "$(calls_of calls.register cuMemHostRegister_v2)" -ge 1 ]
    [ "$(calls_of calls.register cuMemHostAlloc)" = 0 ]
    [ "$(staging_field 'st["pool_slabs"] == '"$(calls_of calls.register cuMemHostRegister_v2)"' and st["pool_pin_ns"] > 0')" = True ]

    staged sizes FAKECUDA_CALL_LOG="$WORK/calls.alloc" PINSHIM_POOL_PIN=alloc $SMALL_POLICY
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" -gt 0 ]
    [ "$(calls_of calls.alloc cuMemHostAlloc)" -ge 1 ]
    [ "$(calls_of calls.alloc cuMemHostRegister_v2)" = 0 ]

    staged sizes FAKECUDA_CALL_LOG="$WORK/calls.fallback" FAKECUDA_FAIL=register $SMALL_POLICY
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" -gt 0 ]
    [ "$(calls_of calls.fallback cuMemHostAlloc)" -ge 1 ]
    ! grep -q 'warning' "$WORK/shim.err"
}

@test "a primary context reset with the pool's slab in it: the slab is unregistered, copies after it staged from a new one, the link probe done first" {
    staged reset FAKECUDA_CALL_LOG="$WORK/calls.reset" PINSHIM_STAGE_MIN_BYTES=1M
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" = 4 ]
    [ "$(calls_of calls.reset cuMemHostRegister_v2)" = 2 ]
    [ "$(calls_of calls.reset cuMemHostUnregister)" = 1 ]
    # The link probe times copies on the first slab in the background; the reset comes while it
    # may still run, and must wait for it: the fake aborts on an event of a reset context (the real
    # driver crashes). Before the wait, 1 run in 10 aborted here.
    for i in $(seq 20); do
        PINSHIM_POOL_GROW_INLINE=on PINSHIM_STAGE_MIN_BYTES=1M LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" \
            timeout 60 "$T/staging" reset >"$WORK/again.out" 2>"$WORK/again.err" || {
            echo "run $i:"; cat "$WORK/again.err"; return 1; }
    done
}

@test "stream capture: the captured copy passes through and the graph replays it correctly" {
    staged capture PINSHIM_STAGE_MIN_BYTES=1M
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'why["stream capture"]["count"]')" = 1 ]
}

@test "fork while staging threads are busy: the child copies in pass-through and exits cleanly" {
    staged fork
    grep -q 'fork: child exited 0' "$WORK/shim.err"
}

@test "stage = off: nothing staged, every candidate counted as not staged" {
    staged sizes PINSHIM_STAGE=off
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" = 0 ]
    [ "$(staging_field 'why["stage = off"]["count"]')" -gt 0 ]
}

@test "2D copies of pageable memory are counted as not staged, with the reason" {
    PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/s.json" PINSHIM_STAGE_MIN_BYTES=4K run_app shim shim "$T/routes" getproc
    show shim
    [ "$(staging_field 'why["2D/3D/batch copy"]["count"]')" -ge 2 ]
}

@test "the text summary reports staging and the pool" {
    PINSHIM_STAGE_MIN_BYTES=64K run_app shim shim "$T/demo"
    show shim
    grep -Eq '^==[0-9]+== h2d +pageable +1.0 MiB-4.0 MiB +staged +8 ' "$WORK/shim.err"
    grep -Eq '^==[0-9]+== staging: [0-9]+ copies \(.*\) through the pinned pool; pool [0-9.]+ MiB \(high water' "$WORK/shim.err"
}

@test "default background slab allocation: the first copies pass through, later ones are staged" {
    # pool_prewarm off: the small copies that open the scenario would otherwise have the pool ready
    staged sizes $SMALL_POLICY PINSHIM_POOL_GROW_INLINE=off PINSHIM_POOL_PREWARM=off FAKECUDA_GBPS=5
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'why["pool being allocated"]["count"]')" -ge 1 ]
    [ "$(staging_field 'st["staged_copies"]')" -gt 10 ]
}

@test "pool_prewarm context (default): retaining the primary context starts the pool, so a first copy that is large is staged; copy: it passes through" {
    staged prewarm PREWARM_NO_SMALL_COPY=1 PINSHIM_POOL_GROW_INLINE=off
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'pool ready before the large copy: yes' "$WORK/shim.err"
    [ "$(staging_field 'st["staged_copies"]')" = 2 ]
    [ "$(staging_field '"pool being allocated" not in why')" = True ]
    staged prewarm PREWARM_NO_SMALL_COPY=1 PINSHIM_POOL_GROW_INLINE=off PINSHIM_POOL_PREWARM=copy
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'pool ready before the large copy: no' "$WORK/shim.err"
    [ "$(staging_field 'why["pool being allocated"]["count"]')" -ge 1 ]
}

@test "the default slab holds one thread's deepest pipelines: a first 96 MiB round trip grows no second slab; with 64M slabs it does" {
    # H2D: 4 pieces in flight, D2H: 6 chunks, and one chunk kept free for other copies: 7 of the
    # 8 chunks of a 128M slab; with 64M slabs (4 chunks) the copy's refusal grows the pool while it runs
    staged prewarm PREWARM_NO_SMALL_COPY=1 PREWARM_BYTES=96M PINSHIM_POOL_GROW_INLINE=off PINSHIM_LINK_PROBE=off
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'pool ready before the large copy: yes' "$WORK/shim.err"
    [ "$(staging_field 'st["staged_copies"]')" = 2 ]
    [ "$(staging_field 'st["pool_slabs"]')" = 1 ]
    [ "$(staging_field 'st["pool_high_water_bytes"] >= 6 * 16 * 2**20')" = True ]
    staged prewarm PREWARM_NO_SMALL_COPY=1 PREWARM_BYTES=96M PINSHIM_POOL_GROW_INLINE=off PINSHIM_LINK_PROBE=off \
        PINSHIM_POOL_SLAB_BYTES=64M
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["pool_slabs"]')" = 2 ]
}

@test "pool_prewarm copy: a small pageable copy starts the pool, so the first large copy is staged; off: it passes through" {
    staged prewarm PINSHIM_POOL_GROW_INLINE=off PINSHIM_POOL_PREWARM=copy
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'pool ready before the large copy: yes' "$WORK/shim.err"
    [ "$(staging_field 'st["staged_copies"]')" = 2 ]
    [ "$(staging_field '"pool being allocated" not in why')" = True ]
    staged prewarm PINSHIM_POOL_GROW_INLINE=off PINSHIM_POOL_PREWARM=off
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'pool ready before the large copy: no' "$WORK/shim.err"
    [ "$(staging_field 'why["pool being allocated"]["count"]')" -ge 1 ]
}

@test "link_probe: the pool's first slab on a device times pinned copies; the summary and the advice use the rate" {
    FAKECUDA_GBPS=8 run_app probe shim "$T/staging" sizes
    show probe
    # the fake's DMA runs at FAKECUDA_GBPS (plus its fixed latency per copy): the probe can never see
    # more than that (how much less depends on the machine's load, so only the ceiling is checked)
    line=$(grep -E '^==[0-9]+== link: device 0, pinned copies measured at [0-9.]+ GB/s H2D and [0-9.]+ GB/s D2H' "$WORK/probe.err")
    python3 -c 'import re,sys; r=[float(x) for x in re.findall(r"([0-9.]+) GB/s", sys.argv[1])]; assert all(0 < x <= 8.2 for x in r), r' "$line"
    grep -q 'measured on device 0 at start (link_probe)' "$WORK/probe.err"
    ! grep -q 'documented default' "$WORK/probe.err"
    LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" PINSHIM_SUMMARY=json "$T/staging" sizes >/dev/null 2>"$WORK/probe.json"
    python3 -c 'import json,sys; s=json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1]); l=s["link"]; assert l[0]["device"] == 0 and l[0]["h2d_gbps"] > 0 and l[0]["d2h_gbps"] > 0, l' "$WORK/probe.json"
}

@test "link_probe = off: nothing is measured and the advice says its pinned rate is the documented default" {
    PINSHIM_LINK_PROBE=off run_app noprobe shim "$T/staging" sizes
    show noprobe
    ! grep -q '== link:' "$WORK/noprobe.err"
    grep -q 'documented default, not measured' "$WORK/noprobe.err"
}

@test "stage_hugepages = on: a staged D2H into a fresh buffer gets huge pages for the 2 MiB blocks it fills; off: none" {
    need_thp_madvise
    # the advice needs the allocation tracking of pin_on_reuse (on by default; off in this file)
    staged freshdst PINSHIM_STAGE_HUGEPAGES=on PINSHIM_PIN_ON_REUSE=on
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'huge: 0 kB' "$WORK/plain.err"
    kb=$(sed -n 's/^huge: \([0-9]*\) kB$/\1/p' "$WORK/shim.err")
    [ "$kb" -ge $((60 * 1024)) ]
    [ "$(staging_field 'st["hugepage_copies"] > 0 and st["hugepage_bytes"] >= 64 << 20')" = True ]
    env PINSHIM_STAGE_HUGEPAGES=on PINSHIM_PIN_ON_REUSE=on PINSHIM_POOL_GROW_INLINE=on LD_LIBRARY_PATH="$FAKE" \
        LD_PRELOAD="$SHIM" "$T/staging" freshdst 2>"$WORK/text.err" >/dev/null
    grep -q '== staging: huge pages advised for [1-9][0-9]* copies' "$WORK/text.err"
    staged freshdst PINSHIM_STAGE_HUGEPAGES=off PINSHIM_PIN_ON_REUSE=on
    grep -qx 'huge: 0 kB' "$WORK/shim.err"
    [ "$(staging_field 'st["hugepage_copies"]')" = 0 ]
}

@test "a destination the program advised MADV_HUGEPAGE is written as huge pages (a 2 MiB block per thread); MADV_NOHUGEPAGE: not" {
    need_thp_madvise
    staged freshdst_advised PINSHIM_PIN_ON_REUSE=on
    diff "$WORK/plain.out" "$WORK/shim.out"
    # the program decides: the shim gives no advice of its own, and counts the copy into the program's huge pages
    [ "$(staging_field '(st["hugepage_program_decides"], st["hugepage_copies"], st["hugepage_program_copies"])')" = "(True, 0, 1)" ]
    env PINSHIM_PIN_ON_REUSE=on PINSHIM_POOL_GROW_INLINE=on LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" \
        "$T/staging" freshdst_advised 2>"$WORK/text.err" >/dev/null
    grep -q '== staging: 1 copies into huge pages the program advised' "$WORK/text.err"
    staged freshdst_nohuge PINSHIM_PIN_ON_REUSE=on
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'huge: 0 kB' "$WORK/shim.err"
    [ "$(staging_field '(st["hugepage_program_decides"], st["hugepage_copies"], st["hugepage_program_copies"])')" = "(True, 0, 0)" ]
}

@test "stage_recycle: freed buffers' pages fill later fresh D2H destinations; bytes, the bytes past a copy, a forked child's view and a realloc unchanged" {
    need_thp_madvise
    # the buffers are tracked (pin_on_reuse) and each copied once, so none is registered
    staged recycle PINSHIM_PIN_ON_REUSE=on
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'recycle: forked child read the destination: exit 0' "$WORK/shim.out"
    # rounds 1-3 take the pages of the rounds before; the reserve never holds more than it kept
    [ "$(staging_field 'st["recycle_filled_bytes"] >= 64 << 20 and st["recycle_kept_bytes"] >= st["recycle_filled_bytes"]')" = True ]
    [ "$(staging_field 'st["recycle_reserve_bytes"] == st["recycle_kept_bytes"] - st["recycle_filled_bytes"] - st["recycle_released_bytes"]')" = True ]
    env PINSHIM_PIN_ON_REUSE=on PINSHIM_POOL_GROW_INLINE=on LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" \
        "$T/staging" recycle 2>"$WORK/text.err" >/dev/null
    grep -q "== staging: [0-9.]* MiB of freed buffers' pages moved into D2H destinations (stage_recycle" "$WORK/text.err"
    staged recycle PINSHIM_PIN_ON_REUSE=on PINSHIM_STAGE_RECYCLE=off
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field '(st["recycle_kept_bytes"], st["recycle_filled_bytes"])')" = "(0, 0)" ]
}

@test "stage_recycle: frees kept only as far as copies asked; the cap and the age give the kept pages back, also while the program is idle; a mapping the program made itself is never filled (its mremap still works)" {
    need_thp_madvise
    staged recycle PINSHIM_PIN_ON_REUSE=on PINSHIM_STAGE_RECYCLE_MAX_BYTES=40M
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["recycle_filled_bytes"] > 0 and 0 < st["recycle_high_water_bytes"] <= 40 << 20')" = True ]
    [ "$(staging_field 'st["recycle_released_bytes"] > 0')" = True ]
    # kept for 0 ms: every look at the reserve finds it too old and gives it all back
    staged recycle PINSHIM_PIN_ON_REUSE=on PINSHIM_STAGE_RECYCLE_KEEP_MS=0
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field '(st["recycle_kept_bytes"] > 0, st["recycle_filled_bytes"])')" = "(True, 0)" ]
    # a program idle after its last free: the shim's thread gives back what no copy took
    staged recycle PINSHIM_PIN_ON_REUSE=on PINSHIM_STAGE_RECYCLE_KEEP_MS=200 RECYCLE_SLEEP_MS=1000
    [ "$(staging_field '(st["recycle_filled_bytes"] > 0, st["recycle_reserve_bytes"], st["recycle_released_bytes"] > 0)')" = "(True, 0, True)" ]
    # frees are kept only as far as staged D2H copies asked: one 36 MiB copy, then 8 frees of the
    # program's own 36 MiB buffers keep about one buffer's blocks, not eight
    staged recycle_demand PINSHIM_PIN_ON_REUSE=on
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field '(0 < st["recycle_kept_bytes"] <= 38 << 20, st["recycle_filled_bytes"])')" = "(True, 0)" ]
    # the program's own mapping: left whole (moving pages into it would split it, and its mremap fail)
    staged recycle_mmap PINSHIM_PIN_ON_REUSE=on
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["recycle_filled_bytes"] > 0')" = True ] # the malloc'd rounds before it were filled
}

@test "every thread the shim starts names itself pinshim-*: staging workers, the recycle trimmer, the log writer (omp_team.c counts the program's own threads by name)" {
    need_thp_madvise
    staged recycle PINSHIM_PIN_ON_REUSE=on RECYCLE_THREADS=1
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'thread: pinshim-stage' "$WORK/shim.err"
    grep -qx 'thread: pinshim-recycle' "$WORK/shim.err"
    grep -qx 'thread: pinshim-log' "$WORK/shim.err"
    # no other thread but the fake driver's own (named as the real driver names its threads)
    ! grep '^thread: ' "$WORK/shim.err" | grep -vE '^thread: (pinshim-(stage|pool|recycle|log)|fakecuda-strm)$' || false
    ! grep '^thread: ' "$WORK/plain.err" | grep -vx 'thread: fakecuda-strm' || false
}

@test "the shim's thread starter names a thread before its main runs, blocks every signal in it, and joins when asked" {
    run "$T/thread_start_check"
    echo "$output"
    [ "$status" = 0 ]
    [ "$output" = "thread_start: as specified" ]
}

@test "stage_d2h_first_bytes: a staged D2H's first DMA is that short, the rest whole chunks; 0: whole chunks from the start" {
    # a 64 MiB D2H in 16 MiB chunks: 2M + 16M + 16M + 16M + 14M, or 4 x 16M (the fake counts the DMAs)
    for first in 2M 0; do
        staged freshdst PINSHIM_STAGE_D2H_FIRST_BYTES=$first PINSHIM_LINK_PROBE=off FAKECUDA_CALL_LOG="$WORK/calls.$first"
        diff "$WORK/plain.out" "$WORK/shim.out"
        [ "$(staging_field 'st["staged_copies"]')" = 2 ] # the H2D that fills the device, and the D2H
    done
    # the plain run logs its own calls first: the shim's run adds its DMAs to the same file
    dmas() { awk '$1 == "cuMemcpyDtoHAsync_v2" { n += $2 } END { print n + 0 }' "$1"; }
    [ "$(dmas "$WORK/calls.2M")" = 5 ]
    [ "$(dmas "$WORK/calls.0")" = 4 ]
}

@test "stage_hugepages = on: a D2H that writes only part of an allocation gets no huge-page advice" {
    need_thp_madvise
    staged freshdst_part PINSHIM_STAGE_HUGEPAGES=on PINSHIM_PIN_ON_REUSE=on
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -qx 'huge: 0 kB' "$WORK/shim.err"
    [ "$(staging_field 'st["hugepage_copies"]')" = 0 ]
}

@test "a copy whose own stream's queued DMAs hold the pool waits for them instead of growing it" {
    # slabs of 8 chunks, a cap of 4 slabs, a slow link: each 16-chunk H2D fills chunks faster than
    # its DMAs drain them, so the chunks not in use are all queued on its own stream (a fresh 1 GiB
    # PyTorch tensor .to("cuda") grew three 128 MiB slabs so, with at most four chunks in use)
    staged h2d_run PINSHIM_STAGE_MIN_BYTES=64K PINSHIM_STAGE_D2H_MIN_BYTES=1G PINSHIM_STAGE_CHUNK_BYTES=256K \
        PINSHIM_POOL_SLAB_BYTES=2M PINSHIM_POOL_MAX_BYTES=8M FAKECUDA_GBPS=1 PINSHIM_LINK_PROBE=off
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" = 6 ]
    [ "$(staging_field 'st["pool_slabs"]')" = 1 ]
}

@test "a copy that finds the pool's chunks queued on another stream's DMAs grows the pool: that is not its own queue" {
    # the settings of the test above, one thread's async copies on two streams in turn: each copy
    # starts while the other stream's DMAs still hold the chunks, so it asks for another slab
    staged h2d_run H2D_RUN_STREAMS=2 PINSHIM_STAGE_MIN_BYTES=64K PINSHIM_STAGE_D2H_MIN_BYTES=1G \
        PINSHIM_STAGE_CHUNK_BYTES=256K PINSHIM_POOL_SLAB_BYTES=2M PINSHIM_POOL_MAX_BYTES=8M FAKECUDA_GBPS=1 \
        PINSHIM_LINK_PROBE=off
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["staged_copies"]')" = 6 ]
    [ "$(staging_field 'st["pool_slabs"] >= 2')" = True ]
}

@test "one thread's large copies grow the pool past its first slab: a copy that wants more chunks than are free asks for another slab" {
    # slabs of 2 chunks, a cap of 4; D2H copies of 4 chunks. Each chunk comes back idle (its DMA
    # waited for), so no copy ever finds the pool empty, and each would get one chunk at a time
    # (the last free one stays for other copies) unless that refusal grows the pool
    staged d2h_run $SMALL_POLICY PINSHIM_LINK_PROBE=off
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ "$(staging_field 'st["pool_slabs"]')" = 2 ]
    [ "$(staging_field 'st["pool_high_water_bytes"] > 512 * 1024')" = True ]
}
