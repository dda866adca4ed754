"""torch_train.py: a small MLP training loop as a plain script writes it: each step makes its batch on
the CPU (pageable), copies it with .to("cuda"), runs forward, backward and an SGD step, and reads
loss.item(). With --graph the forward, backward and optimizer step are captured once in a CUDA graph
(PyTorch's whole-network capture) and replayed; the batch is copied into the graph's static input
first. The loop is wl.torch_mlp_step's (inprocess_ab.py times the same step in one process).
Metric: ms per step, the median of 20 blocks of 10 steps (each block a turn of its own: wl.turn).
Digest: every loss, bit for bit, and the final weights. Notes, under rows: the CPU level right after
the timed blocks and the CPU time of the main thread, the shim's threads and the others meanwhile
(wl.note_row_level; row_levels.py prints them): the step spreads 3-5.5 ms from process to process.
Skips when PyTorch or a GPU is missing, or (--graph) when the capture itself fails.
usage: torch_train.py [--graph]"""
import sys

import wl

GRAPH = "--graph" in sys.argv[1:]
NAME = "torch_graph" if GRAPH else "torch_train"
WARMUP, STEPS, BLOCKS = 20, 200, 20

torch, dev, sync = wl.torch_or_skip(NAME)
if GRAPH and wl.cpu_test_mode():
    wl.skip(NAME, "CUDA graphs need a GPU (CPU test mode)")
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))

try:
    step, model = wl.torch_mlp_step(torch, dev, GRAPH)
except wl.CaptureFailed as e:  # the capture is optional: say why it did not run
    wl.skip(NAME, str(e))

losses = [step() for _ in range(WARMUP)]
start = wl.cpu_reading()
blocks = wl.timed(lambda: losses.extend(step() for _ in range(STEPS // BLOCKS)), sync, BLOCKS)
wl.note_row_level(rep, "step", start, blocks)

label = "graph-replayed MLP step, pageable batch, loss.item()" if GRAPH else "MLP step, pageable batch, loss.item()"
rep.metric("step", label, wl.median(blocks) / (STEPS // BLOCKS) * 1e3, "ms", "same")
rep.part("losses", losses)
rep.part("weights", wl.torch_collect(torch, [s for p in model.parameters() for s in wl.torch_sums(torch, p)]))
rep.notes.update({"steps": STEPS, "batch": [wl.MLP_BATCH, wl.MLP_WIDTH], "first_loss": losses[0],
                  "last_loss": losses[-1]})
rep.emit()
