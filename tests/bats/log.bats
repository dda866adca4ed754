#!/usr/bin/env bats
# The per-transfer log (PINSHIM_LOG, JSON Lines): header first, one record per transfer, summary
# record last; complete lines at exit, fork and SIGTERM; bounded memory; call sites; device timing.
load common

# check_log FILE: every line is one JSON object; each process's section starts with a header and
# ends with its summary; seq numbers are unique within a section. Prints "transfers N", "dropped N"
# and "summary_h2d N" (copies counted by the summary; the last section's), "sections N".
check_log() {
    python3 - "$1" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", "the file does not end with a complete line"
recs = [json.loads(l) for l in lines[:-1]]
assert recs and recs[0]["type"] == "header", recs[:1]
assert recs[-1]["type"] == "summary", recs[-1]["type"]
sections, transfers, seqs, cur = 0, 0, set(), None
for r in recs:
    t = r["type"]
    if t == "header":
        assert cur is None, "header inside a section"
        for k in ("format", "tool", "version", "pid", "ppid", "host", "rank", "cmdline", "start_wall_ns",
                  "start_mono_ns", "policy"):
            assert k in r, k
        assert r["format"] == 1 and r["tool"] == "pinshim" and isinstance(r["cmdline"], list)
        assert r["policy"]["log_level"] in ("summary", "transfers")
        cur = r["pid"]
        sections += 1
        seqs = set()
    elif t == "driver":
        assert isinstance(r["driver_version"], int) and isinstance(r["devices"], list)
    elif t == "module":
        assert isinstance(r["name"], str) and isinstance(r["path"], str) and r["path"], r
        assert r["build_id"] is None or all(c in "0123456789abcdef" for c in r["build_id"]), r
        assert isinstance(r["base_vaddr"], int) and r["framework"] in ("cuda", "pytorch", "cupy", "jax"), r
    elif t == "transfer":
        for k in ("seq", "t_ns", "host_ns", "entry", "dir", "bytes", "src_kind", "dst_kind", "host_kind",
                  "async", "stream", "device", "action", "tid", "site", "func"):
            assert k in r, k
        assert r["seq"] not in seqs, ("seq repeated", r["seq"])
        seqs.add(r["seq"])
        transfers += 1
    elif t == "summary":
        assert r["pid"] == cur, (r["pid"], cur)
        for k in ("transfers", "failed_copies", "syncs", "entry_points", "dropped", "sites", "advice"):
            assert k in r, k
        for a in r["advice"]:
            assert set(a) == {"rule", "message", "est_saving_ns"}, a
        h2d = sum(x["count"] for x in r["transfers"] if x["dir"] == "h2d")
        dropped = r["dropped"]
        cur = None
    else:
        raise AssertionError("unknown record type " + t)
print("transfers", transfers)
print("dropped", dropped)
print("summary_h2d", h2d)
print("sections", sections)
PY
}

# field NAME: a value check_log printed
field() { sed -n "s/^$1 //p" "$WORK/check"; }

@test "log: header, driver record, one record per copy, summary record last; nothing on stderr" {
    PINSHIM_LOG="$WORK/run.jsonl" run_app shim shim "$T/logprog" copies 25
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    [ ! -s "$WORK/shim.err" ]
    check_log "$WORK/run.jsonl" >"$WORK/check"
    [ "$(field transfers)" = 50 ]
    [ "$(field summary_h2d)" = 25 ]
    [ "$(field dropped)" = 0 ]
    [ "$(sed -n 2p "$WORK/run.jsonl" | grep -c '"type":"driver"')" = 1 ]
    [ "$(grep -c '"type":"transfer".*"dir":"d2h"' "$WORK/run.jsonl")" = 25 ]
    grep '^{' "$WORK/run.jsonl" | tail -n 1 | grep -q '^{"type":"summary","pid":'
}

@test "log: an existing file is appended to, each run its own header..summary section" {
    PINSHIM_LOG="$WORK/run.jsonl" run_app a shim "$T/logprog" copies 3
    PINSHIM_LOG="$WORK/run.jsonl" run_app b shim "$T/logprog" copies 4
    check_log "$WORK/run.jsonl" >"$WORK/check"
    [ "$(field sections)" = 2 ]
    [ "$(field transfers)" = 14 ]
}

