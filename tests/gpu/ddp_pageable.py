"""ddp_pageable.py: DDP on every local GPU with pageable batches, for the two-GPU check
(tests/gpu/multigpu.sh). Each rank makes a 32 MiB float32 batch on the CPU each step (pageable,
fresh: staged by the shim) and moves it with .to(device); rank 0 prints every loss as its exact
float (repr) and the median step time. Losses must be identical with and without the shim.
Run: torchrun --nproc_per_node=2 tests/gpu/ddp_pageable.py"""
import os
import statistics
import time

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl")
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = False
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1)).cuda()
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(100 + rank)
losses, times = [], []
for step in range(12):
    t0 = time.perf_counter()
    x = torch.randn(8192, 1024, generator=gen)  # 32 MiB, pageable
    y = x.sum(dim=1, keepdim=True) * 0.01
    xd, yd = x.to(f"cuda:{local}"), y.to(f"cuda:{local}")
    loss = torch.nn.functional.mse_loss(ddp(xd), yd)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
    times.append(time.perf_counter() - t0)
if rank == 0:
    print("ddp losses:", " ".join(repr(v) for v in losses))
    print(f"ddp step median {statistics.median(times[2:]) * 1e3:.1f} ms")
dist.destroy_process_group()
