#!/usr/bin/env python3
"""footprint.py: how many 64-byte lines of code and data one steady iteration of a hot loop touches,
by region (the shim's code and data, the stack and other anonymous memory, the program, the driver),
and which of the shim's functions and variables they belong to, with the instructions the shim runs
and the transfers it takes (a straight path is one the front end fetches without being redirected,
even with its branches forgotten): the shim's footprint per call, which
in a large program (PyTorch) has left the caches by the next call (issue #12; README, "Real-workload
benchmarks"). Deterministic, CPU only: it runs tests/bench/footprint_loop.c on the null driver
(tests/bench/nullcuda.c) under valgrind's lackey, which prints every access, and counts the lines
between two of the loop's marker stores, averaged over the last third of the iterations (modes p
and q: the last of three passes over its 1000 buffers; the first pass sees each page first); then the lines
those iterations touch together (what a cache that kept them would hold: a table read one line per
copy can still spread over many). Needs valgrind, nm and gcc; without valgrind it says so, exit 0.
Usage: python3 tests/bench/footprint.py [--lib build/libpinshim.so|none] [--mode d|h|p|q|e|f|g|t]
                                       [--iterations N]
  --lib none: the same loop without the shim (what the program and the driver touch alone)
  d: 4-byte D2H into pinned + stream sync (default); h: 4 KiB H2D from pinned, async;
  p: 4 KiB H2D from the next of 1000 malloc'd buffers, async; q: 4 KiB D2H into the next of them
  + stream sync (p, q and t: default 3000 iterations, else 400: one call in 16 is timed, at
  random, and runs more of the shim, so that a few iterations' mean moves from run to run); e: an
  event record + query; f: a fresh 1 MiB malloc, H2D of all of it, stream sync, free; g: f with
  100 other tracked 1 MiB allocations alive; t: h with a tensor's three small blocks freed and
  made anew, round a ring of 1000 tensors
Never asserts anything about the counts."""
import argparse
import bisect
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PAGEABLE_BUFFERS = 1000  # footprint_loop.c's


def build(work, cuda_home):
    null = os.path.join(work, "null")
    os.makedirs(null)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", os.path.join(HERE, "nullcuda.c"), "-o",
                    os.path.join(null, "libcuda.so.1")], check=True)
    os.symlink("libcuda.so.1", os.path.join(null, "libcuda.so"))
    loop = os.path.join(work, "loop")  # not position-independent: `marker` is where nm says
    subprocess.run(["gcc", "-O2", "-no-pie", "-I" + os.path.join(cuda_home, "include"),
                    os.path.join(HERE, "footprint_loop.c"), "-o", loop, "-L" + null, "-lcuda"], check=True)
    return null, loop


