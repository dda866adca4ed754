#!/usr/bin/env bats
# scripts/pinshim-report on the hand-written logs in tests/report: tables whose numbers were
# computed by hand, several processes, bad lines skipped with FILE:LINE, exit status 2 for input
# it cannot use, an HTML page that escapes what logs say and renders in a browser, a Chrome trace.
load common
REPORT="$ROOT/scripts/pinshim-report"
LOGS="$ROOT/tests/report"

# report NAME ARGS...: stdout, stderr and exit status in $WORK/NAME.{out,err,rc}.
report() {
    local name="$1"
    shift
    local rc=0
    "$REPORT" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
    echo "$rc" >"$WORK/$name.rc"
    show "$name"
}

@test "report: one process's tables match the numbers computed by hand" {
    report one "$LOGS/cluster/rank0.jsonl"
    [ "$(cat "$WORK/one.rc")" = 0 ]
    [ ! -s "$WORK/one.err" ]
    o="$WORK/one.out"
    grep -q '^pinshim-report: 1 process from 1 log file (hosts: node1; ranks: 0)$' "$o"
    # sizes (MB): h2d pageable 1, 2, 3 MB; d2h pinned 4, 4 MB; h2d pinned 0.5 MB
    grep -Eq '^ +6\.000 +3 +2\.000 +2\.000 +1\.000 +3\.000 +1\.000  h2d pageable$' "$o"
    grep -Eq '^ +8\.000 +2 +4\.000 +4\.000 +4\.000 +4\.000 +0\.000  d2h pinned$' "$o"
    grep -Eq '^ +0\.500 +1 +0\.500 +0\.500 +0\.500 +0\.500 +0\.000  h2d pinned$' "$o"
    # host times (ns): 100k, 300k, 200k | 50k, 70k | 10k; total 730k
    grep -Eq '^ +82\.2 +600,000 +3 +200,000\.0 +200,000\.0 +100,000 +300,000 +100,000\.0  h2d pageable$' "$o"
    grep -Eq '^ +16\.4 +120,000 +2 +60,000\.0 +60,000\.0 +50,000 +70,000 +14,142\.1  d2h pinned$' "$o"
    grep -Eq '^ +1\.4 +10,000 +1 +10,000\.0 +10,000\.0 +10,000 +10,000 +0\.0  h2d pinned$' "$o"
    # device times exist for the two d2h pinned copies only: 80k and 90k
    grep -q '^\*\* Copy time by operation (device time of the copies device_timing sampled):$' "$o"
    grep -Eq '^ +100\.0 +170,000 +2 +85,000\.0 +85,000\.0 +80,000 +90,000 +7,071\.1  d2h pinned$' "$o"
    # the process: 6 copies, 14.5 MB in 730 us = 19.86 GB/s
    grep -Eq '^ +1001  0 +node1 +6 +14\.500 +730\.0 +19\.86 +0  complete +\./train$' "$o"
    # call sites: libtorch 400k of 730k ns
    grep -Eq '^ +54\.8 +400\.0 +2 +3\.000 +1  pageable 2 +libtorch_cuda\.so\+0x1a2b3c  at::native::copy_$' "$o"
    grep -Eq '^ +1  +150\.0  pin-hot-buffer  h2d pageable copies at libtorch_cuda\.so\+0x1a2b3c' "$o"
}

@test "report: several processes: totals, summary-only and killed processes, advice deduplicated" {
    report all "$LOGS/cluster"
    [ "$(cat "$WORK/all.rc")" = 0 ]
    o="$WORK/all.out"
    grep -q '^pinshim-report: 4 processes from 4 log files (hosts: node1, node2; ranks: 0, 1, 2, 3)$' "$o"
    # h2d pageable: 3 + 2 + 2 records (6 + 2 + 4 MB) and a summary row of 10 (20 MB): no distribution
    grep -Eq '^ +32\.000 +17 +1\.882 +- +- +- +-  h2d pageable$' "$o"
    grep -Eq '^ +20\.000 +10 +2\.000 +- +- +- +-  d2h pageable$' "$o"
    # d2h pinned: 50k, 70k (rank 0) and 40k (rank 1); 160k of 7,370k ns in all
    grep -Eq '^ +2\.2 +160,000 +3 +53,333\.3 +50,000\.0 +40,000 +70,000 +15,275\.3  d2h pinned$' "$o"
    grep -Eq '^ +54\.3 +4,000,000 +10 +400,000\.0 +- +- +- +-  d2h pageable$' "$o"
    grep -q "some processes logged only their summary" "$o"
    grep -Eq '^ +1002  1 +node1 +3 +6\.000 +240\.0 +25\.00 +1  complete +\./train$' "$o"
    grep -Eq '^ +2001  2 +node2 +2 +4\.000 +400\.0 +10\.00 +-  no summary \(killed\?\) +\./train$' "$o"
    grep -Eq '^ +2002  3 +node2 +20 +40\.000 +6,000\.0 +6\.67 +0  summary only +\./train$' "$o"
    # load_batch: rank 0 (1 record), rank 2 (2 records), rank 3 (summary site of 10)
    grep -Eq '^ +35\.3 +2,600\.0 +13 +27\.000 +3  pageable 13 +train\+0x4010  load_batch$' "$o"
    # the same advice from ranks 0 and 1 is one row: 2 processes, 150 + 50 us
    grep -Eq '^ +2 +200\.0  pin-hot-buffer  h2d pageable copies at libtorch' "$o"
    [ "$(grep -c 'h2d pageable copies at libtorch' "$o")" = 1 ]
}

