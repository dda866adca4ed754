#!/bin/sh
# install-test-deps.sh: makes sure what `make test` needs is installed: bats (the test runner),
# uthash-dev (headers), python3 (test helpers). As root, installs what is missing with apt-get;
# otherwise names the missing Debian packages and fails. chromium is optional (the HTML report's
# browser test, skipped without it): installed as root when possible, never a failure.
set -eu
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-test-deps: installing chromium (optional, for the HTML report's browser test)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
        echo "install-test-deps: could not install chromium; the browser test will be skipped" >&2
fi
missing=""
command -v bats >/dev/null 2>&1 || missing="$missing bats"
[ -f /usr/include/uthash.h ] || missing="$missing uthash-dev"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
command -v readelf >/dev/null 2>&1 || missing="$missing binutils"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-test-deps: installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "install-test-deps: missing Debian packages:$missing" >&2
    echo "install-test-deps: run as root, or: sudo apt-get install$missing" >&2
    exit 1
fi
