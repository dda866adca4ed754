"""torch_first_copy.py: the first large copy of a process, the one that finds the staging pool not yet
made unless the shim started it before (pool_prewarm). As a program starts: CUDA initialized, a
64 MiB tensor made on the GPU and one on the CPU, then the process's first copy of any kind: with
--dir d2h the GPU tensor .to("cpu") (a fresh destination), with --dir h2d a CPU tensor just computed
.to("cuda"); then the same once more. Metrics: ms of each of the two copies with its synchronize.
Digest: both copies as they arrived."""
import argparse
import time

import wl

p = argparse.ArgumentParser()
p.add_argument("--dir", choices=("d2h", "h2d"), required=True)
args = p.parse_args()
NAME = "torch_first_copy"
MiB = 1 << 20
N = 16 * MiB  # float32 elements: 64 MiB

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))
g = torch.arange(N, dtype=torch.float32, device=dev).remainder_(4093.0)
h = torch.arange(N, dtype=torch.float32).remainder_(4091.0)
sync()
sums = []
for i, key in enumerate(("first", "second")):
    x = h + i  # a fresh pageable source, computed before the clock starts
    t0 = time.perf_counter()
    got = g.to("cpu") if args.dir == "d2h" else x.to(dev)
    sync()
    ms = (time.perf_counter() - t0) * 1e3
    label = "%s 64 MiB %s of the process (%s)" % (
        key, args.dir.upper(), "GPU tensor .to(cpu)" if args.dir == "d2h" else "fresh tensor .to(cuda)")
    rep.metric(args.dir + "_" + key, label, ms, "ms", "faster")
    sums += wl.torch_sums(torch, got)
    del x, got
rep.part(args.dir, wl.torch_collect(torch, sums))
rep.emit()
