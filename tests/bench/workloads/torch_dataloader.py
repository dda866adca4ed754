"""torch_dataloader.py: a DataLoader with 6 worker processes (forked) making image batches of
64 x 3 x 224 x 224 float32 (38.5 MB: each image a uint8 picture converted and normalized, as a
vision pipeline does), each batch moved with .to("cuda", non_blocking=True). With --pin 0 the batch
arrives in the workers' shared (pageable) memory; with --pin 1 the DataLoader's pin-memory thread
copies it into pinned memory first. Metric: ms per batch over the measured batches (after warm-up
batches that cover the workers' start). Digest: every batch as it arrived on the GPU, and the labels.
usage: torch_dataloader.py --pin 0|1"""
import sys
import time

import wl

PIN = sys.argv[sys.argv.index("--pin") + 1] == "1" if "--pin" in sys.argv else False
NAME = "torch_dataloader_pinned" if PIN else "torch_dataloader"
WORKERS, BATCH, WARMUP, MEASURED = 6, 64, 12, 48

torch, dev, sync = wl.torch_or_skip(NAME)
if PIN and wl.cpu_test_mode():
    PIN = False  # no pinned memory without a GPU; the logic is the same
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))

loader = wl.torch_image_loader(torch, PIN, WARMUP + MEASURED, WORKERS, BATCH)
sums = []
t0 = None
n = 0
for n, (x, y) in enumerate(loader):
    if n == WARMUP:
        sync()
        t0 = time.perf_counter()
    xg = x.to(dev, non_blocking=True)
    yg = y.to(dev, non_blocking=True)
    sums += wl.torch_sums(torch, xg) + wl.torch_sums(torch, yg)
sync()
elapsed = time.perf_counter() - t0
if n + 1 != WARMUP + MEASURED:
    raise SystemExit("torch_dataloader: got %d batches, expected %d" % (n + 1, WARMUP + MEASURED))

rep.metric("batch", "DataLoader 6 workers, 64x3x224x224 f32, pin_memory=%s" % PIN, elapsed / MEASURED * 1e3,
           "ms", "same" if PIN else "faster")
rep.part(wl.torch_collect(torch, sums))
rep.notes.update({"batches": MEASURED, "warmup_batches": WARMUP, "pin_memory": PIN})
rep.emit()
