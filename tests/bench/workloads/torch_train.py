"""torch_train.py: a small MLP training loop as a plain script writes it: each step makes its batch on
the CPU (pageable), copies it with .to("cuda"), runs forward, backward and an SGD step, and reads
loss.item(). With --graph the forward, backward and optimizer step are captured once in a CUDA graph
(PyTorch's whole-network capture) and replayed; the batch is copied into the graph's static input
first. Metric: ms per step over the measured steps. Digest: every loss, bit for bit, and the final
weights. Skips when PyTorch or a GPU is missing, or (--graph) when the capture itself fails.
usage: torch_train.py [--graph]"""
import sys
import time

import wl

GRAPH = "--graph" in sys.argv[1:]
NAME = "torch_graph" if GRAPH else "torch_train"
BATCH, IN, HIDDEN, CLASSES = 256, 1024, 2048, 10
WARMUP, STEPS = 20, 200

torch, dev, sync = wl.torch_or_skip(NAME)
if GRAPH and wl.cpu_test_mode():
    wl.skip(NAME, "CUDA graphs need a GPU (CPU test mode)")
F = torch.nn.functional
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN),
                            torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
gen = torch.Generator().manual_seed(1234)


def batch():
    """A fresh pageable batch, made on the CPU from a seeded generator (the same every run)."""
    return torch.randn(BATCH, IN, generator=gen), torch.randint(0, CLASSES, (BATCH,), generator=gen)


if GRAPH:
    static_x = torch.zeros(BATCH, IN, device=dev)
    static_y = torch.zeros(BATCH, dtype=torch.long, device=dev)
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(static_x), static_y).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = F.cross_entropy(model(static_x), static_y)
            static_loss.backward()
            opt.step()
    except Exception as e:  # the capture is optional: say why it did not run
        wl.skip(NAME, "CUDA graph capture failed: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200]))

    def step():
        x, y = batch()
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()
        return static_loss.item()
else:
    def step():
        x, y = batch()
        out = model(x.to(dev))
        loss = F.cross_entropy(out, y.to(dev))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

losses = [step() for _ in range(WARMUP)]
sync()
t0 = time.perf_counter()
for _ in range(STEPS):
    losses.append(step())
sync()
elapsed = time.perf_counter() - t0

label = "graph-replayed MLP step, pageable batch, loss.item()" if GRAPH else "MLP step, pageable batch, loss.item()"
rep.metric("step", label, elapsed / STEPS * 1e3, "ms", "same")
rep.part("losses", losses)
rep.part("weights", wl.torch_collect(torch, [s for p in model.parameters() for s in wl.torch_sums(torch, p)]))
rep.notes.update({"steps": STEPS, "batch": [BATCH, IN], "first_loss": losses[0], "last_loss": losses[-1]})
rep.emit()
