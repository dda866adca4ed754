"""inprocess_ab.py: what the shim adds to PyTorch's small CUDA operations, measured inside one process
(issue #12). Across processes the same loop spreads by 10-30 % (placement, the host's neighbours),
far more than the 1 % bound; here the shim's benchmark switch (pinshim_bench_observe, outside
include/pinshim.h) flips the wrappers between forwarding every call untouched and observing, in
blocks ordered observe, forward, forward, observe, and each group of four gives one paired
difference. Forwarding still passes through the wrappers (a load and a branch): this measures what
observing costs, not the preload itself.

Workloads (ns per operation): x.item() of a 1-element tensor (with PyTorch 2.11 a 4-byte D2H into a
small block of its pinned host allocator and a stream sync); 1000 x 4 KB pageable tensors
.to("cuda"), blocking and with non_blocking=True; the same from pinned memory with
non_blocking=True (one async H2D each: the host allocator records no event per copy); an event
record and query. (The kinds and calls as the shim's summary counted them on an H200, 2026-11-26.)

Usage: LD_PRELOAD=build/libpinshim.so python3 tests/bench/inprocess_ab.py [--groups N]
(default 16 groups). Needs PyTorch and a GPU; prints a line and exits 0 without them. Never asserts
a timing."""
import argparse
import ctypes
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=16, help="groups of four blocks per workload (default 16)")
    args = p.parse_args()
    observe = getattr(ctypes.CDLL(None), "pinshim_bench_observe", None)
    if observe is None:
        sys.exit("inprocess_ab.py: pinshim_bench_observe not found: run it with LD_PRELOAD=build/libpinshim.so")
    try:
        import torch
    except ImportError:
        print("inprocess_ab.py: no PyTorch here; nothing measured")
        return
    if not torch.cuda.is_available():
        print("inprocess_ab.py: no GPU here; nothing measured")
        return
    dev = "cuda:0"
    x = torch.full((1,), 1.25, device=dev)
    small = [torch.full((1024,), float(i)) for i in range(1000)]
    pinned = list(torch.stack(small).pin_memory().unbind(0))
    ev = torch.cuda.Event()

    def item(n=2000):
        for _ in range(n):
            x.item()
        return n

    def pageable_4k():
        for t in small:
            t.to(dev)
        torch.cuda.synchronize()
        return len(small)

    def pageable_4k_nb():
        for t in small:
            t.to(dev, non_blocking=True)
        torch.cuda.synchronize()
        return len(small)

    def pinned_4k():
        for t in pinned:
            t.to(dev, non_blocking=True)
        torch.cuda.synchronize()
        return len(pinned)

    def events(n=2000):
        for _ in range(n):
            ev.record()
            ev.query()
        return n

    def block(fn, on):
        if observe(1 if on else 0) != 0:
            sys.exit("inprocess_ab.py: the shim refused to switch (guard on, registrations held, or "
                     "PINSHIM_INTERCEPT=off): run it with the defaults")
        torch.cuda.synchronize()
        t = time.perf_counter()
        n = fn()
        return (time.perf_counter() - t) / n * 1e9

    print("%-22s %12s %12s %28s %7s" % ("workload", "forward ns", "observe ns", "observe - forward (q1..q3)",
                                        "ratio"))
    for name, fn in (("item", item), ("4KB pageable", pageable_4k), ("4KB pageable nb", pageable_4k_nb),
                     ("4KB pinned nb", pinned_4k), ("event record+query", events)):
        for _ in range(3):
            fn()
        fwd, obs, diffs = [], [], []
        for _ in range(args.groups):
            o1, f1, f2, o2 = block(fn, True), block(fn, False), block(fn, False), block(fn, True)
            fwd += [f1, f2]
            obs += [o1, o2]
            diffs.append((o1 + o2 - f1 - f2) / 2)
        observe(1)
        q = statistics.quantiles(diffs, n=4)
        f, o = statistics.median(fwd), statistics.median(obs)
        print("%-22s %12.1f %12.1f %+11.1f (%+.0f..%+.0f) %7.3fx" % (
            name, f, o, statistics.median(diffs), q[0], q[2], f / o), flush=True)


if __name__ == "__main__":
    main()
