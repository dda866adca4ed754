"""cupy_copy.py: CuPy moving a 256 MiB host array each way: cp.asarray of a numpy array just computed
(fresh pageable memory), a kernel, then cp.asnumpy into a fresh numpy array. 1 warm-up round (it
also compiles CuPy's kernels), then 5 measured. Metrics: ms per copy each way (median), copy and
device synchronize timed. Digest: what arrived on the GPU and what came back."""
import time

import wl

NAME, WORDS, WARMUP, ROUNDS = "cupy_copy", 64 << 20, 1, 5

try:
    import numpy as np
    import cupy as cp
except ImportError as e:
    wl.skip(NAME, "cupy not importable (%s)" % e)
try:
    devices = cp.cuda.runtime.getDeviceCount()
except cp.cuda.runtime.CUDARuntimeError as e:
    wl.skip(NAME, "cupy %s sees no CUDA device (%s)" % (cp.__version__, e))
if devices < 1:
    wl.skip(NAME, "cupy %s sees no CUDA device" % cp.__version__)

rep = wl.Report(NAME)
rep.notes.update({"cupy": cp.__version__, "numpy": np.__version__})
sync = cp.cuda.Device().synchronize
base = np.tile(np.arange(4096, dtype=np.float32), WORDS // 4096)
h2d, d2h = [], []
for r in range(WARMUP + ROUNDS):
    wl.turn()  # each round a turn of its own (lockstep)
    x = base + np.float32(r)
    sync()
    t0 = time.perf_counter()
    d = cp.asarray(x)
    sync()
    t1 = time.perf_counter()
    e = d * 2
    d_sums = [int(v) for v in (cp.sum(d.view(cp.uint32), dtype=cp.uint64), cp.sum(e.view(cp.uint32), dtype=cp.uint64))]
    sync()
    t2 = time.perf_counter()
    back = cp.asnumpy(e)
    sync()
    t3 = time.perf_counter()
    if r >= WARMUP:
        h2d.append(t1 - t0)
        d2h.append(t3 - t2)
    rep.part("round %d" % r, d_sums, wl.numpy_sums(np, back))
    del x, d, e, back
# CuPy copies a numpy array into pinned memory of its own first (its pinned memory pool) and the
# driver sees a pinned H2D (the shim's summary on an H100: 'h2d pinned pass'): nothing to speed up.
rep.metric("asarray", "cp.asarray of a fresh 256 MiB numpy array", wl.median(h2d) * 1e3, "ms", "same")
rep.metric("asnumpy", "cp.asnumpy of 256 MiB into a fresh array", wl.median(d2h) * 1e3, "ms", "faster")
rep.emit()
