"""frameworks.py: host<->device copies through JAX (calls the driver directly, found by dlsym) and
CuPy (CUDA runtime linked statically). Run under the shim to see that both routes are observed;
prints deterministic checksums so outputs with and without the shim can be compared.
usage: python3 tests/gpu/frameworks.py jax|cupy"""
import sys

import numpy as np

host = (np.arange(1 << 20, dtype=np.float32) % 251).reshape(1024, 1024)

if sys.argv[1] == "jax":
    import jax
    for _ in range(4):
        dev = jax.device_put(host)
        back = np.asarray(dev + 1)
    print("jax", jax.__version__, "checksum", float(back.sum()))
else:
    import cupy
    for _ in range(4):
        dev = cupy.asarray(host)
        back = cupy.asnumpy(dev + 1)
    cupy.cuda.runtime.deviceSynchronize()
    print("cupy", cupy.__version__, "checksum", float(back.sum()))
