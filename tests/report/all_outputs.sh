#!/bin/sh
# all_outputs.sh: every output pinshim-report writes for one input, into one folder, so that two
# runs (two versions of the report, or the fast path and PINSHIM_REPORT_JSON_ONLY=1) can be
# compared with diff -r: the text tables (stdout, stderr, exit status), --csv, --html, --trace,
# and --sqlite as an SQL dump (the database file itself holds page layout that may differ); no
# progress line (it depends on timing).
#
# usage: all_outputs.sh REPORT OUTDIR [REPORT ARGUMENTS: logs, filters, --jobs...]
set -eu
report="$1"
out="$2"
shift 2
mkdir -p "$out"
rc=0
"$report" --progress never "$@" >"$out/text.out" 2>"$out/text.err" || rc=$?
echo "$rc" >"$out/text.rc"
rc=0
"$report" --progress never "$@" --csv "$out/csv" --html "$out/page.html" --trace "$out/trace.json" --sqlite "$out/db.sqlite" \
    >"$out/files.out" 2>"$out/files.err" || rc=$?
echo "$rc" >"$out/files.rc"
if [ -f "$out/db.sqlite" ]; then
    python3 -c 'import sqlite3, sys
for line in sqlite3.connect(sys.argv[1]).iterdump():
    print(line)' "$out/db.sqlite" >"$out/db.sql"
    rm "$out/db.sqlite"
fi
# the file names written, which name the output folder, are the same relative to it
sed -i "s#$out#OUT#g" "$out/files.err"
