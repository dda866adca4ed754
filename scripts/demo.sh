#!/bin/sh
# demo.sh: runs build/tests/demo under the shim and shows the summary. On a machine with an NVIDIA
# GPU it uses the real driver; otherwise the fake driver in build/fakecuda (a test double).
set -eu
cd "$(dirname "$0")/.."
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "demo: running on the GPU"
    LD_PRELOAD="$PWD/build/libpinshim.so" build/tests/demo
else
    echo "demo: no GPU here; running on the fake CPU driver (build/fakecuda)"
    LD_LIBRARY_PATH="$PWD/build/fakecuda" LD_PRELOAD="$PWD/build/libpinshim.so" build/tests/demo
fi
