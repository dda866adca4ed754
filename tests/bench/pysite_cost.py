"""pysite_cost.py: ns per cuMemcpyHtoD_v2 made from Python through ctypes (the GIL released in the
call), for the cost of the shim's Python call sites (run_pysite_cost.sh runs it with and without
them). Loops: the copy made in the program's own function ("direct"), or three frames deep inside
a library module under .../site-packages/ ("via library": the walk skips those frames); of 4 bytes
(the driver's work included: on the fake driver a hand-off to its stream thread, noisy) and of 0
bytes (a copy the shim handles and logs like any other, with almost no driver work: the shim's
own cost stands out). Times are the calling thread's CPU time (time.thread_time_ns: the shim's
work on the copying thread, without the log writer's thread or other processes on a shared
machine). Prints "<loop> <ns per copy>" lines: the median of 5 timings of N copies.

    python3 pysite_cost.py [N]      (N default 20000)
"""
import ctypes
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from cudriver import Driver, library_module  # noqa: E402  (tests/python: the shared ctypes driver setup)

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
drv = Driver(4096)
cu, dev = drv.cu, drv.dev
src = ctypes.create_string_buffer(4)
size4, size0 = ctypes.c_size_t(4), ctypes.c_size_t(0)
copy = cu.cuMemcpyHtoD_v2

costlib = library_module("costlib", "def a(fn, *args):\n    return b(fn, *args)\n"
                                    "def b(fn, *args):\n    return c(fn, *args)\n"
                                    "def c(fn, *args):\n    return fn(*args)\n")


def direct(n, size):
    for _ in range(n):
        copy(dev, src, size)


def via_library(n, size):
    for _ in range(n):
        costlib.a(copy, dev, src, size)


for label, loop, size in (("direct 4B", direct, size4), ("library 4B", via_library, size4),
                          ("direct 0B", direct, size0), ("library 0B", via_library, size0)):
    loop(1000, size)  # warm: first sight of each site
    times = []
    for _ in range(5):
        t0 = time.thread_time_ns()
        loop(N, size)
        times.append((time.thread_time_ns() - t0) / N)
    print("%-12s %8.1f" % (label, statistics.median(times)), flush=True)
