#!/usr/bin/env bats
# The real-workload benchmark harness (tests/bench/workloads/run.py, make bench-workloads) without a
# GPU: stand-in workloads with known values (fake.py) for the statistics, checks and FAIL rows; the
# real workloads' skip path; the C loop against the fake driver; the make target never rebuilding the
# library. Timings are never judged here.
load common

RUN_PY="$ROOT/tests/bench/workloads/run.py"

# row WORKLOAD METRIC: the table line of that row (the table is printed last).
row() {
    grep -E "^$1 +$2 " "$WORK/out.txt" | tail -n 1
}

# harness ARGS...: runs run.py, output in $WORK/out.txt, exit status in $WORK/rc.
harness() {
    local rc=0
    python3 "$RUN_PY" "$@" >"$WORK/out.txt" 2>&1 || rc=$?
    echo "$rc" >"$WORK/rc"
    cat "$WORK/out.txt"
}

# fake_folder NAME UUID: one pair of fake_same (every side) into $WORK/NAME, as if run on an H100
# whose GPU UUID is UUID.
fake_folder() {
    harness --fake --only fake_same --pairs 1 --inprocess 0 --out "$WORK/$1"
    sed -i "s/no GPU seen by nvidia-smi/GPU 0: NVIDIA H100 80GB HBM3 (UUID: $2)/" "$WORK/$1/summary.json"
}

@test "workloads harness: medians, spreads, ratios and bound checks of each side, table last" {
    harness --fake --pairs 3 --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 1 ] # the stand-ins include a mismatch, a crash and a one-sided skip
    # fake_faster: no shim 10+p, shim 5+p, guard 6+p over pairs 1..3
    row fake_faster t | grep -F '12.0 (11.0-13.0)  7.00 (6.00-8.00)  1.71x   PASS  8.00 (7.00-9.00)   1.50x   PASS'
    row fake_faster t | grep -E '>1.00x +2.00x +same 9/9$'
    # fake_same: nothing to speed up, shim 2% slower: MISS against 0.99x; guard 1% faster: PASS
    row fake_same t | grep -E '102 \(101-103\) +104 \(103-105\) +0.98x +MISS +101 \(100-102\) +1.01x +PASS +>=0.99x'
    row fake_same 'ref ref' | grep -E '52.0 \(51.0-53.0\) +52.0 \(51.0-53.0\) +1.00x +PASS'
    # the ns row: difference shim - no shim against +100 ns
    row fake_ns loop | grep -E '7020 \(7010-7030\) +7070 \(7060-7080\) +\+50ns +PASS +7220 \(7210-7230\) +\+200ns +MISS +<=\+100ns'
    # the table comes after every progress line
    last_progress=$(grep -n '^\[' "$WORK/out.txt" | tail -n 1 | cut -d: -f1)
    table=$(grep -n '^workload ' "$WORK/out.txt" | tail -n 1 | cut -d: -f1)
    [ "$table" -gt "$last_progress" ]
    tail -n 1 "$WORK/out.txt" | grep -F "# written: $WORK/res/"
}

@test "workloads harness: a miss inside the pairs' spread reads WIDE, with its interval; a steady miss stays MISS; both read pair by pair" {
    harness --fake --only fake_noisy,fake_same,fake_ns --pairs 4 --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 0 ]
    # fake_noisy: pairs (100, 125) and (120, 101): medians 110 and 113, 0.97x, but half the pairs favour the shim
    row fake_noisy t | grep -E '110 \(100-120\) +113 \(101-125\) +0.97x +WIDE '
    grep -E '^note fake_noisy: t shim 0.97x, its 95% interval over the pairs 0\.[0-9]{2}x to 1\.[0-9]{2}x, reaches the bound >=0.99x: ' "$WORK/out.txt"
    # pair by pair (0.80x, 1.19x, 0.80x, 1.19x): the shim faster in half, their median 0.99x
    grep -E '^note fake_noisy: t shim 0.97x, .*; pair by pair, shim faster in 2 of 4, the pairs. median 0.99x$' "$WORK/out.txt"
    # every pair 2 % slower, or +200 ns: the interval stays below the bound, and no pair favours the side
    row fake_same t | grep -E ' 0.98x +MISS '
    row fake_ns loop | grep -E ' \+200ns +MISS '
    grep -Fx "note fake_same: t shim 0.98x misses the bound >=0.99x, its 95% interval over the pairs 0.98x to 0.98x; pair by pair, shim faster in 0 of 4, the pairs' median 0.98x" "$WORK/out.txt"
    grep -Fx "note fake_ns: loop shim+guard +200ns misses the bound <=+100ns, its 95% interval over the pairs +200ns to +200ns; pair by pair, shim+guard faster in 0 of 4, the pairs' median +200ns" "$WORK/out.txt"
    ! grep -E '^note fake_(same|ns|noisy): .*(ref|t shim\+guard|loop shim) ' "$WORK/out.txt" || false  # PASS rows: no note
    python3 - "$WORK/res/summary.json" <<'PY'
import json, sys
rows = {(w["workload"], r["key"]): r for w in json.load(open(sys.argv[1]))["workloads"] for r in w["rows"]}
low, high = rows[("fake_noisy", "t")]["shim"]["interval"]
assert low < 0.99 <= high, (low, high)
low, high = rows[("fake_same", "t")]["shim"]["interval"]
assert high < 0.99, (low, high)
assert rows[("fake_same", "t")]["guard"]["interval"] is None  # a PASS needs none
assert rows[("fake_noisy", "t")]["shim"]["pairs"] == {"n": 4, "faster": 2, "median": (100 / 125 + 120 / 101) / 2}
assert rows[("fake_same", "t")]["shim"]["pairs"]["faster"] == 0
assert rows[("fake_same", "t")]["guard"]["pairs"] is None
PY
}

@test "workloads harness: a row whose medians meet the bound but whose pairs' own median misses is not a PASS" {
    # fake_drift: every pair's shim run 3 % slower, but pair 4's no-shim run slow (300) and shim run
    # fast (105), so the medians (runs of different pairs) read the shim faster
    harness --fake --only fake_drift --pairs 9 --out "$WORK/res9"
    [ "$(cat "$WORK/rc")" = 0 ]
    row fake_drift t | grep -E '160 \(110-300\) +154 \(105-196\) +1.04x +MISS +160 \(110-300\) +1.00x +PASS '
    grep -Fx "note fake_drift: t shim 1.04x, but the pairs' own median 0.97x (shim faster in 1 of 9) misses the bound >=0.99x, its 95% interval over the pairs 0.97x to 0.97x" "$WORK/out.txt"
    # four pairs: the outlier is one of four, its interval reaches the bound: WIDE
    harness --fake --only fake_drift --pairs 4 --no-guard --out "$WORK/res4"
    row fake_drift t | grep -E ' 1.06x +WIDE '
    grep -E "^note fake_drift: t shim 1.06x, but the pairs' own median 0.97x \(shim faster in 1 of 4\), its 95% interval over the pairs 0.97x to 2.86x, reaches the bound >=0.99x: " "$WORK/out.txt"
    python3 - "$WORK/res9/summary.json" <<'PY'
import json, sys
row = [r for w in json.load(open(sys.argv[1]))["workloads"] for r in w["rows"] if r["key"] == "t"][0]
assert row["shim"]["missed"] == "pairs" and row["guard"]["missed"] is None, row
assert row["shim"]["pairs"]["faster"] == 1 and row["shim"]["pairs"]["n"] == 9, row
PY
}

@test "workloads harness: a result that differs, a crash and a skip on the shim side only are FAIL rows" {
    harness --fake --pairs 3 --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 1 ]
    row fake_mismatch t | grep -E 'FAIL$'
    grep -E '^FAIL fake_mismatch: results differ: shim\+guard runs 1, 2, 3: digest [0-9a-f]+, where no-shim run 1 gave [0-9a-f]+$' "$WORK/out.txt"
    row fake_crash t | grep -E 'FAIL$'
    grep -F 'FAIL fake_crash: shim run 2: exit status 3: RuntimeError: CUDA error: invalid argument' "$WORK/out.txt"
    grep -F 'FAIL fake_shimskip: skipped in 6 of 9 runs only (shim 1, shim+guard 1, shim 2, shim+guard 2, shim 3, shim+guard 3): fakeframework sees no GPU' "$WORK/out.txt"
    # skipped alike everywhere: one row, not a failure, not run again after pair 1
    grep -E '^fake_missing +- .*skipped: fakeframework not importable' "$WORK/out.txt"
    [ "$(grep -c '"workload": "fake_missing"' "$WORK/res/runs.jsonl")" = 3 ]
    grep -F "note fake_same: the guard reported 3 unsynchronized accesses" "$WORK/out.txt"
    tail -n 2 "$WORK/out.txt" | grep -E '^RESULT: FAIL: fake_mismatch, fake_crash, fake_shimskip; 7 workloads, 3 pairs'
}

@test "workloads harness: each side runs with its own environment; every run is in runs.jsonl; table.md" {
    harness --fake --pairs 2 --only 'fake_f*,fake_same' --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 0 ]
    python3 - "$WORK/res" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1] + "/runs.jsonl")]
assert len(runs) == 2 * 3 * 2, len(runs)
for r in runs:
    # fake.py tells its side from LD_PRELOAD and the guard settings it really got
    assert r["notes"]["side"] == r["side"], r
    assert r["status"] == "ok" and r["rc"] == 0, r
    assert (r["shim_summary"] is None) == (r["side"] == "noshim"), r
# pair 1 runs the sides in their listed order, pair 2 in reverse (no side always first)
order = {p: [r["side"] for r in runs if r["pair"] == p and r["workload"] == "fake_same"] for p in (1, 2)}
assert order == {1: ["noshim", "shim", "guard"], 2: ["guard", "shim", "noshim"]}, order
summary = json.load(open(sys.argv[1] + "/summary.json"))
assert [w["workload"] for w in summary["workloads"]] == ["fake_faster", "fake_same"], summary["workloads"]
PY
    grep -F '| fake_faster | fake time | ms | 11.5 (11.0-12.0) | 6.50 (6.00-7.00) | 1.77x | PASS |' "$WORK/res/table.md"
    grep -F '| fake_same | ref: fake pinned ceiling | ms |' "$WORK/res/table.md"
    grep -E '^RESULT: ok' "$WORK/res/table.txt"
}

@test "workloads harness: --no-guard drops the guard side and its columns" {
    harness --fake --pairs 2 --only fake_faster --no-guard
    [ "$(cat "$WORK/rc")" = 0 ]
    ! grep -F 'shim+guard' "$WORK/out.txt" || false
    row fake_faster t | grep -E '11.5 \(11.0-12.0\) +6.50 \(6.00-7.00\) +1.77x +PASS +>1.00x'
    tail -n 1 "$WORK/out.txt" | grep -E '^RESULT: ok: no result differed and no run failed; 1 workloads, 2 pairs'
}

# turns_of FOLDER PAIR: the turns of that pair's runs (fake.py notes when each began and ended),
# one line each, in the order they began: "SIDE BEGAN ENDED".
turns_of() {
    python3 - "$1/runs.jsonl" "$2" <<'PY'
import json, sys
turns = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["pair"] == int(sys.argv[2]):
        turns += [(began, ended, r["side"]) for began, ended in r["notes"].get("turns", [])]
for began, ended, side in sorted(turns):
    print(side, began, ended)
PY
}

@test "workloads harness: --lockstep runs a pair's sides at once, one turn at a time, the order reversed each round" {
    harness --fake --only fake_turns --pairs 2 --lockstep --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E '^# lockstep: on \(the sides of a pair at once, taking turns: fake_turns\)$' "$WORK/out.txt"
    turns_of "$WORK/res" 1 >"$WORK/t1"
    turns_of "$WORK/res" 2 >"$WORK/t2"
    cat "$WORK/t1" "$WORK/t2"
    # no two turns overlap: each ends before the next begins
    awk 'NR > 1 && $2 < ended { exit 1 } { ended = $3 }' "$WORK/t1"
    awk 'NR > 1 && $2 < ended { exit 1 } { ended = $3 }' "$WORK/t2"
    # three rounds; odd pairs run the sides as listed, even pairs reversed, and every other round reversed
    [ "$(cut -d' ' -f1 "$WORK/t1" | tr '\n' ' ')" = "noshim shim guard guard shim noshim noshim shim guard " ]
    [ "$(cut -d' ' -f1 "$WORK/t2" | tr '\n' ' ')" = "guard shim noshim noshim shim guard guard shim noshim " ]
    grep -c '"turns": 3' "$WORK/res/runs.jsonl" | grep -qx 6
    # without --lockstep (the default): one side after the other
    harness --fake --only fake_turns --pairs 1 --out "$WORK/seq"
    grep -E '^# lockstep: off$' "$WORK/out.txt"
    [ "$(turns_of "$WORK/seq" 1 | cut -d' ' -f1 | tr '\n' ' ')" = "noshim noshim noshim shim shim shim guard guard guard " ]
    # lockstep folders merge only with lockstep folders
    harness --merge "$WORK/res" "$WORK/seq"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: --merge: $WORK/seq: lockstep off, where $WORK/res had on" "$WORK/out.txt"
}

@test "workloads harness: in lockstep, a side that crashes or hangs in a turn fails alone; the other takes every turn" {
    SECONDS=0
    harness --fake --only fake_turncrash,fake_turnhang --pairs 1 --no-guard --timeout 2 --lockstep --out "$WORK/res"
    [ "$SECONDS" -lt 30 ] # the hanging side would sleep 60 s
    [ "$(cat "$WORK/rc")" = 1 ]
    grep -F 'FAIL fake_turncrash: shim run 1: exit status 3' "$WORK/out.txt"
    grep -F 'FAIL fake_turnhang: shim run 1: timed out after 2 s' "$WORK/out.txt"
    # the no-shim runs waited while the others ran (not counted in their time) and finished
    ! grep -F 'FAIL fake_turn' "$WORK/out.txt" | grep -F 'no shim' || false
    [ "$(turns_of "$WORK/res" 1 | grep -c '^noshim ')" = 6 ]
}

