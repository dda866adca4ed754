"""torch_guard.py: the bug the guard exists for. `t.to("cpu", non_blocking=True)` returns a pinned
tensor whose copy may still be running; reading it without a synchronize can see old bytes.
usage: python3 tests/gpu/torch_guard.py race|sync [trials]
  race: read (clone) the destination right after the call, then synchronize and compare the clone
        with the finished copy; prints how many clones were correct.
  sync: the same with torch.cuda.synchronize() before the read (a correct program).
Run under the shim with PINSHIM_GUARD=warn|repair and PINSHIM_SUMMARY=json; the summary's
"guard" object counts the races. Deterministic values; prints no timings."""
import sys

import torch

mode = sys.argv[1]
trials = int(sys.argv[2]) if len(sys.argv) > 2 else 20
n = 64 << 20  # 64 Mi floats: 256 MiB, a copy of several milliseconds
base = torch.arange(n, device="cuda", dtype=torch.float32).remainder_(1009.0)
correct = 0
for i in range(trials):
    dev = base * float(i + 1)                  # a kernel, then the copy queues behind it
    host = dev.to("cpu", non_blocking=True)    # pinned destination, copy in flight
    if mode == "sync":
        torch.cuda.synchronize()
    snap = host.clone()                        # the read
    torch.cuda.synchronize()
    correct += int(torch.equal(snap, host))
print(f"{mode}: trials {trials} correct {correct}")
