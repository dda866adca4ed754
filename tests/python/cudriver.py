"""cudriver.py: the CUDA driver through ctypes, as the Python test programs set it up (pyguard.py,
pysites.py, tests/progs/guard_faulthandler.py, tests/bench/pysite_cost.py): libcuda.so.1 loaded
(the fake one on a CPU machine), device 0's primary context current, one stream, one device
allocation. Any failing call exits the program with the call's name and its CUresult. Only setup
lives here: the copies a test checks call sites of stay in the test program's own lines. Also
library_module(): a module of a "library" (under a .../site-packages/ folder), whose frames the
shim's Python call sites skip."""
import ctypes
import importlib
import os
import sys
import tempfile


def library_module(name, source):
    """Writes source as NAME.py into a new .../site-packages/ folder and imports it from there."""
    libdir = os.path.join(tempfile.mkdtemp(), "site-packages")
    os.mkdir(libdir)
    with open(os.path.join(libdir, name + ".py"), "w") as f:
        f.write(source)
    sys.path.insert(0, libdir)
    return importlib.import_module(name)


class Driver:
    def __init__(self, device_bytes, loader=ctypes.CDLL):
        self.cu = loader("libcuda.so.1")
        self.check("cuInit", 0)
        device = ctypes.c_int()
        self.check("cuDeviceGet", ctypes.byref(device), 0)
        self.ctx = ctypes.c_void_p()
        self.check("cuDevicePrimaryCtxRetain", ctypes.byref(self.ctx), device)
        self.check("cuCtxSetCurrent", self.ctx)
        self.stream = ctypes.c_void_p()
        self.check("cuStreamCreate", ctypes.byref(self.stream), 0)
        self.dev = ctypes.c_uint64()
        self.check("cuMemAlloc_v2", ctypes.byref(self.dev), ctypes.c_size_t(device_bytes))

    def check(self, name, *args):
        r = getattr(self.cu, name)(*args)
        if r != 0:
            sys.exit(f"{name} failed with CUresult {r}")