@test "workloads: wl.turn names a malformed BENCH_WL_TURNS, and runs on alone when the harness is gone" {
    cd "$ROOT/tests/bench/workloads"
    BENCH_WL_TURNS=5 run python3 -c 'import wl; wl.turn()'
    [ "$status" -ne 0 ]
    [[ "$output" == *"BENCH_WL_TURNS='5': expected two file descriptors, READ,WRITE (set by the harness: turns.py)"* ]]
    # the harness's end of both pipes closed: turn() returns at once, and again after that
    run python3 -c '
import os, wl
go_read, go_write = os.pipe()
end_read, end_write = os.pipe()
os.close(go_write)
os.close(end_read)
os.environ[wl.TURNS_ENV] = "%d,%d" % (go_read, end_write)
wl.turn(); wl.turn()
print("alone")'
    [ "$status" -eq 0 ]
    [ "$output" = alone ]
}


@test "workloads: wl.threads_cpu_split charges each thread's CPU time to the main thread, the shim's (pinshim-*) or the others, and names the busiest others; note_row_level records a span's, note_rows_level one span's for several rows" {
    cd "$ROOT/tests/bench/workloads"
    run python3 - <<'PY'
import threading, time, wl

release = threading.Event()

def spin(name, cpu_s, done):
    # each names itself, as the shim's threads and the driver's do, uses cpu_s of CPU time, and
    # stays alive until the second reading (an ended thread leaves /proc/self/task)
    with open("/proc/self/task/%d/comm" % threading.get_native_id(), "w") as f:
        f.write(name)
    while time.thread_time() < cpu_s:
        pass
    done.set()
    release.wait()

before = wl.thread_cpu_ns()
runs = [(name, cpu_s, threading.Event()) for name, cpu_s in (("pinshim-test", 0.03), ("busy", 0.06), ("idle", 0.0))]
threads = [threading.Thread(target=spin, args=a) for a in runs]
for t in threads:
    t.start()
for _, _, done in runs:
    done.wait()
split = wl.threads_cpu_split(before, wl.thread_cpu_ns())
release.set()
for t in threads:
    t.join()
print(split)
assert split["shim"] >= 30e6 and split["other"] >= 60e6, split
assert split["main"] < split["other"], split
assert split["top"][0][0] == "busy" and split["top"][0][1] >= 60, split
assert "pinshim-test" not in [name for name, _ in split["top"]], split
assert wl.control_us() > 0
# note_row_level: the same split over a span, with the row's wall time and the main thread's CPU
rep, start = wl.Report("t"), wl.cpu_reading()
while time.thread_time_ns() - start[1] < 20e6:
    pass
wl.note_row_level(rep, "k", start, [0.25, 0.5])
row = rep.notes["rows"]["k"]
print(row)
assert row["wall_ms"] == 750 and row["main_cpu_ms"] >= 20 and row["control_us"] > 0, row
assert row["shim_threads_ms"] == 0 and isinstance(row["busiest_others"], list), row
# note_rows_level: rows that took turns in one span share its level, each with its own wall time
wl.note_rows_level(rep, wl.cpu_reading(), {"h2d": [0.125], "d2h": [0.25, 0.25]})
h2d, d2h = rep.notes["rows"]["h2d"], rep.notes["rows"]["d2h"]
assert h2d["wall_ms"] == 125 and d2h["wall_ms"] == 500, (h2d, d2h)
assert dict(h2d, wall_ms=0) == dict(d2h, wall_ms=0) and h2d["control_us"] > 0, (h2d, d2h)
assert rep.notes["rows"]["k"] is row, rep.notes
PY
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "row_levels.py: each run's row beside its control and its threads' CPU, then each side's medians, at matched levels and by the row's own modes, and each side's processes at the slower level; a missing folder or a corrupt line is named" {
    mkdir -p "$WORK/r"
    rows() { # side pair value control other
        printf '{"workload": "torch_reuse", "side": "%s", "pair": %s, "metrics": [{"key": "4KB_pinned", "value": %s}, {"key": "4KB", "value": 1}], "notes": {"rows": {"4KB_pinned": {"control_us": %s, "wall_ms": 40, "main_cpu_ms": 39.5, "shim_threads_ms": 0, "other_threads_ms": %s, "busiest_others": [["pt_main_thread", 5.5]]}}}}\n' "$@"
    }
    { rows noshim 1 8 50 5.5; rows shim 1 12 75 30; rows noshim 2 10 50 1; rows shim 2 9 45 2
      echo '{"workload": "torch_item", "side": "shim", "pair": 1, "metrics": [], "notes": {}}'
      # two workloads with a row of one key (torch_train.py and --graph): their medians stay apart
      for w in torch_train=4 torch_graph=2; do
          printf '{"workload": "%s", "side": "shim", "pair": 1, "metrics": [{"key": "step", "value": %s}], "notes": {"rows": {"step": {"control_us": 100, "main_cpu_ms": 1, "shim_threads_ms": 0, "other_threads_ms": 0, "busiest_others": []}}}}\n' "${w%=*}" "${w#*=}"
      done; } >"$WORK/r/runs.jsonl"
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/r" --key 4KB_pinned
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '4KB_pinned' <<<"$output")" = 10 ] # 4 runs, 2 sides' medians, 2 halves, 2 modes; the 4KB row has no notes
    grep -E '^torch_reuse +r/1 +shim +4KB_pinned +12 +75.0 +0.16 +39.5 +0.0 +30.0  pt_main_thread 5.5$' <<<"$output"
    grep -E '^torch_reuse +4KB_pinned +noshim +runs +2  median 9  median over control 0.18$' <<<"$output"
    grep -E '^torch_reuse +4KB_pinned +shim +runs +2  median 10.5  median over control 0.18$' <<<"$output"
    ! grep -q step <<<"$output"
    # at matched levels: split at the pooled controls' median (50); the shim's run at 75 alone above it
    grep -E '^torch_reuse +4KB_pinned +faster \(control <= 50.0 us\): noshim 2 runs 9, shim 1 runs 9 \(1.00x\)$' <<<"$output"
    grep -E '^torch_reuse +4KB_pinned +slower \(control > 50.0 us\): noshim 0 runs -, shim 1 runs 12$' <<<"$output"
    # by its own modes: 8 9 | 10 12 (the widest step leaving two a side, 9 to 10)
    grep -E '^torch_reuse +4KB_pinned +fast mode \(<= 9.5, step 1.111x\): noshim 1 runs 8, shim 1 runs 9 \(0.89x\)$' <<<"$output"
    grep -E '^torch_reuse +4KB_pinned +slow mode \(> 9.5, step 1.111x\): noshim 1 runs 10, shim 1 runs 12 \(0.83x\)$' <<<"$output"
    # processes at the slower level: controls 50, 75, 50, 45 cut at their median (50), the shim's 75 above it;
    # torch_train's and torch_graph's one process each are no split
    grep -E '^torch_reuse +r +noshim 0 of 2, shim 1 of 2$' <<<"$output"
    grep -E "^all +noshim 0 of 2, shim 1 of 2 \(Fisher's exact test, shim against noshim: p 1.00\)$" <<<"$output"
    [ "$(grep -c ' of [0-9]' <<<"$output")" = 2 ]
    # a row at one of two speeds: the split falls between them, whatever the controls say
    modes_are() { # folder, then the torch_item row's fast and slow mode lines after "mode " (regexes)
        run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$1"
        echo "$output"
        [ "$status" -eq 0 ]
        grep -E "^torch_item +item +fast mode $2\$" <<<"$output"
        grep -E "^torch_item +item +slow mode $3\$" <<<"$output"
    }
    item_row() { # side pair value control
        printf '{"workload": "torch_item", "side": "%s", "pair": %s, "metrics": [{"key": "item", "value": %s}], "notes": {"rows": {"item": {"control_us": %s}}}}\n' "$@"
    }
    mkdir -p "$WORK/m"
    for run in noshim=100,50 noshim=102,90 noshim=101,60 noshim=150,55 noshim=151,95 \
               shim=150,52 shim=101,91 shim=152,58 shim=100,93 shim=151,54; do
        side=${run%=*} value=${run#*=}
        item_row "$side" 1 "${value%,*}" "${value#*,}"
    done >"$WORK/m/runs.jsonl"
    modes_are "$WORK/m" '\(<= 126, step 1.471x\): noshim 3 runs 101, shim 2 runs 100.5 \(1.00x\)' \
        '\(> 126, step 1.471x\): noshim 2 runs 150.5, shim 3 runs 151 \(1.00x\)'
    grep -E '^torch_item +m +noshim 3 of 5, shim 2 of 5$' <<<"$output" # controls cut at 59
    # each folder is cut at its own median: an instance at 50 us and one at 100 us split within
    # themselves (one cut for both would call every run of the second slower); and a shim whose
    # processes all met the slower level reads a small p
    mkdir -p "$WORK/l1" "$WORK/l2" "$WORK/l3"
    for run in noshim=50 noshim=51 shim=52 shim=53; do item_row "${run%=*}" 1 100 "${run#*=}"; done >"$WORK/l1/runs.jsonl"
    for run in noshim=103 noshim=102 shim=100 shim=101; do item_row "${run%=*}" 1 100 "${run#*=}"; done >"$WORK/l2/runs.jsonl"
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/l1" "$WORK/l2"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -E '^torch_item +l1 +noshim 0 of 2, shim 2 of 2$' <<<"$output"
    grep -E '^torch_item +l2 +noshim 2 of 2, shim 0 of 2$' <<<"$output"
    grep -E "^all +noshim 2 of 4, shim 2 of 4 \(Fisher's exact test, shim against noshim: p 1.00\)$" <<<"$output"
    for k in $(seq 0 7); do item_row noshim "$k" 100 $((50 + k)); item_row shim "$k" 100 $((90 + k)); done >"$WORK/l3/runs.jsonl"
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/l3"
    echo "$output"
    grep -E "^all +noshim 0 of 8, shim 8 of 8 \(Fisher's exact test, shim against noshim: p 0.00\)$" <<<"$output"
    # two speeds (20 runs near 100, 17 near 120) and three stray runs above them (160-200): a tenth
    # of the runs (4) must lie each side, so the cut falls between the speeds, not below the strays
    mkdir -p "$WORK/s"
    for k in $(seq 0 39); do
        if [ "$k" -lt 20 ]; then value=$((100 + k % 10)); elif [ "$k" -lt 37 ]; then value=$((120 + k % 5)); else value=$((160 + (k - 37) * 20)); fi
        item_row "$([ $((k % 2)) = 0 ] && echo noshim || echo shim)" "$k" "$value" 50
    done >"$WORK/s/runs.jsonl"
    modes_are "$WORK/s" '\(<= 114.5, step 1.101x\): noshim 10 runs 104, shim 10 runs 105 \(0.99x, 0.95-1.03x\)' \
        '\(> 114.5, step 1.101x\): noshim 10 runs 122, shim 10 runs 122.5 \(1.00x, 0.87-1.02x\)'
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/r" --key step
    echo "$output"
    [ "$status" -eq 0 ]
    grep -E '^torch_train +step +shim +runs +1  median 4  median over control 0.04$' <<<"$output"
    grep -E '^torch_graph +step +shim +runs +1  median 2  median over control 0.02$' <<<"$output"
    ! grep -q 'mode' <<<"$output" # one run a row: no modes to find
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/r" --workload torch_item
    [ "$status" -ne 0 ]
    [[ "$output" == *"no run of torch_item with notes.rows in $WORK/r"* ]]
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/none"
    [ "$status" -ne 0 ]
    [[ "$output" == *"$WORK/none/runs.jsonl: No such file or directory (expected run.py's --out folder, holding runs.jsonl or runs.jsonl.gz)"* ]]
    # a kept folder's runs, gzip'd (results/), read the same
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/r"
    plain=$output
    mkdir -p "$WORK/z/r"
    gzip -c "$WORK/r/runs.jsonl" >"$WORK/z/r/runs.jsonl.gz"
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/z/r"
    [ "$status" -eq 0 ]
    [ "$output" = "$plain" ]
    echo '{"workload": ' >>"$WORK/r/runs.jsonl"
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/r"
    [ "$status" -ne 0 ]
    [[ "$output" == *"$WORK/r/runs.jsonl line 8: not a JSON record (expected one run per line)"* ]]
}
@test "workloads harness: a run past --timeout is killed and is a FAIL; that workload is not run again" {
    SECONDS=0
    harness --fake --only fake_hang --pairs 2 --no-guard --timeout 1
    [ "$SECONDS" -lt 30 ] # fake.py would sleep 60 s
    [ "$(cat "$WORK/rc")" = 1 ]
    grep -F 'FAIL fake_hang: shim run 1: timed out after 1 s' "$WORK/out.txt"
    ! grep -F '[2/2] fake_hang' "$WORK/out.txt" || false
}

@test "workloads harness: --budget stops before a pair that would end past it, and says so" {
    harness --fake --only fake_faster --pairs 3 --no-guard --budget 0.001
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E '^note: stopped after 1 of 3 pairs: another \(about [0-9]+ s\) would end past --budget 0.001 s' "$WORK/out.txt"
    row fake_faster t | grep -E '11.0 \(11.0-11.0\) +6.00 \(6.00-6.00\)'
    harness --fake --only fake_faster,fake_same --pairs 3 --no-guard --budget 0.001
    grep -E '^note: stopped during pair 1, before fake_same: past --budget 0.001 s' "$WORK/out.txt"
}

@test "workloads harness: SIGTERM ends the running workload's processes and still prints the table" {
    FAKE_HANG_PIDFILE="$WORK/hang.pid" python3 "$RUN_PY" --fake --only fake_faster,fake_hang --pairs 1 --no-guard \
        --out "$WORK/res" >"$WORK/out.txt" 2>&1 &
    pid=$!
    for _ in $(seq 200); do [ -s "$WORK/hang.pid" ] && break; sleep 0.1; done
    [ -s "$WORK/hang.pid" ]
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    cat "$WORK/out.txt"
    [ "$rc" = 130 ]
    ! kill -0 "$(cat "$WORK/hang.pid")" 2>/dev/null || false
    row fake_faster t | grep -E 'same 2/2$'
    grep -E '^note: interrupted \(signal 15\) during pair 1' "$WORK/out.txt"
    grep -E '^RESULT: INTERRUPTED: no result differed and no run failed so far; 2 workloads, 1 pair,' "$WORK/out.txt"
    grep -E '^RESULT: INTERRUPTED' "$WORK/res/table.txt"
}

@test "workloads harness: --dry-run prints the plan and each side's settings, runs nothing" {
    harness --dry-run --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 0 ]
    n=$(python3 "$RUN_PY" --list | wc -l)
    [ "$n" -ge 15 ]
    grep -E "^# plan: in-process measurements in 3 processes \(~[0-9]+ s\), then $n workloads x 3 sides x 5 pairs = $((n * 15)) runs; expected about [0-9]+ s" "$WORK/out.txt"
    grep -E "^  shim +LD_PRELOAD=$SHIM PINSHIM_SUMMARY=json PINSHIM_GUARD=off" "$WORK/out.txt"
    grep -E "^  shim\+guard +LD_PRELOAD=$SHIM PINSHIM_SUMMARY=json PINSHIM_GUARD=warn PINSHIM_GUARD_PAGES=first" "$WORK/out.txt"
    grep -E '^torch_dataloader_pinned .*torch_dataloader.py --pin 1$' "$WORK/out.txt"
    # the library's own build commit, not this checkout's HEAD (the two may differ on a GPU machine)
    head=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
    grep -E "^# shim: $SHIM \([0-9]+ bytes, .*\), built from $head(-dirty)?$" "$WORK/out.txt"
    [ ! -e "$WORK/res" ]
}

