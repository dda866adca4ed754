#!/usr/bin/env bats
# Python call sites: under every CPython 3.10-3.13 on this machine (the system's and pyenv's), each
# logged copy names the Python line it was made from (main thread, second thread, GIL released in
# ctypes.CDLL or held in ctypes.PyDLL, methods, closures, a call over several lines, a call into a
# library module), the summary's sites carry those lines, the guard's report names the line that
# read the buffer and the line that started the copy; the shim's layout table matches each
# version's headers; an older CPython gets no Python site and no harm.
load common

PY="$ROOT/tests/python"

# The CPython 3.10-3.13 interpreters here, one per line (the system's python3 and pyenv's).
pythons() {
    {
        echo /usr/bin/python3
        command -v python3
        ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[0-3]*/bin/python3 2>/dev/null
    } | while read -r p; do
        [ -x "$p" ] && "$p" -c 'import sys, ctypes; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 13))' \
            2>/dev/null && readlink -f "$p"
    done | sort -u
}

@test "the shim's CPython layout table matches the headers of every installed CPython 3.10-3.13" {
    n=0
    for p in $(pythons); do
        inc="$("$p" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
        [ -f "$inc/internal/pycore_frame.h" ] || [ -f "$inc/internal/pycore_pystate.h" ] || continue
        gcc -std=gnu11 -Wall -I"$inc" -I"$inc/internal" -I"$ROOT/shim/observe" \
            "$PY/pylayout_check.c" -o "$WORK/check"
        "$WORK/check"
        n=$((n + 1))
    done
    [ "$n" -ge 1 ]
}

@test "every copy names its Python line: main thread, second thread, GIL released (CDLL) and held (PyDLL)" {
    n=0
    for p in $(pythons); do
        for mode in cdll pydll; do
            PINSHIM_LOG="$WORK/$mode.jsonl" run_app "$mode" shim "$p" "$PY/pysites.py" "$mode"
            show "$mode"
            [ "$(cat "$WORK/$mode.rc")" = 0 ]
            echo "$p $mode"
            python3 "$PY/check_pysites.py" "$WORK/$mode.jsonl" "$PY/pysites.py"
            python3 "$ROOT/tests/report/check_schema.py" "$ROOT/scripts/pinshim_report/pinshim-log-format-1.schema.json" \
                "$WORK/$mode.jsonl"
            rm -f "$WORK/$mode.jsonl"
        done
        n=$((n + 1))
    done
    [ "$n" -ge 1 ]
}

@test "the guard's report names the line that read the buffer and the line that started the copy" {
    for p in $(pythons); do
        FAKECUDA_GBPS=2 PINSHIM_GUARD=warn PINSHIM_SUMMARY=none run_app guard shim "$p" "$PY/pyguard.py"
        show guard
        [ "$(cat "$WORK/guard.rc")" = 0 ]
        echo "$p"
        python3 "$PY/check_pyguard.py" "$WORK/guard.err" "$PY/pyguard.py"
        grep -Eq '^==[0-9]+==   fix:         synchronize that stream' "$WORK/guard.err"
        grep -Eq '^==[0-9]+==   Python stack of the access \(library frames counted\):$' "$WORK/guard.err"
        grep -Eq '^==[0-9]+==        \.\.\. [0-9]+ more frames in ' "$WORK/guard.err"
    done
}

@test "guard_stack=full: every native frame and every Python frame, nothing folded" {
    p="$(pythons | head -n 1)"
    FAKECUDA_GBPS=2 PINSHIM_GUARD=warn PINSHIM_GUARD_STACK=full PINSHIM_SUMMARY=none run_app full shim "$p" "$PY/pyguard.py"
    show full
    python3 "$PY/check_pyguard.py" "$WORK/full.err" "$PY/pyguard.py"
    ! grep -q 'more frames in\|library frame' "$WORK/full.err"
    grep -Eq '^==[0-9]+==     .*/threading\.py:[0-9]+ in ' "$WORK/full.err"
}

@test "python_skip is a policy key: with no fragments, the library module's own line is the site" {
    p="$(pythons | head -n 1)"
    PINSHIM_PYTHON_SKIP= PINSHIM_LOG="$WORK/s.jsonl" run_app skip shim "$p" "$PY/pysites.py"
    show skip
    grep -q '"bytes":4416,.*"py_site":"[^"]*/site-packages/fakelib.py:3","py_func":"copy"' "$WORK/s.jsonl"
}

@test "python_sites=off: no py_site in the records" {
    p="$(pythons | head -n 1)"
    PINSHIM_PYTHON_SITES=off PINSHIM_LOG="$WORK/o.jsonl" run_app off shim "$p" "$PY/pysites.py"
    show off
    [ "$(cat "$WORK/off.rc")" = 0 ]
    grep -q '"type":"transfer"' "$WORK/o.jsonl"
    ! grep -q 'py_site' "$WORK/o.jsonl"
}

@test "a CPython outside 3.10-3.13 runs unharmed, without Python sites" {
    old="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.[6-9]*/bin/python3 2>/dev/null | tail -n 1)"
    [ -n "$old" ] || skip "no CPython older than 3.10 here"
    PINSHIM_LOG="$WORK/old.jsonl" run_app old shim "$old" "$PY/pysites.py"
    show old
    [ "$(cat "$WORK/old.rc")" = 0 ]
    grep -q '"type":"transfer"' "$WORK/old.jsonl"
    ! grep -q 'py_site' "$WORK/old.jsonl"
}

@test "pinshim-report shows the Python lines in its site tables" {
    p="$(pythons | head -n 1)"
    mkdir -p "$WORK/logs"
    PINSHIM_LOG="$WORK/logs/r.jsonl" run_app rep shim "$p" "$PY/pysites.py"
    "$ROOT/scripts/pinshim-report" "$WORK/logs" >"$WORK/report.txt"
    grep -Eq "pysites.py:[0-9]+ in copy_main \((.* \()?libffi" "$WORK/report.txt" # symbolized or not
    "$ROOT/scripts/pinshim-report" "$WORK/logs" --html "$WORK/r.html"
    grep -q "pysites.py:[0-9]* in copy_main" "$WORK/r.html"
}
