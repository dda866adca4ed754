#!/usr/bin/env bats
# The exit summary: text table on stderr, JSON on request, into PINSHIM_LOG's file when set.
load common

@test "text summary on stderr names pid and program, with one row per direction/kind/bucket" {
    PINSHIM_PIN_ON_REUSE=off run_app shim shim "$T/demo" # the demo reuses its buffers: keep them pageable
    show shim
    pid_line=$(grep 'pinshim 0.1.0: transfer summary for' "$WORK/shim.err")
    [[ "$pid_line" =~ ^==([0-9]+)==.*demo\ \(pid\ ([0-9]+)\)$ ]]
    [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
    grep -Eq '^==[0-9]+== dir +host kind +size +action +count +bytes +host time +host GB/s$' "$WORK/shim.err"
    grep -Eq '^==[0-9]+== h2d +pageable +64.0 KiB-256.0 KiB +pass +8 +512.0 KiB' "$WORK/shim.err"
    grep -Eq '^==[0-9]+== d2h +pinned +16.0 MiB-64.0 MiB +pass +8 +128.0 MiB' "$WORK/shim.err"
    grep -Eq '^==[0-9]+== total +160 ' "$WORK/shim.err"
    grep -q 'sync points: cuStreamSynchronize 40 ' "$WORK/shim.err"
}

@test "JSON summary: one valid object with the documented fields (the build's commit too), buckets powers of 4 from 4 KiB" {
    PINSHIM_SUMMARY=json run_app shim shim "$T/demo"
    show shim
    grep '^{' "$WORK/shim.err" >"$WORK/s.json"
    head=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    python3 - "$WORK/s.json" "$head" <<'PY'
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
s = json.loads(lines[0])
assert isinstance(s["pid"], int) and s["program"].endswith("demo")
# the commit the library was built from: this checkout's (make test builds first), maybe -dirty
assert re.fullmatch(re.escape(sys.argv[2]) + r"(-dirty)?", s["build"]), (s["build"], sys.argv[2])
for row in s["transfers"]:
    assert set(["dir", "host_kind", "bucket_min", "count", "bytes", "host_ns", "action"]) <= set(row), row
    assert row["dir"] in ("h2d", "d2h", "d2d", "h2h", "peer")
    assert row["host_kind"] in ("pageable", "pinned", "registered", "managed", "device", "unknown")
    b = row["bucket_min"]
    assert b == 0 or (b >= 4096 and (b // 4096) & ((b // 4096) - 1) == 0 and (b.bit_length() - 13) % 2 == 0), b
    assert b <= row["bytes"] // row["count"] < max(4096, b * 4), row
h2d = sum(r["count"] for r in s["transfers"] if r["dir"] == "h2d")
assert h2d == 80, h2d  # 5 sizes x 8 rounds x (pageable + pinned)
PY
}

# kindprog MODE...: runs it without and with the shim (call log in $WORK/calls), same output.
# Without the pool's prewarm: its slab, mapped by a background thread when the context is retained,
# took the address the remap, pinned and tracked scenarios unmap and map again at once (1 run in 60).
kind_run() {
    run_app plain noshim "$T/kindprog" "$@"
    rm -f "$WORK/calls"
    PINSHIM_POOL_PREWARM=off PINSHIM_SUMMARY=json FAKECUDA_CALL_LOG="$WORK/calls" run_app shim shim "$T/kindprog" "$@"
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep '^{' "$WORK/shim.err" >"$WORK/s.json"
}

pointer_queries() { awk '$1 == "cuPointerGetAttributes" { n = $2 } END { print n + 0 }' "$WORK/calls"; }

# h2d_by FIELD: kind_run's H2D copy counts by that field of the summary's rows, a dict sorted by key.
h2d_by() {
    python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
n = {}
for r in s["transfers"]:
    if r["dir"] == "h2d":
        n[r[sys.argv[2]]] = n.get(r[sys.argv[2]], 0) + r["count"]
print(dict(sorted(n.items())))' "$WORK/s.json" "$1"
}

@test "small copies: the driver is asked once per pageable page, again once the memory is registered, unregistered or unmapped; a partly registered page every time" {
    kind_run same 200 # 4 KB copies from one page, and one back into a stack buffer
    [ "$(pointer_queries)" -le 3 ]
    kind_run large 200 # 128 KiB copies (a size staging may take): asked every time
    [ "$(pointer_queries)" -ge 200 ]
    kind_run register # pageable (3 copies), registered by the program, unregistered: the counts follow
    [ "$(h2d_by host_kind)" = "{'pageable': 4, 'registered': 1}" ]
    kind_run subpage # a page partly registered: each copy as the driver answers for its first byte
    [ "$(h2d_by host_kind)" = "{'pageable': 2, 'registered': 1}" ]
    kind_run remap # a page copied into, unmapped, mapped again at its address, copied into
    [ "$(pointer_queries)" -eq 3 ]  # the source, the page, the page again after the unmapping
}

@test "small copies: a page inside pinned memory, and a page no tracked allocation holds, are remembered only until the memory changes" {
    kind_run pinned # pinned, freed, mapped again as plain memory: the last copy is pageable
    [ "$(h2d_by host_kind)" = "{'pageable': 1, 'pinned': 3}" ]
    kind_run tracked # an untracked page, then (unmapped unseen) a tracked allocation at its address: pin-on-reuse sees it
    [ "$(h2d_by action)" = "{'pass': 5, 'registered': 2}" ]
}

@test "small copies: pages known plain say nothing of a registered page or a tracked one beside them" {
    PINSHIM_TRACK_MIN_BYTES=8K kind_run neighbours # page 9 registered, pages 13-14 tracked, plain pages around them
    [ "$(h2d_by host_kind)" = "{'pageable': 36, 'registered': 4}" ]
    [ "$(h2d_by action)" = "{'pass': 38, 'registered': 2}" ]
}

@test "larger copies from an allocation the malloc hooks saw: pageable without asking the driver, registered once the program registers it" {
    PINSHIM_REGISTER_AFTER=1000 kind_run heap 50 # no registration of the cache's in the way
    [ "$(pointer_queries)" -le 1 ] # at most the small copy back into a stack buffer
    [ "$(h2d_by host_kind)" = "{'pageable': 51, 'registered': 1}" ]
    PINSHIM_PIN_ON_REUSE=off kind_run heap 50 # nothing tracked: the driver is asked for each
    [ "$(pointer_queries)" -ge 52 ]
    [ "$(h2d_by host_kind)" = "{'pageable': 51, 'registered': 1}" ]
}

@test "host times are nanoseconds: a stream sync that waits for 4 copies of 25 ms each reports 90 ms to the run's length" {
    t0=$(date +%s%N)
    FAKECUDA_LATENCY_US=25000 PINSHIM_SUMMARY=json run_app shim shim "$T/logprog" pinned 2
    t1=$(date +%s%N)
    show shim
    grep '^{' "$WORK/shim.err" >"$WORK/s.json"
    python3 - "$WORK/s.json" "$((t1 - t0))" <<'PY'
import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[0])
wall = int(sys.argv[2])
sync = [r for r in s["syncs"] if r["call"] == "cuStreamSynchronize"]
assert len(sync) == 1 and sync[0]["count"] == 1, s["syncs"]
ns = sync[0]["host_ns"]
# the copies queued on the stream take at least 4 x 25 ms from their enqueueing, which took
# microseconds; the sync cannot have lasted longer than the whole process
assert 90e6 <= ns <= wall, (ns, wall)
PY
}

@test "PINSHIM_LOG: %p and %% expand, parent folders are created, the file is appended to" {
    PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/logs/a/run-%p-100%%.json" run_app shim shim "$T/demo"
    show shim
    [ ! -s "$WORK/shim.err" ]
    f=$(ls "$WORK"/logs/a/run-*-100%.json)
    grep -q "\"pid\":$(basename "$f" | sed -E 's/run-([0-9]+)-.*/\1/')," "$f"
    PINSHIM_SUMMARY=json PINSHIM_LOG="${f//%/%%}" run_app shim2 shim "$T/demo"   # same file, % escaped
    [ "$(grep -c '^{"type":"header"' "$f")" = 2 ]    # the file holds JSON Lines: header .. summary per run
    [ "$(grep -c '^{"type":"summary"' "$f")" = 2 ]
    grep '^{' "$f" | tail -n 1 | grep -q '^{"type":"summary","pid":'   # the summary record is the last line
}

@test "PINSHIM_LOG: %r takes the rank from the first of RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK" {
    OMPI_COMM_WORLD_RANK=3 SLURM_PROCID=7 PINSHIM_LOG="$WORK/r%r.txt" run_app shim shim "$T/demo"
    [ -s "$WORK/r3.txt" ]
    PINSHIM_LOG="$WORK/r%r.txt" run_app shim shim env -u RANK -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID -u PMI_RANK "$T/demo"
    [ -s "$WORK/rna.txt" ]
}

@test "an unwritable log path: a clear warning, the summary on stderr, the program unaffected" {
    run_app plain noshim "$T/demo"
    touch "$WORK/file"
    PINSHIM_LOG="$WORK/file/sub/x.log" run_app shim shim "$T/demo"
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -q "warning: PINSHIM_LOG: cannot create folder for '$WORK/file/sub/x.log'" "$WORK/shim.err"
    grep -q "transfer summary" "$WORK/shim.err"
}

@test "a symlink planted at the log path is not followed" {
    ln -s "$WORK/target" "$WORK/link.log"
    PINSHIM_LOG="$WORK/link.log" run_app shim shim "$T/demo"
    [ ! -e "$WORK/target" ]
    grep -q "cannot open '$WORK/link.log' for appending" "$WORK/shim.err"
}

@test "summary = none prints nothing; copies still pass through" {
    run_app plain noshim "$T/demo"
    PINSHIM_SUMMARY=none run_app shim shim "$T/demo"
    diff "$WORK/plain.out" "$WORK/shim.out"
    [ ! -s "$WORK/shim.err" ]
}

@test "fork: the child (no CUDA) prints no summary; the parent's counts are its own" {
    PINSHIM_SUMMARY=json run_app shim shim "$T/forkprog"
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    grep -q '^child computed' "$WORK/shim.out"
    [ "$(grep -c '^{' "$WORK/shim.err")" = 1 ]
    parent=$(sed -n 's/^parent \([0-9]*\) child exit 0$/\1/p' "$WORK/shim.out")
    grep -q "^{\"pid\":$parent," "$WORK/shim.err"
    grep '^{' "$WORK/shim.err" >"$WORK/s.json"
    printf 'expect h2d pageable 1\nexpect d2h pageable 1\n' >"$WORK/expect"
    python3 "$ROOT/tests/helpers/summary_check.py" "$WORK/s.json" "$WORK/expect"
}

# counts NAME: the run's summary (stderr, or its log when there is one) without its times, as one
# sorted JSON line: what was counted, whichever path of the shim counted it.
counts() {
    local src="$WORK/$1.err"
    ls "$WORK"/"$1"-*.log >/dev/null 2>&1 && src=$(ls "$WORK"/"$1"-*.log)
    python3 - "$src" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
s = [r for r in s if r.get("type", "summary") == "summary"][-1]
transfers = sorted(tuple(sorted((k, v) for k, v in r.items() if k not in ("host_ns", "gbps"))) for r in s["transfers"])
print(json.dumps({"transfers": transfers, "failed": s["failed_copies"], "entry_points": s["entry_points"],
                  "syncs": sorted((r["call"], r["count"]) for r in s["syncs"]),
                  "staged": s["staging"]["staged_copies"], "unstaged": s["staging"]["unstaged"]}, sort_keys=True))
PY
}

@test "copies the shim only counts (pinned memory, small pageable ones) are counted as when it follows every copy" {
    # With a log open every copy takes the whole path (call sites are gathered); without one, copies
    # of pinned memory and small pageable copies are only counted. The counts must not differ.
    # A staged copy made while the pool's first slab is still being made in the background passes
    # through ("pool being allocated"), in one run and not the other: the copy makes it here.
    export PINSHIM_POOL_GROW_INLINE=on
    for prog in "routes getproc" "kindprog same 50" "kindprog pinned" "kindprog register" "logprog pinned 4"; do
        rm -f "$WORK"/full-*.log
        PINSHIM_SUMMARY=json run_app counted shim $T/$prog
        PINSHIM_SUMMARY=json PINSHIM_LOG="$WORK/full-%p.log" PINSHIM_LOG_LEVEL=summary run_app full shim $T/$prog
        show counted
        [ "$(cat "$WORK/counted.rc")" = 0 ] && [ "$(cat "$WORK/full.rc")" = 0 ]
        diff "$WORK/counted.out" "$WORK/full.out"
        counts counted >"$WORK/counted.json"
        counts full >"$WORK/full.json"
        diff "$WORK/counted.json" "$WORK/full.json"
    done
}

# sync_run NAME ARGS...: syncprog without and with the shim (JSON summary, no prewarm: its slab
# would hold the fake's lock while the first waits are timed), same output.
sync_run() {
    local name="$1"
    shift
    run_app "$name.plain" noshim "$T/syncprog" "$@"
    PINSHIM_POOL_PREWARM=off PINSHIM_SUMMARY=json run_app "$name" shim "$T/syncprog" "$@"
    show "$name"
    [ "$(cat "$WORK/$name.rc")" = 0 ]
    diff "$WORK/$name.plain.out" "$WORK/$name.out"
}

# timed NAME CALL: "count timed" of that sync call in the run's JSON summary.
timed() {
    python3 -c 'import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
print(*[(r["count"], r["timed"]) for r in s["syncs"] if r["call"] == sys.argv[2]][0])' "$WORK/$1.err" "$2"
}

@test "sampled timing: one call in 16 at the end of runs of 1 to 31 calls drawn at random, the thread's first untimed, weights adding up to the calls" {
    run "$T/sample_check"
    echo "$output"
    [ "$status" = 0 ]
    [[ "$output" == "sample: "*" timed as the model" ]]
}

@test "sample_seed: the calls timed at random are the ones a model of the draw picks from that seed, run after run" {
    for seed in 7 4294967302; do # the second's low 32 bits are 6: made odd, 7 again
        PINSHIM_SAMPLE_SEED=$seed PINSHIM_SUMMARY=json run_app shim shim "$T/logprog" events 3000
        show shim
        [ "$(cat "$WORK/shim.rc")" = 0 ]
        grep '^{' "$WORK/shim.err" >"$WORK/s-$seed.json"
    done
    PINSHIM_SAMPLE_SEED=123456789 PINSHIM_SUMMARY=json run_app shim shim "$T/logprog" events 3000
    grep '^{' "$WORK/shim.err" >"$WORK/s-123456789.json"
    python3 - "$WORK" <<'PY'
import json, sys
def model(seed, calls):
    """Timed calls of a thread making `calls` sampled calls in turn (record, query, ...): base/clock.h."""
    state, left, timed = (seed & 0xffffffff) | 1, 0, [0, 0]
    for i in range(calls):
        if left > 1:
            left -= 1
            continue
        first = left == 0
        state ^= (state << 13) & 0xffffffff
        state ^= state >> 17
        state ^= (state << 5) & 0xffffffff
        left = 1 + state % 31
        if not first:
            timed[i % 2] += 1
    return timed
for seed, expect in ((7, model(7, 6000)), (4294967302, model(7, 6000)), (123456789, model(123456789, 6000))):
    rows = {r["call"]: r for r in json.load(open("%s/s-%d.json" % (sys.argv[1], seed)))["syncs"]}
    got = [rows["cuEventRecord"]["timed"], rows["cuEventQuery"]["timed"]]
    print(seed, "timed (record, query):", got, "model:", expect)
    assert [rows["cuEventRecord"]["count"], rows["cuEventQuery"]["count"]] == [3000, 3000], rows
    assert got == expect, (seed, got, expect)
assert model(7, 6000) != model(123456789, 6000)  # the seeds choose differently
PY
}

@test "sync timing: a thread's long run of short waits is timed one call in 4, long waits every call, all of them with sync_timing = all" {
    export FAKECUDA_LATENCY_US=100
    sync_run short idle 20000
    read -r count n <<<"$(timed short cuStreamSynchronize)"
    echo "short waits: $n of $count timed"
    # the first 256 and one in 4 after them (about 5190); each wait that a busy machine stretched
    # past 20 us times up to 256 more
    [ "$count" = 20000 ] && [ "$n" -ge 256 ] && [ "$n" -lt 10000 ]
    PINSHIM_SYNC_TIMING=all sync_run all idle 5000
    [ "$(timed all cuStreamSynchronize)" = "5000 5000" ]
    sync_run long busy 300 # each waits for a copy of at least 100 us
    [ "$(timed long cuCtxSynchronize)" = "300 300" ]
    # after the short waits, the first long one timed brings back timing every call
    sync_run both idle 300 busy 400
    read -r count n <<<"$(timed both cuCtxSynchronize)"
    echo "long waits after short ones: $n of $count timed"
    [ "$count" = 400 ] && [ "$n" -ge 300 ]
    # the text summary says when a time is an estimate
    PINSHIM_POOL_PREWARM=off run_app text shim "$T/syncprog" idle 5000
    grep -Eq 'sync points: cuStreamSynchronize 5000 \([0-9.]+ [mun]?s, from [0-9]+ timed\)' "$WORK/text.err"
    PINSHIM_SYNC_TIMING=all PINSHIM_POOL_PREWARM=off run_app text shim "$T/syncprog" idle 5000
    grep -Eq 'sync points: cuStreamSynchronize 5000 \([0-9.]+ [mun]?s\)$' "$WORK/text.err"
}