@test "workloads harness: bad usage is exit status 2 with the reason" {
    harness --only nosuch
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "no workload matches 'nosuch' (workloads: torch_train, torch_graph," "$WORK/out.txt"
    harness --pairs 0
    [ "$(cat "$WORK/rc")" = 2 ]
    harness --fake --shim "$WORK/nothing.so"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "$WORK/nothing.so is missing" "$WORK/out.txt"
}

@test "workloads: every script compiles; without their frameworks they skip cleanly, one row each" {
    python3 -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' "$ROOT"/tests/bench/workloads/*.py
    if python3 -c 'import torch' 2>/dev/null || python3 -c 'import numpy' 2>/dev/null; then
        skip "python3 has torch or numpy: the skip path is not reachable here"
    fi
    harness --pairs 2 --only 'torch_*,cupy_copy,jax_copy'
    [ "$(cat "$WORK/rc")" = 0 ]
    [ "$(grep -cE '^torch_[a-z0-9_]+ +- .*skipped: torch not importable' "$WORK/out.txt")" = 12 ]
    grep -E '^cupy_copy +- .*skipped: cupy not importable' "$WORK/out.txt"
    grep -E '^jax_copy +- .*skipped: jax not importable' "$WORK/out.txt"
    tail -n 1 "$WORK/out.txt" | grep -E '^RESULT: ok: .*14 skipped'
    # the scripts for compare_builds.py (diagnostics, not rows) skip the same way
    for name in train_phases torch_fresh_d2h torch_pinned_after_staging torch_pinned_after_idle; do
        run python3 "$ROOT/tests/bench/workloads/$name.py"
        [ "$status" -eq 0 ]
        [ "$output" = '{"workload": "'"$name"'", "skipped": "torch not importable (No module named '"'torch'"')"}' ]
    done
}

@test "workloads: the C loop (guard_cost.c) against the fake driver, ns per iteration and shim - no shim" {
    LD_LIBRARY_PATH="$FAKE" harness --only c_dtoh_sync --pairs 2 --inprocess 0 --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 0 ]
    row c_dtoh_sync iter | grep -E '^c_dtoh_sync +iter +ns +[0-9]+ \([0-9]+-[0-9]+\) +[0-9]+ \([0-9]+-[0-9]+\) +[+-][0-9]+ns +(PASS|MISS) .* <=\+100ns +\+160ns +no data \(timing only\)$'
    python3 - "$WORK/res/runs.jsonl" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
assert len(runs) == 6 and all(r["status"] == "ok" for r in runs), runs
shim = [r for r in runs if r["side"] == "shim"]
# the shim saw the loop: 20,000 timed copies and the warm-up, each followed by a stream synchronize
d2h = sum(t["count"] for r in shim[-1:] for t in r["shim_summary"]["transfers"] if t["dir"] == "d2h")
assert d2h == 20003, d2h
# every run records the level its loop met (guard_cost.c's "# level" line), for row_levels.py
for r in runs:
    level = r["notes"]["rows"]["iter"]
    assert level["control_us"] > 0 and level["main_cpu_ms"] > 0 and level["wall_ms"] > 0, level
    assert level["cpu"].count("-") == 1, level
PY
    run python3 "$ROOT/tests/bench/workloads/row_levels.py" "$WORK/res"
    [ "$status" -eq 0 ]
    grep -Eq '^c_dtoh_sync +iter +faster \(control <= [0-9.]+ us\): noshim [0-9]+ runs' <<<"$output"
}

# A stand-in interpreter for the in-process table: as inprocess_ab.py --json it prints known
# figures, a different set in each process (a counter file), and under alloc_count each row's
# allocator calls per operation; any other script runs in python3.
fake_interpreter() {
    cat >"$WORK/py" <<EOF
#!/bin/sh
echo "\$LD_PRELOAD: \$*" >>"$WORK/args"
case "\$LD_PRELOAD:\$1" in
*alloc_count*:*inprocess_ab.py)
    echo '{"allocs": "item", "per_op": 10.0, "cxx_per_op": 6.0, "ops": 2000, "by_function": {"malloc": 5.0, "free": 5.0}}'
    echo '{"allocs": "4KB pinned nb", "per_op": 20.0, "ops": 2000, "by_function": {"malloc": 10.0, "free": 10.0}}' ;;
*inprocess_ab.py)
    n=\$(cat "$WORK/count" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n >"$WORK/count"
    m=\$((30 + 20 * n)); c=\$((7 * n))
    d=''; dc=''  # with --direct: observe - direct 20 ns above observe - forward, the control's 0
    case " \$* " in *" --direct "*)
        d=', "direct_ns": 9950, "observe_direct_median_ns": '\$((m + 20))', "observe_direct_q1_ns": '\$((m + 15))', "observe_direct_q3_ns": '\$((m + 25))', "leaked_calls_per_op": 0.0, "observe_direct_by_order_ns": {"ofddfo": '\$((m + 30))', "doffod": '\$((m + 10))'}'
        dc=', "direct_ns": 4990, "observe_direct_median_ns": 0, "observe_direct_q1_ns": -2, "observe_direct_q3_ns": 2, "leaked_calls_per_op": 0.0' ;;
    esac
    echo '{"inprocess": "item", "forward_ns": 10000, "median_ns": '\$m', "q1_ns": '\$((m - 5))', "q3_ns": '\$((m + 5))', "mean_ns": 999, "se_ns": 1, "groups": 200, "ops": 100, "driver_calls_per_op": {"cuMemcpyDtoHAsync_v2": 1.0, "cuStreamSynchronize": 1.0}'"\$d"'}'
    echo '{"inprocess": "4KB pinned nb", "forward_ns": 10000, "median_ns": 150, "q1_ns": 100, "q3_ns": 200, "mean_ns": 150, "se_ns": 3, "groups": 200, "ops": 100}'
    echo '{"inprocess": null, "row": "graph-replayed step", "skipped": "CUDA graph capture failed: RuntimeError: no"}'
    echo '{"inprocess": "DataLoader pinned", "forward_ns": 100000, "median_ns": 200, "q1_ns": -2000, "q3_ns": 2400, "mean_ns": 0, "se_ns": 1, "groups": 25, "ops": 6}'
    echo '{"inprocess": "control (no CUDA)", "forward_ns": 5000, "median_ns": '\$c', "q1_ns": '\$((c - 2))', "q3_ns": '\$((c + 2))', "mean_ns": 0, "se_ns": 1, "groups": 200, "ops": 100'"\$dc"'}' ;;
*) exec python3 "\$@" ;;
esac
EOF
    chmod +x "$WORK/py"
}

@test "workloads harness: a WIDE row of the shim whose operation the in-process table measured names that row's cost in its note" {
    fake_interpreter
    harness --fake --only fake_noisy --pairs 4 --inprocess 2 --inprocess-groups 4 --python "$WORK/py"
    [ "$(cat "$WORK/rc")" = 0 ]
    row fake_noisy t | grep -E ' 0.97x +WIDE '
    # fake_noisy's t stands for the in-process row item: +50 and +70 pooled, +60.0 +- 20.0 ns (0.60 %)
    grep -E "^note fake_noisy: t shim 0.97x, .*; pair by pair, shim faster in 2 of 4, the pairs' median 0.99x; inside one process \(its row item\), observing costs it \+60.0 \+- 20.0 ns \(0.60%\): PASS$" "$WORK/out.txt"
    # with a driver for observe_ab (the fake), the per-call pieces are priced and the note adds the
    # whole preload's figure (its value is the fake's noise; its form is checked)
    rm -f "$WORK/count"
    LD_LIBRARY_PATH="$FAKE" harness --fake --only fake_noisy --pairs 4 --inprocess 2 --inprocess-groups 4 --python "$WORK/py"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E "^note fake_noisy: t shim 0.97x, .*; inside one process \(its row item\), observing costs it \+60.0 \+- 20.0 ns \(0.60%\): PASS, and the whole preload [+-][0-9.]+ \+- [0-9.]+ ns \([-0-9.]+%\): (PASS|MISS|WIDE)$" "$WORK/out.txt"
    # every workload's in-process row names a row of the in-process table (a misspelt one would never match)
    python3 - "$ROOT/tests/bench/workloads" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import inprocess, run
keys = {key for key, _, _ in inprocess.ROWS}
bad = [(w.name, k, v) for w in run.WORKLOADS + run.FAKE_WORKLOADS for k, v in w.inside.items() if v not in keys]
assert not bad and any(w.inside for w in run.WORKLOADS), bad
PY
}

@test "workloads harness: --inprocess-direct asks inprocess_ab.py for a direct side (not under alloc_count) and prints the whole preload measured: observe - direct plus the allocator calls' hooks" {
    fake_interpreter
    LD_LIBRARY_PATH="$FAKE" harness --fake --only fake_same --pairs 1 --no-guard --inprocess 2 --inprocess-groups 4 \
        --inprocess-direct --python "$WORK/py" --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 0 ]
    [ "$(grep -c 'libpinshim.*inprocess_ab.py --json --groups 4 --direct$' "$WORK/args")" = 2 ]
    ! grep -q 'alloc_count.*--direct' "$WORK/args"
    grep -F '# the whole preload measured inside one process' "$WORK/out.txt"
    # item: observe - direct +70 and +90, +80.0; its 10 allocator calls' hooks priced on the fake
    # and by group order: +80 and +100 pooled in the one, +60 and +80 in the other
    grep -E '^item +9950 ns +\+80.0 ns +[+-][0-9.]+ ns +[+-][0-9.]+ \+- [0-9.]+ ns +[-0-9.]+% +<=1% +(PASS|MISS|WIDE) +0.00/op +doffod \+70.0, ofddfo \+90.0$' "$WORK/out.txt"
    # the control's observe - direct: 0 in both, within its quartiles' error: fair
    grep -E '^control \(no CUDA\) +4990 ns +\+0.0 \+- [0-9.]+ ns .*fair +-$' "$WORK/out.txt"
    # rows without a direct side (4KB pinned nb) have no line there; the table survives a merge
    [ "$(sed -n '/# the whole preload measured/,$p' "$WORK/out.txt" | grep -c '^4KB pinned nb')" = 0 ]
    python3 "$ROOT/tests/bench/workloads/run.py" --merge "$WORK/res" >"$WORK/merged.txt"
    grep -E '^item +9950 ns +\+80.0 ns .* doffod \+70.0, ofddfo \+90.0$' "$WORK/merged.txt"
}

@test "workloads harness: the in-process table pools its processes' medians (mean, 2 standard errors, share), checks 1 % and +100 ns, after the main table" {
    fake_interpreter
    LD_LIBRARY_PATH="$FAKE" harness --fake --only fake_same --pairs 1 --no-guard --inprocess 2 --inprocess-groups 4 \
        --python "$WORK/py" --out "$WORK/res"
    [ "$(cat "$WORK/rc")" = 0 ]
    # item: medians +50 and +70 (their means, 999, are not read): +60, the spread between them (2 x 10) the error
    grep -E '^item +10000 ns +\+60.0 \+- 20.0 ns +0.60% +<=1% +PASS +2 \(\+50, \+70\)$' "$WORK/out.txt"
    # 4KB pinned nb: both +150, quartiles 100..200 over 200 groups: each median's error 6.57, pooled 4.65
    grep -E '^4KB pinned nb +10000 ns +\+150.0 \+- 9.3 ns +1.50% +<=1% +MISS +2 \(\+150, \+150\)$' "$WORK/out.txt"
    # DataLoader pinned: +200 (0.20 %), but quartiles 4400 apart over 25 groups: an error of 1.16 %
    grep -E '^DataLoader pinned +100000 ns +\+200.0 \+- 1156.2 ns +0.20% +<=1% +WIDE +2 \(\+200, \+200\)$' "$WORK/out.txt"
    # the control: +7 and +14, error 7: not within it, and said so
    grep -E '^control \(no CUDA\) +5000 ns +\+10.5 \+- 7.0 ns .* UNFAIR ' "$WORK/out.txt"
    grep -F 'note inprocess: the control row differs by more than its error' "$WORK/out.txt"
    grep -E '^4KB pageable +<=1% +skipped: no process measured it$' "$WORK/out.txt"
    # a row the process could not measure (the capture failed) says why; the others are not touched
    grep -E '^graph-replayed step +<=1% +skipped: CUDA graph capture failed: RuntimeError: no$' "$WORK/out.txt"
    # the C loop, measured against the fake driver by observe_ab in each process
    grep -E '^C loop +[0-9]+ ns +[+-][0-9.]+ \+- [0-9.]+ ns +[-0-9.]+% +<=\+100ns +(PASS|MISS) +2 \(' "$WORK/out.txt"
    main=$(grep -n '^fake_same ' "$WORK/out.txt" | tail -n 1 | cut -d: -f1)
    inproc=$(grep -n '^# inside one process' "$WORK/out.txt" | tail -n 1 | cut -d: -f1)
    [ "$inproc" -gt "$main" ]
    grep -F '| torch: x.item() of a 1-element CUDA tensor | 10000 ns | +60.0 +- 20.0 ns | 0.60% | <=1% | PASS |' "$WORK/res/table.md"
    python3 - "$WORK/res/summary.json" <<'PY'
import json, sys
rows = {r["key"]: r for r in json.load(open(sys.argv[1]))["inprocess"]["rows"]}
assert rows["item"]["per_process_ns"] == [50, 70], rows["item"]
assert rows["C loop"]["processes"] == 2, rows["C loop"]
# the whole preload: observing, plus 2 driver calls (counted by the shim) at observe_ab's forward -
# direct a call, plus 10 allocator calls (alloc_count), 6 of them C++'s: 4 at its malloc iteration's
# a call, 6 at its new iteration's
drv, c_alloc, cxx_alloc = rows["driver call"], rows["malloc call"], rows["new call"]
assert drv["processes"] == c_alloc["processes"] == cxx_alloc["processes"] == 2, (drv, c_alloc, cxx_alloc)
assert "allocator call" not in rows, rows  # the price of a kept folder only
w = rows["item"]["whole"]
assert (w["driver_calls"], w["allocator_calls"], w["cxx_calls"]) == (2.0, 10.0, 6.0), w
expect = 60.0 + 2 * drv["cost_ns"] + 4 * c_alloc["cost_ns"] + 6 * cxx_alloc["cost_ns"]
assert abs(w["cost_ns"] - expect) < 1e-6 and abs(w["share_pct"] - expect / 100) < 1e-9, (w, expect)
assert w["se2_ns"] >= 20.0 and w["check"] in ("PASS", "MISS", "WIDE"), w
# a row without its counts (4KB pinned nb: no driver calls from this stand-in) has no whole figure
assert "whole" not in rows["4KB pinned nb"] and "whole" in rows["C loop"], rows
assert rows["C loop"]["whole"]["allocator_calls"] == 0 and rows["C loop"]["whole"]["driver_calls"] == 2
PY
    grep -E '^# the whole preload inside one process' "$WORK/out.txt"
    grep -E '^item +\+60.0 ns +2.00 x = [+-][0-9.]+ ns +10.0 x \(6.0 C\+\+\) = [+-][0-9.]+ ns +[+-][0-9.]+ \+- [0-9.]+ ns +[-0-9.]+% +<=1% +(PASS|MISS|WIDE)$' "$WORK/out.txt"
    grep -E '^malloc call +[+-][0-9.]+ \+- [0-9.]+ ns a call +2 \(' "$WORK/out.txt"
    grep -E '^new call +[+-][0-9.]+ \+- [0-9.]+ ns a call +2 \(' "$WORK/out.txt"
    grep -F '| torch: x.item() of a 1-element CUDA tensor | +60.0 ns | 2.00 x = ' "$WORK/res/table.md"
}

