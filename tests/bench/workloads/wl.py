"""wl.py: what every workload script of the real-workload suite shares (tests/bench/workloads/README.md).

A workload script measures after warm-up and prints exactly one JSON line on stdout, last:
  {"workload": NAME, "metrics": [{"key", "label", "unit", "value", "expect", "ref"}, ...],
   "digest": HEX, "notes": {...}}
or, when its framework or a GPU is missing, {"workload": NAME, "skipped": REASON} with exit status 0.
Anything else that goes wrong raises (a traceback, a nonzero exit), which the harness reports as FAIL.
`expect` says what the shim should do to the metric: "faster" (it has something to speed up),
"same" (nothing to speed up: it must not slow it down) or "ns" (a per-call cost in ns: the harness
checks the difference). Every metric is a time: lower is better.

Lockstep (run.py --lockstep, for the workloads registered as able; compare_builds.py --lockstep):
the processes compared run at the same time and take turns, their timed blocks tens of ms apart
(turns.py; README.md here, "Lockstep"). A script calls turn() before each timed block (timed()
does); with BENCH_WL_TURNS unset, turn() does nothing and the script runs straight through, as
alone.

BENCH_WL_FORWARD=1, with the shim preloaded, switches its wrappers to forwarding every call
untouched as the script starts, before it loads its framework (forward_if_asked()): the wrappers
are handed out but observe nothing, start no pool and count nothing. A compare_builds.py variant
`fwd=LIBRARY,BENCH_WL_FORWARD=1` thus tells what the wrappers' presence costs apart from what
observing does (PINSHIM_INTERCEPT=off hands out no wrappers at all).

BENCH_WL_CPU=1 runs the PyTorch scripts on the CPU (device "cpu", no pinned memory, no CUDA
graphs): a check of the scripts' own logic on a machine without a GPU; its numbers mean nothing.
Standard library only; scripts import their framework themselves, through the helpers here."""
import hashlib
import json
import os
import subprocess
import sys
import time


class Report:
    """Collects one run's metrics and the values its digest is made of."""

    def __init__(self, workload):
        self.workload = workload
        self.metrics = []
        self.parts = []
        self.notes = {}

    def metric(self, key, label, value, unit, expect, ref=False):
        if expect not in ("faster", "same", "ns"):
            raise ValueError("expect must be faster, same or ns, not %r" % (expect,))
        self.metrics.append({"key": key, "label": label, "unit": unit, "value": float(value),
                             "expect": expect, "ref": bool(ref)})

    def part(self, *values):
        """Adds exact values (ints, strings, floats: floats by their bits) to the digest."""
        for v in values:
            if isinstance(v, float):
                v = v.hex()
            elif isinstance(v, (list, tuple)):
                self.part(*v)
                continue
            self.parts.append(str(v))

    def digest(self):
        h = hashlib.sha256()
        for p in self.parts:
            h.update(p.encode())
            h.update(b"\n")
        return h.hexdigest()[:24]

    def emit(self):
        line = {"workload": self.workload, "metrics": self.metrics, "digest": self.digest(),
                "digest_values": len(self.parts), "notes": self.notes}
        sys.stdout.flush()
        print(json.dumps(line, sort_keys=True), flush=True)


def skip(workload, reason):
    """The framework or the GPU is missing: say so in the one JSON line and exit 0."""
    print(json.dumps({"workload": workload, "skipped": reason}), flush=True)
    sys.exit(0)


def median(values):
    v = sorted(values)
    n = len(v)
    if not n:
        raise ValueError("median of nothing")
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


TURNS_ENV = "BENCH_WL_TURNS"
FORWARD_ENV = "BENCH_WL_FORWARD"