@test "log path: %p, %h, %r and %% expand, nested folders are created" {
    RANK=5 PINSHIM_LOG="$WORK/a/b/c/%h-r%r-%p-100%%.jsonl" run_app shim shim "$T/logprog" copies 2
    show shim
    f=$(ls "$WORK"/a/b/c/*.jsonl)
    [ "$(basename "$f")" = "$(hostname)-r5-$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$f" | head -n 1)-100%.jsonl" ]
    check_log "$f" >"$WORK/check"
}

@test "log path unwritable: a clear warning, the summary and advice on stderr, the program unaffected" {
    run_app plain noshim "$T/logprog" copies 5
    touch "$WORK/file"
    PINSHIM_LOG="$WORK/file/sub/x.jsonl" run_app shim shim "$T/logprog" copies 5
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    diff "$WORK/plain.out" "$WORK/shim.out"
    grep -q "warning: PINSHIM_LOG: cannot create folder for '$WORK/file/sub/x.jsonl'" "$WORK/shim.err"
    grep -q "transfer summary" "$WORK/shim.err"
    grep -Eq '^==[0-9]+== advice: ' "$WORK/shim.err"
}

@test "fork: parent and child each write their own complete file (%p expanded in the child)" {
    PINSHIM_LOG="$WORK/f-%p.jsonl" run_app shim shim "$T/logprog" fork
    show shim
    [ "$(cat "$WORK/shim.rc")" = 0 ]
    parent=$(sed -n 's/^parent \([0-9]*\) .*/\1/p' "$WORK/shim.out")
    child=$(sed -n 's/^child \([0-9]*\) .*/\1/p' "$WORK/shim.out")
    check_log "$WORK/f-$parent.jsonl" >"$WORK/check"
    [ "$(field transfers)" = 4 ] && [ "$(field sections)" = 1 ]
    check_log "$WORK/f-$child.jsonl" >"$WORK/check"
    [ "$(field transfers)" = 2 ] && [ "$(field sections)" = 1 ]
    grep -q "\"type\":\"header\".*\"pid\":$child,\"ppid\":$parent," "$WORK/f-$child.jsonl"
    ! grep -q '"type":"driver"' "$WORK/f-$child.jsonl"   # no driver calls from the shim in a child
}

@test "many threads: every transfer recorded exactly once (seq unique, count = copies made)" {
    PINSHIM_LOG="$WORK/t.jsonl" run_app shim shim "$T/logprog" threads 8 4000
    show shim
    grep -q '^made 32000$' "$WORK/shim.out"
    check_log "$WORK/t.jsonl" >"$WORK/check"
    [ "$(field transfers)" = 32000 ]
    [ "$(field summary_h2d)" = 32000 ]
    [ "$(field dropped)" = 0 ]
    [ "$(grep -o '"tid":[0-9]*' "$WORK/t.jsonl" | sort -u | wc -l)" = 8 ]
}

@test "SIGTERM mid-run: every line complete JSON, summary last, the process still dies of SIGTERM (143)" {
    LD_LIBRARY_PATH="$FAKE" LD_PRELOAD="$SHIM" PINSHIM_LOG="$WORK/k.jsonl" "$T/logprog" forever >"$WORK/k.out" 2>"$WORK/k.err" &
    pid=$!
    for _ in $(seq 200); do grep -q ready "$WORK/k.out" && break; sleep 0.05; done
    grep -q ready "$WORK/k.out"
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    cat "$WORK/k.err"
    [ "$rc" = 143 ]
    check_log "$WORK/k.jsonl" >"$WORK/check"
    [ "$(field transfers)" -gt 200 ]
    # every copy the summary counted has a record, or is counted as dropped
    [ "$(( $(field transfers) + $(field dropped) ))" -ge "$(field summary_h2d)" ]
}

@test "log_level = summary: the header, the call sites' module records and the summary record only" {
    PINSHIM_LOG="$WORK/s.jsonl" PINSHIM_LOG_LEVEL=summary run_app shim shim "$T/logprog" copies 10
    show shim
    check_log "$WORK/s.jsonl" >"$WORK/check"
    [ "$(field transfers)" = 0 ]
    [ "$(field summary_h2d)" = 10 ]
    [ "$(grep -vc '"type":"module"' "$WORK/s.jsonl")" = 2 ]
    grep -q '"type":"module","name":"logprog","path":"'"$T"'/logprog","build_id":"[0-9a-f]\{40\}"' "$WORK/s.jsonl"
}

# sampled_400 KIND LOGPROG_ARGS...: runs logprog without a log; the summary's rows of host kind KIND
# are 400 copies each way, their host times multiples of 16: about 25 calls of each 400 timed (none:
# chance 6e-12), each counted 16 times (timed on every call, a row would be one by chance 1 in 16);
# both directions timed although they alternate (a fixed stride of 16 would time only one).
sampled_400() {
    local kind=$1
    shift
    PINSHIM_SUMMARY=json run_app "s_$kind" shim "$T/logprog" "$@"
    show "s_$kind"
    grep '^{' "$WORK/s_$kind.err" >"$WORK/s_$kind.json"
    python3 - "$WORK/s_$kind.json" "$kind" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
rows = [r for r in s["transfers"] if r["host_kind"] == sys.argv[2]]
assert sorted((r["dir"], r["count"]) for r in rows) == [("d2h", 400), ("h2d", 400)], rows
assert all(r["host_ns"] > 0 and r["host_ns"] % 16 == 0 for r in rows), rows
PY
}

@test "async pinned copies and small copies: a logged one is timed on every call; otherwise one call in 16, counted 16-fold" {
    PINSHIM_LOG="$WORK/p.jsonl" run_app shim shim "$T/logprog" pinned 32 # H2D and D2H in turn
    show shim
    python3 - "$WORK/p.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
pinned = [r for r in recs if r["type"] == "transfer" and r["host_kind"] == "pinned" and r["async"]]
assert len(pinned) == 64, len(pinned)
assert all(r["host_ns"] > 0 for r in pinned), [r["host_ns"] for r in pinned]
PY
    sampled_400 pinned pinned 400
    PINSHIM_PIN_ON_REUSE=off sampled_400 pageable copies 400 # 4 KiB pageable, sync: too small to stage
}

@test "log_min_bytes: smaller transfers get no record but are still counted" {
    PINSHIM_LOG="$WORK/m.jsonl" PINSHIM_LOG_MIN_BYTES=64K run_app shim shim "$T/logprog" sizes
    show shim
    check_log "$WORK/m.jsonl" >"$WORK/check"
    [ "$(field transfers)" = 2 ]
    [ "$(field summary_h2d)" = 3 ]
    ! grep -q '"type":"transfer".*"bytes":1024,' "$WORK/m.jsonl"
}

@test "log_buffer_bytes: a full buffer drops records and counts them; records + dropped = copies" {
    PINSHIM_LOG="$WORK/d.jsonl" PINSHIM_LOG_BUFFER_BYTES=1 run_app none shim "$T/logprog" copies 20
    check_log "$WORK/d.jsonl" >"$WORK/check"
    [ "$(field transfers)" = 0 ]
    [ "$(field dropped)" = 40 ]
    PINSHIM_LOG="$WORK/e.jsonl" PINSHIM_LOG_BUFFER_BYTES=2K run_app some shim "$T/logprog" threads 4 2000
    check_log "$WORK/e.jsonl" >"$WORK/check"
    cat "$WORK/check"
    [ "$(( $(field transfers) + $(field dropped) ))" = 8000 ]
}

@test "call site: the record and the summary name the program's function, module+offset inside it" {
    PINSHIM_LOG="$WORK/c.jsonl" run_app shim shim "$T/logprog" copies 5
    show shim
    grep -q '"type":"transfer".*"dir":"h2d".*"site":"logprog+0x[0-9a-f]*","func":"logprog_copy_site"' "$WORK/c.jsonl"
    off=$(grep -o '"site":"logprog+0x[0-9a-f]*","func":"logprog_copy_site"' "$WORK/c.jsonl" | head -n 1 | sed 's/.*+0x\([0-9a-f]*\)".*/\1/')
    read -r start size < <(nm -S "$T/logprog" | awk '$4 == "logprog_copy_site" { print $1, $2 }')
    [ $(( 16#$off >= 16#$start && 16#$off < 16#$start + 16#$size )) = 1 ]
    tail -n 1 "$WORK/c.jsonl" | grep -q '"sites":\[.*{"site":"logprog+0x[0-9a-f]*","func":"logprog_copy_site","count":5,'
    # the D2H copy is made in main
    grep -q '"dir":"d2h".*"func":"main"' "$WORK/c.jsonl"
}

@test "device timing: sampled copies carry device_ns (paced by FAKECUDA_GBPS); off means none" {
    # The pool's first slab (prewarm = context) is faulted in by the staging threads while these
    # copies run; on a 2-core machine that can hold the fake driver's stream thread (a CPU thread,
    # where a real DMA engine is not) for 70-140 ms, about one run in 20. Pinned copies never use
    # the pool: leave it out here.
    FAKECUDA_GBPS=20 PINSHIM_LOG="$WORK/g.jsonl" PINSHIM_DEVICE_TIMING=on PINSHIM_DEVICE_TIMING_EVERY=1 \
        PINSHIM_POOL_PREWARM=off run_app shim shim "$T/logprog" pinned 8
    show shim
    check_log "$WORK/g.jsonl" >"$WORK/check"
    [ "$(grep -c '"device_ns":' "$WORK/g.jsonl")" = 16 ]
    python3 - "$WORK/g.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ns = [r["device_ns"] for r in recs if r["type"] == "transfer"]
# 1 MiB at 20 GB/s is 52 us of DMA: the device time is at least that, and not absurd
assert all(40000 < n < 50000000 for n in ns), ns
PY
    FAKECUDA_GBPS=20 PINSHIM_LOG="$WORK/h.jsonl" PINSHIM_DEVICE_TIMING=off run_app off shim "$T/logprog" pinned 2
    ! grep -q device_ns "$WORK/h.jsonl"
}

@test "advice: async-pageable and sync-pageable rules with estimated savings, text after the table" {
    export PINSHIM_PIN_ON_REUSE=off # keep the 10 copies of one buffer pageable
    PINSHIM_LOG="$WORK/a.jsonl" run_app shim shim "$T/logprog" copies 10
    python3 - "$WORK/a.jsonl" <<'PY'
import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
rules = [a["rule"] for a in s["advice"]]
assert "sync_pageable" in rules and "site" in rules, rules
sync = [a for a in s["advice"] if a["rule"] == "sync_pageable"][0]
assert sync["est_saving_ns"] > 0 and "measured from" in sync["message"] and "default" in sync["message"], sync
PY
    run_app text shim "$T/logprog" copies 10
    show text
    tail -n 2 "$WORK/text.err" | grep -Eq '^==[0-9]+== advice: 20 sync copies used pageable host memory'
}
