#!/usr/bin/env bash
# run.sh: differential fuzzing. Runs build/tests/fuzzprog for each seed without the shim and with it
# (LD_PRELOAD=build/libpinshim.so) under each policy, and compares the outputs line for line: any
# difference (a return code, a hash of bytes read back, a missing line after a crash, the exit
# status) is a divergence. Prints the first differing line with the seed and policy; exits 1 if
# there was any divergence, 2 on a usage error or when the program misbehaves without the shim.
#
#   tests/fuzz/run.sh [options] [SEED|FIRST-LAST ...]
#     --driver fake|real  the fake driver in build/fakecuda (default) or the system's libcuda
#     --seconds N         stop starting new seeds after N seconds; with no seeds, run 1, 2, 3, ...
#     --out DIR           where outputs go (default: a temporary folder): the report (report.txt)
#                         and the outputs of diverging or broken seeds; --keep-all keeps every seed's
#     --policies LIST     comma list of default, aggressive (default: both); none: no run with the
#                         shim (with --twice: only check that the fuzzer itself is deterministic)
#     --ops N             operations per seed (default 300); --from S: first seed with --seconds
#     --twice             also run each seed twice without the shim (checks the fuzzer itself)
#     --fuzz-args "..."   more fuzzprog options (--isolate, --probes LIST, --budget-mb M,
#                         --devices N)
#     --timeout N         seconds one run may take (default 180)
#     --with-env "K=V ..." more environment for the runs with the shim only (e.g. PINSHIM_GUARD=warn)
# Run from anywhere; it finds the repository from its own path. On a machine that cannot build
# the shim, carry build/ (libpinshim.so and tests/fuzzprog); fuzzprog is rebuilt with gcc if absent.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PROG="$ROOT/build/tests/fuzzprog"
SHIM="$ROOT/build/libpinshim.so"
driver=fake seconds=0 out="" policies=default,aggressive ops=300 from=1 twice=0 fuzz_args=""
per_run=180 with_env="" keep_all=0
seeds=()

while [ $# -gt 0 ]; do
    case "$1" in
    --driver) driver="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --policies) policies="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --from) from="$2"; shift 2 ;;
    --twice) twice=1; shift ;;
    --keep-all) keep_all=1; shift ;;
    --fuzz-args) fuzz_args="$2"; shift 2 ;;
    --timeout) per_run="$2"; shift 2 ;;
    --with-env) with_env="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) seeds+=("$1"); shift ;;
    esac
