#!/usr/bin/env python3
"""torch_copies.py: PyTorch part of pinshim's GPU-only tests.

Makes host<->device copies through PyTorch (pageable .to("cuda") / .to("cpu"),
pinned tensors with non_blocking=True both ways, then torch.cuda.synchronize()),
checks every round trip bit for bit, prints deterministic sums, and ends with
lines

    expect <dir> <host_kind> <count>

ALL COUNTS HERE ARE MINIMUMS. PyTorch may make copies of its own (for example
.item() and printing go through small D2H copies into pageable memory, and a
blocking copy may be split or preceded by others), so run.sh checks that the
shim's summary count for each dir+host_kind is >= the printed number.
Only the copies this script makes explicitly are counted.

Output depends only on values, never on addresses or timings: run.sh diffs
stdout with and without the shim.
"""
import sys

import torch

MOD = (1 << 61) - 1


def make(n, seed, dtype=torch.int64):
    """Deterministic, non-zero values built from arange (no RNG involved)."""
    i = torch.arange(n, dtype=torch.int64)
    v = (i * 2654435761 + seed * 40503 + 12345) % 1000003 + 1
    return v.to(dtype)


def digest(t):
    """Exact digest of a CPU tensor's values: plain and position-weighted sums."""
    assert t.device.type == "cpu"
    v = t.reshape(-1).to(torch.int64)
    w = torch.arange(1, v.numel() + 1, dtype=torch.int64) % 65521
    s = int(v.sum().item())
    ws = int((v * w).sum().item()) % MOD
    return "n=%d sum=%d wsum=%d" % (v.numel(), s, ws)


failures = 0
expect = {}


def count(direction, kind, n=1):
    expect[(direction, kind)] = expect.get((direction, kind), 0) + n


def check(name, got, want):
    global failures
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        print("FAILED %s" % name)
        sys.stderr.write("torch_copies: %s: mismatch\n" % name)
        failures += 1
    else:
        print("ok %s %s" % (name, digest(got)))


def main():
    if not torch.cuda.is_available():
        sys.stderr.write("torch_copies: torch.cuda.is_available() is False\n")
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)

    # Sizes in elements: tiny, 4 KB, 256 KB, 4 MB (int64 = 8 bytes) and an odd one.
    sizes = [1, 512, 32768, 524288, 100003]

    # ---- pageable, blocking: .to("cuda") then .to("cpu")
    for k, n in enumerate(sizes):
        x = make(n, seed=k + 1)
        g = x.to("cuda")                 # h2d pageable (>= 1)
        count("h2d", "pageable")
        y = (g * 3 + 7) % 1000033        # exact integer arithmetic on the GPU
        back = g.to("cpu")               # d2h pageable (>= 1)
        count("d2h", "pageable")
        yc = y.to("cpu")                 # d2h pageable (>= 1)
        count("d2h", "pageable")
        check("pageable_roundtrip_%d" % n, back, x)
        check("pageable_kernel_%d" % n, yc, (x * 3 + 7) % 1000033)

    # float32 as well (bit-exact round trip, no arithmetic)
    xf = make(65536, seed=99, dtype=torch.float32) / 7.0
    gf = xf.to("cuda")                   # h2d pageable
    count("h2d", "pageable")
    bf = gf.to("cpu")                    # d2h pageable
    count("d2h", "pageable")
    check("pageable_float32", bf.view(torch.int32), xf.view(torch.int32))

    # ---- pinned, non_blocking both ways, then synchronize
    for k, n in enumerate(sizes):
        x = make(n, seed=100 + k).pin_memory()
        g = x.to(dev, non_blocking=True)             # h2d pinned (>= 1)
        count("h2d", "pinned")
        y = (g * 5 + 11) % 1000037
        out = torch.empty(n, dtype=torch.int64, pin_memory=True)
        out.copy_(y, non_blocking=True)              # d2h pinned (>= 1)
        count("d2h", "pinned")
        # PyTorch 2.x returns a pinned tensor here; count by what it really is.
        back = g.to("cpu", non_blocking=True)        # d2h pinned (>= 1)
        count("d2h", "pinned" if back.is_pinned() else "pageable")
        torch.cuda.synchronize()
        check("pinned_roundtrip_%d" % n, back, x)
        check("pinned_kernel_%d" % n, out, (x * 5 + 11) % 1000037)

    # ---- many small pinned copies on a side stream
    s = torch.cuda.Stream()
    src = make(4096, seed=7).pin_memory()
    dst = torch.empty(4096, dtype=torch.int64, pin_memory=True)
    with torch.cuda.stream(s):
        g = torch.empty(4096, dtype=torch.int64, device=dev)
        for _ in range(20):
            g.copy_(src, non_blocking=True)          # h2d pinned (x20)
            count("h2d", "pinned")
            g.add_(1)
            dst.copy_(g, non_blocking=True)          # d2h pinned (x20)
            count("d2h", "pinned")
    torch.cuda.synchronize()
    check("pinned_side_stream", dst, src + 1)

    # ---- device to device
    g1 = make(1000, seed=55).to("cuda")              # h2d pageable
    count("h2d", "pageable")
    # A contiguous same-dtype device copy is a cudaMemcpyAsync D2D in PyTorch
    # (not a copy kernel); "any" = summed over the host_kinds the shim reports.
    g2 = g1.clone()                                  # d2d (>= 1)
    count("d2d", "any")
    c2 = g2.to("cpu")                                # d2h pageable
    count("d2h", "pageable")
    check("d2d_clone", c2, make(1000, seed=55))

    print("failures %d" % failures)
    for key in sorted(expect):
        print("expect %s %s %d" % (key[0], key[1], expect[key]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
