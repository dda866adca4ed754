"""guard_faulthandler.py: the guard under a Python process with faulthandler enabled.

With faulthandler on (it installs its own SIGSEGV handler on an alternate signal stack), this
program makes async D2H copies into pinned memory through the driver (ctypes, libcuda.so.1 from
the library path: the fake driver on a CPU machine), reads each destination before synchronizing
(the guard must report it, and in repair mode the read must see the copy's data), then, given
"crash", reads address 8: faulthandler must still print its fatal-error traceback and the
process must still die of SIGSEGV.

    python3 guard_faulthandler.py [crash]     environment: TRIALS (default 5), BYTES (default 2 MiB)
Prints "early reads with the copy's data: N of TRIALS" and "after sync: correct".
"""
import ctypes
import faulthandler
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from cudriver import Driver  # noqa: E402  (tests/python: the shared ctypes driver setup)

faulthandler.enable()

TRIALS = int(os.environ.get("TRIALS", "5"))
BYTES = int(os.environ.get("BYTES", str(2 << 20)))

drv = Driver(BYTES)
check, stream, dev = drv.check, drv.stream, drv.dev

pattern = bytes((i * 7 + 3) & 0xFF for i in range(256)) * (BYTES // 256)
source = ctypes.create_string_buffer(pattern, BYTES)
check("cuMemcpyHtoD_v2", dev, source, ctypes.c_size_t(BYTES))

host = ctypes.c_void_p()
check("cuMemHostAlloc", ctypes.byref(host), ctypes.c_size_t(BYTES), 0)

early = 0
for _ in range(TRIALS):
    ctypes.memset(host, 0, BYTES)
    check("cuMemcpyDtoHAsync_v2", host, dev, ctypes.c_size_t(BYTES), stream)
    first = ctypes.string_at(host, 1)  # read before synchronizing: the race the guard reports
    if first == pattern[:1]:
        early += 1
    check("cuStreamSynchronize", stream)
    if ctypes.string_at(host, BYTES) != pattern:
        sys.exit("wrong data after synchronizing")
print(f"early reads with the copy's data: {early} of {TRIALS}")
print("after sync: correct", flush=True)

if sys.argv[1:] == ["crash"]:
    print("about to fault", flush=True)
    ctypes.string_at(8, 1)  # address 8: a real fault, not the NULL case ctypes answers itself
    print("still alive?", flush=True)
