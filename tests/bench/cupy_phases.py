"""cupy_phases.py: where the time of cupy_copy.py's cp.asarray goes, inside one process, for issue #12.

cp.asarray of a numpy array copies it into a block of CuPy's pinned memory pool with numpy, then
copies that block to the device: the driver sees a pinned H2D, which the shim passes untouched.
Each round makes a fresh 256 MiB array (base + r, as cupy_copy.py), times cp.asarray of it, then
the same copy by hand in its two phases (a block from the pinned pool and numpy's copy into it;
the block's copy to the device), cp.asnumpy back, and a plain numpy copy of the array into a
preallocated pageable one (the host's copy speed with no pinned memory involved). Prints one JSON
line: each phase's median in ms over the rounds after the first, and the process's transparent
huge pages (MiB) when each array is made. Run it with and without LD_PRELOAD=build/libpinshim.so,
alternately, and compare the phases; never asserts a timing.
Usage: python3 tests/bench/cupy_phases.py [--rounds N]   (N >= 2, default 7; the first is a warm-up)
Needs CuPy and a GPU; without them it prints a line and exits 0."""
import argparse
import json
import statistics
import sys
import time

WORDS = 64 << 20  # float32: 256 MiB
PHASES = ("fill", "asarray", "pinned_block", "host_copy", "dma", "asnumpy", "plain_copy")  # timed, in order


def huge_pages_mib():
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def main():
    p = argparse.ArgumentParser(prog="cupy_phases.py", description="cp.asarray of a fresh 256 MiB array, phase by phase")
    p.add_argument("--rounds", type=int, default=7, help="rounds, the first a warm-up (default 7)")
    args = p.parse_args()
    if args.rounds < 2:
        p.error("--rounds must be at least 2 (the first is a warm-up), not %d" % args.rounds)
    try:
        import numpy as np
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as e:  # ImportError, CUDARuntimeError: nothing to measure here
        print("cupy_phases: skipped: CuPy with a CUDA device is needed (%s)" % e)
        return 0
    sync = cp.cuda.Device().synchronize
    base = np.tile(np.arange(4096, dtype=np.float32), WORDS // 4096)
    plain = np.empty_like(base)
    phases = {k: [] for k in PHASES + ("huge_pages_mib",)}
    for r in range(args.rounds):
        t = [time.perf_counter()]
        x = base + np.float32(r)  # fresh pageable memory, just written
        t.append(time.perf_counter())
        huge = huge_pages_mib()
        sync()
        t.append(time.perf_counter())
        d = cp.asarray(x)
        sync()
        t.append(time.perf_counter())
        block = cp.cuda.alloc_pinned_memory(x.nbytes)
        t.append(time.perf_counter())
        staged = np.frombuffer(block, x.dtype, x.size)
        staged[...] = x
        t.append(time.perf_counter())
        d2 = cp.empty_like(d)
        d2.set(staged)
        sync()
        t.append(time.perf_counter())
        if not bool(cp.array_equal(d, d2)):
            sys.exit("cupy_phases.py: the copy by hand differs from cp.asarray's")
        e = d * 2
        sync()
        t.append(time.perf_counter())
        back = cp.asnumpy(e)
        sync()
        t.append(time.perf_counter())
        np.copyto(plain, x)
        t.append(time.perf_counter())
        if r:
            steps = [t[1] - t[0], t[3] - t[2], t[4] - t[3], t[5] - t[4], t[6] - t[5], t[8] - t[7], t[9] - t[8]]
            for key, s in zip(PHASES, steps):
                phases[key].append(s * 1e3)
            phases["huge_pages_mib"].append(huge)
        del x, d, block, staged, d2, e, back
    print(json.dumps({"probe": "cupy_phases", "rounds": args.rounds - 1,
                      **{k: round(statistics.median(v), 3) for k, v in phases.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