@test "inprocess_builds.py: builds take turns (A B, B A), one run.py folder a process; the table sets each against the first, round by round; bad usage named" {
    fake_interpreter
    IB="$ROOT/tests/bench/workloads/inprocess_builds.py"
    python3 "$IB" --out "$WORK/ib" --rounds 2 --groups 4 --python "$WORK/py" --fake A="$SHIM" B="$SHIM" >"$WORK/out.txt" 2>&1 ||
        { cat "$WORK/out.txt"; false; }
    cat "$WORK/out.txt"
    # the order of the processes: round 1 A then B, round 2 B then A (the stand-in counts its processes)
    [ "$(grep -E '^round ' "$WORK/out.txt" | cut -d: -f1 | paste -sd,)" = "round 1 A,round 1 B,round 2 B,round 2 A" ]
    for d in A-r1 B-r1 B-r2 A-r2; do [ -f "$WORK/ib/$d/summary.json" ]; done
    # item: A read +50 (round 1) and +110 (round 2), B +70 and +90: the same mean, B lower in round 2 only
    grep -E '^item +A +2 +\+80.0 \+- 60.0 +- *$' "$WORK/out.txt"
    grep -E '^item +B +2 +\+80.0 \+- 20.0 +- +\+0.0 \+- 63.2 +1 of 2$' "$WORK/out.txt"
    # read again from the folders, set against B
    python3 "$IB" --read "$WORK/ib" --first B >"$WORK/read.txt"
    grep -E '^item +B +2 +\+80.0 \+- 20.0 +- *$' "$WORK/read.txt"
    grep -E '^item +A +2 +\+80.0 \+- 60.0 +- +\+0.0 \+- 63.2 +1 of 2$' "$WORK/read.txt"
    # bad usage
    run python3 "$IB" --out "$WORK/x" A="$SHIM"
    [ "$status" = 2 ] && [[ "$output" == *"expected two or more builds with different names"* ]]
    run python3 "$IB" --out "$WORK/x" A="$SHIM" B="$WORK/nothing.so"
    [ "$status" = 2 ] && [[ "$output" == *"no such library: $WORK/nothing.so"* ]]
    run python3 "$IB" --out "$WORK/x" A "B=$SHIM"
    [ "$status" = 2 ] && [[ "$output" == *"'A': expected NAME=LIBRARY"* ]]
    run python3 "$IB" --read "$WORK/ib" --first C
    [ "$status" = 1 ] && [[ "$output" == *"--first C: no build of that name"* ]]
    mkdir "$WORK/empty"
    run python3 "$IB" --read "$WORK/empty"
    [ "$status" = 1 ] && [[ "$output" == *"holds no measured process"* ]]
    echo '{' >"$WORK/ib/A-r1/summary.json"
    run python3 "$IB" --read "$WORK/ib"
    [ "$status" = 1 ] && [[ "$output" == *"A-r1/summary.json: not a run.py summary"* ]]
}

@test "workloads harness: --inprocess-only asks inprocess_ab.py for the rows named, under the shim and under alloc_count, and says the others were not asked" {
    fake_interpreter
    harness --fake --only fake_same --pairs 1 --no-guard --inprocess 2 --inprocess-groups 4 --inprocess-only nb \
        --python "$WORK/py"
    [ "$(cat "$WORK/rc")" = 0 ]
    [ "$(grep -c 'inprocess_ab.py --json --groups 4 --only nb$' "$WORK/args")" = 2 ]
    [ "$(grep -c 'alloc_count.*inprocess_ab.py --json --groups [0-9]* --only nb$' "$WORK/args")" = 2 ]
    grep -E '^4KB pinned nb +10000 ns +\+150.0 ' "$WORK/out.txt"
    grep -E '^4KB pageable +<=1% +skipped: not asked \(--inprocess-only nb\)$' "$WORK/out.txt"
    grep -E '^MLP step +<=1% +skipped: not asked \(--inprocess-only nb\)$' "$WORK/out.txt"
    # a row the name holds that no process printed is not "not asked"
    grep -E '^4KB pageable nb +<=1% +skipped: no process measured it$' "$WORK/out.txt"
    harness --fake --only fake_same --pairs 1 --inprocess 1 --inprocess-only ' '
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F -- "--inprocess-only: expected part of a row's name" "$WORK/out.txt"
}