@test "report: a corrupt, a truncated and an invalid line are reported with file and line, and skipped" {
    report all "$LOGS/cluster"
    e="$WORK/all.err"
    grep -q "^pinshim-report: $LOGS/cluster/rank1.jsonl:3: transfer record: field 'bytes' missing or not a non-negative integer; line skipped$" "$e"
    grep -q "^pinshim-report: $LOGS/cluster/rank1.jsonl:4: not valid JSON (.*); line skipped$" "$e"
    grep -q "^pinshim-report: $LOGS/cluster/killed.jsonl:4: truncated last line (the file ends inside a record); line skipped$" "$e"
    grep -q "^pinshim-report: $LOGS/cluster/killed.jsonl: pid 2001 rank 2 on node2 (./train) has no summary record: the process did not exit normally (killed?); using its 2 transfer records$" "$e"
    [ "$(wc -l <"$e")" = 4 ]
}

@test "report: files, folders and glob patterns; a file named twice is read once" {
    report glob "$LOGS/cluster/rank*.jsonl"
    grep -q '^pinshim-report: 2 processes from 2 log files' "$WORK/glob.out"
    report twice "$LOGS/cluster/rank0.jsonl" "$LOGS/cluster" "$LOGS/cluster/rank0.jsonl"
    grep -q '^pinshim-report: 4 processes from 4 log files' "$WORK/twice.out"
}

@test "report: input it cannot use is a clear message and exit status 2" {
    mkdir "$WORK/empty"
    report empty "$WORK/empty"
    [ "$(cat "$WORK/empty.rc")" = 2 ]
    grep -qx "pinshim-report: $WORK/empty: no \*.jsonl log in this folder" "$WORK/empty.err"
    report nomatch "$WORK/empty/*.jsonl"
    [ "$(cat "$WORK/nomatch.rc")" = 2 ]
    grep -qx "pinshim-report: $WORK/empty/\*.jsonl: no file matches" "$WORK/nomatch.err"
    report nofile "$WORK/absent.jsonl"
    [ "$(cat "$WORK/nofile.rc")" = 2 ]
    grep -qx "pinshim-report: $WORK/absent.jsonl: no such file or folder" "$WORK/nofile.err"
    report v2 "$LOGS/bad/format2.jsonl"
    [ "$(cat "$WORK/v2.rc")" = 2 ]
    grep -q "^pinshim-report: $LOGS/bad/format2.jsonl: log format 2; this pinshim-report reads format 1 only" "$WORK/v2.err"
    report other "$LOGS/bad/notalog.jsonl"
    [ "$(cat "$WORK/other.rc")" = 2 ]
    grep -q "^pinshim-report: $LOGS/bad/notalog.jsonl:1: not a pinshim log" "$WORK/other.err"
    report text "$LOGS/bad/notes.txt"
    [ "$(cat "$WORK/text.rc")" = 2 ]
    grep -q "^pinshim-report: $LOGS/bad/notes.txt:1: not a pinshim log (the first line is not a pinshim header" "$WORK/text.err"
    : >"$WORK/empty/zero.jsonl"
    report zero "$WORK/empty"
    [ "$(cat "$WORK/zero.rc")" = 2 ]
    grep -qx "pinshim-report: $WORK/empty/zero.jsonl: empty file, not a pinshim log" "$WORK/zero.err"
    # one bad file among good ones: every bad file named, no report
    report mixed "$LOGS/cluster" "$LOGS/bad"
    [ "$(cat "$WORK/mixed.rc")" = 2 ]
    [ ! -s "$WORK/mixed.out" ]
    grep -q 'format2.jsonl: log format 2' "$WORK/mixed.err"
    grep -q 'notalog.jsonl:1: not a pinshim log' "$WORK/mixed.err"
}

@test "report: HTML is one self-contained page; strings from logs are escaped" {
    report evil "$LOGS/evil" --html "$WORK/evil.html"
    [ "$(cat "$WORK/evil.rc")" = 0 ]
    [ ! -s "$WORK/evil.out" ]
    grep -qx "pinshim-report: wrote $WORK/evil.html" "$WORK/evil.err"
    h="$WORK/evil.html"
    ! grep -qi '<script' "$h" || false
    ! grep -qi '<img' "$h" || false
    ! grep -q '<b>host' "$h" || false
    ! grep -q '<i>kind' "$h" || false
    grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$h"
    grep -q '&lt;/td&gt;&lt;script&gt;alert(5)&lt;/script&gt; &amp; more' "$h"
    grep -q '0&quot;&gt;&lt;script&gt;alert(2)' "$h"
    grep -q 'data-kind="&lt;i&gt;kind&lt;/i&gt;"' "$h"
    # nothing fetched: no src/href attributes, no url(), no @import; the only URL is SVG's namespace
    ! grep -Eqi '<[^>]*[[:space:]](src|href)=|url\(|@import' "$h" || false
    [ -z "$(grep -oE 'https?://[^"]*' "$h" | grep -v '^http://www.w3.org/2000/svg$')" ]
}

