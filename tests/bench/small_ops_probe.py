"""small_ops_probe.py: what the shim adds to PyTorch's small CUDA operations, the rows of issue #12
that the suite reads as MISS: per-op microseconds of 1000 x 4 KB copies from pinned memory
(non_blocking), 1000 x 4 KB pageable copies (blocking and non_blocking), .item() of a 1-element
tensor, and an in-place add (a kernel launch, which the shim never sees), plus a pure-Python loop
that touches no CUDA (a control: it moves with the process's placement and the CPU's clock, not
with the shim). Each setting runs in fresh processes, the settings in turn, ROUNDS rounds; the table
gives each setting's median (min-max) per metric and the threads its process had.

Settings: no shim; the shim at its defaults; and the shim with one policy key changed each, to
bisect a cost (intercept off, summary none, python_sites off, stage off, pin_on_reuse off, no
context prewarm and no link probe, the "off" policy).

Usage: python3 tests/bench/small_ops_probe.py [--rounds N] [--shim PATH] [--only NAME,...]
Needs PyTorch and a GPU; prints a line and exits 0 without them. Never asserts a timing."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads"))
import wl  # noqa: E402  torch_gpu_missing

SETTINGS = [
    ("plain", None),
    ("default", {}),
    ("intercept_off", {"PINSHIM_INTERCEPT": "off"}),
    ("summary_none", {"PINSHIM_SUMMARY": "none"}),
    ("pysites_off", {"PINSHIM_PYTHON_SITES": "off"}),
    ("stage_off", {"PINSHIM_STAGE": "off"}),
    ("reuse_off", {"PINSHIM_PIN_ON_REUSE": "off"}),
    ("noprewarm", {"PINSHIM_POOL_PREWARM": "off", "PINSHIM_LINK_PROBE": "off"}),
    ("policy_off", {"PINSHIM_POLICY": "off"}),
]
METRICS = ["control_ms", "pinned4k_nb_us", "pageable4k_us", "pageable4k_nb_us", "item_us", "add_us", "threads"]


def child():
    """One process: the measurements, as one JSON line."""
    import torch

    def med(fn, reps=15):
        ts = []
        for _ in range(reps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts[3:])

    def control():
        s = 0
        for i in range(200000):
            s += i * i
        return s

    dev = torch.device("cuda")
    torch.cuda.init()
    out = {"control_ms": med(control) * 1e3}
    small = [torch.arange(1024, dtype=torch.float32) + i for i in range(1000)]
    pinned = list(torch.stack(small).pin_memory().unbind(0))
    out["pinned4k_nb_us"] = med(lambda: [x.to(dev, non_blocking=True) for x in pinned]) * 1e3
    out["pageable4k_us"] = med(lambda: [x.to(dev) for x in small]) * 1e3
    out["pageable4k_nb_us"] = med(lambda: [x.to(dev, non_blocking=True) for x in small]) * 1e3
    one = torch.full((1,), 1.25, device=dev)
    out["item_us"] = med(lambda: [one.item() for _ in range(2000)]) * 1e3 / 2
    y = torch.ones(1024, device=dev)
    out["add_us"] = med(lambda: [y.add_(1.0) for _ in range(1000)]) * 1e3
    out["threads"] = len(os.listdir("/proc/self/task"))
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "libpinshim.so"))
    ap.add_argument("--only", default="", help="settings to run, comma separated (default all)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    names = [n for n, _ in SETTINGS]
    only = [n for n in a.only.split(",") if n]
    for n in only:
        if n not in names:
            ap.error("unknown setting %r (known: %s)" % (n, ", ".join(names)))
    settings = [(n, e) for n, e in SETTINGS if not only or n in only]
    missing = wl.torch_gpu_missing()
    if missing:
        print("small_ops_probe: skipped: PyTorch with a CUDA device is needed (%s)" % missing)
        return 0
    shim = os.path.abspath(a.shim)
    if not os.path.exists(shim):
        ap.error("no library at %s (build it with make, or give --shim)" % shim)
    rows = {n: [] for n, _ in settings}
    for r in range(a.rounds):
        for name, extra in settings:
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            if extra is not None:
                env.update(extra)
                env["LD_PRELOAD"] = shim
            p = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True)
            line = [l for l in p.stdout.splitlines() if l.startswith("{")]
            if p.returncode != 0 or not line:
                print("round %d, %s: failed (exit %d): %s" % (r + 1, name, p.returncode, p.stderr.strip()[-300:]))
                continue
            rows[name].append(json.loads(line[-1]))
    print("# small_ops_probe: %d rounds, settings in turn; median (min-max) per setting" % a.rounds)
    print("%-14s" % "setting" + "".join("%20s" % m for m in METRICS))
    for name, got in rows.items():
        if not got:
            print("%-14s no run succeeded" % name)
            continue
        cells = []
        for m in METRICS:
            v = [g[m] for g in got]
            cells.append("%.3g (%.3g-%.3g)" % (statistics.median(v), min(v), max(v)))
        print("%-14s" % name + "".join("%20s" % c for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
