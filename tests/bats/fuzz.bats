#!/usr/bin/env bats
# Differential fuzzing (tests/fuzz): seeded random programs of host allocations, copies through every
# entry point and synchronizations print the same return codes and the same hashes of the bytes they
# read back with and without the shim. Fixed seeds, about 300 operations each, under a minute in all.
load common

# fuzz NAME RUN.SH-ARGS...: runs tests/fuzz/run.sh on the fake driver, outputs under $WORK/NAME;
# its report in $WORK/NAME.log (printed, so a failing test shows the first differing line).
fuzz() {
    local name="$1"
    shift
    set +e
    "$ROOT/tests/fuzz/run.sh" --driver fake --out "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1
    echo $? >"$WORK/$name.rc"
    set -e
    cat "$WORK/$name.log"
}

@test "fuzzer: the same seed prints the same lines twice without the shim" {
    fuzz twice --policies none --twice --keep-all 101-103
    [ "$(cat "$WORK/twice.rc")" = 0 ]
    grep -q '^fuzz: driver fake, 3 seeds' "$WORK/twice.log"
    grep -q '^fuzz: seed 101 ops 300 ' "$WORK/twice/seed101.plain.out"
}

@test "fuzzer: a different return code with the shim is reported with its seed and line, status 1" {
    # only the runs with the shim get FAKECUDA_FAIL: the program's own cuMemHostRegister fails there
    fuzz broken --policies default --with-env FAKECUDA_FAIL=register 3
    [ "$(cat "$WORK/broken.rc")" = 1 ]
    grep -q '^DIVERGENCE seed 3 policy default line ' "$WORK/broken.log"
    grep -Eq '^  without shim: [0-9]+ register h[0-9]+ .* -> 0$' "$WORK/broken.log"
    grep -Eq '^  with shim: +[0-9]+ register h[0-9]+ .* -> 2$' "$WORK/broken.log"
}

@test "default policy: 6 seeds, identical with and without the shim" {
    fuzz default --policies default 1-3 5-7
    [ "$(cat "$WORK/default.rc")" = 0 ]
    grep -q ' 6 seeds .* 0 divergences, 0 broken' "$WORK/default.log"
}

# The probes ask the driver what the program's pageable buffers are (cuPointerGetAttribute,
# cuMemHostGetFlags, cuMemHostUnregister): buffers the shim registered must read pageable.
@test "probes of pointer attributes, host flags and unregister: 6 seeds identical under both policies" {
    fuzz probes --fuzz-args "--probes all" 1-6
    [ "$(cat "$WORK/probes.rc")" = 0 ]
    grep -q ' 6 seeds .* 0 divergences, 0 broken' "$WORK/probes.log"
}

# Seeds whose cuMemHostGetFlags of the program's small pinned allocations read 3 (PORTABLE) with the
# shim and 2 without on an H100 (driver 580), under 1 MiB pool slabs: the driver carves allocations
# under 2 MiB from shared blocks that report the opener's flags (the fake models it); the pool's
# slabs are never smaller than 2 MiB now.
@test "aggressive policy with probes: the pool's pinned slabs never share the driver's small blocks" {
    fuzz sharing --policies aggressive --fuzz-args "--probes all" 4 7 18 21
    [ "$(cat "$WORK/sharing.rc")" = 0 ]
    grep -q ' 4 seeds .* 0 divergences, 0 broken' "$WORK/sharing.log"
}

# Seeds whose copies started inside a neighbour's registration (or ran past the end of their own,
# cut short by a neighbour's) with the shim before issue #10's fix: each failed in 4 runs of 4.
@test "aggressive policy (stage and register everything, small pool and budget): 6 seeds identical" {
    fuzz aggressive --policies aggressive 16 19 21 26 33 38
    [ "$(cat "$WORK/aggressive.rc")" = 0 ]
    grep -q ' 6 seeds .* 0 divergences, 0 broken' "$WORK/aggressive.log"
}

# Seeds 24 and 25 stage a D2H copy into an anonymous mapping, then mremap it: the shim's huge-page
# advice (stage_hugepages) once covered only the 2 MiB blocks inside the copy, which split the
# mapping into several kernel mappings, and mremap of the whole range failed with EFAULT where it
# succeeds without the shim. The advice now covers a whole allocation or nothing.
@test "a mapping a staged copy wrote into can still be mremapped (seeds 24, 25), stage_hugepages off and on" {
    fuzz mremap 24 25
    [ "$(cat "$WORK/mremap.rc")" = 0 ]
    grep -q ' 2 seeds .* 0 divergences, 0 broken' "$WORK/mremap.log"
    fuzz mremap_huge --with-env "PINSHIM_STAGE_HUGEPAGES=on" 24 25
    [ "$(cat "$WORK/mremap_huge.rc")" = 0 ]
    grep -q ' 2 seeds .* 0 divergences, 0 broken' "$WORK/mremap_huge.log"
}

@test "no heap neighbours (every heap block padded with a page each side), both policies: 10 seeds identical" {
    fuzz isolate --fuzz-args --isolate 11-20
    [ "$(cat "$WORK/isolate.rc")" = 0 ]
    grep -q " 10 seeds .* 0 divergences, 0 broken" "$WORK/isolate.log"
}
