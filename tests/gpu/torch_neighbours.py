"""torch_neighbours.py: issue #10's program. 200 pageable 4 MB tensors copied to the GPU 4 times,
freed, then 200 new ones (glibc now hands them out side by side from the heap) copied 4 times.
Under a shim that registered partial pages this died with `CUDA error: invalid argument`.
Prints a digest of everything that reached the GPU (identical with and without the shim) and the
median time of the last rounds. Run: python3 tests/gpu/torch_neighbours.py"""
import hashlib
import time

import torch

digest = hashlib.sha256()


def rounds(tensors, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        d = [t.to("cuda:0") for t in tensors]
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    for x in d[::20]:
        digest.update(x.cpu().numpy().tobytes())
    return sorted(times)[len(times) // 2]


torch.manual_seed(0)
a = [torch.randn(1_000_000) for _ in range(200)]
first = rounds(a, 4)
del a
b = [torch.randn(1_000_000) for _ in range(200)]
second = rounds(b, 8)
print(f"torch neighbours: first set median {first * 1e3:.1f} ms, heap-neighbour set median {second * 1e3:.1f} ms,"
      f" digest {digest.hexdigest()[:16]}")
