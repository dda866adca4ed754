"""torch_pinned_d2h.py: a correct consumer of async D2H copies: 16 MiB copied with
dst.copy_(src, non_blocking=True) into one preallocated pinned buffer, torch.cuda.synchronize(),
then the host reads the result. The shim has nothing to speed up here; with the guard on, every copy
is guarded and released at the synchronize, so this is where the guard's cost per copy shows.
Metric: microseconds per copy+synchronize (median of 400, after 20 warm-up). Digest: the values read."""
import wl

NAME, WORDS, WARMUP, ITERS = "torch_pinned_d2h", 4 << 20, 20, 400

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))
src = torch.arange(WORDS, dtype=torch.int32, device=dev)
dst = wl.torch_pinned_empty(torch, WORDS, torch.int32)
seen = []
times = []
for i in range(WARMUP + ITERS):
    src.add_(1)  # new values each time, so a stale read would show in the digest
    t = wl.timed(lambda: dst.copy_(src, non_blocking=True), sync, 1)
    if i >= WARMUP:
        times += t
    seen.append(int(dst[0]) + int(dst[WORDS - 1]))  # the host reads the result after the sync
rep.metric("copy", "16 MiB D2H into preallocated pinned, non_blocking + synchronize", wl.median(times) * 1e6,
           "us", "same")
rep.part(seen, wl.torch_collect(torch, wl.torch_sums(torch, dst)))
rep.emit()
