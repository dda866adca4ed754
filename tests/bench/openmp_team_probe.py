#!/usr/bin/env python3
"""openmp_team_probe.py: when a staged copy borrows PyTorch's OpenMP team (stage_openmp), and what the
process's CPU time does meanwhile. 64 MiB of pageable CPU tensor .to("cuda") N times, a pause after
each; in mode "compute" each copy's source is computed just before it by PyTorch (x + i: its OpenMP
threads spin when the copy starts); in mode "idle" only the first is (the team spins once), the
others are new NumPy arrays never written (nothing the program does keeps the team spinning).
Every source is a new allocation, so every copy is staged (none reused for pin-on-reuse). Prints
the median copy time, its 90th percentile and the slowest, the copies that took over 3 times the
median (a stall), and the process's CPU seconds per wall second over the loop. Under the shim
with PINSHIM_SUMMARY=json its summary says how many copies borrowed the team
(openmp_team_copies): in "idle" mode at most those of the first lease (omp_team.c, 250 ms), the
time the shim's own regions may keep a team spinning that the program left idle. Needs PyTorch,
NumPy and a GPU; a measuring tool, not a test.
usage: openmp_team_probe.py [compute|idle] [N] [PAUSE_MS]  (defaults: compute 100 10)"""
import resource
import statistics
import sys
import time

import numpy
import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "compute"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
pause = float(sys.argv[3]) / 1e3 if len(sys.argv) > 3 else 0.01
if mode not in ("compute", "idle"):
    sys.exit(__doc__)
base = torch.arange(16 << 20, dtype=torch.float32)
dev = torch.empty(16 << 20, dtype=torch.float32, device="cuda")
torch.cuda.synchronize()
times = []
r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
for i in range(n):
    x = base + i if mode == "compute" or i == 0 else torch.from_numpy(numpy.empty(16 << 20, numpy.float32))
    t = time.perf_counter()
    dev.copy_(x)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t)
    time.sleep(pause)
r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
med = statistics.median(times)
slow = sorted((t for t in times if t > 3 * med), reverse=True)
print("%s: %d copies of 64 MiB, median %.3f ms, 90th percentile %.3f, slowest %.3f; %d over 3 times the median%s; "
      "CPU %.2f s per wall second over %.2f s"
      % (mode, n, med * 1e3, sorted(times)[int(0.9 * (n - 1))] * 1e3, max(times) * 1e3, len(slow),
         " (%s ms)" % ", ".join("%.1f" % (t * 1e3) for t in slow[:8]) if slow else "", cpu / (w1 - w0), w1 - w0))
