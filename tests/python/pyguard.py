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

from cudriver import Driver

BYTES = 2 << 20
drv = Driver(BYTES)
cu, check, ctx, stream, dev = drv.cu, drv.check, drv.ctx, drv.stream, drv.dev
libc = ctypes.CDLL(None)

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
