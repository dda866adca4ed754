#!/bin/sh
# install-deps.sh build|test: makes sure the Debian packages that `make demo` (build) or `make test`
# (test) needs are installed. As root with apt-get it installs the missing ones and checks again;
# otherwise it names them and the apt-get line, and fails (status 1).
#   build: gcc (the C compiler, CC), make, libc6-dev (C headers)
#   test:  build's, plus bats (the test runner), python3 (scripts and helpers), binutils (readelf;
#          addr2line, which pinshim-report uses to name call sites; nm), valgrind (footprint.py's
#          trace of a small copy's cache lines), clang and libomp-dev (a test
#          program built against LLVM's OpenMP runtime, for stage_openmp; checked by compiling one;
#          clang also brings libstdc++6, the C++ runtime alloc_count.c's bats test links), g++ (a C++
#          test library, build/tests/libcxxalloc.so, for the shim's operator new and delete);
#          chromium is optional (the HTML report's browser test is skipped without it): installed
#          as root when possible, never a failure.
# The CUDA headers (cuda.h under CUDA_HOME, default /usr/local/cuda) are not a Debian main package:
# their absence is named, never installed. Where it looks: commands on PATH, headers in the folders
# of DEPS_INCLUDE_DIRS (colon-separated, default /usr/include:/usr/local/include), which lets a test
# check this script against a PATH and include path that lack the packages.
set -eu
PROG=install-deps
mode="${1:-test}"
case "$mode" in
    build|test) ;;
    *) echo "$PROG: usage: sh scripts/install-deps.sh build|test" >&2; exit 2 ;;
esac
include_dirs="${DEPS_INCLUDE_DIRS:-/usr/include:/usr/local/include}"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"

have_header() {
    old_ifs="$IFS"
    IFS=:
    for dir in $include_dirs; do
        if [ -n "$dir" ] && [ -f "$dir/$1" ]; then
            IFS="$old_ifs"
            return 0
        fi
    done
    IFS="$old_ifs"
    return 1
}

# Sets $missing to the Debian packages this mode needs that are not there.
find_missing() {
    missing=""
    command -v "${CC:-cc}" >/dev/null 2>&1 || missing="$missing gcc"
    command -v make >/dev/null 2>&1 || missing="$missing make"
    have_header stdio.h || missing="$missing libc6-dev"
    if [ "$mode" = test ]; then
        command -v bats >/dev/null 2>&1 || missing="$missing bats"
        command -v python3 >/dev/null 2>&1 || missing="$missing python3"
        command -v git >/dev/null 2>&1 || missing="$missing git"
        { command -v readelf && command -v addr2line; } >/dev/null 2>&1 || missing="$missing binutils"
        command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
        command -v g++ >/dev/null 2>&1 || missing="$missing g++"
        if ! command -v clang >/dev/null 2>&1; then
            missing="$missing clang libomp-dev"
        elif ! printf 'int main(void) { return 0; }\n' | clang -fopenmp -x c - -o /dev/null >/dev/null 2>&1; then
            missing="$missing libomp-dev"
        fi
    fi
    return 0
}

can_install() {
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1
}

apt_install() {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if [ "$mode" = test ] && ! command -v chromium >/dev/null 2>&1 && can_install; then
    echo "$PROG: installing chromium (optional, for the HTML report's browser test)"
    apt_install chromium || echo "$PROG: could not install chromium; the browser test will be skipped" >&2
fi

find_missing
if [ -n "$missing" ] && can_install; then
    echo "$PROG: installing:$missing"
    # shellcheck disable=SC2086 # one word per package
    apt_install $missing || true
    find_missing
fi
status=0
if [ -n "$missing" ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo "
    echo "$PROG: missing Debian packages for 'make $( [ "$mode" = build ] && echo demo || echo test)':$missing" >&2
    if [ "$(id -u)" = 0 ]; then
        echo "$PROG: installing them with apt-get failed or apt-get is not there; run:" >&2
    else
        echo "$PROG: run as root, or:" >&2
    fi
    echo "$PROG:   ${sudo}apt-get install -y$missing" >&2
    status=1
fi
if [ ! -f "$cuda_home/include/cuda.h" ]; then
    echo "$PROG: no CUDA headers: $cuda_home/include/cuda.h not found; install the CUDA toolkit" \
         "(NVIDIA's, or Debian's nvidia-cuda-dev from contrib/non-free) and set CUDA_HOME to its folder" >&2
    status=1
fi
exit "$status"
