"""torch_offload.py: activation/optimizer-state offload as a plain script writes it: 8 GPU tensors of
64 MiB moved .to("cpu") (each into a fresh pageable tensor) and back .to("cuda"); for reference the
same 8 copies each way through preallocated pinned buffers with non_blocking=True (the ceiling).
1 warm-up round, then 2 measured rounds. Metrics: ms for the 8 copies, each direction (median of the
rounds). Digest: what came back on the GPU, every round."""
import wl

NAME, TENSORS, WORDS, WARMUP, ROUNDS = "torch_offload", 8, 16 << 20, 1, 2

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))
pattern = torch.arange(4096, dtype=torch.float32, device=dev)
gpu = [pattern.repeat(WORDS // 4096) + i for i in range(TENSORS)]  # 64 MiB each, made on the GPU

d2h, h2d = [], []
for r in range(WARMUP + ROUNDS):
    cpu, back = [], []
    t_out = wl.timed(lambda: cpu.extend(g.to("cpu") for g in gpu), sync, 1)[0]
    t_in = wl.timed(lambda: back.extend(c.to(dev) for c in cpu), sync, 1)[0]
    if r >= WARMUP:
        d2h.append(t_out)
        h2d.append(t_in)
    sums = []
    for b in back:
        sums += wl.torch_sums(torch, b)
    rep.part("round %d" % r, wl.torch_collect(torch, sums))
    del cpu, back
rep.metric("d2h", "8 x 64 MiB .to(cpu) into fresh pageable tensors", wl.median(d2h) * 1e3, "ms", "faster")
rep.metric("h2d", "the same tensors back .to(cuda)", wl.median(h2d) * 1e3, "ms", "faster")

if not wl.cpu_test_mode():
    pinned = [wl.torch_pinned_empty(torch, WORDS, torch.float32) for _ in range(TENSORS)]
    dev_back = [torch.empty(WORDS, dtype=torch.float32, device=dev) for _ in range(TENSORS)]

    def out_pinned():
        for p, g in zip(pinned, gpu):
            p.copy_(g, non_blocking=True)

    def in_pinned():
        for d, p in zip(dev_back, pinned):
            d.copy_(p, non_blocking=True)

    t_out = wl.timed(out_pinned, sync, WARMUP + ROUNDS)[WARMUP:]
    t_in = wl.timed(in_pinned, sync, WARMUP + ROUNDS)[WARMUP:]
    rep.metric("d2h_pinned", "ref: 8 x 64 MiB D2H into preallocated pinned, non_blocking", wl.median(t_out) * 1e3,
               "ms", "same", True)
    rep.metric("h2d_pinned", "ref: 8 x 64 MiB H2D from preallocated pinned, non_blocking", wl.median(t_in) * 1e3,
               "ms", "same", True)
    sums = []
    for d in dev_back:
        sums += wl.torch_sums(torch, d)
    rep.part("pinned", wl.torch_collect(torch, sums))
rep.emit()
