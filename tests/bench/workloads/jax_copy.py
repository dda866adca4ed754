"""jax_copy.py: JAX moving a 128 MiB host array each way: jax.device_put of a numpy array just
computed, a kernel, then np.asarray of the result (JAX stages both through pinned buffers of its own,
so the shim has nothing to speed up). 1 warm-up round (it also compiles the kernel), then 5 measured.
Metrics: ms per copy each way (median), each until the data is in place. Digest: what came back.
Notes, under rows: the CPU level right after the measured rounds and the threads' CPU over them, one
span for both rows (wl.note_rows_level; row_levels.py prints them)."""
import time

import wl

NAME, WORDS, WARMUP, ROUNDS = "jax_copy", 32 << 20, 1, 5

np, jax, why = wl.jax_gpu()
if why:
    wl.skip(NAME, why)

rep = wl.Report(NAME)
rep.notes.update({"jax": jax.__version__, "numpy": np.__version__, "device": str(jax.devices()[0])})
double = jax.jit(lambda a: a * 2)
base = np.tile(np.arange(4096, dtype=np.float32), WORDS // 4096)
h2d, d2h = [], []
for r in range(WARMUP + ROUNDS):
    wl.turn()  # each round a turn of its own (lockstep)
    if r == WARMUP:
        start = wl.cpu_reading()
    x = base + np.float32(r)
    t0 = time.perf_counter()
    d = jax.device_put(x)
    d.block_until_ready()
    t1 = time.perf_counter()
    e = double(d)
    e.block_until_ready()
    t2 = time.perf_counter()
    back = np.asarray(e)
    t3 = time.perf_counter()
    if r >= WARMUP:
        h2d.append(t1 - t0)
        d2h.append(t3 - t2)
    rep.part("round %d" % r, wl.numpy_sums(np, back))
    del x, d, e, back
wl.note_rows_level(rep, start, {"device_put": h2d, "asarray": d2h})
rep.metric("device_put", "jax.device_put of a fresh 128 MiB numpy array", wl.median(h2d) * 1e3, "ms", "same")
rep.metric("asarray", "np.asarray of a 128 MiB jax array", wl.median(d2h) * 1e3, "ms", "same")
rep.emit()