@test "report: HTML charts: bandwidth from device or sync host time with the ceiling, bars by kind, timeline lanes" {
    report page "$LOGS/cluster" --html "$WORK/page.html" --text
    grep -q '^\*\* Copy sizes by operation' "$WORK/page.out"
    h="$WORK/page.html"
    # where the time went comes first
    [ "$(grep -o '<h2>[^<]*' "$h" | head -n 1)" = '<h2>Where the copy time went' ]
    grep -q 'id="where-time-went"' "$h"
    # one chart per direction: device-timed d2h pinned copies as circles, sync h2d pageable ones as squares
    grep -q '<svg class="chart" id="bandwidth-h2d"' "$h"
    grep -q '<svg class="chart" id="bandwidth-d2h"' "$h"
    grep -q '<g class="series" data-kind="pageable" data-source="host"' "$h"
    grep -q '<g class="series" data-kind="pinned" data-source="device"' "$h"
    ! grep -q 'data-kind="pinned" data-source="host"' "$h" || false    # async host time is no bandwidth
    grep -q '2 async copies without device timing are not drawn' "$h"
    grep -q 'copy size (bytes, log scale)' "$h"
    grep -q 'bandwidth (GB/s, log scale)' "$h"
    # the ceiling: measured for d2h (device-timed pinned copies), the default for h2d
    grep -q '<g class="ceiling" data-dir="d2h" data-source="device">' "$h"
    grep -q '<g class="ceiling" data-dir="h2d" data-source="default">' "$h"
    grep -q 'id="bytes-by-kind"' "$h"
    grep -q 'id="time-by-kind"' "$h"
    # h2d: 1+2+3 MB sync pageable (rank 0), 1 MB (rank 1), 2+2 MB (rank 2): bins, not one marker per copy
    [ "$(grep -o '<rect x="[0-9.]*" y="[0-9.]*" width="[0-9.]*" height="[0-9.]*"><title>h2d pageable' "$h" | wc -l)" -le 7 ]
    # timeline: a process row for each of the 3 processes with records, one lane per device and stream
    [ "$(grep -o '<g class="process-row"' "$h" | wc -l)" = 3 ]
    grep -q '>dev 0 0x1<' "$h"
    grep -q '>dev 1 0x1<' "$h"
    grep -q '<path class="copy" data-kind="pageable"' "$h"
    grep -q 'These logs have no per-sync records' "$h"
}

