"""pysites.py: copies made from known Python lines, for the shim's Python call sites.

Each copy is made through ctypes on the driver (libcuda.so.1 from the library path: the fake
driver on a CPU machine) from a line marked "# site:NAME", with a size of its own (SIZES), so a
checker (check_pysites.py) can tell which line each logged copy must name:
  main       the main thread, a loop in a function
  method     a method of a class (3.11+ names it Loader.step)
  thread     a second Python thread
  nested     a closure called from a comprehension
  multiline  a call written over three lines (the site is the call's first line)
  library    a copy made inside a module under .../site-packages/ (skipped: the site is the
             program's line that called into it)

    python3 pysites.py [cdll|pydll]    cdll (default): the GIL is released during each foreign
                                       call; pydll: it is held
"""
import ctypes
import sys
import threading

from cudriver import Driver, library_module

MODE = sys.argv[1] if len(sys.argv) > 1 else "cdll"
SIZES = {"main": 4096, "method": 4160, "thread": 4224, "nested": 4288, "multiline": 4352, "library": 4416}
BYTES = max(SIZES.values())

drv = Driver(BYTES, ctypes.PyDLL if MODE == "pydll" else ctypes.CDLL)
cu, ctx, stream, dev = drv.cu, drv.ctx, drv.stream, drv.dev
src = ctypes.create_string_buffer(BYTES)
dst = ctypes.create_string_buffer(BYTES)


def copy_main(n):
    for _ in range(n):
        cu.cuMemcpyHtoD_v2(dev, src, ctypes.c_size_t(SIZES["main"]))  # site:main


class Loader:
    def step(self):
        cu.cuMemcpyHtoDAsync_v2(dev, src, ctypes.c_size_t(SIZES["method"]), stream)  # site:method
        cu.cuStreamSynchronize(stream)


def worker():
    ctypes.CDLL("libcuda.so.1").cuCtxSetCurrent(ctx)
    for _ in range(3):
        cu.cuMemcpyDtoH_v2(dst, dev, ctypes.c_size_t(SIZES["thread"]))  # site:thread


def nested():
    def inner(i):
        return cu.cuMemcpyDtoH_v2(dst, dev, ctypes.c_size_t(SIZES["nested"]))  # site:nested
    return [inner(i) for i in range(2)]


copy_main(3)
Loader().step()
t = threading.Thread(target=worker)
t.start()
t.join()
nested()
cu.cuMemcpyHtoD_v2(  # site:multiline
    dev, src,
    ctypes.c_size_t(SIZES["multiline"]))

# A module of a library: its frames are skipped, the site is the line here that called it.
fakelib = library_module("fakelib", "import ctypes\n"
                                    "def copy(cu, dev, src, n):\n"
                                    "    return cu.cuMemcpyHtoD_v2(dev, src, ctypes.c_size_t(n))\n")
fakelib.copy(cu, dev, src, SIZES["library"])  # site:library
print("copies done", flush=True)
