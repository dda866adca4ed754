#!/usr/bin/env python3
"""footprint.py: how many 64-byte lines of code and data one steady iteration of a hot loop touches,
by region (the shim's code and data, the stack and other anonymous memory, the program, the driver),
and which of the shim's functions and variables they belong to: the shim's footprint per call, which
in a large program (PyTorch) has left the caches by the next call (issue #12). Deterministic, CPU
only: it runs tests/bench/footprint_loop.c on the null driver (tests/bench/nullcuda.c) under
valgrind's lackey, which prints every access, and counts the lines between two of the loop's marker
stores. Needs valgrind and gcc.
Usage: python3 tests/bench/footprint.py [--lib build/libpinshim.so] [--mode d|h]
  d: 4-byte D2H into pinned + stream sync (default); h: 4 KiB H2D from pinned, async
Never asserts anything about the counts."""
import argparse
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def build(work, cuda_home):
    null = os.path.join(work, "null")
    os.makedirs(null)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", os.path.join(HERE, "nullcuda.c"), "-o",
                    os.path.join(null, "libcuda.so.1")], check=True)
    os.symlink("libcuda.so.1", os.path.join(null, "libcuda.so"))
    loop = os.path.join(work, "loop")
    subprocess.run(["gcc", "-O2", "-I" + os.path.join(cuda_home, "include"), os.path.join(HERE, "footprint_loop.c"),
                    "-o", loop, "-L" + null, "-lcuda"], check=True)
    return null, loop


def symbols(lib):
    out = subprocess.run(["nm", "-S", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    syms = sorted((int(p[0], 16), int(p[1], 16), p[3]) for p in (l.split() for l in out.splitlines()) if len(p) == 4)
    return syms, [s[0] for s in syms]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default=os.path.join(HERE, "..", "..", "build", "libpinshim.so"))
    p.add_argument("--mode", choices=("d", "h"), default="d")
    args = p.parse_args()
    lib = os.path.abspath(args.lib)
    with tempfile.TemporaryDirectory() as work:
        null, loop = build(work, os.environ.get("CUDA_HOME", "/usr/local/cuda"))
        trace, info = os.path.join(work, "trace"), os.path.join(work, "info")
        env = dict(os.environ, LD_LIBRARY_PATH=null, LD_PRELOAD=lib, PINSHIM_SUMMARY="none")
        with open(info, "w") as err:
            subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=" + trace, loop, "40",
                            args.mode], env=env, stdout=subprocess.DEVNULL, stderr=err, check=True)
        marker, maps = None, []
        for line in open(info):
            if line.startswith("marker "):
                marker = int(line.split()[1], 16)
            elif line.startswith("map "):
                f = line.split()
                lo, hi = (int(x, 16) for x in f[1].split("-"))
                maps.append((lo, hi, int(f[3], 16), f[6] if len(f) > 6 else "[anon]"))
        if marker is None:
            sys.exit("footprint.py: the loop printed no marker (see its stderr)")
        iterations, current = [], None
        for line in open(trace):
            m = re.match(r"\s*([ILSM])\s+([0-9a-f]+),", line)
            if not m:
                continue
            kind, addr = m.group(1), int(m.group(2), 16)
            if kind in "SM" and addr == marker:
                if current is not None:
                    iterations.append(current)
                current = {}
            elif current is not None:
                current.setdefault((kind == "I", addr >> 6), set()).add(addr)
    if len(iterations) < 4:
        sys.exit("footprint.py: too few iterations traced")
    steady = iterations[len(iterations) // 2]
    base = min(lo - off for lo, hi, off, name in maps if name == lib or name.endswith("/libpinshim.so"))
    syms, starts = symbols(lib)

    def region(addr):
        for lo, hi, off, name in maps:
            if lo <= addr < hi:
                return os.path.basename(name) if name != "[anon]" else "anonymous (stack, TLS, counters)"
        return "unknown"

    def symbol(addr):
        i = bisect.bisect_right(starts, addr - base) - 1
        if i >= 0 and syms[i][0] <= addr - base < syms[i][0] + max(syms[i][1], 1):
            return syms[i][2]
        return hex(addr - base)

    by_region, shim_code, shim_data = collections.Counter(), collections.Counter(), collections.Counter()
    for (is_code, line), addrs in steady.items():
        name = region(line << 6)
        by_region[("code " if is_code else "data ") + name] += 1
        if name == os.path.basename(lib):
            for s in sorted({symbol(a) for a in addrs}):
                (shim_code if is_code else shim_data)[s] += 1
    print("footprint of one iteration (mode %s, %s): %d lines" % (args.mode, lib, len(steady)))
    for key, n in by_region.most_common():
        print("  %4d %s" % (n, key))
    print("shim code lines by function (a line two functions share counts for each):")
    for key, n in shim_code.most_common():
        print("  %4d %s" % (n, key))
    print("shim data lines by variable:")
    for key, n in shim_data.most_common():
        print("  %4d %s" % (n, key))


if __name__ == "__main__":
    main()
