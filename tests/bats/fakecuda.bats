#!/usr/bin/env bats
# The fake driver the other suites stand on behaves like the documented driver (its own self-test).
load common

@test "fake driver self-test passes" {
    run_app self noshim "$T/fake_selftest"
    show self
    [ "$(cat "$WORK/self.rc")" = 0 ]
    grep -Eq '^fake_selftest: [0-9]+ passed, 0 failed' "$WORK/self.out"
}
