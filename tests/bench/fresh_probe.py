"""fresh_probe.py: medians (ms) of fresh-buffer copies in PyTorch, for issue #13: a tensor just computed
(base + i) .to("cuda") at 1, 4, 8, 64 and 256 MiB, and 8 GPU tensors of 64 MiB .to("cpu") into fresh tensors
(with the process's transparent huge pages while they exist: thp=).
Run it with and without the shim, and with OMP_WAIT_POLICY=passive (or --pause 30: that many ms between
computing each tensor and copying it, time in which PyTorch's OpenMP threads stop spinning) to see the
OpenMP threads' share.
Usage: python3 tests/bench/fresh_probe.py [h2d|d2h] [--pause MS]   (default both, no pause; prints one
line). Never asserts a timing."""
import sys, time
dev = "cuda:0"
args = sys.argv[1:]
pause_ms = 0.0
if "--pause" in args:
    i = args.index("--pause")
    try:
        pause_ms = float(args[i + 1])
    except (IndexError, ValueError):
        sys.exit("fresh_probe.py: --pause takes a number of milliseconds")
    del args[i:i + 2]
which = args[0] if args else "both"
if which not in ("h2d", "d2h", "both") or len(args) > 1:
    sys.exit("usage: fresh_probe.py [h2d|d2h] [--pause MS]")
import torch
def med(v): v = sorted(v); return v[len(v)//2]
def huge_pages_kb():  # transparent huge pages in this process (the 8 fresh tensors' share is 512M at most)
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0
MiB = 1 << 20
out = []
pat = torch.arange(4096, dtype=torch.float32)
torch.cuda.synchronize()
for nb, it in ((1*MiB, 30), (4*MiB, 20), (8*MiB, 20), (64*MiB, 8), (256*MiB, 4)) if which != "d2h" else ():
    base = pat.repeat(nb // 4 // 4096)
    ts = []
    for i in range(it + 1):
        x = base + i
        if pause_ms:
            time.sleep(pause_ms / 1e3)
        torch.cuda.synchronize(); t = time.perf_counter()
        y = x.to(dev); torch.cuda.synchronize()
        if i: ts.append(time.perf_counter() - t)
        del x, y
    out.append("h2d%dM=%.2f" % (nb >> 20, med(ts) * 1e3))
g = [torch.full((16 * MiB,), float(k), device=dev) for k in range(8 if which != "h2d" else 0)]
ts = []
for r in range(6 if g else 0):
    torch.cuda.synchronize(); t = time.perf_counter()
    c = [x.to("cpu") for x in g]
    ts.append(time.perf_counter() - t)
    huge_kb = huge_pages_kb(); del c
if ts:
    out.append("d2h8x64M=%.2f thp=%dM" % (med(ts[1:]) * 1e3, huge_kb >> 10))
print(" ".join(out), flush=True)
