"""torch_reuse.py: the PyTorch reuse loop, unmodified: 200 pageable CPU tensors of 4 MB, each
`.to("cuda")`, timed with torch.utils.benchmark.Timer (median of blocked runs). Prints one line
with the median in ms; also checks the device copies equal the host tensors. Run it without the
shim, under it, and with PINNED=1 (pinned tensors) to compare: tests/bench/run_reuse.sh."""
import os

import torch
import torch.utils.benchmark as benchmark

pinned = os.environ.get("PINNED") == "1"
n, elems = 200, (4 * 1000 * 1000) // 4
xs = [torch.full((elems,), float(i), dtype=torch.float32) for i in range(n)]
if pinned:
    xs = [x.pin_memory() for x in xs]


def move():
    ys = [x.to("cuda") for x in xs]
    torch.cuda.synchronize()
    return ys


ys = move()
ok = all(torch.equal(y.cpu(), x) for x, y in zip(xs, ys))
t = benchmark.Timer(stmt="move()", globals={"move": move}).blocked_autorange(min_run_time=2.0)
print(f"torch reuse {'pinned' if pinned else 'pageable'}: median {t.median * 1e3:.1f} ms over {len(t.times)} runs,"
      f" data {'identical' if ok else 'WRONG'}")