def forward_if_asked():
    """BENCH_WL_FORWARD=1: the preloaded shim's benchmark switch (pinshim_bench_observe, outside
    include/pinshim.h) set to forwarding, at import, before any CUDA call. Unset, empty or 0: nothing.
    Exits (status 1) naming what was wrong for another value, without the shim, or when the shim
    refuses (interception off from the start, the guard on)."""
    value = os.environ.get(FORWARD_ENV, "")
    if value in ("", "0"):
        return
    if value != "1":
        sys.exit("%s=%r: expected 1 (the shim's wrappers forward every call) or 0" % (FORWARD_ENV, value))
    import ctypes
    switch = getattr(ctypes.CDLL(None), "pinshim_bench_observe", None)
    if switch is None:
        sys.exit("%s=1 needs the shim preloaded (LD_PRELOAD=.../libpinshim.so): pinshim_bench_observe "
                 "not found" % FORWARD_ENV)
    if switch(0) != 0:
        sys.exit("%s=1: the shim refused to forward (pinshim_bench_observe(0) returned -1: interception "
                 "off from the start, or the guard on)" % FORWARD_ENV)


def chosen(parser, option, text, allowed, what):
    """The set of allowed values a comma-separated option's text names (all of them when text is
    None); an unknown one is parser.error's exit 2: "OPTION TEXT: expected WHAT among A,B"."""
    if text is None:
        return set(allowed)
    names = set(text.split(","))
    if not names <= set(allowed):
        parser.error("%s %s: expected %s among %s" % (option, text, what, ",".join(allowed)))
    return names


_turns = None  # (fd to read the harness's go from, fd to write the end of a turn to); False: no turns


def turn():
    """Ends this process's turn and waits for its next (turns.py): everything between two calls
    runs while the other processes wait. The protocol, on two pipes whose descriptors
    BENCH_WL_TURNS names as "READ,WRITE": the script writes b"t" (a turn ended, or the first call:
    ready), the harness answers b"g" when this process's next turn begins. Without BENCH_WL_TURNS it
    does nothing; if the harness goes away (end of file, a broken pipe) the script runs on alone."""
    global _turns
    if _turns is None:
        spec = os.environ.get(TURNS_ENV, "")
        if not spec:
            _turns = False
            return
        try:
            read_fd, write_fd = (int(x) for x in spec.split(","))
        except ValueError:
            raise ValueError("%s=%r: expected two file descriptors, READ,WRITE (set by the harness: turns.py)"
                             % (TURNS_ENV, spec))
        _turns = (read_fd, write_fd)
    if not _turns:
        return
    try:
        os.write(_turns[1], b"t")
        if os.read(_turns[0], 1) == b"g":
            return
    except OSError:
        pass
    _turns = False


def timed(fn, sync, iters):
    """Runs fn() iters times, each between two synchronizations and each in a turn of its own
    (turn()); returns the seconds of each."""
    out = []
    for _ in range(iters):
        turn()
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
    return out


def torch_gpu_ms(torch, stream, sync, fn):
    """Runs fn() between two CUDA events recorded on stream, synchronizes, and returns the GPU time
    between the events in ms (fn's host-side cost is not in it unless the GPU waited for it)."""
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    e0.record(stream)
    fn()
    e1.record(stream)
    sync()
    return e0.elapsed_time(e1)