@test "workloads harness: --merge makes one table of several runs' folders: pairs numbered on, in-process processes pooled" {
    fake_interpreter
    for run in a b; do
        LD_LIBRARY_PATH="$FAKE" harness --fake --only fake_faster,fake_ns --pairs 2 --inprocess 1 \
            --inprocess-groups 4 --python "$WORK/py" --out "$WORK/$run"
        [ "$(cat "$WORK/rc")" = 0 ]
    done
    harness --merge "$WORK/a" "$WORK/b" --out "$WORK/m"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E "^# pinshim real-workload benchmarks, .*: 4 pairs merged from $WORK/a \(2\), $WORK/b \(2\)$" "$WORK/out.txt"
    grep -E '^# sides: no shim, shim, shim\+guard; 4 pairs;' "$WORK/out.txt"
    # fake_faster over its pairs 1, 2, 1, 2: no shim 11, 12, 11, 12; shim 6, 7, 6, 7; guard 7, 8, 7, 8
    row fake_faster t | grep -F '11.5 (11.0-12.0)  6.50 (6.00-7.00)  1.77x   PASS  7.50 (7.00-8.00)   1.53x   PASS'
    row fake_faster t | grep -E 'same 12/12$'
    row fake_ns loop | grep -E '7015 \(7010-7020\) +7065 \(7060-7070\) +\+50ns +PASS'
    # the in-process rows pool one process of each run: item +50 and +70, as two processes of one run
    grep -E '^item +10000 ns +\+60.0 \+- 20.0 ns +0.60% +<=1% +PASS +2 \(\+50, \+70\)$' "$WORK/out.txt"
    tail -n 2 "$WORK/out.txt" | grep -E '^RESULT: ok: .*; 2 workloads, 4 pairs, merged from 2 runs$'
    python3 - "$WORK/m/runs.jsonl" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
assert sorted(set(r["pair"] for r in runs)) == [1, 2, 3, 4], runs
assert all(r["folder"].endswith("/b") for r in runs if r["pair"] > 2)
PY
    # a kept folder (results/) holds its runs gzip'd: it merges the same; a corrupt one is named
    mkdir "$WORK/bz"
    cp "$WORK/b/summary.json" "$WORK/bz/"
    gzip -c "$WORK/b/runs.jsonl" >"$WORK/bz/runs.jsonl.gz"
    harness --merge "$WORK/a" "$WORK/bz"
    [ "$(cat "$WORK/rc")" = 0 ]
    row fake_faster t | grep -F '11.5 (11.0-12.0)  6.50 (6.00-7.00)  1.77x   PASS  7.50 (7.00-8.00)   1.53x   PASS'
    head -c 100 "$WORK/b/runs.jsonl" | gzip -c | head -c 60 >"$WORK/bz/runs.jsonl.gz"
    harness --merge "$WORK/a" "$WORK/bz"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: --merge: $WORK/bz/runs.jsonl.gz: not readable (" "$WORK/out.txt"
    # a row that misses reads folder by folder as well (fake_same: the shim 2 % slower in each);
    # one folder alone has no such part
    harness --fake --only fake_same --pairs 1 --inprocess 0 --no-guard --out "$WORK/s1"
    harness --fake --only fake_same --pairs 2 --inprocess 0 --no-guard --out "$WORK/s2"
    grep -F "note fake_same: t shim 0.98x misses the bound" "$WORK/out.txt"
    [ -z "$(grep -F "folder by folder" "$WORK/out.txt")" ]
    harness --merge "$WORK/s1" "$WORK/s2"
    grep -E "^note fake_same: t shim 0\.98x misses the bound >=0\.99x, .*; folder by folder, s1 0\.98x \(1 pair\), s2 0\.98x \(2 pairs\)$" "$WORK/out.txt"
    # a failed run in one folder is a FAIL of the merged table too
    LD_LIBRARY_PATH="$FAKE" harness --fake --only fake_crash --pairs 2 --inprocess 0 --no-guard --out "$WORK/c1"
    LD_LIBRARY_PATH="$FAKE" harness --fake --only fake_crash --pairs 1 --inprocess 0 --no-guard --out "$WORK/c2"
    harness --merge "$WORK/c2" "$WORK/c1"
    [ "$(cat "$WORK/rc")" = 1 ]
    grep -E '^FAIL fake_crash: shim run 3: exit status 3' "$WORK/out.txt"
}

@test "workloads harness: the header names the CPUs every run was bound to (taskset); runs bound to as many CPUs merge, others do not" {
    [ "$(nproc --all)" -ge 2 ] || skip "needs a machine of 2 CPUs or more to bind runs to one"
    taskset -c 0 python3 "$RUN_PY" --fake --only fake_same --pairs 1 --inprocess 0 --out "$WORK/bound" >"$WORK/out.txt"
    cat "$WORK/out.txt"
    grep -E '^# machine: no GPU seen by nvidia-smi; [0-9]+ cores, runs on CPUs 0$' "$WORK/out.txt"
    # the list as Linux writes one, neighbours as ranges
    (cd "$ROOT/tests/bench/workloads" && python3 -c 'import run
for cpus, text in (({0}, "0"), ({2, 3, 4, 5, 8}, "2-5,8"), ({1, 3, 4}, "1,3-4")):
    assert run.cpu_ranges(cpus) == text and run.cpu_list(text) == cpus, (cpus, text)')
    sed -i "s/no GPU seen by nvidia-smi/GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-h)/" "$WORK/bound/summary.json"
    fake_folder a GPU-a
    grep -E '"# machine: GPU 0: NVIDIA H100 80GB HBM3 \(UUID: GPU-a\); [0-9]+ cores"' "$WORK/a/summary.json"
    harness --merge "$WORK/a" "$WORK/bound"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: --merge: $WORK/bound: number of CPUs a run was bound to 1, where $WORK/a had all" "$WORK/out.txt"
    taskset -c 0 python3 "$RUN_PY" --fake --only fake_same --pairs 1 --inprocess 0 --out "$WORK/bound2" >/dev/null
    sed -i "s/no GPU seen by nvidia-smi/GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-i)/" "$WORK/bound2/summary.json"
    harness --merge "$WORK/bound" "$WORK/bound2"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E '^# machine: .*; [0-9]+ cores, runs on CPUs 0$' "$WORK/out.txt"
    # one CPU each, other CPUs of the same machine (groups side by side): they merge, one instance,
    # the header naming each list; a merged folder merges again, with another instance
    taskset -c 1 python3 "$RUN_PY" --fake --only fake_same --pairs 1 --inprocess 0 --out "$WORK/bound3" >/dev/null
    sed -i "s/no GPU seen by nvidia-smi/GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-h)/" "$WORK/bound3/summary.json"
    harness --merge "$WORK/bound" "$WORK/bound3" --out "$WORK/m13"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E '^# machine: .*\(UUID: GPU-h\); [0-9]+ cores, runs on CPUs 0 \| 1$' "$WORK/out.txt"
    harness --merge "$WORK/m13" "$WORK/bound2"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E '^# machine: .* \(2 instances\); [0-9]+ cores, runs on CPUs 0 \| 1$' "$WORK/out.txt"
}

@test "workloads harness: --groups runs the suite once per CPU at the same time, each group bound to its CPU, and merges them" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs this process may run on"
    harness --fake --only fake_same,fake_faster --pairs 2 --no-guard --groups 0,1 --out "$WORK/gr"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -F "# group on CPU 0: exit status 0" "$WORK/out.txt"
    grep -F "# group on CPU 1: exit status 0" "$WORK/out.txt"
    # each group's own header names its CPU; the merged table names both, and has all four pairs
    grep -E '^# machine: .*, runs on CPUs 0$' "$WORK/gr/g0.log"
    grep -E '^# machine: .*, runs on CPUs 1$' "$WORK/gr/g1.log"
    grep -E '^# pinshim real-workload benchmarks, .*: 4 pairs merged from .*/g0 \(2\), .*/g1 \(2\)$' "$WORK/out.txt"
    grep -E '^# machine: .*; [0-9]+ cores, runs on CPUs 0 \| 1$' "$WORK/out.txt"
    row fake_same t | grep -E ' 0.98x +MISS .* same 8/8$'
    [ -f "$WORK/gr/summary.json" ] && [ -f "$WORK/gr/g0/runs.jsonl" ] && [ -f "$WORK/gr/g1/runs.jsonl" ]
    # runs of two groups started in the same microsecond are still two runs: the runner tells them apart
    (cd "$ROOT/tests/bench/workloads" && python3 -c 'import merge
a, b = {"started": 5.000001, "runner": 10}, {"started": 5.000001, "runner": 11}
assert merge.run_identity(a) != merge.run_identity(b)
assert merge.run_identity(a) == merge.run_identity(dict(a, pair=3))')
    # bad usage: a CPU not this process's, no --out, with --merge
    harness --fake --groups 0,999 --out "$WORK/gx"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: error: --groups 0,999 is not a list of this process's CPUs" "$WORK/out.txt"
    OUT= harness --fake --groups 0
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: error: --groups needs --out DIR" "$WORK/out.txt"
    harness --fake --groups 0 --merge "$WORK/gr/g0" --out "$WORK/gy"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: error: --groups runs the suite: not with --merge, --list or --dry-run" "$WORK/out.txt"
}

@test "workloads: every kept results/ folder reads as a run of its own: its table again, from its gzip'd runs" {
    n=0
    for d in "$ROOT"/tests/bench/workloads/results/*/; do
        n=$((n + 1))
        run python3 "$RUN_PY" --merge "$d"
        [ "$status" -eq 0 ]
        [[ "$output" == *"RESULT: ok: no result differed and no run failed;"* ]]
        # the same rows as the table kept beside it, figure for figure
        kept=$(grep -E '^(c_dtoh_sync|torch|jax|cupy)' "$d/table.txt")
        [ -n "$kept" ]
        [ "$(grep -E '^(c_dtoh_sync|torch|jax|cupy)' <<<"$output")" = "$kept" ]
    done
    [ "$n" -ge 1 ]
}

@test "workloads: every kept record file in results/ reads back: a level probe's with --read, compare_builds.py's with --merge --modes" {
    n=0
    for f in "$ROOT"/tests/bench/workloads/results/*.jsonl.gz; do
        n=$((n + 1))
        case "$f" in
        *-level-probe-*)
            run python3 "$ROOT/tests/bench/level_probe.py" --read "$f"
            [ "$status" -eq 0 ]
            [[ "$output" == *"at the faster level, process by process"* ]] ;;
        *-rounds.jsonl.gz)
            run python3 "$ROOT/tests/bench/workloads/compare_builds.py" --merge --modes "$f"
            [ "$status" -eq 0 ]
            [[ "$output" == *"rounds from 1 files ($f); median (min-max) per variant"* ]]
            [[ "$output" == *"# by each metric's own modes"* ]] ;;
        *)
            echo "a kept record that no test reads: $f (expected *-level-probe-* or *-rounds.jsonl.gz)"
            false ;;
        esac
    done
    [ "$n" -ge 1 ]
}

@test "workloads harness: --merge takes builds of two commits with the same library sources, with a note, and refuses two whose sources differ" {
    git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || skip "needs the repository's git history (a clone, not an export)"
    fake_folder a GPU-a
    fake_folder b GPU-b
    # builds from two commits with the same library sources (a commit of documents or tests between
    # them) merge, with a note; from commits whose library sources differ, they do not
    lib="shim policy include Makefile"
    same=$(git -C "$ROOT" rev-list --max-count=300 HEAD | while read -r c; do
        git -C "$ROOT" diff --quiet "$c^" "$c" -- $lib 2>/dev/null &&
            { echo "$(git -C "$ROOT" rev-parse --short "$c^") $(git -C "$ROOT" rev-parse --short "$c")"; break; }
    done)
    [ -n "$same" ]
    read -r p c <<<"$same"
    changed=$(git -C "$ROOT" log -1 --format=%H -- $lib)
    before=$(git -C "$ROOT" rev-parse --short "$changed^")
    sed -i "s/built from [^\"]*\"/built from $p\"/" "$WORK/a/summary.json"
    sed -i "s/built from [^\"]*\"/built from $c\"/" "$WORK/b/summary.json"
    harness --merge "$WORK/a" "$WORK/b"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E "^note merge: $WORK/b: library built from $c, [0-9]+ bytes, the same sources as $WORK/a's \(git diff -- shim policy include Makefile empty\)$" "$WORK/out.txt"
    sed -i "s/built from [^\"]*\"/built from $(git -C "$ROOT" rev-parse --short "$changed")\"/" "$WORK/a/summary.json"
    sed -i "s/built from [^\"]*\"/built from $before\"/" "$WORK/b/summary.json"
    harness --merge "$WORK/a" "$WORK/b"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: --merge: $WORK/b: library built from $before" "$WORK/out.txt"
}

@test "workloads harness: --merge refuses folders of other builds, GPUs, sides or settings, unreadable ones, a run twice, and an --out among them" {
    fake_folder a GPU-a
    fake_folder b GPU-b
    sed -i 's/built from [^"]*"/built from 0000000"/' "$WORK/b/summary.json"
    harness --merge "$WORK/a" "$WORK/b"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: --merge: $WORK/b: library built from 0000000" "$WORK/out.txt"
    grep -F "where $WORK/a had built from" "$WORK/out.txt"
    # another instance of one GPU model merges; another model does not
    cp "$WORK/a/summary.json" "$WORK/b/summary.json"
    sed -i 's/GPU-a/GPU-b/' "$WORK/b/summary.json"
    harness --merge "$WORK/a" "$WORK/b"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E '^# machine: GPU 0: NVIDIA H100 80GB HBM3 \(2 instances\); [0-9]+ cores$' "$WORK/out.txt"
    # a merged folder merges again, its instances counted; a run found in two folders is refused
    harness --merge "$WORK/a" "$WORK/b" --out "$WORK/ab"
    fake_folder g GPU-g
    harness --merge "$WORK/ab" "$WORK/g"
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E "^# pinshim real-workload benchmarks, .*: 3 pairs merged from $WORK/ab \(2\), $WORK/g \(1\)$" "$WORK/out.txt"
    grep -E '^# machine: GPU 0: NVIDIA H100 80GB HBM3 \(3 instances\); [0-9]+ cores$' "$WORK/out.txt"
    harness --merge "$WORK/ab" "$WORK/a"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -E "^run.py: --merge: $WORK/a: its (noshim|shim|guard) run of fake_same \(pair 1\) is also in $WORK/ab: a folder given twice" "$WORK/out.txt"
    sed -i 's/H100 80GB HBM3/H200/' "$WORK/b/summary.json"
    harness --merge "$WORK/a" "$WORK/b"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: --merge: $WORK/b: GPU NVIDIA H200, where $WORK/a had NVIDIA H100 80GB HBM3" "$WORK/out.txt"
    harness --fake --only fake_same --pairs 1 --inprocess 0 --no-guard --out "$WORK/c"
    sed -i "s/no GPU seen by nvidia-smi/GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-c)/" "$WORK/c/summary.json"
    harness --merge "$WORK/a" "$WORK/c"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "$WORK/c: sides no shim, shim, where $WORK/a had no shim, shim, shim+guard" "$WORK/out.txt"
    PINSHIM_STAGE=off harness --fake --only fake_same --pairs 1 --inprocess 0 --out "$WORK/d"
    sed -i "s/no GPU seen by nvidia-smi/GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-d)/" "$WORK/d/summary.json"
    harness --merge "$WORK/a" "$WORK/d"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "$WORK/d: shim settings from the environment PINSHIM_STAGE=off, where $WORK/a had none" "$WORK/out.txt"
    harness --merge "$WORK/a" "$WORK/nothing"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F "run.py: --merge: $WORK/nothing: no summary.json (expected an --out folder of run.py)" "$WORK/out.txt"
    cp -r "$WORK/a" "$WORK/e"
    echo '{"workload": "fake_same", "side": "shim"' >>"$WORK/e/runs.jsonl"
    harness --merge "$WORK/a" "$WORK/e"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -E "run.py: --merge: $WORK/e/runs.jsonl line [0-9]+: not a JSON run record" "$WORK/out.txt"
    before=$(md5sum <"$WORK/a/runs.jsonl")
    harness --merge "$WORK/a" "$WORK/a" --out "$WORK/a"
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F -- "--out $WORK/a is one of the folders to merge" "$WORK/out.txt"
    [ "$(md5sum <"$WORK/a/runs.jsonl")" = "$before" ]
}

@test "workloads harness: an in-process measurement that fails is a FAIL; without PyTorch or a driver, skipped rows" {
    FAKECUDA_FAIL=hostalloc LD_LIBRARY_PATH="$FAKE" harness --fake --only fake_same --pairs 1 --no-guard --inprocess 1 \
        --inprocess-groups 4
    [ "$(cat "$WORK/rc")" = 1 ]
    grep -E '^FAIL inprocess: observe_ab, process 1: exit status [0-9]+' "$WORK/out.txt"
    tail -n 1 "$WORK/out.txt" | grep -E '^RESULT: FAIL: inprocess; '
    harness --fake --inprocess -1
    [ "$(cat "$WORK/rc")" = 2 ]
    grep -F -- '--inprocess must be 0 or more' "$WORK/out.txt"
    if python3 -c 'import torch' 2>/dev/null; then
        skip "python3 has torch: the skip path is not reachable here"
    fi
    harness --fake --only fake_same --pairs 1 --no-guard --inprocess 1 --inprocess-groups 4
    [ "$(cat "$WORK/rc")" = 0 ]
    grep -E '^item +<=1% +skipped: no PyTorch here$' "$WORK/out.txt"
    grep -E '^C loop +<=\+100ns +skipped: no CUDA driver: libcuda.so.1 cannot be loaded$' "$WORK/out.txt"
}

@test "make bench-workloads needs only the built library: nothing is rebuilt when sources look newer" {
    run make -C "$ROOT" -W shim/init.c -W policy/policy.c bench-workloads \
        BENCH_ARGS="--fake --only fake_faster --pairs 1 --no-guard"
    echo "$output"
    [ "$status" -eq 0 ]
    ! echo "$output" | grep -E '(^| )(cc|gcc) ' || false
    echo "$output" | grep -E '^RESULT: ok'
    run make -C "$ROOT" bench-workloads BUILD="$WORK/nobuild"
    [ "$status" -ne 0 ]
    echo "$output" | grep -F "bench-workloads: $WORK/nobuild/libpinshim.so is missing"
}

@test "compare_builds.py: each variant's median per metric and peak resident memory, order rotating; a failed run and bad variants are named; --budget stops rounds" {
    local cmp="$ROOT/tests/bench/workloads/compare_builds.py" fake="$ROOT/tests/bench/workloads/fake.py"
    run python3 "$cmp" --rounds 3 "$fake" faster -- none=none shim="$SHIM" shim_nostage="$SHIM",PINSHIM_STAGE=off
    echo "$output"
    [ "$status" -eq 0 ]
    # fake.py faster: 10 ms without the shim, 5 with it (BENCH_WL_PAIR unset)
    echo "$output" | grep -E '^t +10 \(10-10\) +5 \(5-5\) +5 \(5-5\)$'
    # each run's peak resident memory, from wait4: a Python process holds some MiB
    echo "$output" | grep -E '^peak_rss_mib( +[0-9.]+ \([0-9.]+-[0-9.]+\)){3}$'
    run python3 "$cmp" --rounds 2 "$fake" crash -- shim="$SHIM"
    echo "$output"
    [ "$status" -eq 0 ] # fake.py crash fails only in the harness's pair 2
    run python3 "$cmp" "$fake" faster -- broken="$WORK/nowhere.so"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F "variant broken: no library at $WORK/nowhere.so"
    run python3 "$cmp" "$fake" faster -- noequals
    [ "$status" -eq 2 ]
    echo "$output" | grep -F "variant 'noequals' is not NAME=LIBRARY[,KEY=VALUE...]"
    BENCH_WL_PAIR=2 run python3 "$cmp" --rounds 1 "$fake" crash -- none=none shim="$SHIM"
    echo "$output"
    [ "$status" -eq 1 ]
    echo "$output" | grep -E '^round 1, shim: exit 3'
    # --budget: no new round past the limit, the table still printed (each round starts 2 Pythons)
    run python3 "$cmp" --rounds 500 --budget 1 "$fake" faster -- none=none shim="$SHIM"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E 'faster, [0-9]+ rounds \(of 500: --budget 1 s reached\)'
    echo "$output" | grep -E '^t +10 \(10-10\) +5 \(5-5\)$'
}

@test "compare_builds.py: each variant against the first, round by round; the empty variant preloads a library with nothing in it" {
    local cmp="$ROOT/tests/bench/workloads/compare_builds.py" fake="$ROOT/tests/bench/workloads/fake.py"
    run python3 "$cmp" --rounds 3 "$fake" faster -- none=none shim="$SHIM" empty=empty
    echo "$output"
    [ "$status" -eq 0 ]
    # fake.py faster: 10 ms without the shim, 5 with it; the empty library is not the shim
    echo "$output" | grep -E '^t +10 \(10-10\) +5 \(5-5\) +10 \(10-10\)$'
    echo "$output" | grep -Fx '# against none, round by round: rounds higher / rounds, median ratio (its 95 % interval over the rounds)'
    echo "$output" | grep -E '^t +0/3, 0\.500x \(0\.500-0\.500\) +0/3, 1\.000x \(1\.000-1\.000\)$'
    # rounds that differ: the interval spans the resampled medians; two rounds give no interval.
    # round.py's value: 10 without a preload; with one, 5, 10, 20, 40 in the order its runs come
    cat >"$WORK/round.py" <<'PY'
import json, os
value = 10
if os.environ.get("LD_PRELOAD"):
    count = os.path.join(os.environ["ROUND_DIR"], "count")
    n = int(open(count).read()) if os.path.exists(count) else 0
    open(count, "w").write(str(n + 1))
    value = (5, 10, 20, 40)[n]
print(json.dumps({"workload": "round", "metrics": [{"key": "v", "value": value}]}))
PY
    ROUND_DIR="$WORK" run python3 "$cmp" --rounds 4 "$WORK/round.py" -- none=none empty=empty
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^v +10 \(10-10\) +15 \(5-40\)$'
    echo "$output" | grep -E '^v +2/4, 1\.500x \(0\.500-4\.000\)$'
    rm -f "$WORK/count"
    ROUND_DIR="$WORK" run python3 "$cmp" --rounds 2 "$WORK/round.py" -- none=none empty=empty
    echo "$output"
    echo "$output" | grep -E '^v +0/2, 0\.750x$'
    # what the empty variant preloads: one library, existing while the run lasts, exporting no function
    cat >"$WORK/preload.py" <<'PY'
import json, os, subprocess
lib = os.environ.get("LD_PRELOAD", "")
funcs = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True).stdout if lib else ""
print(json.dumps({"workload": "preload", "metrics": [
    {"key": "libraries", "value": 0 if not lib else 1 if os.path.isfile(lib) else -1},
    {"key": "functions", "value": sum(1 for l in funcs.splitlines() if " T " in l)}]}))
PY
    run python3 "$cmp" --rounds 2 "$WORK/preload.py" -- none=none empty=empty
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^libraries +0 \(0-0\) +1 \(1-1\)$'
    echo "$output" | grep -E '^functions +0 \(0-0\) +0 \(0-0\)$'
    # numbers from 1000 up written out, and a column as wide as its widest cell: a peak resident
    # memory of 1290 MiB once read "peak_rss_mib1.29e+03 (1.29e+03-1.29e+03)"
    cat >"$WORK/big.py" <<'PY'
import json
print(json.dumps({"workload": "big", "metrics": [{"key": "b", "value": 123456789}, {"key": "k", "value": 1290.4}]}))
PY
    run python3 "$cmp" --rounds 1 "$WORK/big.py" -- none=none empty=empty
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^b  +123456789 \(123456789-123456789\)  +123456789 \(123456789-123456789\)$'
    echo "$output" | grep -E '^k  +1290 \(1290-1290\)  +1290 \(1290-1290\)$'
    # a failed round leaves that round out of the comparison
    BENCH_WL_PAIR=2 run python3 "$cmp" --rounds 2 "$fake" crash -- none=none shim="$SHIM"
    echo "$output"
    echo "$output" | grep -E '^t +-$'
}

@test "compare_builds.py --cpus runs every variant's process on the CPUs named, and names them; a list that is not of this process's CPUs is refused" {
    local cmp="$ROOT/tests/bench/workloads/compare_builds.py"
    cat >"$WORK/affinity.py" <<'PY'
import json, os
cpus = os.sched_getaffinity(0)
print(json.dumps({"workload": "affinity", "metrics": [{"key": "cpus", "value": len(cpus)},
                                                       {"key": "lowest", "value": min(cpus)}]}))
PY
    run python3 "$cmp" --rounds 2 --cpus 0 "$WORK/affinity.py" -- none=none shim="$SHIM"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -F '2 rounds, order rotating, on CPUs 0; median'
    echo "$output" | grep -E '^cpus +1 \(1-1\) +1 \(1-1\)$'
    echo "$output" | grep -E '^lowest +0 \(0-0\) +0 \(0-0\)$'
    # without --cpus a process keeps every CPU of ours
    run python3 "$cmp" --rounds 1 "$WORK/affinity.py" -- none=none
    echo "$output" | grep -E "^cpus +$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))') "
    for bad in 100000 0-x 3-1 ''; do
        run python3 "$cmp" --cpus "$bad" "$WORK/affinity.py" -- none=none
        echo "$output"
        [ "$status" -eq 2 ]
        echo "$output" | grep -F -- "--cpus $bad is not a CPU list of this process's CPUs ("
    done
}

@test "compare_builds.py --groups runs once per CPU at the same time, each group on its CPU, and merges their files" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs this process may run on"
    local cmp="$ROOT/tests/bench/workloads/compare_builds.py"
    cat >"$WORK/affinity.py" <<'PY'
import json, os
cpus = os.sched_getaffinity(0)
print(json.dumps({"workload": "affinity", "metrics": [{"key": "cpus", "value": len(cpus)},
                                                       {"key": "lowest", "value": min(cpus)}]}))
PY
    run python3 "$cmp" --groups 0,1 --rounds 2 --out "$WORK/g.jsonl" "$WORK/affinity.py" -- none=none shim="$SHIM"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -F "# group on CPU 0: exit status 0"
    echo "$output" | grep -F "# group on CPU 1: exit status 0"
    # each group on one CPU: its own; merged, four rounds from the two files, the lowest CPU 0 or 1
    grep -F ', on CPUs 0; median' "$WORK/g.jsonl.g0.log"
    grep -F ', on CPUs 1; median' "$WORK/g.jsonl.g1.log"
    echo "$output" | grep -F "# merged: $WORK/affinity.py, 4 rounds from 2 files ($WORK/g.jsonl.g0, $WORK/g.jsonl.g1)"
    echo "$output" | grep -E '^cpus +1 \(1-1\) +1 \(1-1\)$'
    echo "$output" | grep -E '^lowest +0.5 \(0-1\) +0.5 \(0-1\)$'
    [ "$(wc -l <"$WORK/g.jsonl.g0")" = 4 ] && [ "$(wc -l <"$WORK/g.jsonl.g1")" = 4 ]
    # refused: no --out, with --cpus, a CPU not ours
    run python3 "$cmp" --groups 0,1 "$WORK/affinity.py" -- none=none
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--groups binds each group to its CPU and writes FILE.g<CPU>: give --out FILE, not --cpus"
    run python3 "$cmp" --groups 0 --cpus 1 --out "$WORK/h.jsonl" "$WORK/affinity.py" -- none=none
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--groups binds each group to its CPU"
    run python3 "$cmp" --groups 0,100000 --out "$WORK/h.jsonl" "$WORK/affinity.py" -- none=none
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--groups 0,100000 is not a CPU list of this process's CPUs ("
}

@test "compare_builds.py --lockstep runs a round's variants at once, one turn at a time, the order rotating and reversed each round; a crash fails alone; --out keeps each run" {
    local cmp="$ROOT/tests/bench/workloads/compare_builds.py"
    # three turns of 50 ms each, noted in a file per process; WHO names the variant, CRASH_IN makes
    # that variant exit 3 in its second turn
    cat >"$WORK/turner.py" <<'PY'
import json, os, sys, time
import wl
who, spans = os.environ["WHO"], []
for k in range(3):
    wl.turn()
    began = time.time()
    if k == 1 and os.environ.get("CRASH_IN") == who:
        sys.exit(3)
    time.sleep(0.05)
    spans.append([began, time.time()])
with open(os.path.join(os.environ["TURN_DIR"], "%s.%d" % (who, os.getpid())), "w") as f:
    json.dump(spans, f)
print(json.dumps({"workload": "turner", "metrics": [{"key": "cpus", "value": len(os.sched_getaffinity(0))}]}))
PY
    mkdir "$WORK/turns"
    PYTHONPATH="$ROOT/tests/bench/workloads" TURN_DIR="$WORK/turns" run python3 "$cmp" --lockstep --rounds 2 --cpus 0 \
        "$WORK/turner.py" -- a=none,WHO=a b=empty,WHO=b c=none,WHO=c
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -F '2 rounds, order rotating, the variants of a round at once, taking turns, on CPUs 0; median'
    echo "$output" | grep -E '^cpus +1 \(1-1\) +1 \(1-1\) +1 \(1-1\)$'
    # every process took its three turns; no two turns overlapped; each round's processes lived at
    # once; turn by turn, round 1 went a b c, c b a, a b c; round 2 (rotated) b c a, a c b, b c a
    python3 - "$WORK/turns" <<'PY'
import json, os, sys
spans = []
for name in os.listdir(sys.argv[1]):
    for t in json.load(open(os.path.join(sys.argv[1], name))):
        spans.append((t[0], t[1], name.split(".")[0]))
spans.sort()
assert len(spans) == 18, spans
for (b0, e0, _), (b1, e1, _) in zip(spans, spans[1:]):
    assert e0 <= b1, "turns overlap: %r" % spans
order = "".join(w for _, _, w in spans)
assert order == "abccbaabc" + "bcaacbbca", order
PY
    # a variant that exits in its second turn fails alone; the others take every turn
    rm -f "$WORK/turns"/*
    PYTHONPATH="$ROOT/tests/bench/workloads" TURN_DIR="$WORK/turns" CRASH_IN=b run python3 "$cmp" --lockstep --rounds 1 \
        --out "$WORK/runs.jsonl" "$WORK/turner.py" -- a=none,WHO=a b=none,WHO=b c=none,WHO=c
    echo "$output"
    [ "$status" -eq 1 ]
    echo "$output" | grep -E '^round 1, b: exit 3'
    [ "$(ls "$WORK/turns" | cut -d. -f1 | sort | tr -d '\n')" = ac ]
    # --out: every run as a JSON line, in the round's order, the failed one with why
    cat "$WORK/runs.jsonl"
    python3 - "$WORK/runs.jsonl" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["round"], r["variant"]) for r in runs] == [(1, "a"), (1, "b"), (1, "c")], runs
assert runs[0]["metrics"]["cpus"] >= 1 and runs[0]["error"] is None, runs
assert runs[1]["metrics"] is None and runs[1]["error"].startswith("exit 3"), runs
PY
    run python3 "$cmp" --out "$WORK/nowhere/runs.jsonl" "$WORK/turner.py" -- a=none
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--out $WORK/nowhere/runs.jsonl cannot be written: No such file or directory"
    # without --lockstep each variant runs alone, one after the other
    rm -f "$WORK/turns"/*
    PYTHONPATH="$ROOT/tests/bench/workloads" TURN_DIR="$WORK/turns" run python3 "$cmp" --rounds 1 \
        "$WORK/turner.py" -- a=none,WHO=a b=none,WHO=b
    [ "$status" -eq 0 ]
    echo "$output" | grep -F '1 rounds, order rotating; median'
    python3 - "$WORK/turns" <<'PY'
import json, os, sys
runs = sorted(json.load(open(os.path.join(sys.argv[1], n))) for n in os.listdir(sys.argv[1]))
assert runs[0][-1][1] <= runs[1][0][0], runs
PY
}

@test "compare_builds.py --merge prints the tables of --out files as one run's; bad files are named and refused" {
    local cmp="$ROOT/tests/bench/workloads/compare_builds.py" fake="$ROOT/tests/bench/workloads/fake.py"
    # fake.py faster: no shim 10 + pair, shim 5 + pair
    BENCH_WL_PAIR=1 run python3 "$cmp" --rounds 2 --out "$WORK/a.jsonl" "$fake" faster -- none=none shim="$SHIM"
    [ "$status" -eq 0 ]
    BENCH_WL_PAIR=3 run python3 "$cmp" --rounds 1 --out "$WORK/b.jsonl" "$fake" faster -- none=none shim="$SHIM"
    [ "$status" -eq 0 ]
    run python3 "$cmp" --merge "$WORK/a.jsonl" "$WORK/b.jsonl"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -F "# merged: $fake faster, 3 rounds from 2 files ($WORK/a.jsonl, $WORK/b.jsonl); median"
    echo "$output" | grep -E '^t +11 \(11-13\) +6 \(6-8\)$'
    echo "$output" | grep -E '^t +0/3, 0\.545x \(0\.545-0\.615\)$'
    run python3 "$cmp" --merge --first shim "$WORK/a.jsonl" "$WORK/b.jsonl"
    echo "$output"
    echo "$output" | grep -E '^t +3/3, 1\.833x \(1\.625-1\.833\)$'
    # gzip'd (as kept in results/), the same tables; --modes splits each metric's runs at their
    # widest step (8 to 11 here): the shim's three runs all in the fast mode, no shim's in the slow
    gzip -c "$WORK/b.jsonl" >"$WORK/b.jsonl.gz"
    run python3 "$cmp" --merge "$WORK/a.jsonl" "$WORK/b.jsonl.gz"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^t +11 \(11-13\) +6 \(6-8\)$'
    echo "$output" | grep -vq "by each metric's own modes"
    run python3 "$cmp" --merge --modes --first shim "$WORK/a.jsonl" "$WORK/b.jsonl.gz"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -F "# by each metric's own modes: every variant's runs pooled and split at the widest step"
    echo "$output" | grep -E '^t +fast <= 9\.5 \(step 1\.375x\) +3 runs 6 +0 runs$'
    echo "$output" | grep -E '^t +slow > 9\.5 \(step 1\.375x\) +0 runs +3 runs 11$'
    [ "$(echo "$output" | grep -c '^peak_rss_mib')" = 2 ]  # in the first two tables, not split
    head -c 40 "$WORK/b.jsonl.gz" >"$WORK/cut.jsonl.gz"
    run python3 "$cmp" --merge "$WORK/cut.jsonl.gz"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--merge: cannot read $WORK/cut.jsonl.gz: "
    # refused, each naming what was wrong: another script, a line that is not --out's, no file,
    # no run, a variant that is not there
    python3 "$cmp" --rounds 1 --out "$WORK/c.jsonl" "$fake" same -- none=none
    run python3 "$cmp" --merge "$WORK/a.jsonl" "$WORK/c.jsonl"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--merge: $WORK/c.jsonl:1 ran $fake same, where the first line read ran $fake faster"
    { head -n 1 "$WORK/a.jsonl"; echo '{"round": 2, "variant": "none"'; } >"$WORK/bad.jsonl"
    run python3 "$cmp" --merge "$WORK/bad.jsonl"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--merge: $WORK/bad.jsonl:2 is not a line of compare_builds.py --out ("
    run python3 "$cmp" --merge "$WORK/nosuch.jsonl"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--merge: cannot read $WORK/nosuch.jsonl: No such file or directory"
    : >"$WORK/empty.jsonl"
    run python3 "$cmp" --merge "$WORK/empty.jsonl"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--merge: no run in $WORK/empty.jsonl"
    run python3 "$cmp" --merge --first guard "$WORK/a.jsonl"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--merge: --first guard: no such variant (the variants: none, shim)"
}

@test "alloc_count.c counts every allocator call, those of 1 MiB or more and each hooked function's; compare_builds.py builds a C file given as a variant's library" {
    cc -O2 -shared -fPIC "$ROOT/tests/bench/alloc_count.c" -o "$WORK/libcount.so"
    cat >"$WORK/allocs.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
int main(void)
{
    uint64_t (*calls)(void) = (uint64_t (*)(void))dlsym(RTLD_DEFAULT, "alloc_count_calls");
    uint64_t (*large)(void) = (uint64_t (*)(void))dlsym(RTLD_DEFAULT, "alloc_count_large");
    uint64_t (*of)(unsigned) = (uint64_t (*)(unsigned))dlsym(RTLD_DEFAULT, "alloc_count_of");
    const char *(*name)(unsigned) = (const char *(*)(unsigned))dlsym(RTLD_DEFAULT, "alloc_count_name");
    if (!calls || !large || !of || !name)
        return 2;
    uint64_t c0 = calls(), l0 = large(), each0[16];
    for (unsigned i = 0; i < 16; i++)
        each0[i] = of(i);
    void *p[7];
    p[0] = malloc(100);
    p[1] = calloc(4, 1 << 18); /* 1 MiB in all */
    void *volatile nothing = NULL; /* realloc(NULL, n) written out would be compiled as malloc */
    p[2] = realloc(nothing, 3 << 20);
    p[3] = aligned_alloc(64, 128);
    p[4] = memalign(4096, 2 << 20);
    if (posix_memalign(&p[5], 64, 4 << 20) != 0 || posix_memalign(&p[6], 3, 8) == 0)
        return 3;
    for (int i = 0; i < 6; i++)
        free(p[i]);
    free(NULL);
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || madvise(m, 4096, MADV_DONTNEED) != 0)
        return 4;
    m = mremap(m, 8192, 16384, MREMAP_MAYMOVE);
    if (m == MAP_FAILED || munmap(m, 16384) != 0)
        return 5;
    uint64_t c1 = calls(), l1 = large(), each1[16]; /* all read before printf allocates its buffer */
    for (unsigned i = 0; i < 16; i++)
        each1[i] = of(i);
    printf("calls %llu large %llu\n", (unsigned long long)(c1 - c0), (unsigned long long)(l1 - l0));
    for (unsigned i = 0; name(i); i++)
        printf("%s %llu\n", name(i), (unsigned long long)(each1[i] - each0[i]));
    return 0;
}
C
    cc -O1 "$WORK/allocs.c" -o "$WORK/allocs" -ldl
    # 7 allocations (the misaligned posix_memalign counted, refused) and 6 frees; 4 of 1 MiB or more;
    # then one call of each of the mmap family
    ALLOC_COUNT_REPORT=1 LD_PRELOAD="$WORK/libcount.so" "$WORK/allocs" >"$WORK/out" 2>"$WORK/err"
    cat "$WORK/out" "$WORK/err"
    [ "$(head -n 1 "$WORK/out")" = "calls 13 large 4" ]
    [ "$(tail -n +2 "$WORK/out" | tr '\n' ' ')" = "malloc 1 calloc 1 realloc 1 free 6 posix_memalign 2 aligned_alloc 1 memalign 1 mmap 1 munmap 1 mremap 1 madvise 1 " ]
    grep -E '^alloc_count: [0-9]+ allocator calls, [0-9]+ of 1 MiB or more; malloc [0-9]+ calloc [0-9]+ .* madvise [0-9]+$' "$WORK/err"
    # Python finds them (wl.alloc_counts_reader, what train_phases.py reports per step); None without
    LD_PRELOAD="$WORK/libcount.so" python3 - "$ROOT/tests/bench/workloads" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import wl
read = wl.alloc_counts_reader()
before = read()
blocks = [bytearray(2 << 20) for _ in range(3)]
after = read()
delta = {k: after[k] - before[k] for k in after}
assert delta["large"] == 3 and delta["malloc"] + delta["calloc"] >= 3 and delta["calls"] >= 3, delta
assert list(after)[:4] == ["calls", "large", "malloc", "calloc"] and "munmap" in after, after
PY
    python3 -c "import sys; sys.path.insert(0, '$ROOT/tests/bench/workloads'); import wl; assert wl.alloc_counts_reader() is None"
    # through compare_builds.py: built from the C file, preloaded, found by a script with ctypes
    cat >"$WORK/counted.py" <<'PY'
import ctypes, json
try:
    f = ctypes.CDLL(None).alloc_count_calls
    f.restype = ctypes.c_uint64
    value = 1 if f() > 0 else 0
except AttributeError:
    value = -1
print(json.dumps({"workload": "counted", "metrics": [{"key": "counter", "value": value}]}))
PY
    run python3 "$ROOT/tests/bench/workloads/compare_builds.py" --rounds 1 "$WORK/counted.py" -- \
        none=none count="$ROOT/tests/bench/alloc_count.c"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^counter +-1 \(-1--1\) +1 \(1-1\)$'
    run python3 "$ROOT/tests/bench/workloads/compare_builds.py" "$WORK/counted.py" -- broken="$WORK/nosuch.c"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F "variant broken: no C file at $WORK/nosuch.c"
}

