#!/usr/bin/env bats
# Issue #14: call sites named (module records with build-ids, pinshim-report's symbolizer with its
# fallbacks), advice in the terms of the framework whose module made the copy, and copies split by
# device (summary rows, JSON rows, records, the report). Driven by tests/progs/symprog.c (built
# with -g, without -rdynamic) and tests/progs/lib/framecopy.c on the fake driver.
load common

REPORT="$ROOT/scripts/pinshim-report"
SCHEMA="$ROOT/scripts/pinshim_report/pinshim-log-format-1.schema.json"

# the line of symprog.c that makes the H2D copy, and the copy's function
copy_line() { grep -n 'SYMPROG_COPY_LINE \*/' "$ROOT/tests/progs/symprog.c" | cut -d: -f1; }

# summary_of FILE EXPR: a Python expression over the last summary record `s` of a log
summary_of() {
    python3 - "$1" "$2" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"type":"summary"' in l][-1]
print(eval(sys.argv[2]))
PY
}

@test "the log names each call site's module once: path, the build-id readelf sees, base address" {
    PINSHIM_LOG="$WORK/l.jsonl" run_app run shim "$T/symprog" local 4
    show run
    [ "$(cat "$WORK/run.rc")" = 0 ]
    python3 "$ROOT/tests/report/check_schema.py" "$SCHEMA" "$WORK/l.jsonl"
    [ "$(grep -c '"type":"module","name":"symprog"' "$WORK/l.jsonl")" = 1 ]
    want=$(readelf -n "$T/symprog" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')
    [ -n "$want" ]
    grep -q '"type":"module","name":"symprog","path":"[^"]*/symprog","build_id":"'"$want"'","base_vaddr":0,"framework":"cuda"}' "$WORK/l.jsonl"
    # the module record comes before the first transfer record that names it
    first_module=$(grep -n '"type":"module"' "$WORK/l.jsonl" | head -n 1 | cut -d: -f1)
    first_site=$(grep -n '"site":"symprog+' "$WORK/l.jsonl" | head -n 1 | cut -d: -f1)
    [ "$first_module" -lt "$first_site" ]
}

@test "pinshim-report names a static function of a -g program and its file:line" {
    PINSHIM_LOG="$WORK/l.jsonl" run_app run shim "$T/symprog" local 4
    line=$(copy_line)
    # no dladdr name: the function is static and the program is not linked -rdynamic
    grep -q '"site":"symprog+0x[0-9a-f]*","func":null' "$WORK/l.jsonl"
    "$REPORT" "$WORK/l.jsonl" >"$WORK/report.txt" 2>"$WORK/report.err"
    cat "$WORK/report.txt"
    grep -q "symprog_copy_here at .*tests/progs/symprog.c:$line (symprog+0x[0-9a-f]*)" "$WORK/report.txt"
    # the CSV file has the function and the file:line in columns of their own
    "$REPORT" "$WORK/l.jsonl" --csv "$WORK/csv" 2>/dev/null
    grep -q ",symprog_copy_here,.*tests/progs/symprog.c:$line$" "$WORK/csv/sites.csv"
    # --no-symbols leaves module+offset
    "$REPORT" "$WORK/l.jsonl" --no-symbols >"$WORK/plain.txt" 2>/dev/null
    ! grep -q 'symprog_copy_here' "$WORK/plain.txt"
    grep -q 'symprog+0x' "$WORK/plain.txt"
}

@test "symbolizer fallbacks: module changed since the run, file gone, addr2line missing: module+offset and a note" {
    cp "$T/symprog" "$WORK/symprog"
    PINSHIM_LOG="$WORK/l.jsonl" run_app run shim "$WORK/symprog" local 2
    [ "$(cat "$WORK/run.rc")" = 0 ]
    # addr2line missing
    PINSHIM_ADDR2LINE=no-such-addr2line "$REPORT" "$WORK/l.jsonl" >"$WORK/notool.txt" 2>/dev/null
    grep -q 'no-such-addr2line not found (Debian package binutils): call sites are shown as module+offset' "$WORK/notool.txt"
    ! grep -q 'symprog_copy_here' "$WORK/notool.txt"
    # another file at the path: a different build-id
    cp "$T/logprog" "$WORK/symprog"
    "$REPORT" "$WORK/l.jsonl" >"$WORK/changed.txt" 2>/dev/null
    cat "$WORK/changed.txt"
    grep -q "symprog: module changed since the run ($WORK/symprog has build-id [0-9a-f]*, the run's had [0-9a-f]*)" "$WORK/changed.txt"
    ! grep -q 'symprog_copy_here\|logprog_copy_site' "$WORK/changed.txt"
    grep -q ' symprog+0x' "$WORK/changed.txt"
    # the file gone
    rm "$WORK/symprog"
    "$REPORT" "$WORK/l.jsonl" >"$WORK/gone.txt" 2>/dev/null
    grep -q "symprog: $WORK/symprog is not on this machine" "$WORK/gone.txt"
}

# run_framework DIR NAME: copies through framecopy installed as DIR/NAME; the log in $WORK/fw.jsonl
run_framework() {
    mkdir -p "$WORK/$1"
    cp "$T/libframecopy.so" "$WORK/$1/$2"
    rm -f "$WORK/fw.jsonl"
    PINSHIM_LOG="$WORK/fw.jsonl" PINSHIM_STAGE_D2H_MIN_BYTES=4M PINSHIM_POOL_GROW_INLINE=on PINSHIM_PIN_ON_REUSE=off \
        run_app fw shim "$T/symprog" lib "$WORK/$1/$2" 4
    show fw
    [ "$(cat "$WORK/fw.rc")" = 0 ]
    python3 "$ROOT/tests/report/check_schema.py" "$SCHEMA" "$WORK/fw.jsonl"
}

# site_advice SIDE: the summary's site advice for the framecopy function of that side (h2d, d2h)
site_advice() {
    summary_of "$WORK/fw.jsonl" "[a['message'] for a in s['advice'] if a['rule'] == 'site' and 'framecopy_$1' in a['message']][0]"
}

@test "advice names PyTorch's fixes for copies a module under torch/ made, and what the shim staged" {
    run_framework site-packages/torch/lib libtorch_cuda_copier.so
    d2h=$(site_advice d2h)
    echo "$d2h"
    [[ "$d2h" == *"(PyTorch)"* ]]
    [[ "$d2h" == *'.to("cpu") allocates a fresh pageable tensor you cannot pin'* ]]
    [[ "$d2h" == *"pin_memory=True"*"copy_(t, non_blocking=True)"* ]]
    [[ "$d2h" == *"the shim already staged 4 of them"*"than the driver's pageable path would have been (an estimate"* ]]
    h2d=$(site_advice h2d)
    [[ "$h2d" == *"DataLoader(pin_memory=True)"*"tensor.pin_memory()"*'non_blocking=True'* ]]
    # the process-wide line: what the shim did, and an estimate against this process's own pageable copies
    shim=$(summary_of "$WORK/fw.jsonl" "[a['message'] for a in s['advice'] if a['rule'] == 'shim'][0]")
    echo "$shim"
    [[ "$shim" == "the shim staged 4 copies of pageable memory through its pinned pool (16.0 MiB,"* ]]
    [[ "$shim" == *"the driver's pageable path would have taken about"*"(an estimate: d2h: pageable "*" GB/s over 16.0 MiB, from 4 copies of comparable size the driver made in this process)" ]]
    # the report: framework column and the same fix
    "$REPORT" "$WORK/fw.jsonl" >"$WORK/report.txt" 2>/dev/null
    cat "$WORK/report.txt"
    grep -q 'framecopy_d2h at .*framecopy.c:[0-9]* (libtorch_cuda_copier.so+0x[0-9a-f]*) *staged by the shim.*to need no shim: in PyTorch: ' "$WORK/report.txt"
    grep -q 'framecopy_h2d at .* *pageable memory: pin or register the buffer (in PyTorch: DataLoader(pin_memory=True)' "$WORK/report.txt"
    "$REPORT" "$WORK/fw.jsonl" --csv "$WORK/csv" 2>/dev/null
    [ "$(grep -c ',PyTorch,' "$WORK/csv/fixes.csv")" = 2 ]
}

@test "advice names CuPy's and CUDA C's fixes by the module's path" {
    run_framework site-packages/cupy/_core libcore_copier.so
    [[ "$(site_advice d2h)" == *"(CuPy)"*"cupyx.empty_pinned"* ]]
    [[ "$(site_advice h2d)" == *"(CuPy)"*"cupyx.empty_pinned"* ]]
    run_framework app/lib libcopier.so
    [[ "$(site_advice d2h)" == *"(CUDA C)"*"cudaMallocHost"* ]]
    [[ "$(site_advice h2d)" == *"(CUDA C)"*"cudaHostRegister"* ]]
    run_framework site-packages/jaxlib libxla_copier.so
    [[ "$(site_advice h2d)" == *"(JAX)"*'memory_kind="pinned_host"'* ]]
    # a virtual environment in a folder named after another framework (the GPU machine's /opt/torch/.venv)
    run_framework opt/torch/.venv/lib/python3.12/site-packages/cupy_backends/cuda libruntime_copier.so
    [[ "$(site_advice d2h)" == *"(CuPy)"*"cupyx.empty_pinned"* ]]
}

@test "two devices: summary rows, JSON rows, records and the report split the copies by device" {
    export PINSHIM_PIN_ON_REUSE=off PINSHIM_STAGE=off # every copy passes: one row per device and direction
    FAKECUDA_DEVICES=2 PINSHIM_SUMMARY=json run_app json shim "$T/symprog" devices 3
    show json
    [ "$(cat "$WORK/json.rc")" = 0 ]
    python3 - "$WORK/json.err" <<'PY'
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1])
rows = s["transfers"]
assert all("device" in r for r in rows), rows
by = {}
for r in rows:
    by[(r["device"], r["dir"])] = by.get((r["device"], r["dir"]), 0) + r["count"]
