"""torch_item.py: x.item() on a 1-element CUDA tensor, 20,000 times (a 4-byte D2H copy and a
synchronize each; PyTorch 2.11 copies into a small block of its pinned host allocator: what a loop
that logs a scalar every step pays). Metric: ms for the 20,000 calls, after 1,000 warm-up calls:
20 times the median of 20 blocks of 1,000 (each block a turn of its own: wl.turn).
Digest: the sum of the values read. Notes, under rows: the CPU level right after the timed blocks
and the threads' CPU meanwhile (wl.note_row_level; row_levels.py prints them): the row spreads
166-239 ms from process to process (H200, 2026-12-02)."""

import wl

NAME, CALLS, WARMUP, BLOCKS = "torch_item", 20000, 1000, 20

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))
x = torch.full((1,), 1.25, device=dev)
total = 0.0
for _ in range(WARMUP):
    total += x.item()
sync()
values = []
# no synchronize around a block: each .item() is one
start = wl.cpu_reading()
blocks = wl.timed(lambda: values.extend(x.item() for _ in range(CALLS // BLOCKS)), lambda: None, BLOCKS)
wl.note_row_level(rep, "item", start, blocks)
for v in values:  # in the order read, as before
    total += v
rep.metric("item", "20,000 x .item() of a 1-element CUDA tensor", wl.median(blocks) * BLOCKS * 1e3, "ms", "same")
rep.part(total)
rep.emit()
