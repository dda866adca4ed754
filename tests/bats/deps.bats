#!/usr/bin/env bats
# scripts/install-deps.sh, the step `make demo` and `make test` run first, checked against a PATH
# and include path that lack the packages (a clean machine is not available to the tests): as a
# user it names the missing Debian packages and the apt-get line; as root it installs them with
# apt-get (a stand-in here that records its calls and puts the files in place) and checks again.
load common
DEPS="$ROOT/scripts/install-deps.sh"

# stubs UID [apt-get]: a bin folder with `id -u` answering UID and, if asked, an apt-get stand-in
# that logs its arguments to $WORK/apt.log and "installs" packages into the stub folders.
stubs() {
    mkdir -p "$WORK/bin" "$WORK/include" "$WORK/cuda/include"
    : >"$WORK/cuda/include/cuda.h"
    printf '#!/bin/sh\necho %s\n' "$1" >"$WORK/bin/id"
    if [ "${2:-}" = apt-get ]; then
        cat >"$WORK/bin/apt-get" <<STUB
#!/bin/sh
echo "apt-get \$*" >>"$WORK/apt.log"
[ "\$1" = install ] || exit 0
for p in "\$@"; do
    case "\$p" in
        libc6-dev) : >"$WORK/include/stdio.h" ;;
        gcc) /bin/ln -sf /bin/true "$WORK/bin/cc" ;;
        make|bats|python3|git|chromium|clang|valgrind|g++) /bin/ln -sf /bin/true "$WORK/bin/\$p" ;;
        binutils) /bin/ln -sf /bin/true "$WORK/bin/readelf"; /bin/ln -sf /bin/true "$WORK/bin/addr2line" ;;
    esac
done
STUB
    fi
    chmod +x "$WORK/bin/"*
}

# deps NAME MODE: runs the script with only the stubs on PATH; output in $WORK/NAME.{out,err,rc}.
deps() {
    local rc=0
    PATH="$WORK/bin" DEPS_INCLUDE_DIRS="$WORK/include" CUDA_HOME="$WORK/cuda" CC=cc \
        /bin/sh "$DEPS" "$2" >"$WORK/$1.out" 2>"$WORK/$1.err" || rc=$?
    echo "$rc" >"$WORK/$1.rc"
    show "$1"
}

@test "deps: as a user on a bare machine, make demo's step names the Debian packages and the apt-get line" {
    stubs 1000
    deps user build
    [ "$(cat "$WORK/user.rc")" = 1 ]
    grep -qx "install-deps: missing Debian packages for 'make demo': gcc make libc6-dev" "$WORK/user.err"
    grep -qx 'install-deps:   sudo apt-get install -y gcc make libc6-dev' "$WORK/user.err"
    [ ! -e "$WORK/apt.log" ]
}

@test "deps: make test's step also names bats, python3, git, binutils, valgrind, g++, clang and libomp-dev; only what is missing is named" {
    stubs 1000
    : >"$WORK/include/stdio.h"
    ln -s /bin/true "$WORK/bin/cc"
    ln -s /bin/true "$WORK/bin/make"
    ln -s /bin/true "$WORK/bin/python3"
    deps user test
    [ "$(cat "$WORK/user.rc")" = 1 ]
    grep -qx "install-deps: missing Debian packages for 'make test': bats git binutils valgrind g++ clang libomp-dev" "$WORK/user.err"
    grep -qx 'install-deps:   sudo apt-get install -y bats git binutils valgrind g++ clang libomp-dev' "$WORK/user.err"
    # clang there but no OpenMP runtime for it: libomp-dev alone (the check compiles with -fopenmp)
    ln -s /bin/false "$WORK/bin/clang"
    deps noomp test
    grep -qx "install-deps: missing Debian packages for 'make test': bats git binutils valgrind g++ libomp-dev" "$WORK/noomp.err"
}

@test "deps: binutils is named when addr2line (pinshim-report's symbolizer) is missing, readelf or not" {
    stubs 1000
    : >"$WORK/include/stdio.h"
    for tool in cc make python3 git bats readelf clang valgrind g++; do ln -s /bin/true "$WORK/bin/$tool"; done
    deps user test
    [ "$(cat "$WORK/user.rc")" = 1 ]
    grep -qx "install-deps: missing Debian packages for 'make test': binutils" "$WORK/user.err"
    ln -s /bin/true "$WORK/bin/addr2line"
    deps again test
    [ "$(cat "$WORK/again.rc")" = 0 ]
}

@test "deps: as root it installs what is missing with apt-get, checks again and succeeds" {
    stubs 0 apt-get
    deps root test
    [ "$(cat "$WORK/root.rc")" = 0 ]
    grep -q 'apt-get install -y -qq chromium$' "$WORK/apt.log"
    grep -q 'apt-get install -y -qq gcc make libc6-dev bats python3 git binutils valgrind g++ clang libomp-dev$' "$WORK/apt.log"
    grep -q '^apt-get update' "$WORK/apt.log"
    [ -f "$WORK/include/stdio.h" ]
    # everything there now: a second run installs nothing
    rm "$WORK/apt.log"
    deps again test
    [ "$(cat "$WORK/again.rc")" = 0 ]
    [ ! -e "$WORK/apt.log" ]
    [ ! -s "$WORK/again.out" ]
}

@test "deps: as root without apt-get, or when the install fails, it names the packages and fails" {
    stubs 0
    deps noapt build
    [ "$(cat "$WORK/noapt.rc")" = 1 ]
    grep -qx 'install-deps:   apt-get install -y gcc make libc6-dev' "$WORK/noapt.err"
    printf '#!/bin/sh\nexit 100\n' >"$WORK/bin/apt-get"
    chmod +x "$WORK/bin/apt-get"
    deps failed build
    [ "$(cat "$WORK/failed.rc")" = 1 ]
    grep -q 'installing them with apt-get failed' "$WORK/failed.err"
}

@test "deps: missing CUDA headers are named, not installed; a bad mode is a usage error" {
    stubs 1000
    rm "$WORK/cuda/include/cuda.h"
    deps nocuda build
    [ "$(cat "$WORK/nocuda.rc")" = 1 ]
    grep -q "install-deps: no CUDA headers: $WORK/cuda/include/cuda.h not found" "$WORK/nocuda.err"
    deps bad nonsense
    [ "$(cat "$WORK/bad.rc")" = 2 ]
    grep -q 'usage: sh scripts/install-deps.sh build|test' "$WORK/bad.err"
}

@test "deps: on this machine the Makefile's demo and test steps pass (what make demo and make test run)" {
    make -s -C "$ROOT" deps >"$WORK/out" 2>&1 || { cat "$WORK/out"; false; }
    CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" sh "$DEPS" test
}
