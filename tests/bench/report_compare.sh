#!/bin/sh
# report_compare.sh: runs two pinshim-report scripts (for example the one of an earlier commit,
# from `git worktree add` or `git archive`, and this one) over the same inputs, every output mode
# (text, --csv, --html, --trace, --sqlite: tests/report/all_outputs.sh) and several selections,
# and says whether every output is byte-identical. The inputs: the hand-written logs in
# tests/report and synthetic job logs from tests/report/gen_logs.py (some files large enough that
# their medians come from the sketch).
#
# usage: tests/bench/report_compare.sh OLD_REPORT NEW_REPORT [WORKDIR]   (exit 0: identical)
set -eu
old="$1"
new="$2"
here="$(cd "$(dirname "$0")/../.." && pwd)"
logs="$here/tests/report"
work="${3:-$(mktemp -d)}"
mkdir -p "$work"
[ -d "$work/gen" ] || python3 "$logs/gen_logs.py" "$work/gen" --files 12 --records 120000
[ -d "$work/big" ] || python3 "$logs/gen_logs.py" "$work/big" --files 1 --records 150000 --seed 7
status=0
n=0
while IFS='|' read -r name args; do
    [ -n "$name" ] || continue
    n=$((n + 1))
    # shellcheck disable=SC2086  # the arguments are words
    "$logs/all_outputs.sh" "$old" "$work/old/$name" $args
    # shellcheck disable=SC2086
    "$logs/all_outputs.sh" "$new" "$work/new/$name" $args
    if diff -r "$work/old/$name" "$work/new/$name" >"$work/$name.diff"; then
        echo "same       $name"
    else
        echo "DIFFERENT  $name (see $work/$name.diff)"
        status=1
    fi
done <<CASES
unusual|$logs/unusual
unusual-device|$logs/unusual --device 1
unusual-window|$logs/unusual --since 0.000005 --until 0.9
unusual-rank|$logs/unusual --rank 1
fixtures|$logs/cluster $logs/future $logs/savings $logs/evil $logs/unusual --jobs 1
fixtures-jobs|$logs/cluster $logs/future $logs/savings $logs/evil $logs/unusual --jobs 2
gen|$work/gen --jobs 1
gen-jobs|$work/gen --jobs 2
gen-select|$work/gen --device 1,3 --since 0.5 --until 40 --jobs 1
gen-rank|$work/gen --rank 2-5 --host node0 --top 3 --jobs 1
big|$work/big --jobs 1
CASES
echo "$n cases in $work"
exit $status
