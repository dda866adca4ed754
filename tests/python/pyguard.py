"""pyguard.py: races the guard must report in the program's own terms (the Python line that read
the buffer, the line that started the copy), each an async D2H copy into pinned memory read before
synchronizing, through ctypes on the driver (the fake one on a CPU machine):
  held       the main thread reads with ctypes.string_at (the GIL held during the read)
  released   the main thread reads with libc's memcpy through ctypes.CDLL (the GIL released)
  thread     a second Python thread copies and reads (GIL released)
Lines are marked "# copy:NAME" and "# read:NAME"; check_pyguard.py compares the reports with them.
Run with FAKECUDA_GBPS small (a 2 MiB copy then takes about a millisecond): the read comes first.
"""
import ctypes
import sys
import threading

BYTES = 2 << 20
cu = ctypes.CDLL("libcuda.so.1")
libc = ctypes.CDLL(None)


def check(name, *args):
    r = getattr(cu, name)(*args)
    if r != 0:
        sys.exit(f"{name} failed with CUresult {r}")


check("cuInit", 0)
device = ctypes.c_int()
check("cuDeviceGet", ctypes.byref(device), 0)
ctx = ctypes.c_void_p()
check("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), device)
check("cuCtxSetCurrent", ctx)
stream = ctypes.c_void_p()
check("cuStreamCreate", ctypes.byref(stream), 0)
dev = ctypes.c_uint64()
check("cuMemAlloc_v2", ctypes.byref(dev), ctypes.c_size_t(BYTES))
hosts = []
for _ in range(3):
    h = ctypes.c_void_p()
    check("cuMemHostAlloc", ctypes.byref(h), ctypes.c_size_t(BYTES), 0)
    hosts.append(h)
out = ctypes.create_string_buffer(16)


def held():
    cu.cuMemcpyDtoHAsync_v2(hosts[0], dev, ctypes.c_size_t(BYTES), stream)  # copy:held
    first = ctypes.string_at(hosts[0], 1)  # read:held
    cu.cuStreamSynchronize(stream)
    return first


def released():
    cu.cuMemcpyDtoHAsync_v2(hosts[1], dev, ctypes.c_size_t(BYTES), stream)  # copy:released
    libc.memcpy(out, hosts[1], ctypes.c_size_t(16))  # read:released
    cu.cuStreamSynchronize(stream)


def worker():
    cu.cuCtxSetCurrent(ctx)
    s = ctypes.c_void_p()
    check("cuStreamCreate", ctypes.byref(s), 0)
    cu.cuMemcpyDtoHAsync_v2(hosts[2], dev, ctypes.c_size_t(BYTES), s)  # copy:thread
    libc.memcpy(out, hosts[2], ctypes.c_size_t(16))  # read:thread
    cu.cuStreamSynchronize(s)


held()
released()
t = threading.Thread(target=worker)
t.start()
t.join()
print("races done", flush=True)
