"""torch_fresh_d2h.py: a GPU tensor .to("cpu") into a fresh pageable tensor, at 2, 4, 8, 16, 64 and 256
MiB (40, 40, 40, 24, 16 and 6 copies, each size after one warm-up copy), the results kept in groups of
eight as an offload loop keeps them. Not one of the suite's rows: a size sweep for comparing builds
(compare_builds.py) on the staged D2H into fresh memory (issue #13). Metrics: ms per copy (median),
the copy and its synchronize timed. Digest: every copy as it arrived on the host (summed with NumPy,
single-threaded, so that no OpenMP threads of PyTorch's spin into the next copy)."""
import wl

NAME = "torch_fresh_d2h"
MiB = 1 << 20
SIZES = [(2 * MiB, 40), (4 * MiB, 40), (8 * MiB, 40), (16 * MiB, 24), (64 * MiB, 16), (256 * MiB, 6)]

torch, dev, sync = wl.torch_or_skip(NAME)
try:
    import numpy as np
except ImportError as e:
    wl.skip(NAME, "numpy not importable (%s)" % e)
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))
pattern = torch.arange(4096, dtype=torch.float32, device=dev)
for nbytes, iters in SIZES:
    gpu = pattern.repeat(nbytes // 4 // 4096) + 1
    times, kept, sums = [], [], []
    for i in range(1 + iters):
        got = []
        t = wl.timed(lambda: got.append(gpu.to("cpu")), sync, 1)[0]
        if i:
            times.append(t)
        sums += wl.numpy_sums(np, got[0].numpy())
        kept.append(got[0])
        if len(kept) == 8:
            kept = []
    key = "%dMiB" % (nbytes >> 20)
    rep.part(key, sums)
    rep.metric(key, "fresh %d MiB .to(cpu), per copy" % (nbytes >> 20), wl.median(times) * 1e3, "ms", "faster")
    del gpu, kept
rep.emit()