done
case "$driver" in fake|real) ;; *) echo "run.sh: --driver is fake or real" >&2; exit 2 ;; esac
if [ ${#seeds[@]} -eq 0 ] && [ "$seconds" -le 0 ]; then
    echo "run.sh: give seeds or --seconds (see --help)" >&2
    exit 2
fi

if [ ! -x "$PROG" ]; then # e.g. only the shim was carried: the fuzzer needs nothing but cuda.h and gcc
    mkdir -p "$(dirname "$PROG")"
    gcc -std=gnu11 -O1 -g -pthread -I"$ROOT/tests/progs" -I"${CUDA_HOME:-/usr/local/cuda}/include" \
        "$ROOT"/tests/fuzz/*.c -o "$PROG" -ldl || { echo "run.sh: cannot build $PROG" >&2; exit 2; }
fi
[ -f "$SHIM" ] || { echo "run.sh: no $SHIM (run make)" >&2; exit 2; }
if [ "$driver" = fake ]; then
    [ -f "$ROOT/build/fakecuda/libcuda.so.1" ] || { echo "run.sh: no fake driver (make test-build)" >&2; exit 2; }
    export LD_LIBRARY_PATH="$ROOT/build/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export FAKECUDA_GBPS="${FAKECUDA_GBPS:-50}"
fi

# Policies: what the shim is told, as environment assignments. "aggressive" makes every copy of
# 4 KiB or more stage, registers every tracked buffer at its first copy, and keeps the pool and the
# registration budget small so both fill up and evict all the time.
policy_env() {
    case "$1" in
    default) echo "PINSHIM_STRICT=on" ;;
    aggressive) echo "PINSHIM_STRICT=on PINSHIM_REGISTER_AFTER=1 PINSHIM_TRACK_MIN_BYTES=4096" \
        "PINSHIM_STAGE_MIN_BYTES=4096 PINSHIM_STAGE_D2H_MIN_BYTES=4096 PINSHIM_REGISTER_MAX_BYTES=16M" \
        "PINSHIM_STAGE_CHUNK_BYTES=256K PINSHIM_POOL_SLAB_BYTES=1M PINSHIM_POOL_MAX_BYTES=2M" \
        "PINSHIM_POOL_GROW_INLINE=on PINSHIM_GUARD=off" ;;
    *) echo "run.sh: unknown policy $1" >&2; exit 2 ;;
    esac
}
policy_list=()
[ "$policies" = none ] || IFS=, read -r -a policy_list <<<"$policies"
for p in ${policy_list[@]+"${policy_list[@]}"}; do policy_env "$p" >/dev/null || exit 2; done

tmp_out=0
if [ -z "$out" ]; then
    out="$(mktemp -d "${TMPDIR:-/tmp}/pinshim-fuzz.XXXXXX")"
    tmp_out=1
fi
mkdir -p "$out" || exit 2
: >"$out/report.txt"
say() { echo "$@" | tee -a "$out/report.txt"; }

# one_run NAME PRELOAD ENV... : fuzzprog's stdout and exit status in $out/NAME.out, stderr in .err
one_run() {
    local name="$1" preload="$2"
    shift 2
    env "$@" LD_PRELOAD="$preload" timeout -k 10 "$per_run" "$PROG" --ops "$ops" $fuzz_args "$seed" \
        >"$out/$name.out" 2>"$out/$name.err"
    echo "exit $?" >>"$out/$name.out"
}

# first_difference A B: "LINE<TAB>line of A<TAB>line of B" for the first line that differs
first_difference() {
    awk 'NR == FNR { a[FNR] = $0; n = FNR; next }
         !(FNR in a) || a[FNR] != $0 {
             printf "%d\t%s\t%s\n", FNR, (FNR in a) ? a[FNR] : "(end of output)", $0
             found = 1
             exit
         }
         { m = FNR }
         END { if (!found && n > m) printf "%d\t%s\t%s\n", m + 1, a[m + 1], "(end of output)" }' "$1" "$2"
}

divergences=0 broken=0 runs=0 done_seeds=0
start=$(date +%s)
report() { # report SEED POLICY FILE_WITHOUT FILE_WITH
    local d line without with
    d="$(first_difference "$3" "$4")"
    [ -z "$d" ] && return 0
    IFS=$'\t' read -r line without with <<<"$d"
    say "DIVERGENCE seed $1 policy $2 line $line"
    say "  without shim: $without"
    say "  with shim:    $with"
    say "  outputs: $3 $4"
    return 1
}

run_seed() {
    local tag="seed$seed"
    one_run "$tag.plain" ""
    runs=$((runs + 1))
    if ! tail -1 "$out/$tag.plain.out" | grep -qx 'exit 0'; then
        say "BROKEN seed $seed: without the shim: $(tail -2 "$out/$tag.plain.out" | head -1)" \
            "($(tail -1 "$out/$tag.plain.out")), see $out/$tag.plain.err"
        broken=$((broken + 1))
        return
    fi
    if [ "$twice" = 1 ]; then
        one_run "$tag.plain2" ""
        runs=$((runs + 1))
        report "$seed" "none (twice without the shim: the fuzzer is not deterministic)" \
            "$out/$tag.plain.out" "$out/$tag.plain2.out" || broken=$((broken + 1))
    fi
    local bad=0 p
    for p in ${policy_list[@]+"${policy_list[@]}"}; do
        # shellcheck disable=SC2046 # the policy is a list of assignments
        one_run "$tag.$p" "$SHIM" $(policy_env "$p") $with_env
        runs=$((runs + 1))
        report "$seed" "$p" "$out/$tag.plain.out" "$out/$tag.$p.out" || { bad=1; divergences=$((divergences + 1)); }
    done
    if [ "$keep_all" = 0 ] && [ "$bad" = 0 ]; then
        rm -f "$out/$tag".*
    fi
}

time_left() {
    [ "$seconds" -le 0 ] || [ $(($(date +%s) - start)) -lt "$seconds" ]
}

if [ ${#seeds[@]} -eq 0 ]; then
    seed="$from"
    while time_left; do
        run_seed
        done_seeds=$((done_seeds + 1))
        seed=$((seed + 1))
    done
else
    for spec in "${seeds[@]}"; do
        first="${spec%-*}" last="${spec#*-}"
        for ((seed = first; seed <= last; seed++)); do
            time_left || break 2
            run_seed
            done_seeds=$((done_seeds + 1))
        done
    done
fi

say "fuzz: driver $driver, $done_seeds seeds (last $((seed - 1))), $runs runs, $divergences divergences," \
    "$broken broken, $(($(date +%s) - start)) s; outputs in $out"
if [ "$tmp_out" = 1 ] && [ "$keep_all" = 0 ] && [ "$divergences" = 0 ] && [ "$broken" = 0 ]; then
    rm -rf "$out"
fi
[ "$broken" -gt 0 ] && exit 2
[ "$divergences" -gt 0 ] && exit 1
exit 0
