"""torch_pysites.py: PyTorch programs whose copies and races the shim must name by this file's
own lines (issue #14), for torch_pysites.sh.

    python3 torch_pysites.py race      c = t.to("cpu", non_blocking=True); c.mean() without a sync
                                       (the guard's report must say "read at: ...:<line of c.mean()>"
                                       and "copy from: ...:<line of .to()>")
    python3 torch_pysites.py loader    a DataLoader (2 workers, pin_memory off and on) whose batches
                                       go .to("cuda") in the loop; the log's sites must name the loop's
                                       lines, and the pin_memory thread's copies its own frames
Lines to look for are marked "# line:NAME"; the script prints "line NAME = N" for each first.
"""
import re
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

for number, text in enumerate(open(__file__), 1):
    m = re.search(r"# line:(\w+)$", text)
    if m:
        print("line %s = %d" % (m.group(1), number))
print("python %s, torch %s, %s" % (sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0)),
      flush=True)


def race(rounds=3):
    t = torch.randn(1 << 22, device="cuda")
    for _ in range(rounds):
        t.mul_(1.0001)
        c = t.to("cpu", non_blocking=True)  # line:race_copy
        m = c.mean()  # line:race_read
        torch.cuda.synchronize()
    print("race done", float(m))


def loader():
    data = TensorDataset(torch.randn(256, 1 << 14), torch.arange(256))
    total = 0.0
    for pin in (False, True):
        for x, y in DataLoader(data, batch_size=32, num_workers=2, pin_memory=pin):
            xd = x.to("cuda", non_blocking=pin)  # line:loader_h2d
            total += float(xd.sum().to("cpu"))  # line:loader_d2h
    print("loader done", total)


{"race": race, "loader": loader}[sys.argv[1]]()