@test "alloc_count.c names the object each allocator call came from, C++'s new and delete as their caller's" {
    cc -O2 -shared -fPIC "$ROOT/tests/bench/alloc_count.c" -o "$WORK/libcount.so"
    # a library making 3 malloc/free pairs and 2 of C++ (new and delete, new[] and delete[]), its C++
    # runtime a dependency of its own (libstdc++.so.6), loaded by ctypes RTLD_LOCAL as Python loads
    # an extension: outside the scope RTLD_NEXT searches
    cat >"$WORK/caller.c" <<'C'
#include <stdlib.h>
void *_Znwm(unsigned long n);
void *_Znam(unsigned long n);
void _ZdlPvm(void *p, unsigned long n);
void _ZdaPv(void *p);
int caller_allocs(void)
{
    void *p[3];
    for (int i = 0; i < 3; i++)
        p[i] = malloc(40 + i);
    void *one = _Znwm(24), *many = _Znam(96);
    int ok = p[0] && p[1] && p[2] && one && many;
    for (int i = 0; i < 3; i++)
        free(p[i]);
    _ZdlPvm(one, 24);
    _ZdaPv(many);
    return ok;
}
C
    cc -O1 -shared -fPIC "$WORK/caller.c" -o "$WORK/libcaller.so" -l:libstdc++.so.6
    # a C++ library's operator new throwing std::bad_alloc first (build/tests/libcxxalloc.so): the
    # calls after it are still named after their own caller
    LD_PRELOAD="$WORK/libcount.so" python3 - "$ROOT/tests/bench/workloads" "$WORK/libcaller.so" "$T/libcxxalloc.so" <<'PY'
import ctypes, sys
sys.path.insert(0, sys.argv[1])
import wl
read, forms = wl.alloc_counts_by_object_reader(), wl.alloc_counts_cxx_reader()
lib, cxx = ctypes.CDLL(sys.argv[2]), ctypes.CDLL(sys.argv[3])
assert cxx.cxx_bad_alloc_caught() == 1
before, forms_before = read(), forms()
assert lib.caller_allocs() == 1
after, forms_after = read(), forms()
delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
print(delta)
assert delta[("libcaller.so", "malloc")] == 5 and delta[("libcaller.so", "free")] == 5, delta
assert not [k for k in delta if k[0].startswith("libstdc++")], delta  # new and delete: their caller's
# the forms the caller used, each once (new[] calls new and delete[] delete inside libstdc++: not counted)
used = {f: forms_after[f] - forms_before[f] for f in forms_after if forms_after[f] != forms_before[f]}
assert used == {"new": 1, "new[]": 1, "delete(size)": 1, "delete[]": 1}, used
assert list(forms_after)[:2] == ["new", "new[]"] and len(forms_after) == 20, forms_after
PY
    # at exit with ALLOC_COUNT_REPORT=1: the totals line, then a line an object and function, which
    # sum to the totals (C++'s calls counted once, as their malloc and free)
    ALLOC_COUNT_REPORT=1 LD_PRELOAD="$WORK/libcount.so" python3 -c \
        "import ctypes; ctypes.CDLL('$WORK/libcaller.so').caller_allocs()" 2>"$WORK/all"
    # the last process's report (python3 may be a launcher script's last command)
    awk '/^alloc_count: [0-9]+ allocator calls/ { n = 0 } { line[n++] = $0 } END { for (i = 0; i < n; i++) print line[i] }' \
        "$WORK/all" >"$WORK/err"
    cat "$WORK/err"
    grep -E '^alloc_count: [0-9]+ allocator calls' "$WORK/err"
    grep -E '^alloc_count: C\+\+ new [0-9]+ new\[\] [1-9][0-9]* .* delete\(size\) [1-9][0-9]* .* delete\[\]\(align,nothrow\) [0-9]+$' "$WORK/err"
    grep -Fx 'alloc_count: from libcaller.so malloc 5' "$WORK/err"
    grep -Fx 'alloc_count: from libcaller.so free 5' "$WORK/err"
    for fn in malloc free; do
        total="$(sed -n "1s/.* $fn \([0-9]*\) .*/\1/p" "$WORK/err")"
        summed="$(awk -v fn="$fn" '$1 == "alloc_count:" && $2 == "from" && $4 == fn { n += $5 } END { print n }' "$WORK/err")"
        echo "$fn: $total in all, $summed by object"
        [ -n "$total" ] && [ "$total" = "$summed" ]
    done
    python3 -c "import sys; sys.path.insert(0, '$ROOT/tests/bench/workloads'); import wl; assert wl.alloc_counts_by_object_reader() is None and wl.alloc_counts_cxx_reader() is None"
}