def thread_cpu_ns():
    """{tid: (name, ns on a CPU)} of this process's threads (/proc/self/task/*/schedstat)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                name = f.read().strip()
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                out[tid] = (name, int(f.read().split()[0]))
        except (OSError, ValueError, IndexError):  # a thread that ended, or no schedstat
            pass
    return out


def threads_cpu_split(before, after, main=None):
    """The CPU ns each kind of thread used between two thread_cpu_ns() readings: {"main": this
    process's first thread, "shim": the shim's (named pinshim-*), "other": the rest (PyTorch's
    OpenMP team, the driver's, the framework's)}, and under "top" the other threads that used most,
    as [name, ms] (at most 4). schedstat is brought up to date when a thread leaves its CPU and at
    scheduler ticks, so a thread running at the reading counts up to a tick short (milliseconds):
    over a short span, time the main thread with time.thread_time_ns() instead."""
    main = main or str(os.getpid())
    split, top = {"main": 0, "shim": 0, "other": 0}, []
    for tid, (name, ns) in after.items():
        used = ns - before.get(tid, (name, 0))[1]
        kind = "main" if tid == main else "shim" if name.startswith("pinshim-") else "other"
        split[kind] += used
        if kind == "other" and used > 0:
            top.append((used, name))
    split["top"] = [[name, round(used / 1e6, 2)] for used, name in sorted(top, reverse=True)[:4]]
    return split


CONTROL_LOOPS = 3000


def control_us(loops=CONTROL_LOOPS):
    """The time of a fixed pure-Python loop, in us: the speed of the CPU the main thread is on at
    that moment. On the H200 hosts it moves between levels from process to process and within one,
    and the operations timed beside it move with it (HISTORY.md, the twenty-ninth stop), so a time
    over its control compares processes met at different levels."""
    t0 = time.perf_counter_ns()
    s = 0
    for i in range(loops):
        s += i
    return (time.perf_counter_ns() - t0) / 1e3


def cpu_reading():
    """This process's threads' CPU ns and this thread's, now: the start of note_row_level's span."""
    return thread_cpu_ns(), time.thread_time_ns()


def note_row_level(rep, key, start, times, controls=5):
    """Records under rep.notes["rows"][key] what the row's timed blocks (times, in s, since the
    cpu_reading() start) met: the CPU level right after them (control_us, the median of controls),
    their wall time, the CPU ms of the main thread, the shim's threads and the others, and the
    busiest others by name (row_levels.py prints them run by run)."""
    note_rows_level(rep, start, {key: times}, controls)


def note_rows_level(rep, start, rows, controls=5):
    """note_row_level for rows whose timed blocks took turns in one span ({key: times}, e.g. a
    round's H2D and its D2H): each row gets its own wall time and the span's one level and CPU
    split (the span's CPU is not the row's alone)."""
    threads1, main1 = thread_cpu_ns(), time.thread_time_ns()
    used = threads_cpu_split(start[0], threads1)
    level = {"control_us": round(median([control_us() for _ in range(controls)]), 1),
             "main_cpu_ms": round((main1 - start[1]) / 1e6, 2),
             "shim_threads_ms": round(used["shim"] / 1e6, 2), "other_threads_ms": round(used["other"] / 1e6, 2),
             "busiest_others": used["top"]}
    for key, times in rows.items():
        rep.notes.setdefault("rows", {})[key] = dict(level, wall_ms=round(sum(times) * 1e3, 2))


def _counter_names(name, count):
    """alloc_count.c's counters come as name(i) and count(i), i from 0 until name returns NULL: sets
    the ctypes signatures of both and returns the names."""
    import ctypes
    name.argtypes = count.argtypes = [ctypes.c_uint]
    name.restype, count.restype = ctypes.c_char_p, ctypes.c_uint64
    names = []
    while name(len(names)) is not None:
        names.append(name(len(names)).decode())
    return names


def alloc_counts_reader():
    """tests/bench/alloc_count.c's counters, when that library is preloaded, else None: a function
    returning {"calls": ..., "large": ..., and each counted function's name: its calls so far}."""
    import ctypes
    try:
        process = ctypes.CDLL(None)
        calls, large, name, count = (process.alloc_count_calls, process.alloc_count_large, process.alloc_count_name,
                                     process.alloc_count_of)
    except AttributeError:
        return None
    calls.restype = large.restype = ctypes.c_uint64
    names = _counter_names(name, count)

    def read():
        counts = {"calls": calls(), "large": large()}
        counts.update((fn, count(i)) for i, fn in enumerate(names))
        return counts
    return read


def alloc_counts_by_object_reader():
    """tests/bench/alloc_count.c's calls by calling object, when that library is preloaded, else
    None: a function returning {(object, function): calls so far}, object the file name of the
    library or program the calls were made from (C++'s new and delete counted as their caller's)."""
    import ctypes
    try:
        text = ctypes.CDLL(None).alloc_count_by_object
    except AttributeError:
        return None
    text.restype = ctypes.c_char_p

    def read():
        counts = {}
        for line in text().decode(errors="replace").splitlines():
            obj, fn, calls = line.rsplit(" ", 2)
            counts[(obj, fn)] = int(calls)
        return counts
    return read


def alloc_counts_cxx_reader():
    """tests/bench/alloc_count.c's calls of each form of C++'s new and delete the program made
    (new, new[], delete(size), ...), when that library is preloaded, else None: a function
    returning {form: calls so far}."""
    import ctypes
    try:
        process = ctypes.CDLL(None)
        name, count = process.alloc_count_cxx_name, process.alloc_count_cxx_of
    except AttributeError:
        return None
    forms = _counter_names(name, count)
    return lambda: {form: count(i) for i, form in enumerate(forms)}


def cpu_test_mode():
    return os.environ.get("BENCH_WL_CPU") == "1"


def torch_or_skip(workload):
    """Imports PyTorch and returns (torch, device, sync); skips when it or a CUDA device is missing."""
    # Deterministic cuBLAS (no split-K atomics differing between runs); set before CUDA starts.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    try:
        import torch
    except ImportError as e:
        skip(workload, "torch not importable (%s)" % e)
    if cpu_test_mode():
        return torch, torch.device("cpu"), (lambda: None)
    if not torch.cuda.is_available():
        skip(workload, "torch %s: torch.cuda.is_available() is False" % torch.__version__)
    torch.cuda.init()
    return torch, torch.device("cuda", 0), torch.cuda.synchronize


def torch_gpu_missing():
    """Why a fresh interpreter cannot run PyTorch on a CUDA device (its last error line), or None when
    it can: the check of the probes that start processes of their own (tests/bench/*_probe.py)."""
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    if probe.stdout.strip() == "True":
        return None
    return (probe.stderr.strip().splitlines() or ["torch.cuda.is_available() is False"])[-1]


def jax_gpu():
    """Imports numpy and JAX for a GPU: (np, jax, None), or (None, None, why) when JAX does not import
    or has no GPU backend. No 75 % of the GPU taken at start, no TensorFlow log chatter."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import numpy as np
        import jax
    except ImportError as e:
        return None, None, "jax not importable (%s)" % e
    backend = jax.default_backend()
    if backend not in ("gpu", "cuda"):
        return None, None, "jax %s has no GPU backend (default backend: %s)" % (jax.__version__, backend)
    return np, jax, None


def torch_pinned_empty(torch, n, dtype):
    """A pinned host tensor (a plain one in the CPU test mode, where there is no pinned memory)."""
    return torch.empty(n, dtype=dtype, pin_memory=not cpu_test_mode())


def torch_versions(torch):
    notes = {"torch": torch.__version__}
    if not cpu_test_mode():
        notes["cuda"] = torch.version.cuda
        notes["gpu"] = torch.cuda.get_device_name(0)
    return notes


def torch_sums(torch, t):
    """Two exact integers, still on t's device, for t's bytes: the sum of its 32-bit words, and
    the sum of 1024 block sums each weighted by its position (data in the wrong place changes it).
    Integer sums are exact and order-free, so a GPU reduction gives the same answer every run."""
    v = t.detach().contiguous().reshape(-1)
    w = v.view(torch.int32) if (v.numel() * v.element_size()) % 4 == 0 else v.view(torch.uint8)
    total = w.sum(dtype=torch.int64)
    blocks = 1024 if w.numel() % 1024 == 0 else 1
    per = w.reshape(blocks, -1).sum(dim=1, dtype=torch.int64)
    weights = torch.arange(1, blocks + 1, dtype=torch.int64, device=w.device)
    return [total, (per * weights).sum()]


def torch_collect(torch, sums):
    """Brings a list of 0-dim integer tensors to Python ints in one copy."""
    if not sums:
        return []
    return [int(x) for x in torch.stack(sums).cpu().tolist()]


def torch_image_loader(torch, pin, batches, workers=6, batch=64):
    """A DataLoader as a vision pipeline makes one: `workers` forked worker processes (one CPU
    thread each) turning a deterministic uint8 picture into normalized float32 images of 3 x 224 x
    224, `batch` to a batch (64: 38.5 MB), with labels; `batches` batches in all; with pin the
    pin-memory thread copies each batch into pinned memory. Item i is the picture rolled by i % 224
    columns, labelled i % 1000."""
    base = ((torch.arange(3 * 224 * 224, dtype=torch.int64) * 2654435761) % 251).to(torch.uint8).reshape(3, 224, 224)

    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return batches * batch

        def __getitem__(self, i):
            img = torch.roll(base, shifts=i % 224, dims=2).to(torch.float32)
            img.div_(255.0).sub_(0.45).div_(0.225)
            return img, i % 1000

    def one_thread(_worker_id):
        torch.set_num_threads(1)  # 6 workers on 16 cores: no oversubscription

    return torch.utils.data.DataLoader(Images(), batch_size=batch, num_workers=workers, pin_memory=pin,
                                       shuffle=False, multiprocessing_context="fork", worker_init_fn=one_thread)


MLP_BATCH, MLP_WIDTH, MLP_HIDDEN, MLP_CLASSES = 256, 1024, 2048, 10  # torch_mlp_step's shapes


class CaptureFailed(Exception):
    """torch_mlp_step's CUDA graph could not be captured; the message says why."""


def torch_mlp_step(torch, dev, graph, mark=None):
    """torch_train.py's loop as a function: (step, model). step() makes a fresh pageable batch on the
    CPU from a seeded generator (MLP_BATCH x MLP_WIDTH float32 inputs, 1 MiB, and MLP_BATCH labels),
    copies it to the device, runs forward, backward and an SGD step, and returns loss.item(). With graph the forward,
    backward and optimizer step are captured once in a CUDA graph (after a warm-up on a side stream,
    as capture requires) and replayed, the batch copied into the graph's static input first; a
    failed capture raises CaptureFailed, saying why. mark, for the plain step only, is called with
    each phase's name as the phase ends: batch (made on the CPU), copy (the inputs x to the device),
    forward (the labels' copy included), backward, optimizer, item (train_phases.py times them)."""
    F = torch.nn.functional
    batch_n, width, hidden, classes = MLP_BATCH, MLP_WIDTH, MLP_HIDDEN, MLP_CLASSES
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                                torch.nn.ReLU(), torch.nn.Linear(hidden, classes)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(1234)

    def batch():
        return torch.randn(batch_n, width, generator=gen), torch.randint(0, classes, (batch_n,), generator=gen)

    if not graph:
        tick = mark or (lambda _phase: None)

        def step():
            x, y = batch()
            tick("batch")
            xd = x.to(dev)
            tick("copy")
            loss = F.cross_entropy(model(xd), y.to(dev))
            del xd  # not held to the step's end: autograd keeps what backward needs, as before
            tick("forward")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            tick("backward")
            opt.step()
            tick("optimizer")
            value = loss.item()
            tick("item")
            return value
        return step, model

    try:
        static_x = torch.zeros(batch_n, width, device=dev)
        static_y = torch.zeros(batch_n, dtype=torch.long, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(static_x), static_y).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        captured = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(captured):
            static_loss = F.cross_entropy(model(static_x), static_y)
            static_loss.backward()
            opt.step()
    except Exception as e:  # the capture is optional: the caller says why it did not run
        raise CaptureFailed("CUDA graph capture failed: %s: %s" % (type(e).__name__,
                                                                   (str(e).splitlines() or [""])[0][:200])) from e

    def replayed_step():
        x, y = batch()
        static_x.copy_(x)
        static_y.copy_(y)
        captured.replay()
        return static_loss.item()
    return replayed_step, model


def numpy_sums(np, a):
    """torch_sums for a numpy array (host memory): the same two integers, as Python ints."""
    v = np.ascontiguousarray(a).reshape(-1)
    w = v.view(np.uint32) if v.nbytes % 4 == 0 else v.view(np.uint8)
    total = int(w.sum(dtype=np.uint64))
    blocks = 1024 if w.size % 1024 == 0 else 1
    per = w.reshape(blocks, -1).sum(axis=1, dtype=np.uint64)
    weighted = int((per * np.arange(1, blocks + 1, dtype=np.uint64)).sum(dtype=np.uint64))
    return [total, weighted]


forward_if_asked()
