"""torch_pinned_after_staging.py: why a large pinned copy reads slower in a process that staged just before
(a diagnostic for compare_builds.py, not a row of the suite). One 64 MiB pinned H2D .to(cuda)-style copy
(d.copy_(p, non_blocking=True)), 30 times after one warm-up, timed on the GPU (CUDA events around the
copy, so the call's own cost is not in it): before a staging phase (torch_fresh.py's 4 MiB x 30, 64 MiB
x 8, 1 GiB x 3 fresh pageable tensors .to(cuda)), right after it from the same pinned tensor
(early_pinned: its pages were placed before the phase) and from one pinned after it (new_pinned), and
both again after 3 s of sleep. With --windows, instead of those four: the copy from the tensor pinned
before the phase, back to back for 3 s from the phase's end, each copy counted in the window of time
since that end it started in (0-20, 20-100, 100-500, 500-3000 ms), one metric per window: how the
loss fades without the sleep that itself moves this DMA (torch_pinned_after_idle.py). Metrics: ms per
copy (median). Notes: every copy's time and the CPU time each thread of the process used meanwhile.
Digest: the copy as it arrived."""
import sys
import time

import wl

NAME = "torch_pinned_after_staging"
MiB = 1 << 20
WORDS = 16 * MiB  # 64 MiB of float32
STAGING_PHASE = [(4 * MiB, 30), (64 * MiB, 8), (1024 * MiB, 3)]  # three of torch_fresh.py's sizes, as many copies
WINDOWS_MS = [20, 100, 500, 3000]  # --windows: each window ends here, the first starts at the phase's end

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
pattern = torch.arange(4096, dtype=torch.float32)
early = wl.torch_pinned_empty(torch, WORDS, torch.float32)
early.copy_(pattern.repeat(WORDS // 4096))
d = torch.empty(WORDS, dtype=torch.float32, device=dev)
s = torch.cuda.current_stream()


def gpu_time(p):
    """One copy of p into d, timed on the GPU (ms), the stream idle before it and after."""
    sync()
    return wl.torch_gpu_ms(torch, s, sync, lambda: d.copy_(p, non_blocking=True))


def note_busy(key, before):
    """Note the CPU time (us) each thread used since `before` (wl.thread_cpu_ns()), by "TID:name"."""
    used = {}
    for tid, (name, ns) in wl.thread_cpu_ns().items():
        us = (ns - before.get(tid, (name, 0))[1]) // 1000
        if us > 0:
            used["%s:%s" % (tid, name)] = us
    rep.notes[key + "_busy_us"] = used


def report(key, times):
    """The metric `key` (the median of times), every copy's time, and the copy's digest."""
    rep.notes[key + "_ms"] = [round(x, 4) for x in times]
    rep.metric(key, key, wl.median(times), "ms", "same", True)
    rep.part(key, wl.torch_collect(torch, wl.torch_sums(torch, d)))


def gpu_times(p, key):
    """The metric `key`: 30 copies of p into d, each timed on the GPU, after one warm-up copy."""
    before = wl.thread_cpu_ns()
    gpu_time(p)
    times = [gpu_time(p) for _ in range(30)]
    note_busy(key, before)
    report(key, times)


def windows(p, start):
    """One metric per window of WINDOWS_MS: copies of p back to back from `start` (perf_counter) for
    the last window's end, each in the window its start fell in."""
    before = wl.thread_cpu_ns()
    times = [[] for _ in WINDOWS_MS]
    while True:
        at = (time.perf_counter() - start) * 1e3
        if at >= WINDOWS_MS[-1]:
            break
        times[next(i for i, end in enumerate(WINDOWS_MS) if at < end)].append(gpu_time(p))
    note_busy("windows", before)
    low = 0
    for end, got in zip(WINDOWS_MS, times):
        report("window_%d_%d" % (low, end), got)
        low = end


gpu_times(early, "before_stage")
for nbytes, iters in STAGING_PHASE:
    base = pattern.repeat(nbytes // 4 // 4096)
    for i in range(1 + iters):
        x = base + i
        y = x.to(dev)
        sync()
        del x, y
    del base
if "--windows" in sys.argv[1:]:
    windows(early, time.perf_counter())
    rep.emit()
    sys.exit(0)
late = wl.torch_pinned_empty(torch, WORDS, torch.float32)
late.copy_(pattern.repeat(WORDS // 4096))
gpu_times(early, "early_pinned")
gpu_times(late, "new_pinned")
time.sleep(3)
gpu_times(early, "early_after_3s")
gpu_times(late, "new_after_3s")
rep.emit()