# A diagnostic probe's usage check and skip line: refuses ARG... (exit 2, saying REASON); where
# FRAMEWORK_CHECK (Python) says no framework with a GPU is here, `--rounds OK_ROUNDS` prints SKIP
# (a prefix of its line) and exits 0.
# usage: probe_refuses_then_skips PROBE REASON FRAMEWORK_CHECK OK_ROUNDS SKIP ARG...
probe_refuses_then_skips() {
    local name="$1" reason="$2" check="$3" ok_rounds="$4" skip_line="$5" probe="$ROOT/tests/bench/$1"
    shift 5
    run python3 "$probe" "$@"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "$reason"
    if python3 -c "$check" 2>/dev/null; then
        skip "$name would run here: its framework sees a GPU"
    fi
    run python3 "$probe" --rounds "$ok_rounds"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "$skip_line"* ]]
}

@test "alloc_forward.c interposes the malloc family and changes nothing: the allocator's edge cases read the same under it" {
    cc -O2 -Wall -Werror -shared -fPIC "$ROOT/tests/bench/alloc_forward.c" -o "$WORK/libforward.so"
    # it does interpose: its malloc is the one a program calls
    nm -D --defined-only "$WORK/libforward.so" | grep -E ' T (malloc|calloc|realloc|free|memalign)$' | wc -l | grep -qx 5
    run_app plain noshim "$T/allocprog"
    LD_PRELOAD="$WORK/libforward.so" "$T/allocprog" >"$WORK/forward.out" 2>"$WORK/forward.err"
    diff "$WORK/plain.out" "$WORK/forward.out"
    [ "$(grep -c ' ok$' "$WORK/forward.out")" = 45 ]
}

@test "small_ops_probe.py: bad usage is exit status 2 with the reason; without PyTorch and a GPU it says so and exits 0" {
    local torch_gpu='import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'
    probe_refuses_then_skips small_ops_probe.py "unknown setting 'nosuch'" "$torch_gpu" 1 \
        "small_ops_probe: skipped: PyTorch with a CUDA device is needed" --only nosuch
    probe_refuses_then_skips small_ops_probe.py "--rounds must be at least 1" "$torch_gpu" 1 \
        "small_ops_probe: skipped: PyTorch with a CUDA device is needed" --rounds 0
}

@test "cupy_phases.py: bad usage is exit status 2 with the reason; without CuPy and a GPU it says so and exits 0" {
    probe_refuses_then_skips cupy_phases.py "--rounds must be at least 2 (the first is a warm-up), not 1" \
        'import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)' 2 \
        "cupy_phases: skipped: CuPy with a CUDA device is needed" --rounds 1
}

@test "inprocess_ab.py: each side takes each position of the group once over a cycle of orders, so a position's bias cancels; every group keeps its samples, and a row runs the blocks its DataLoader is sized for" {
    # A block's time here: the side's own (o 30, f 20, d 10) plus a bias of its position in the
    # group (1000, 300, 70, 9, 0, 0). Over whole cycles of orders every difference must be the sides'
    # own (observe - forward 10, forward - direct 10, observe - direct 20), and every group must give
    # its samples; the orders' medians differ by the bias.
    run python3 -c '
import statistics, sys
sys.path.insert(0, sys.argv[1])
import inprocess_ab as m
own = {"o": 30.0, "f": 20.0, "d": 10.0}
bias = (1000.0, 300.0, 70.0, 9.0, 0.0, 0.0)
for direct in (False, True):
    size = len(m.GROUP_ORDERS[direct][0])
    calls = [0]
    def block(side):
        calls[0] += 1
        return own[side] + bias[(calls[0] - 1) % size]
    groups = 6 * len(m.GROUP_ORDERS[direct]) - 1  # rounded up to whole cycles
    fwd, obs, diffs, dir_, fd, od = m.paired_samples(groups, direct, block)
    groups += 1
    blocks = m.WARMUP_BLOCKS + calls[0] + direct  # the warm-up, the groups, the check block
    mean = lambda d: "%.1f" % statistics.fmean(d) if d else "-"
    print(direct, len(fwd) == len(obs) == 2 * groups, len(diffs) == groups,
          len(dir_) == (2 * groups if direct else 0), len(fd) == len(od) == (groups if direct else 0),
          mean(diffs), mean(fd), mean(od), len(set(m.order_medians(diffs, m.GROUP_ORDERS[direct]).values())) > 1,
          blocks == m.row_blocks(groups - 1, direct))
' "$ROOT/tests/bench"
    [ "$status" -eq 0 ]
    echo "$output"
    [ "${lines[0]}" = "False True True True True 10.0 - - True True" ]
    [ "${lines[1]}" = "True True True True True 10.0 10.0 20.0 True True" ]
}