def symbols(lib):
    out = subprocess.run(["nm", "-S", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    syms = sorted((int(p[0], 16), int(p[1], 16), p[3]) for p in (l.split() for l in out.splitlines()) if len(p) == 4)
    return syms, [s[0] for s in syms]


def trace(loop, iterations, mode, env, info):
    """Runs the loop under lackey, its trace read from a pipe; returns each iteration's lines
    ({(is code, line): addresses}) from the first store to the loop's `marker` on, each with its
    instructions' flow (Counter: ("ins", line) instructions run from a line of code, ("taken",
    line) transfers leaving one other than to the next instruction: jumps taken, calls, returns)."""
    marker = [int(l.split()[0], 16) for l in subprocess.run(["nm", loop], capture_output=True, text=True,
                                                             check=True).stdout.splitlines() if l.endswith(" marker")][0]
    read_fd, write_fd = os.pipe()
    with open(info, "w") as err:
        proc = subprocess.Popen(["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-fd=%d" % write_fd, loop,
                                 str(iterations), mode], env=env, pass_fds=(write_fd,), stdout=subprocess.DEVNULL,
                                stderr=err)
    os.close(write_fd)
    done, current, flow, prev_end, prev_line = [], None, None, None, None
    with os.fdopen(read_fd, errors="replace") as lines:
        for line in lines:
            m = re.match(r"\s*([ILSM])\s+([0-9a-f]+),(\d+)", line)
            if not m:
                continue
            kind, addr = m.group(1), int(m.group(2), 16)
            if kind in "SM" and addr == marker:
                if current is not None:
                    done.append((current, flow))
                current, flow = {}, collections.Counter()
            elif current is not None:
                current.setdefault((kind == "I", addr >> 6), set()).add(addr)
                if kind == "I":
                    flow[("ins", addr >> 6)] += 1
                    if prev_end is not None and addr != prev_end:
                        flow[("taken", prev_line)] += 1
                    prev_end, prev_line = addr + int(m.group(3)), addr >> 6
    if proc.wait() != 0:
        sys.exit("footprint.py: the loop failed under valgrind (exit status %d); its output: %s" %
                 (proc.returncode, info))
    return done


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default=os.path.join(HERE, "..", "..", "build", "libpinshim.so"))
    p.add_argument("--mode", choices=("d", "h", "p", "q", "e", "f", "g", "t"), default="d")
    p.add_argument("--iterations", type=int)
    args = p.parse_args()
    lib = None if args.lib == "none" else os.path.abspath(args.lib)
    n = args.iterations or (3 * PAGEABLE_BUFFERS if args.mode in "pqt" else 400)
    least = 3 * PAGEABLE_BUFFERS if args.mode in "pqt" else 6
    if n < least:
        p.error("--iterations %d: expected %d or more for mode %s (the last third is averaged%s)" %
                (n, least, args.mode, ": past two passes over the 1000 buffers" if args.mode in "pqt" else ""))
    if lib and not os.path.isfile(lib):
        p.error("--lib %s: no such file (make build/libpinshim.so first)" % lib)
    if not shutil.which("valgrind"):
        print("footprint.py: valgrind not found (Debian package valgrind): nothing measured")
        return
    with tempfile.TemporaryDirectory() as work:
        null, loop = build(work, os.environ.get("CUDA_HOME", "/usr/local/cuda"))
        info = os.path.join(work, "info")
        env = dict(os.environ, LD_LIBRARY_PATH=null, PINSHIM_SUMMARY="none")
        env.pop("LD_PRELOAD", None)
        if lib:
            env["LD_PRELOAD"] = lib
        iterations = trace(loop, n, args.mode, env, info)
        maps = []
        for line in open(info):
            if line.startswith("map "):
                f = line.split()
                lo, hi = (int(x, 16) for x in f[1].split("-"))
                maps.append((lo, hi, int(f[3], 16), f[6] if len(f) > 6 else "[anon]"))
    if len(iterations) < n - 1:
        sys.exit("footprint.py: %d iterations traced of %d" % (len(iterations), n))
    first = n - n // 3
    steady = [lines for lines, flow in iterations[first:]]
    flows = [flow for lines, flow in iterations[first:]]
    if lib:
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

    def name(is_code, line):
        return ("code " if is_code else "data ") + region(line << 6)

    by_region, shim_code, shim_data = collections.Counter(), collections.Counter(), collections.Counter()
    together = collections.Counter(name(*key) for key in set().union(*steady))
    for lines in steady:
        for (is_code, line), addrs in lines.items():
            where = region(line << 6)
            by_region[name(is_code, line)] += 1
            if lib and where == os.path.basename(lib):
                for s in sorted({symbol(a) for a in addrs}):
                    (shim_code if is_code else shim_data)[s] += 1
    k = len(steady)
    print("footprint of one iteration (mode %s, %s): %.1f lines, the mean over iterations %d-%d of %d" %
          (args.mode, lib or "no shim", sum(by_region.values()) / k, first, n - 1, n))
    for key, c in by_region.most_common():
        print("  %6.1f %s" % (c / k, key))
    if lib:
        ins = taken = 0
        for flow in flows:
            for (what, line), c in flow.items():
                if region(line << 6) == os.path.basename(lib):
                    ins += c if what == "ins" else 0
                    taken += c if what == "taken" else 0
        print("the shim's code: %.1f instructions, %.1f taken transfers (jumps taken, calls, returns: each a "
              "branch the predictors must hold, or a redirected fetch)" % (ins / len(flows), taken / len(flows)))
    print("shim code lines by function (a line two functions share counts for each):")
    for key, c in shim_code.most_common():
        print("  %6.1f %s" % (c / k, key))
    print("shim data lines by variable:")
    for key, c in shim_data.most_common():
        print("  %6.1f %s" % (c / k, key))
    pages = collections.Counter()
    for lines in steady:
        for key in {(is_code, line >> 6) for is_code, line in lines}:
            pages[name(key[0], key[1] << 6)] += 1
    print("4 KiB pages one iteration touches (what the TLBs must hold): %.1f" % (sum(pages.values()) / k))
    for key, c in pages.most_common():
        print("  %6.1f %s" % (c / k, key))
    print("those %d iterations together: %d lines" % (k, sum(together.values())))
    for key, c in together.most_common():
        print("  %6d %s" % (c, key))


if __name__ == "__main__":
    main()