assert by == {(0, "h2d"): 3, (1, "h2d"): 3, (1, "d2h"): 3}, by
PY
    FAKECUDA_DEVICES=2 run_app text shim "$T/symprog" devices 3
    show text
    grep -Eq '^==[0-9]+== dir +host kind +size +action +count +bytes +host time +host GB/s device$' "$WORK/text.err"
    grep -Eq '^==[0-9]+== h2d +pageable +64.0 KiB-256.0 KiB +pass +3 +192.0 KiB .* +0$' "$WORK/text.err"
    grep -Eq '^==[0-9]+== d2h +pageable +64.0 KiB-256.0 KiB +pass +3 +192.0 KiB .* +1$' "$WORK/text.err"
    grep -Eq '^==[0-9]+== device 1 +6 ' "$WORK/text.err"
    # one device: no device column (the table as before)
    run_app one shim "$T/symprog" local 2
    grep -Eq '^==[0-9]+== dir +host kind +size +action +count +bytes +host time +host GB/s$' "$WORK/one.err"
    # the log's records and the report
    FAKECUDA_DEVICES=2 PINSHIM_LOG="$WORK/d.jsonl" run_app log shim "$T/symprog" devices 3
    python3 "$ROOT/tests/report/check_schema.py" "$SCHEMA" "$WORK/d.jsonl"
    [ "$(grep -c '"type":"transfer".*"device":1,' "$WORK/d.jsonl")" = 6 ]
    [ "$(grep -c '"type":"transfer".*"device":0,' "$WORK/d.jsonl")" = 3 ]
    "$REPORT" "$WORK/d.jsonl" >"$WORK/report.txt" 2>/dev/null
    cat "$WORK/report.txt"
    grep -Eq '^ +[^ ]+ +0 +h2d +3 +0\.197 ' "$WORK/report.txt"
    grep -Eq '^ +[^ ]+ +1 +d2h +3 +0\.197 ' "$WORK/report.txt"
    grep -Eq '^ +[^ ]+ +1 +h2d +3 +0\.197 ' "$WORK/report.txt"
    "$REPORT" "$WORK/d.jsonl" --csv "$WORK/csv" 2>/dev/null
    grep -q '^host,device,dir,count,total_bytes,host_ns,processes$' "$WORK/csv/devices.csv"
    [ "$(grep -c ',1,' "$WORK/csv/devices.csv")" = 2 ]
}

@test "two devices, summary-only log: the report's device rows come from the summary's device field" {
    export PINSHIM_PIN_ON_REUSE=off PINSHIM_STAGE=off
    FAKECUDA_DEVICES=2 PINSHIM_LOG="$WORK/s.jsonl" PINSHIM_LOG_LEVEL=summary run_app log shim "$T/symprog" devices 2
    python3 "$ROOT/tests/report/check_schema.py" "$SCHEMA" "$WORK/s.jsonl"
    "$REPORT" "$WORK/s.jsonl" --csv "$WORK/csv" 2>/dev/null
    cat "$WORK/csv/devices.csv"
    grep -q ',0,h2d,2,131072,' "$WORK/csv/devices.csv"
    grep -q ',1,d2h,2,131072,' "$WORK/csv/devices.csv"
}