@test "inprocess_ab.py --cold, torch_fresh.py --sizes, torch_reuse.py --keys and --copies: a value out of range is refused, naming what was expected; a good one runs (here: skips without PyTorch)" {
    run python3 "$ROOT/tests/bench/inprocess_ab.py" --cold 5000
    [ "$status" -ne 0 ]
    echo "$output" | grep -F -- "--cold 0 to 4096 (MiB), not 100, 200 and 5000"
    # neither the shim nor alloc_count preloaded: nothing to measure or count with, and it says so
    run python3 "$ROOT/tests/bench/inprocess_ab.py" --groups 4
    [ "$status" -ne 0 ]
    echo "$output" | grep -F "neither pinshim_bench_observe nor alloc_count_calls found"
    run python3 "$ROOT/tests/bench/workloads/torch_fresh.py" --sizes 1,3
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--sizes 1,3: expected sizes in MiB among 1,4,8,64,256,1024"
    run python3 "$ROOT/tests/bench/workloads/torch_reuse.py" --keys 4KB,8KB
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--keys 4KB,8KB: expected variants among 4KB,4KB_nb,4MB,4MB_nb,4KB_pinned,4MB_pinned"
    run python3 "$ROOT/tests/bench/workloads/torch_reuse.py" --copies 0
    [ "$status" -eq 2 ]
    echo "$output" | grep -F -- "--copies must be 1 to 100000, not 0"
    if python3 -c 'import torch' 2>/dev/null; then
        skip "PyTorch is importable here: the good values would run the workloads"
    fi
    run python3 "$ROOT/tests/bench/workloads/torch_fresh.py" --sizes 1,4
    [ "$status" -eq 0 ]
    [[ "$output" == '{"workload": "torch_fresh", "skipped": "torch not importable'* ]]
    run python3 "$ROOT/tests/bench/workloads/torch_reuse.py" --keys 4KB,4KB_pinned --copies 125
    [ "$status" -eq 0 ]
    [[ "$output" == '{"workload": "torch_reuse", "skipped": "torch not importable'* ]]
    LD_PRELOAD="$SHIM" run python3 "$ROOT/tests/bench/inprocess_ab.py" --cold 8 --ops 20 --groups 4
    [ "$status" -eq 0 ]
    [ "$output" = "inprocess_ab.py: no PyTorch here; nothing measured" ]
    # under alloc_count instead of the shim it counts; here too without PyTorch it measures nothing
    cc -O2 -shared -fPIC "$ROOT/tests/bench/alloc_count.c" -o "$WORK/libcount.so" -ldl
    LD_PRELOAD="$WORK/libcount.so" run python3 "$ROOT/tests/bench/inprocess_ab.py" --groups 4
    [ "$status" -eq 0 ]
    [ "$output" = "inprocess_ab.py: no PyTorch here; nothing measured" ]
}

@test "BENCH_WL_FORWARD=1: a workload script's shim forwards every call from the start (a copy through it is not counted); without the shim, a refusing shim or another value it stops, naming why" {
    cat >"$WORK/copy.py" <<'PY'
import ctypes, sys
sys.path.insert(0, sys.argv[1])
import wl  # noqa: F401  (BENCH_WL_FORWARD acts at import)
shim = ctypes.CDLL(None)
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx, dptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert shim.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cu.cuCtxSetCurrent(ctx) == 0 and cu.cuMemAlloc_v2(ctypes.byref(dptr), 4096) == 0
host = ctypes.create_string_buffer(4096)
assert shim.cuMemcpyHtoD_v2(dptr, host, ctypes.c_size_t(4096)) == 0
sys.stdout.flush()
shim.pinshim_summary_write(1, 1)
PY
    local W="$ROOT/tests/bench/workloads"
    PINSHIM_SUMMARY=none run_app observed shim python3 "$WORK/copy.py" "$W"
    [ "$(cat "$WORK/observed.rc")" -eq 0 ]
    grep -F '"transfers":[{"dir":"h2d","host_kind":"pageable","bucket_min":4096,"count":1,' "$WORK/observed.out"
    BENCH_WL_FORWARD=1 PINSHIM_SUMMARY=none run_app forwarded shim python3 "$WORK/copy.py" "$W"
    [ "$(cat "$WORK/forwarded.rc")" -eq 0 ]
    grep -F '"transfers":[],' "$WORK/forwarded.out"
    BENCH_WL_FORWARD=0 PINSHIM_SUMMARY=none run_app zero shim python3 "$WORK/copy.py" "$W"
    grep -F '"count":1,' "$WORK/zero.out"
    BENCH_WL_FORWARD=1 run_app noshim noshim python3 "$W/torch_reuse.py"
    [ "$(cat "$WORK/noshim.rc")" -ne 0 ]
    grep -F "BENCH_WL_FORWARD=1 needs the shim preloaded (LD_PRELOAD=.../libpinshim.so)" "$WORK/noshim.err"
    BENCH_WL_FORWARD=1 PINSHIM_GUARD=warn run_app refused shim python3 "$W/torch_reuse.py"
    [ "$(cat "$WORK/refused.rc")" -ne 0 ]
    grep -F "BENCH_WL_FORWARD=1: the shim refused to forward" "$WORK/refused.err"
    BENCH_WL_FORWARD=yes run_app bad shim python3 "$W/torch_reuse.py"
    [ "$(cat "$WORK/bad.rc")" -ne 0 ]
    grep -F "BENCH_WL_FORWARD='yes': expected 1" "$WORK/bad.err"
}

@test "level_probe.py: each variant's share of blocks at the slower CPU level, its pass at each level and process by process at the faster one, from --out records; bad usage, bad variants and corrupt records are named" {
    P="$ROOT/tests/bench/level_probe.py"
    # a: 3 processes of 60 blocks at the faster level; b: 3 of 60 there and 40 at the slower (the
    # fastest tenth's control is 80 us, so the slower level starts above 104 us), each moving from
    # CPU 3 to CPU 5 once
    python3 - "$WORK/rec.jsonl" <<'PY'
import json, sys
def blk(t, cpu, p, c):
    return {"t": t, "cpu": cpu, "pass_ms": p, "control_us": c, "run_ms": p, "wait_ms": 0.01, "steal_ticks": 0}
with open(sys.argv[1], "w") as f:
    for r in range(3):
        f.write(json.dumps({"variant": "a", "round": r + 1, "up_s": 3.5, "threads": 18,
                            "blocks": [blk(4 + i / 100, 2, 6.0, 80.0) for i in range(60)]}) + "\n")
        f.write(json.dumps({"variant": "b", "round": r + 1, "up_s": 3.6, "threads": 33,
                            "blocks": [blk(4 + i / 100, 3, 6.6, 80.0) for i in range(60)]
                                      + [blk(5 + i / 100, 5, 10.0, 150.0) for i in range(40)]}) + "\n")
PY
    run python3 "$P" --read "$WORK/rec.jsonl"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"slower level: control above 104.0 us (1.3 x 80.0, the median of the fastest tenth of all 480 blocks)"* ]]
    echo "$output" | grep -E '^a +3 +180 +0% +0/3 +6.000 +6.000 +nan +80.0 '
    echo "$output" | grep -E '^b +3 +300 +40% +0/3 +6.600 +6.600 +10.000 +80.0 '
    echo "$output" | grep -F "each process's slow share: 0.40 0.40 0.40; threads [33]; CUDA up at 3.6 3.6 3.6 s"
    echo "$output" | grep -E '^  b +3 processes, median 6.600 ms; a / b 0.909x \(95% interval 0.909-0.909x\)$'
    echo "$output" | grep -E '^  cpu +5 +120 +100%  a:0 b:120$'
    echo "$output" | grep -E '^  b +1 1 1$'
    # gzip'd (as kept in results/), the same table
    gzip -c "$WORK/rec.jsonl" >"$WORK/rec.jsonl.gz"
    [ "$(python3 "$P" --read "$WORK/rec.jsonl.gz")" = "$output" ]
    # a record that is not one is named with its file and line; a missing file too
    { cat "$WORK/rec.jsonl"; echo '{"variant": "c", "blocks": [{"t": 1}]}'; } >"$WORK/bad.jsonl"
    run python3 "$P" --read "$WORK/bad.jsonl"
    [ "$status" -eq 1 ]
    [[ "$output" == *"bad.jsonl:7: not a process's record (expected a JSON object with variant, up_s, threads and blocks of t, cpu, pass_ms, control_us, wait_ms, steal_ticks)"* ]]
    run python3 "$P" --read "$WORK/none.jsonl"
    [ "$status" -eq 1 ]
    [[ "$output" == *"cannot read $WORK/none.jsonl: No such file or directory"* ]]
    # bad usage: exit status 2 with the reason
    run python3 "$P" --rounds 0 a=none
    [ "$status" -eq 2 ] && [[ "$output" == *"--rounds must be at least 1, not 0"* ]]
    run python3 "$P" a=none,FOO
    [ "$status" -eq 2 ] && [[ "$output" == *"variant a: setting 'FOO' is not KEY=VALUE"* ]]
    run python3 "$P" shim="$WORK/nolib.so"
    [ "$status" -eq 2 ] && [[ "$output" == *"variant shim: no library at $WORK/nolib.so"* ]]
    run python3 "$P" shim
    [ "$status" -eq 2 ] && [[ "$output" == *"variant 'shim' is not NAME=LIBRARY[,KEY=VALUE...]"* ]]
    if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        skip "level_probe.py would run here: PyTorch sees a GPU"
    fi
    run python3 "$P" --rounds 1 a=none
    [ "$status" -eq 0 ]
    [[ "$output" == "level_probe: skipped: PyTorch with a CUDA device is needed"* ]]
}

@test "pass_power.py: how often a shim costing nothing would PASS each row: a row at one speed settles at its own pairs, a row at one of two speeds half the time does not with 16 times as many; ns rows, speed-up rows, few pairs and bad usage" {
    P="$ROOT/tests/bench/workloads/pass_power.py"
    mkdir -p "$WORK/p" "$WORK/q"
    echo '{"header": ["# shim: build/libpinshim.so, built from abc1234 (100 bytes)"]}' >"$WORK/p/summary.json"
    echo '{"header": ["# shim: build/libpinshim.so, built from def5678 (200 bytes)"]}' >"$WORK/q/summary.json"
    metric() { printf '{"key": "%s", "expect": "%s", "value": %s}' "$@"; }
    for k in $(seq 1 40); do
        # one speed: 100 ms, a few tenths either way; two speeds: 100 or 140 ms, each side at the slow one
        # in half its pairs, not the same half (no shim in the even pairs, the shim in pairs 2-3 of every 4)
        jitter=$(( (k * 7) % 5 ))
        noshim_two=$([ $((k % 2)) = 0 ] && echo 100 || echo 140) shim_two=$([ $(((k / 2) % 2)) = 0 ] && echo 100 || echo 140)
        for side in noshim shim; do
            if [ "$side" = noshim ]; then one=100.$jitter two=$noshim_two.$jitter ns=$((7000 + k % 7)); else
                one=100.$(( (k * 3) % 5 )) two=$shim_two.$(( (k * 3) % 5 )) ns=$((7040 + k % 5)); fi
            printf '{"workload": "torch_reuse", "side": "%s", "pair": %d, "started": %d.1, "status": "ok", "metrics": [%s, %s, %s%s]}\n' \
                "$side" "$k" "$((k * 4 + ${#side}))" "$(metric one same "$one")" "$(metric two same "$two")" "$(metric big faster 5), $(metric zero same 0)" \
                "$([ "$k" -le 5 ] && echo ", $(metric few same 10)")"
            printf '{"workload": "c_dtoh_sync", "side": "%s", "pair": %d, "started": %d.2, "status": "ok", "metrics": [%s]}\n' \
                "$side" "$k" "$((k * 4 + ${#side}))" "$(metric iter ns "$ns")"
        done
    done >"$WORK/p/runs.jsonl"
    # a failed run is not drawn: pair 40's shim run of torch_reuse
    sed -i '/"workload": "torch_reuse", "side": "shim", "pair": 40,/s/"status": "ok"/"status": "failed"/' "$WORK/p/runs.jsonl"
    run python3 "$P" "$WORK/p" --multiples 1,4,16 --resamples 200
    echo "$output"
    [ "$status" -eq 0 ]
    grep -E '^torch_reuse +one +shim +39 +1\.000x +1\.00[0-9]x +0\.0[0-9]+ +[0-9]+ +1\.00 +1\.00 +1\.00 +1\.00, 1\.00; at 39 pairs$' <<<"$output"
    grep -E '^torch_reuse +two +shim +39 .* not by 624 pairs$' <<<"$output"
    line=$(grep -E '^torch_reuse +two ' <<<"$output")
    at16=$(awk '{print $11}' <<<"$line")
    awk -v p="$at16" 'BEGIN { exit !(p < 0.8) }' # half the time at either speed: far from settling
    grep -E '^torch_reuse +few +shim +5 .* too few pairs to draw from \(5, at least 10\)$' <<<"$output"
    ! grep -q ' big ' <<<"$output" # a speed-up row's bound is not "nothing to speed up"
    ! grep -q ' zero ' <<<"$output" # no time above 0: nothing to draw
    # the C loop: a difference in ns (about +40), its spread in ns, no +-1 % figure
    grep -E '^c_dtoh_sync +iter +shim +40 +\+(39|4[0-9])ns +\+(39|4[0-9])ns +[0-9]+\.[0-9] +- +1\.00 +1\.00 +1\.00 +1\.00, 1\.00; at 40 pairs$' <<<"$output"
    # seeded: the same folders give the same figures
    [ "$(python3 "$P" "$WORK/p" --multiples 1,4,16 --resamples 200)" = "$output" ]
    run python3 "$P" "$WORK/p" --workload c_dtoh_sync --multiples 1
    [ "$status" -eq 0 ] && ! grep -q torch_reuse <<<"$output"
    # folders of different builds do not merge; a folder that is not one; bad multiples and resamples
    cp "$WORK/p/runs.jsonl" "$WORK/q/"
    run python3 "$P" "$WORK/p" "$WORK/q"
    [ "$status" -ne 0 ] && [[ "$output" == *"pass_power.py: $WORK/q: library"*"merge only runs of one build"* ]]
    run python3 "$P" "$WORK/none"
    [ "$status" -ne 0 ] && [[ "$output" == *"pass_power.py: $WORK/none: not a folder (expected run.py's --out folder)"* ]]
    run python3 "$P" "$WORK/p" --multiples 4,2
    [ "$status" -eq 2 ] && [[ "$output" == *"'4,2': expected rising whole numbers from 1 to 64"* ]]
    run python3 "$P" "$WORK/p" --resamples 5
    [ "$status" -eq 2 ] && [[ "$output" == *"'5': expected a whole number of resamples from 50 to 100000"* ]]
    run python3 "$P" "$WORK/p" --key nothing
    [ "$status" -ne 0 ] && [[ "$output" == *"no row with a bound of >=0.99x or <=+100ns and pairs of both sides in $WORK/p (--workload/--key left none)"* ]]
}