@test "report: the Chrome trace has one X event per transfer record, same ts and dur, and names its tracks" {
    report trace "$LOGS/cluster" --trace "$WORK/trace.json"
    [ "$(cat "$WORK/trace.rc")" = 0 ]
    python3 - "$WORK/trace.json" "$LOGS"/cluster/*.jsonl <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"]
# the records, read here on their own: lines that parse and have integer bytes
expected, starts = [], {}
for path in sys.argv[2:]:
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r["type"] == "header":
            pid, start = r["pid"], r["start_wall_ns"]
            starts[pid] = start
        elif r["type"] == "transfer" and isinstance(r.get("bytes"), int):
            expected.append((pid, start, r))
base = min(starts.values())
xs = [e for e in events if e["ph"] == "X"]
assert len(xs) == len(expected) == 11, (len(xs), len(expected))
got = {(e["pid"], e["args"]["seq"]): e for e in xs}
for pid, start, r in expected:
    e = got[(pid, r["seq"])]
    assert abs(e["ts"] - (start - base + r["t_ns"]) / 1e3) < 1e-6, (e, r)
    assert abs(e["dur"] - r["host_ns"] / 1e3) < 1e-6, (e, r)
    assert e["args"]["bytes"] == r["bytes"] and e["args"]["host_kind"] == r["host_kind"]
    for k in ("action", "entry", "site", "src_kind", "dst_kind"):
        assert e["args"][k] == r[k], (k, e, r)
meta = [e for e in events if e["ph"] == "M"]
names = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
assert names[1001] == "./train (rank 0, node1, pid 1001)", names
assert names[2002].startswith("./train (rank 3"), names
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
assert sorted(v for (p, t), v in threads.items() if p == 1001) == ["stream 0x1", "stream 0x2", "thread 1001"], threads
for e in xs:   # every X event sits on a named track
    assert (e["pid"], e["tid"]) in threads, e
    want = "stream " + e["args"]["stream"] if e["args"]["async"] else None
    assert want is None or threads[(e["pid"], e["tid"])] == want
PY
}

@test "report: the HTML renders in headless chromium: non-blank, chart colours drawn, SVG in the DOM, no script errors" {
    command -v chromium >/dev/null 2>&1 || skip "chromium is not installed (scripts/install-deps.sh installs it as root)"
    report page "$LOGS/cluster" --html "$WORK/page.html"
    flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
           --disable-component-update --disable-sync --enable-logging=stderr --v=0)
    timeout 30 chromium "${flags[@]}" --user-data-dir="$(mktemp -d "$WORK/chr.XXXXXX")" \
        --screenshot="$WORK/page.png" --window-size=1200,1600 "file://$WORK/page.html" 2>"$WORK/shot.err" || {
        cat "$WORK/shot.err"; false; }
    timeout 30 chromium "${flags[@]}" --user-data-dir="$(mktemp -d "$WORK/chr.XXXXXX")" \
        --dump-dom "file://$WORK/page.html" >"$WORK/dom.html" 2>"$WORK/dom.err" || { cat "$WORK/dom.err"; false; }
    ! grep -E 'CONSOLE|Uncaught' "$WORK/shot.err" "$WORK/dom.err" || false
    for kind in pageable pinned; do
        grep -q "<g class=\"series\" data-kind=\"$kind\"" "$WORK/dom.html"
        grep -q "<path class=\"copy\" data-kind=\"$kind\"" "$WORK/dom.html"
    done
    grep -q 'id="where-time-went"' "$WORK/dom.html"
    grep -q '<g class="ceiling"' "$WORK/dom.html"
    grep -q 'id="timeline"' "$WORK/dom.html"
    ! grep -qi '<script' "$WORK/page.html" || false
    python3 - "$WORK/page.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, head = 8, b"", None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        head = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
width, height, depth, ctype = head[:4]
assert depth == 8 and ctype in (2, 6), head
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), width * bpp
rows, prev, pos = [], bytearray(stride), 0
for _ in range(height):  # undo the PNG row filters
    f, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
    pos += 1 + stride
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line))
    prev = line
colours = set()
for line in rows[::4]:
    for i in range(0, stride, bpp * 2):
        colours.add(line[i:i + 3])
assert len(colours) > 10, "the page looks blank: %d colours" % len(colours)
for name, rgb in (("pageable red", b"\xd6\x27\x28"), ("pinned green", b"\x2c\xa0\x2c")):
    assert rgb in colours, "no %s pixel: the charts did not render" % name
print("%dx%d, %d colours" % (width, height, len(colours)))
PY
}

@test "report: end to end: the runner's log of the demo, read back: every copy in the tables and the trace" {
    LD_LIBRARY_PATH="$FAKE" "$ROOT/scripts/pinshim" --log "$WORK/logs" -- "$T/demo" >/dev/null 2>"$WORK/run.err"
    f=$(ls "$WORK"/logs/pinshim-*.jsonl)
    head -n 1 "$f" | grep -q '"type":"header"' ||
        skip "this build of libpinshim.so does not write per-transfer logs yet"
    report demo "$WORK/logs" --trace "$WORK/trace.json" --text
    [ "$(cat "$WORK/demo.rc")" = 0 ]
    [ ! -s "$WORK/demo.err" ] || [ "$(grep -vc 'wrote ' "$WORK/demo.err")" = 0 ]
    # demo: 5 sizes x 8 rounds x 4 copies (h2d/d2h, pageable/pinned)
    grep -Eq "^ +[0-9]+  na +$(hostname) +160 +" "$WORK/demo.out"
    [ "$(grep -c '"type":"transfer"' "$f")" = 160 ]
    python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; n=sum(x["ph"]=="X" for x in e); assert n==160, n' \
        "$WORK/trace.json"
}

@test "report: where the time went: savings from the logs' own pageable bandwidth, the ceiling, a fix per call site" {
    report save "$LOGS/savings"
    [ "$(cat "$WORK/save.rc")" = 0 ]
    o="$WORK/save.out"
    # 4 pass copies of 1 MiB in 200 us each: pageable 5.24 GB/s; 2 staged 64 MiB copies in 2 ms each would
    # have taken 25.6 ms that way; 3 registered 4 MiB copies in 100 us each, 2.4 ms
    grep -Eq '^ 1  staging +h2d +2 +134\.218 +4\.000 +25\.600  21\.600$' "$o"
    grep -Eq '^ 2  pin-on-reuse +h2d +3 +12\.583 +0\.300 +2\.400  2\.100$' "$o"
    grep -q 'pageable 5.24 GB/s from 4 pass copies of 1 MiB-4 MiB' "$o"
    # the ceiling: 8 MiB pinned copies device-timed at 160 us (52.43 GB/s); d2h from a sync copy's host time
    grep -Eq '^ h2d  52\.43  device$' "$o"
    grep -Eq '^ d2h  41\.94  host$' "$o"
    grep -q 'h2d: 90th percentile of 2 device-timed pinned copies of at least 1 MiB' "$o"
    # pinning the 4 MiB that passed through: 800 us now, 80 us at 52.43 GB/s
    grep -Eq '^ 3  pinning the rest +h2d +4 +4\.194 +0\.080 +0\.800  0\.720$' "$o"
    grep -Eq '^ +77\.4 +4\.000 +1\.440  train\+0x20  big +staged by the shim' "$o"
    grep -Eq '^ +15\.5 +0\.800 +0\.720  train\+0x10  load +pageable memory: pin or register the buffer' "$o"
    grep -Eq 'train\+0x30  reuse +registered by pin-on-reuse' "$o"
    grep -Eq 'train\+0x40  fast +pinned and async: nothing to fix' "$o"
    # the where table: device-timed async copies get a bandwidth, from device time
    grep -Eq '^ +0\.4 +0\.020 +2 +16\.777  52\.43  device  async  h2d pinned$' "$o"
}

@test "report: fields a later shim may write: py_site, pinned_gbps, sync records; a record in another key order" {
    report fut "$LOGS/future" --html "$WORK/fut.html" --trace "$WORK/fut.json" --text
    [ "$(cat "$WORK/fut.rc")" = 0 ]
    o="$WORK/fut.out"
    grep -Eq '^ +99\.2 +0\.600 +0\.432  train\.py:42 \(libtorch_cuda\.so\+0x1a2b3c  at::native::copy_\) +pageable memory' "$o"
    grep -Eq '^ h2d  25\.00  summary$' "$o"
    grep -Eq '^ d2h  26\.00  summary$' "$o"
    # records 1 (fast path) and 3 (json.loads: keys sorted) both counted
    grep -Eq '^ +4\.194 +2 +2\.097 +2\.097 +2\.097 +2\.097 +0\.000  h2d pageable$' "$o"
    # the summary's rate in another shape (pinned_gbps per device) is read too
    mkdir "$WORK/shape"
    sed -e 's/"link":\[{"device":0,"h2d_gbps":25.0,"d2h_gbps":26.0}\]/"pinned_gbps":{"0":{"h2d":30.5,"d2h":31}}/' \
        "$LOGS/future/pyfields.jsonl" >"$WORK/shape/p.jsonl"
    report shape "$WORK/shape"
    grep -Eq '^ h2d  30\.50  summary$' "$WORK/shape.out"
    grep -Eq '^ d2h  31\.00  summary$' "$WORK/shape.out"
    grep -q '>sync calls<' "$WORK/fut.html"
    ! grep -q 'These logs have no per-sync records' "$WORK/fut.html" || false
    python3 - "$WORK/fut.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
syncs = [e for e in events if e.get("cat") == "sync"]
assert [(e["name"], e["ts"], e["dur"]) for e in syncs] == [("cuStreamSynchronize", 1400.0, 250.0),
                                                             ("cuStreamSynchronize", 3100.0, 180.0)], syncs
copies = [e for e in events if e.get("cat") == "copy"]
assert [e["args"].get("py_site") for e in copies] == ["train.py:42", "train.py:42", "train.py:57"], copies
PY
}

@test "report: --rank, --pid, --host, --device and a time window select processes and copies" {
    report r0 "$LOGS/cluster" --rank 0
    grep -q '^pinshim-report: 1 process from 4 log files (hosts: node1; ranks: 0)$' "$WORK/r0.out"
    grep -q '^selection: rank 0$' "$WORK/r0.out"
    report r01 "$LOGS/cluster" --rank 0-1
    grep -q '^pinshim-report: 2 processes from 4 log files (hosts: node1; ranks: 0, 1)$' "$WORK/r01.out"
    report pid "$LOGS/cluster" --pid 2001,2002
    grep -q 'ranks: 2, 3)$' "$WORK/pid.out"
    report host "$LOGS/cluster" --host 'node2'
    grep -q '^pinshim-report: 2 processes from 4 log files (hosts: node2; ranks: 2, 3)$' "$WORK/host.out"
    report glob "$LOGS/cluster" --host 'node*' --rank 1,3
    grep -q '(hosts: node1, node2; ranks: 1, 3)$' "$WORK/glob.out"
    # device 1: rank 1's three records; the summary-only process cannot be split by device
    report dev "$LOGS/cluster" --device 1
    grep -q '^pinshim-report: 1 process from 4 log files (hosts: node1; ranks: 1)$' "$WORK/dev.out"
    grep -Eq '^ +1002  1 +node1 +3 +6\.000 +240\.0 ' "$WORK/dev.out"
    # 3.5 ms to 5.5 ms after the first start: rank 0's copies at 4 and 5 ms, rank 1's at 4.5 ms (its 4 ms + 0.5)
    report win "$LOGS/cluster" --since 0.0035 --until 0.0055
    grep -q '^selection: from 0.0035 s; until 0.0055 s$' "$WORK/win.out"
    grep -Eq '^ +100\.0 +0\.160 +3 +12\.000 .*  d2h pinned$' "$WORK/win.out"
    grep -q '^3 copies, ' "$WORK/win.out"
    report none "$LOGS/cluster" --rank 9
    [ "$(cat "$WORK/none.rc")" = 0 ]
    grep -q '^pinshim-report: 0 processes from 4 log files' "$WORK/none.out"
    report bad "$LOGS/cluster" --until 1 --since 2
    [ "$(cat "$WORK/bad.rc")" = 2 ]
    grep -q 'until must be later than --since' "$WORK/bad.err"
}

@test "report: --csv writes every table with raw bytes and ns, all rows" {
    report csv "$LOGS/cluster" --csv "$WORK/csv" --top 1
    [ "$(cat "$WORK/csv.rc")" = 0 ]
    [ ! -s "$WORK/csv.out" ]
    for t in where savings ceilings fixes syncs sizes host_times device_times processes sites advice; do
        [ -s "$WORK/csv/$t.csv" ] || { echo "no $t.csv"; false; }
    done
    grep -qx 'pid,rank,host,transfers,total_bytes,host_ns,gbps,failed_copies,status,program' "$WORK/csv/processes.csv"
    grep -qx '1001,0,node1,6,14500000,730000,19.863013698630137,0,complete,./train' "$WORK/csv/processes.csv"
    grep -q '^32000000,17,1882352.9411764706,,,,,h2d pageable$' "$WORK/csv/sizes.csv"
    # --top 1 cuts the text, not the CSV: all 5 sites
    [ "$(($(wc -l <"$WORK/csv/sites.csv") - 1))" = 5 ]
    grep -q '^h2d,55.0,default,' "$WORK/csv/ceilings.csv"
}

@test "report: --sqlite holds every selected record, processes with host and rank, and the summaries' rows" {
    report db "$LOGS/cluster" --sqlite "$WORK/r.db"
    [ "$(cat "$WORK/db.rc")" = 0 ]
    grep -qx "pinshim-report: wrote $WORK/r.db" "$WORK/db.err"
    [ -z "$(ls -A "$WORK" | grep pinshim-report)" ]           # the scratch folder is gone
    python3 - "$WORK/r.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda sql: db.execute(sql).fetchall()
assert q("SELECT count(*), sum(bytes), sum(host_ns) FROM transfers") == [(11, 24500000, 1370000)], q("SELECT count(*) FROM transfers")
assert q("SELECT process_id, host, rank, pid, status FROM processes ORDER BY process_id") == [
    (1, "node1", "0", 1001, "complete"), (2, "node1", "1", 1002, "complete"),
    (3, "node2", "2", 2001, "no summary (killed?)"), (4, "node2", "3", 2002, "summary only")]
assert q("SELECT count(*) FROM transfers WHERE process_id = 1 AND device_ns IS NOT NULL") == [(2,)]
assert q("SELECT wall_ns - t_ns FROM transfers WHERE process_id = 2 LIMIT 1") == [(1700000000000500000,)]
assert q("SELECT sum(count), sum(bytes) FROM summary_transfers WHERE process_id = 4") == [(20, 40000000)]
assert q("SELECT copies, bytes, host_ns FROM operations WHERE dir = 'h2d' AND host_kind = 'pageable'") == [(7, 12000000, 1200000)]
assert q("SELECT count(*) FROM advice") == [(3,)]
assert q("SELECT value FROM meta WHERE key = 'log_format'") == [("1",)]
PY
    report db0 "$LOGS/cluster" --sqlite "$WORK/r.db" --rank 0 --text      # replaces the file
    python3 -c 'import sqlite3,sys; assert sqlite3.connect(sys.argv[1]).execute("select count(*) from transfers").fetchone() == (6,)' "$WORK/r.db"
    grep -q '^pinshim-report: 1 process' "$WORK/db0.out"
}

@test "report: the tables do not depend on the order the logs are merged in (device times of one operation in several files)" {
    # the d2h pinned async copies of cluster/ and future/ are device-timed in both: merging them
    # once changed the first file's bucket entry, which the where table reads afterwards
    report fwd "$LOGS/cluster" "$LOGS/future" "$LOGS/savings" "$LOGS/evil" --jobs 1 --csv "$WORK/fwd" --text
    report back "$LOGS/evil" "$LOGS/savings" "$LOGS/future" "$LOGS/cluster" --jobs 1 --csv "$WORK/back" --text
    diff "$WORK/fwd.out" "$WORK/back.out"
    diff -r "$WORK/fwd" "$WORK/back"
    # device-timed: 4 + 4 MB in 80 + 90 us (cluster), 4.194 MB in 200 us (future): 32.96 GB/s
    grep -Eq '^ +1\.3 +0\.165 +4 +16\.194 +32\.96  device  async +d2h pinned$' "$WORK/fwd.out"
}

@test "report: many files on several cores give the tables one core gives; medians from the sketch are marked" {
    python3 "$LOGS/gen_logs.py" "$WORK/gen" --files 6 --records 30000
    report one "$WORK/gen" --jobs 1 --csv "$WORK/csv1"
    report three "$WORK/gen" --jobs 3 --csv "$WORK/csv3"
    [ "$(cat "$WORK/one.rc")" = 0 ] && [ "$(cat "$WORK/three.rc")" = 0 ]
    diff -r "$WORK/csv1" "$WORK/csv3"
    report text1 "$WORK/gen" --jobs 1
    report text3 "$WORK/gen" --jobs 3
    diff "$WORK/text1.out" "$WORK/text3.out"
    grep -q '^pinshim-report: 6 processes from 6 log files (hosts: node0; ranks: 0, 1, 2, 3, 4, 5)$' "$WORK/text1.out"
    grep -q '^30,000 copies, ' "$WORK/text1.out"
    # 5,000 distinct host times per operation: their medians come from the sketch, and say so
    grep -Eq '^ .* ~[0-9,.]+ .*  h2d pageable$' "$WORK/text1.out"
    grep -q 'Medians marked ~ are read from a bounded sketch (within 1.6 %); all other figures are exact.' "$WORK/text1.out"
    ! grep -q '~' "$WORK/one.out" || false
    # every copy accounted for, exactly
    python3 - "$WORK/gen" "$WORK/csv1/host_times.csv" <<'PY'
import csv, glob, json, sys
count = total = 0
for path in glob.glob(sys.argv[1] + "/*.jsonl"):
    for line in open(path):
        r = json.loads(line)
        if r["type"] == "transfer":
            count += 1
            total += r["host_ns"]
rows = list(csv.DictReader(open(sys.argv[2])))
assert sum(int(r["count"]) for r in rows) == count == 30000
assert sum(int(r["total_ns"]) for r in rows) == total
PY
}

@test "report: the fast path and json.loads read a transfer line alike" {
    mkdir "$WORK/slow"
    python3 - "$LOGS/cluster/rank0.jsonl" "$WORK/slow/rank0.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        out.write(json.dumps(r, sort_keys=True) + "\n")   # another key order: no fast path
PY
    report fast "$LOGS/cluster/rank0.jsonl" --csv "$WORK/fast" --trace "$WORK/fast.json"
    report slow "$WORK/slow/rank0.jsonl" --csv "$WORK/slowcsv" --trace "$WORK/slow.json"
    diff -r "$WORK/fast" "$WORK/slowcsv"
    python3 -c 'import json,sys; a,b=(json.load(open(p))["traceEvents"] for p in sys.argv[1:]); assert a==b' \
        "$WORK/fast.json" "$WORK/slow.json"
}

@test "report: every output is the same through the fast path and through json.loads alone, on unusual records" {
    # unusual/mixed.jsonl: escaped strings, invalid UTF-8, missing optional and extra unknown fields,
    # other key orders, nulls, CRLF and trailing blanks, corrupt lines, zero-byte and zero-time
    # copies, copies spanning many timeline bins, two processes in one file, a truncated last line
    u="$LOGS/unusual"
    # the switch works: with it every line is a json.loads line, without it the shim's lines are not
    python3 - "$ROOT/scripts" "$u/mixed.jsonl" <<'PY2'
import os, sys
sys.path.insert(0, sys.argv[1])
from pinshim_report import logs
def fast_rows():
    with open(sys.argv[2], "rb") as f:
        return sum(1 for rows, _, _, _ in logs.row_chunks(f) for r in rows if r[logs.T_NS])
os.environ.pop(logs.JSON_ONLY_ENV, None)
assert fast_rows() > 50, fast_rows()
os.environ[logs.JSON_ONLY_ENV] = "1"
assert fast_rows() == 0, fast_rows()
PY2
    # and a log long enough that its copy times are counted in the sketch's buckets
    python3 "$LOGS/gen_logs.py" "$WORK/gen" --files 1 --records 45000
    for args in "$u" "$u --device 1" "$u --since 0.000005 --until 0.9" "$u --rank 1" \
                "$u $LOGS/cluster $LOGS/future --jobs 2" "$WORK/gen"; do
        # shellcheck disable=SC2086
        "$LOGS/all_outputs.sh" "$REPORT" "$WORK/fast" $args
        # shellcheck disable=SC2086
        PINSHIM_REPORT_JSON_ONLY=1 "$LOGS/all_outputs.sh" "$REPORT" "$WORK/json" $args
        diff -r "$WORK/fast" "$WORK/json"
        rm -r "$WORK/fast" "$WORK/json"
    done
    "$REPORT" "$WORK/gen" --progress never >"$WORK/gen.out"
    grep -q 'Medians marked ~ are read from a bounded sketch' "$WORK/gen.out"
    "$LOGS/all_outputs.sh" "$REPORT" "$WORK/fast" "$u"
    [ "$(cat "$WORK/fast/text.rc")" = 0 ] && [ "$(cat "$WORK/fast/files.rc")" = 0 ]
    # 61 + 2 copies read; the corrupt lines named, each once, with their line numbers
    grep -q '^63 copies, ' "$WORK/fast/text.out"
    e="$WORK/fast/text.err"
    grep -q "^pinshim-report: $u/mixed.jsonl:17: not valid JSON (Expecting value: line 2 column 1 (char 54)); line skipped$" "$e"
    grep -q "^pinshim-report: $u/mixed.jsonl:18: not a pinshim record (no \"type\"); line skipped$" "$e"
    grep -q "^pinshim-report: $u/mixed.jsonl:19: transfer record: field 'bytes' missing or not a non-negative integer; line skipped$" "$e"
    grep -q "^pinshim-report: $u/mixed.jsonl:20: transfer record: field 'host_ns' missing or not a non-negative integer; line skipped$" "$e"
    grep -q "^pinshim-report: $u/mixed.jsonl:76: truncated last line (the file ends inside a record); line skipped$" "$e"
    [ "$(grep -c 'line skipped$' "$e")" = 5 ]
    # a number with a leading zero is not JSON: the fast path refuses it as json.loads does
    mkdir "$WORK/zero"
    { head -n 4 "$u/mixed.jsonl"; sed -n 4p "$u/mixed.jsonl" | sed 's/"bytes":4096/"bytes":04096/'; } >"$WORK/zero/z.jsonl"
    report zero "$WORK/zero"
    grep -q "^pinshim-report: $WORK/zero/z.jsonl:5: not valid JSON (Expecting ',' delimiter: line 1 column 102 (char 101)); line skipped$" "$WORK/zero.err"
    grep -q '^1 copies, ' "$WORK/zero.out"
}

@test "report: at scale the HTML page stays small (bins, not one element per copy) and memory stays flat" {
    python3 "$LOGS/gen_logs.py" "$WORK/small" --files 4 --records 4000
    python3 "$LOGS/gen_logs.py" "$WORK/large" --files 4 --records 120000
    # peak memory of the report's processes, from the kernel's rusage (kB)
    peak() { python3 -c 'import resource,subprocess,sys; subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"; }
    small=$(peak "$REPORT" "$WORK/small" --jobs 1 --html "$WORK/small.html")
    large=$(peak "$REPORT" "$WORK/large" --jobs 1 --html "$WORK/large.html")
    echo "peak kB: small $small, large $large"
    [ "$large" -lt $((small + 40000)) ]
    s=$(wc -c <"$WORK/small.html")
    l=$(wc -c <"$WORK/large.html")
    echo "html bytes: small $s, large $l"
    [ "$l" -lt 1500000 ]
    [ "$l" -lt $((s * 3)) ]
    [ "$(grep -o '<circle' "$WORK/large.html" | wc -l)" -lt 2000 ]
}

@test "report: a progress line on stderr when asked, none when not" {
    python3 "$LOGS/gen_logs.py" "$WORK/gen" --files 2 --records 2000
    report on "$WORK/gen" --progress always --jobs 1
    grep -Eq '^pinshim-report: read [0-9.]+ of [0-9.]+ MB \(100 %\), 2 of 2 files, ' "$WORK/on.err"
    report off "$WORK/gen" --progress never
    [ ! -s "$WORK/off.err" ]
    report auto "$WORK/gen"                  # quick: no progress line
    [ ! -s "$WORK/auto.err" ]
}

@test "report: the log format's JSON Schema holds for real logs and the fixtures, and rejects broken records" {
    schema="$ROOT/scripts/pinshim_report/pinshim-log-format-1.schema.json"
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$schema"
    "$REPORT" --schema | cmp - "$schema"
    # a real log: the demo under the shim, every copy logged, some device-timed
    LD_LIBRARY_PATH="$FAKE" PINSHIM_DEVICE_TIMING=on PINSHIM_DEVICE_TIMING_EVERY=4 \
        "$ROOT/scripts/pinshim" --log "$WORK/logs" -- "$T/demo" >/dev/null 2>&1
    grep -q '"device_ns":' "$WORK"/logs/*.jsonl
    python3 "$LOGS/gen_logs.py" "$WORK/gen" --files 1 --records 500
    python3 "$LOGS/check_schema.py" "$schema" "$WORK"/logs/*.jsonl "$WORK"/gen/*.jsonl "$LOGS"/savings/*.jsonl \
        "$LOGS"/future/*.jsonl "$LOGS/cluster/rank0.jsonl" "$LOGS/cluster/summaryonly.jsonl"
    # broken records are invalid, each of them
    cat >"$WORK/broken.jsonl" <<'JSONL'
{"type":"header","format":2,"tool":"pinshim","version":"0.1.0","pid":1,"host":"h","rank":"0","start_wall_ns":1,"start_mono_ns":1}
{"type":"transfer","seq":1,"t_ns":1,"host_ns":1,"entry":"e","dir":"h2d","bytes":"big","src_kind":"pageable","dst_kind":"device","host_kind":"pageable","async":false,"stream":"0x1","device":0,"action":"pass","tid":1,"site":null,"func":null}
{"type":"transfer","seq":1,"t_ns":1,"host_ns":1,"entry":"e","dir":"sideways","bytes":1,"src_kind":"pageable","dst_kind":"device","host_kind":"pageable","async":false,"stream":"0x1","device":0,"action":"pass","tid":1,"site":null,"func":null}
{"type":"transfer","seq":1,"t_ns":1,"host_ns":-5,"entry":"e","dir":"h2d","bytes":1,"src_kind":"pageable","dst_kind":"device","host_kind":"pageable","async":false,"stream":"0x1","device":0,"action":"pass","tid":1,"site":null,"func":null}
{"type":"transfer","seq":1,"t_ns":1,"host_ns":1,"entry":"e","dir":"h2d","bytes":1,"src_kind":"pageable","dst_kind":"device","host_kind":"pageable","async":"no","stream":"0x1","device":0,"action":"pass","tid":1,"site":null,"func":null}
{"type":"summary","pid":1,"program":"p","version":"0.1.0","transfers":[{"dir":"h2d"}],"dropped":0}
JSONL
    python3 "$LOGS/check_schema.py" --invalid "$schema" "$WORK/broken.jsonl"
}

@test "report: logs of several hosts: the same pid on two hosts stays two processes, with host and rank" {
    mkdir "$WORK/hosts"
    cp "$LOGS/cluster/rank0.jsonl" "$WORK/hosts/a.jsonl"
    sed -e 's/"host":"node1","rank":"0"/"host":"node9","rank":"8"/' "$LOGS/cluster/rank0.jsonl" >"$WORK/hosts/b.jsonl"
    report hosts "$WORK/hosts" --trace "$WORK/hosts.json" --text
    grep -q '^pinshim-report: 2 processes from 2 log files (hosts: node1, node9; ranks: 0, 8)$' "$WORK/hosts.out"
    grep -Eq '^ +1001  0 +node1 +6 ' "$WORK/hosts.out"
    grep -Eq '^ +1001  8 +node9 +6 ' "$WORK/hosts.out"
    grep -Eq '^ +54\.8 +800\.0 +4 +6\.000 +2  pageable 4 +libtorch_cuda\.so\+0x1a2b3c  at::native::copy_$' "$WORK/hosts.out"
    python3 - "$WORK/hosts.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
assert names == {1001: "./train (rank 0, node1, pid 1001)", 1001 + (1 << 22): "./train (rank 8, node9, pid 1001)"}, names
assert sorted({e["pid"] for e in events if e["ph"] == "X"}) == sorted(names)
PY
}

@test "report and runner: --version gives the shim's PINSHIM_VERSION" {
    v=$(sed -n 's/^#define PINSHIM_VERSION "\(.*\)"$/\1/p' "$ROOT/include/pinshim.h")
    [ -n "$v" ]
    [ "$("$REPORT" --version)" = "pinshim-report $v (reads log format 1)" ]
    [ "$("$ROOT/scripts/pinshim" --version)" = "pinshim $v" ]
}
