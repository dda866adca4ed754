"""torch_pinned_after_idle.py: how the host's recent activity moves a large pinned copy's speed (a
diagnostic for compare_builds.py, not a row of the suite). One 64 MiB pinned H2D (d.copy_(p,
non_blocking=True)) timed on the GPU (CUDA events around it), 24 times after one warm-up round in each
of four settings, in turn: right after a CPU operation (x = base + r, 64 MiB, PyTorch's OpenMP team),
after the operation and 50 ms of sleep, right after a fresh pageable 64 MiB tensor .to(cuda) (staged
under the shim), and after that and 50 ms of sleep. Metrics: ms per copy (median). Digest: the copy
as it arrived."""
import time

import wl

NAME = "torch_pinned_after_idle"
MiB = 1 << 20
WORDS = 16 * MiB  # 64 MiB of float32
ROUNDS = 24
QUIET_S = 0.05

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
pattern = torch.arange(4096, dtype=torch.float32)
base = pattern.repeat(WORDS // 4096)
p = wl.torch_pinned_empty(torch, WORDS, torch.float32)
p.copy_(base)
d = torch.empty(WORDS, dtype=torch.float32, device=dev)
s = torch.cuda.current_stream()
modes = {"after_op": [], "op_then_quiet": [], "after_fresh_copy": [], "fresh_copy_then_quiet": []}

for r in range(1 + ROUNDS):
    for m in modes:
        x = base + r
        if "fresh" in m:
            y = x.to(dev)
            sync()
            del y
        if m.endswith("quiet"):
            time.sleep(QUIET_S)
        t = wl.torch_gpu_ms(torch, s, sync, lambda: d.copy_(p, non_blocking=True))
        if r:
            modes[m].append(t)
        del x
for m, v in modes.items():
    rep.metric(m, m, wl.median(v), "ms", "same", True)
rep.part(wl.torch_collect(torch, wl.torch_sums(torch, d)))
rep.emit()
