"""inprocess_ab.py: what the shim adds to PyTorch's small CUDA operations, measured inside one process
(issue #12). Across processes the same loop spreads by 10-30 % (placement, the host's neighbours),
far more than the 1 % bound; here the shim's benchmark switch (pinshim_bench_observe, outside
include/pinshim.h) flips the wrappers between forwarding every call untouched and observing, in
groups of four blocks, observe, forward, forward, observe, then forward, observe, observe, forward
(each side in each position once: a position's bias cancels), and each group gives one paired
difference. Forwarding still passes through the wrappers (a load and a branch): this measures what
observing costs, not the preload itself.

Workloads (ns per operation): x.item() of a 1-element tensor (with PyTorch 2.11 a 4-byte D2H into a
small block of its pinned host allocator and a stream sync); 1000 x 4 KB pageable tensors
.to("cuda"), blocking and with non_blocking=True; the same from pinned memory with
non_blocking=True (one async H2D each: the host allocator records no event per copy); an event
record and query (the kinds and calls as the shim's summary counted them on an H200, 2026-11-26); a
1 MiB CPU tensor made and copied .to("cuda") (above the small copies' shortcut, below staging: its
allocation is tracked and the copy passed); a preallocated pinned 4 MiB tensor .to("cuda",
non_blocking=True) (tests/bench/workloads/torch_fresh.py's pinned reference; as many a block as
the 1 MiB row's); one step of tests/bench/workloads/torch_train.py's MLP
loop (one step per block), and one of its --graph loop (the batch copied into a captured graph's
input, the graph replayed; the row says why when the capture fails); batches of a DataLoader with
pin_memory=True, 6 forked workers, 64 images of 3 x 224 x 224 float32 to a batch
(tests/bench/workloads/torch_dataloader.py's), each
.to("cuda", non_blocking=True) (LOADER_BATCHES a block: the pipeline's throughput as the program
sees it, its pin-memory thread included; the workers were forked before the first block and keep
the state they were forked with, so their share, the allocation hooks of a forked child, is not in
it); jax.device_put of a 128 MiB numpy array made just before it, until the data is on the device
(tests/bench/workloads/jax_copy.py's, one a block; JAX is imported for this row only, after the
others, and the row says why when it cannot run). While forwarding, the switch also stops the
allocation hooks from tracking new allocations, so the rows that allocate see that cost as well
(the JAX row's array is made inside its block, outside its timing).

Each row also reports the driver calls the shim's wrappers saw per operation while observing
(the summary's entry points, read before and after the row), what a per-call cost of the wrappers
multiplies by (tests/bench/workloads/inprocess.py: what the preload itself adds, apart from
observing). Run under tests/bench/alloc_count.c instead of the shim, it runs each row's blocks
without timing them and reports the allocator calls (the malloc family, C++'s new and delete among
them) each operation makes: the other count the preload's cost multiplies by.

Blocks are short (--ops operations each, default 100: about a millisecond): this host's CPU speed
flips between two levels some 20 % apart every few tens of milliseconds (a pure-Python control
row, timed in the same blocks, shows it), so long blocks pair a fast block with a slow one and
spread the differences by more than the shim's cost; short adjacent blocks share the level.

With --direct each group is six blocks, in turn observe, forward, direct, direct, forward, observe
(as tests/bench/observe_ab.c's), then direct, observe, forward, forward, observe, direct, then
forward, direct, observe, observe, direct, forward: over three groups each side takes each position
once (a position in the group moved forward - direct by tens of ns on an H100, 2026-12-07, when
one order ran alone). Direct takes the shim out of the calls altogether
(pinshim_bench_direct, outside include/pinshim.h: the driver functions the CUDA runtime keeps in
its own data rewritten from the shim's wrappers to the driver's, the allocation hooks tracking
nothing new, as while forwarding), so that forward - direct is what the wrappers' forwarding costs
the operation in this process, with its caches as the framework leaves them, where the suite's third
table prices it in C (a call's forwarding times the calls). A row then prints a second line:
forward - direct and observe - direct, and how many calls per operation still reached the
wrappers while direct (counted in a check block observing with the words rewritten: a table the
switch did not find, such as one on the heap). The switch looks again for such tables once objects
were loaded since its last look (JAX, imported after the PyTorch rows: on 2026-12-07, before it
did, the JAX row read 7.00 calls an operation through the wrappers while direct).

With --cold MIB each operation runs alone: before it, untimed, the process writes MIB MiB of other
memory and synchronizes the device, so the operation meets the caches (data, code, address
translations) as a program's other work, or another process on the same CPU, leaves them, rather
than as the operation before it did; only the operation is timed (the rows whose work is one
operation at a time: not the DataLoader's or JAX's). Run bound to one CPU (taskset) it reproduces
what the suite's lockstep sees between two turns.

Usage: LD_PRELOAD=build/libpinshim.so python3 tests/bench/inprocess_ab.py [--groups N] [--ops K] [--json]
[--only TEXT[,TEXT..]] [--cold MIB] [--direct] (default 200 groups of 100 operations; the DataLoader
row a third as many groups; --json adds one JSON line per workload, as the suite's tests/bench/workloads/inprocess.py reads
them), or LD_PRELOAD=liballoc_count.so (built from tests/bench/alloc_count.c) with the same options
(--groups: blocks counted per row). Needs PyTorch and a GPU; prints a line and exits 0
without them. Never asserts a timing."""
import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads"))
import wl  # noqa: E402  (the suite's helpers: the DataLoader row's pipeline)

FRESH_BYTES = 1 << 20
BIG_PINNED_BYTES = 4 << 20  # torch_fresh.py's 4 MiB pinned reference
LOADER_BATCHES = 6  # DataLoader batches a block, one per worker (each 13-18 ms on H100 hosts): with 2 a
# block, the batches' uneven arrival spread the paired differences by +-4 ms (2 processes, H100)
LOADER_WARMUP = 12  # batches before the first block: the workers' start
JAX_WORDS = 32 << 20  # jax_copy.py's array: 128 MiB of float32
# The blocks of a group, in turn (g % the orders), by side: o observe, f forward, d direct. Over a
# cycle of orders each side takes each position once, so a position's own bias cancels in every
# difference (a Latin square: the sides rotate through the mirrored pairs of positions).
GROUP_ORDERS = {False: ("offo", "foof"), True: ("ofddfo", "doffod", "fdoodf")}
WARMUP_BLOCKS = 3  # observing, before a row's groups


def whole_cycles(groups, direct):
    """groups rounded up to whole cycles of the orders: every order runs as often."""
    n = len(GROUP_ORDERS[direct])
    return -(-groups // n) * n


def row_blocks(groups, direct):
    """Blocks one row runs: its warm-up, its groups' (paired_samples) and, with --direct, the check
    block (leaked_calls). The DataLoader row's loader holds that many blocks' batches."""
    return WARMUP_BLOCKS + len(GROUP_ORDERS[direct][0]) * whole_cycles(groups, direct) + bool(direct)


def group_blocks(g, direct, block):
    """Group g's blocks, block(side) -> ns per operation run in GROUP_ORDERS' order: {side: [ns, ns]}."""
    times = {}
    for side in GROUP_ORDERS[direct][g % len(GROUP_ORDERS[direct])]:
        times.setdefault(side, []).append(block(side))
    return times


def order_medians(diffs, orders):
    """{order: the median of the differences of the groups that ran it} (group g ran order g %
    len(orders)): their spread is what the positions add, which the pooled median cancels."""
    return {o: statistics.median(diffs[i::len(orders)]) for i, o in enumerate(orders) if diffs[i::len(orders)]}


def orders_text(by_order):
    """order_medians() for a printed line: "ofddfo +12.3, doffod -4.5, ..."."""
    return ", ".join("%s %+.1f" % kv for kv in by_order.items())


def paired_samples(groups, direct, block):
    """A row's groups in turn: (forward blocks, observe blocks, observe - forward a group, direct
    blocks, forward - direct a group, observe - direct a group), ns per operation; the last three
    empty without direct. groups is rounded up to whole cycles of the orders."""
    fwd, obs, diffs, dir_, fd, od = [], [], [], [], [], []
    for g in range(whole_cycles(groups, direct)):
        t = group_blocks(g, direct, block)
        (f1, f2), (o1, o2) = t["f"], t["o"]
        fwd += [f1, f2]
        obs += [o1, o2]
        diffs.append((o1 + o2 - f1 - f2) / 2)
        if direct:
            d1, d2 = t["d"]
            dir_ += [d1, d2]
            fd.append((f1 + f2 - d1 - d2) / 2)
            od.append((o1 + o2 - d1 - d2) / 2)
    return fwd, obs, diffs, dir_, fd, od


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=200,
                   help="groups of blocks per workload (default 200, rounded up to whole cycles of the orders)")
    p.add_argument("--ops", type=int, default=100, help="operations per block, at most 1000 (default 100)")
    p.add_argument("--json", action="store_true", help="also print each workload's figures as a JSON line")
    p.add_argument("--only", metavar="TEXT", help="only the rows whose name holds TEXT, or one of several "
                   "separated by commas (and the control row)")
    p.add_argument("--cold", type=int, default=0, metavar="MIB",
                   help="each operation timed alone after writing MIB MiB of other memory (default 0: off)")
    p.add_argument("--direct", action="store_true",
                   help="a third side, the shim out of the calls (pinshim_bench_direct): groups of six blocks")
    args = p.parse_args()
    if not 1 <= args.ops <= 1000 or args.groups < 4 or not 0 <= args.cold <= 4096:
        sys.exit("inprocess_ab.py: --ops must be 1 to 1000, --groups at least 4 and --cold 0 to 4096 (MiB), not %d, "
                 "%d and %d" % (args.ops, args.groups, args.cold))
    ops = args.ops
    observe = getattr(ctypes.CDLL(None), "pinshim_bench_observe", None)
    allocs = wl.alloc_counts_reader() if observe is None else None
    allocs_cxx = wl.alloc_counts_cxx_reader() if allocs else None
    if observe is None and allocs is None:
        sys.exit("inprocess_ab.py: neither pinshim_bench_observe nor alloc_count_calls found: run it with "
                 "LD_PRELOAD=build/libpinshim.so, or with the library built from tests/bench/alloc_count.c")
    if allocs:
        observe = lambda on: 0  # noqa: E731  (counting: one side only, nothing to switch)
    entry_calls = driver_calls_reader() if allocs is None else None
    direct = None
    if args.direct and allocs is None:
        direct = getattr(ctypes.CDLL(None), "pinshim_bench_direct", None)
        if direct is None:
            sys.exit("inprocess_ab.py: --direct needs pinshim_bench_direct (a library built from this tree)")
    try:
        import torch
    except ImportError:
        return nothing_measured(args, "no PyTorch here")
    if not torch.cuda.is_available():
        return nothing_measured(args, "no GPU here")
    dev = "cuda:0"
    sync = torch.cuda.synchronize
    x = torch.full((1,), 1.25, device=dev)
    small = [torch.full((1024,), float(i)) for i in range(1000)]
    pinned = list(torch.stack(small).pin_memory().unbind(0))
    ev = torch.cuda.Event()
    base = torch.arange(FRESH_BYTES // 4, dtype=torch.float32)
    big_pinned = torch.arange(BIG_PINNED_BYTES // 4, dtype=torch.float32).pin_memory()
    fresh_ops = max(1, ops // 20)  # a 1 MiB copy takes some 20 times a small one
    step = wl.torch_mlp_step(torch, dev, False)[0]
    graph_step, graph_failed = replayed_step(torch, dev)
    loader_groups = max(4, args.groups // 3)  # an eighth (25) left two standard errors of 1.7 % of a batch
    next_batches = loader_batches(torch, dev, LOADER_WARMUP + row_blocks(loader_groups, args.direct) * LOADER_BATCHES)

    turn = [0]
    jax_put = None  # the JAX row's block, made (jax_device_put) only when that row runs

    def next_slice(tensors):
        """The next ops tensors of the 1000, round the list: each block copies other tensors."""
        start = turn[0]
        turn[0] = (start + ops) % len(tensors)
        return [tensors[(start + i) % len(tensors)] for i in range(ops)]

    elsewhere = torch.empty(args.cold << 20, dtype=torch.uint8) if args.cold else None

    def timed(body, n):
        """(seconds, n): body() timed from an idle device until its work has finished."""
        sync()
        t = time.perf_counter()
        body()
        sync()
        return time.perf_counter() - t, n

    def timed_cold(op, n):
        """(seconds, n): op() n times, each timed alone from an idle device until its work has
        finished, after the other memory was written (untimed)."""
        total = 0.0
        for i in range(n):
            elsewhere.fill_(i & 0xff)
            sync()
            t = time.perf_counter()
            op()
            sync()
            total += time.perf_counter() - t
        return total, n

    def item():
        for _ in range(ops):
            x.item()

    def copies(tensors, **kw):
        batch = next_slice(tensors)
        return lambda: [tensor.to(dev, **kw) for tensor in batch]

    def fresh():
        for i in range(fresh_ops):
            (base + i).to(dev)  # a new 1 MiB CPU tensor each time, made and copied

    def big_pinned_copies():
        for _ in range(fresh_ops):
            big_pinned.to(dev, non_blocking=True)

    def events():
        for _ in range(ops):
            ev.record()
            ev.query()

    def control(n=ops):
        """Pure Python, no CUDA: moves with the CPU's speed, never with the shim (n operations)."""
        acc = 0
        for i in range(n * 200):
            acc += i

    observed_ops = [0]

    def block(run, on, side_direct=False):
        """ns per operation of one block, observing (on), forwarding, or with the shim out of the
        calls (side_direct: forwarding, the runtime's table rewritten)."""
        if observe(1 if on else 0) != 0:
            sys.exit("inprocess_ab.py: the shim refused to switch (guard on, registrations held, or "
                     "PINSHIM_INTERCEPT=off): run it with the defaults")
        if direct is not None and direct(1 if side_direct else 0) < 0:
            sys.exit("inprocess_ab.py: --direct: the shim found no driver function of the shim's in the "
                     "runtime's data, or refused (guard on, registrations held)")
        seconds, n = run()
        observed_ops[0] += n if on else 0
        return seconds / n * 1e9

    def leaked_calls(run):
        """Calls per operation that still reached the wrappers with the table rewritten: one block
        observing with the words rewritten, its calls counted."""
        before = entry_calls()
        observe(1)
        direct(1)
        n = run()[1]
        direct(0)
        return round(sum(calls_per_op(before, entry_calls(), n).values()), 3)

    def one_at_a_time(tensors, **kw):
        batch = iter(next_slice(tensors))
        return lambda: next(batch).to(dev, **kw)

    fresh_i = [0]

    def one_fresh():
        fresh_i[0] += 1
        (base + fresh_i[0] % fresh_ops).to(dev)

    cold = (("item", lambda: timed_cold(x.item, ops)),  # (row, block) with --cold
            ("4KB pageable", lambda: timed_cold(one_at_a_time(small), ops)),
            ("4KB pageable nb", lambda: timed_cold(one_at_a_time(small, non_blocking=True), ops)),
            ("4KB pinned nb", lambda: timed_cold(one_at_a_time(pinned, non_blocking=True), ops)),
            ("event record+query", lambda: timed_cold(lambda: (ev.record(), ev.query()), ops)),
            ("1MB fresh pageable", lambda: timed_cold(one_fresh, fresh_ops)),
            ("4MiB pinned nb", lambda: timed_cold(lambda: big_pinned.to(dev, non_blocking=True), fresh_ops)),
            ("MLP step", lambda: timed_cold(step, 1)),
            ("graph-replayed step", lambda: timed_cold(graph_step, 1)),
            ("control (no CUDA)", lambda: timed_cold(lambda: control(1), ops)))
    workloads = (("item", lambda: timed(item, ops), args.groups),  # (row, block, groups)
                 ("4KB pageable", lambda: timed(copies(small), ops), args.groups),
                 ("4KB pageable nb", lambda: timed(copies(small, non_blocking=True), ops), args.groups),
                 ("4KB pinned nb", lambda: timed(copies(pinned, non_blocking=True), ops), args.groups),
                 ("event record+query", lambda: timed(events, ops), args.groups),
                 ("1MB fresh pageable", lambda: timed(fresh, fresh_ops), args.groups),
                 ("4MiB pinned nb", lambda: timed(big_pinned_copies, fresh_ops), args.groups),
                 ("MLP step", lambda: timed(step, 1), args.groups),
                 ("graph-replayed step", lambda: timed(graph_step, 1), args.groups),
                 ("DataLoader pinned", lambda: timed(next_batches, LOADER_BATCHES), loader_groups),
                 ("jax device_put", lambda: jax_put(), loader_groups),
                 ("control (no CUDA)", lambda: timed(control, ops), args.groups))
    if args.cold:
        print("each operation alone, after writing %d MiB of other memory (untimed)" % args.cold)
    if allocs:
        print("allocator calls per operation (under alloc_count, not the shim; %d blocks a row)" % args.groups)
    else:
        print("%-22s %12s %12s %28s %14s %7s %8s" % ("workload", "forward ns", "observe ns", "observe - forward (q1..q3)",
                                                 "mean +- 2 se", "ratio", "calls/op"))
    if args.cold:
        cold_block = dict(cold)
        workloads = tuple((name, cold_block[name], groups) for name, _, groups in workloads if name in cold_block)
    wanted = [t.lower() for t in (args.only or "").split(",") if t]
    chosen = [w for w in workloads
              if not wanted or any(t in w[0].lower() for t in wanted) or w[0].startswith("control")]
    if len(chosen) == 1:
        sys.exit("inprocess_ab.py: no row's name holds %r; the rows: %s" % (args.only, ", ".join(w[0] for w in workloads)))
    if graph_failed:
        chosen = [w for w in chosen if w[0] != "graph-replayed step"]
        not_measured(args, "graph-replayed step", graph_failed)
    for name, fn, groups in chosen:
        if name == "jax device_put":  # JAX imported only now, after the PyTorch rows
            jax_put, why = jax_device_put()
            if why:
                not_measured(args, name, why)
                continue
        for _ in range(WARMUP_BLOCKS):
            block(fn, True)
        if allocs:
            count_allocations(args, name, fn, groups, allocs, allocs_cxx)
            continue
        before, observed_ops[0] = entry_calls(), 0
        fwd, obs, diffs, dir_, fd, od = paired_samples(groups, direct is not None,
                                                       lambda side: block(fn, side == "o", side == "d"))
        observe(1)
        calls = calls_per_op(before, entry_calls(), observed_ops[0])
        q = statistics.quantiles(diffs, n=4)
        f, o = statistics.median(fwd), statistics.median(obs)
        se = statistics.stdev(diffs) / len(diffs) ** 0.5
        by_order = order_medians(diffs, GROUP_ORDERS[direct is not None])
        print("%-22s %12.1f %12.1f %+11.1f (%+.0f..%+.0f) %+8.1f +-%4.0f %7.3fx %8.2f  by order: %s" % (
            name, f, o, statistics.median(diffs), q[0], q[2], statistics.fmean(diffs), 2 * se, f / o,
            sum(calls.values()), orders_text(by_order)), flush=True)
        extra = direct_line(name, fd, od, statistics.median(dir_), leaked_calls(fn)) if direct else {}
        if args.json:
            print(json.dumps(dict({"inprocess": name, "forward_ns": f, "observe_ns": o,
                                   "median_ns": statistics.median(diffs), "q1_ns": q[0], "q3_ns": q[2],
                                   "mean_ns": statistics.fmean(diffs), "se_ns": se, "groups": len(diffs),
                                   "ops": ops, "cold_mib": args.cold, "driver_calls_per_op": calls,
                                   "by_order_ns": by_order}, **extra)),
                  flush=True)


def direct_line(name, fd, od, direct_ns, leaked):
    """Prints a row's second line under --direct: forward - direct and observe - direct (median,
    mean +- 2 se, ns per operation) and the calls that still reached the wrappers while direct;
    returns them for the JSON line (with each difference's quartiles: inprocess.py's samples)."""
    out = {"direct_ns": direct_ns, "leaked_calls_per_op": leaked}
    text = []
    for key, label, d in (("forward_direct", "forward - direct", fd), ("observe_direct", "observe - direct", od)):
        se = statistics.stdev(d) / len(d) ** 0.5
        q = statistics.quantiles(d, n=4)
        out.update({key + "_median_ns": statistics.median(d), key + "_q1_ns": q[0], key + "_q3_ns": q[2],
                    key + "_mean_ns": statistics.fmean(d), key + "_se_ns": se})
        by_order = order_medians(d, GROUP_ORDERS[True])
        out[key + "_by_order_ns"] = by_order
        text.append("%s %+.1f (mean %+.1f +- %.1f; %s)" % (
            label, statistics.median(d), statistics.fmean(d), 2 * se, orders_text(by_order)))
    print("%-22s direct %.1f ns; %s; calls through the wrappers while direct %.2f/op" % (
        "  " + name[:20], direct_ns, "; ".join(text), leaked), flush=True)
    return out


def driver_calls_reader():
    """A function returning the shim's count of calls so far per wrapped entry point (the exit
    summary's "entry_points", written through pinshim_summary_write): calls counted while observing."""
    write = ctypes.CDLL(None).pinshim_summary_write
    write.argtypes = [ctypes.c_int, ctypes.c_int]

    def read():
        with tempfile.TemporaryFile() as f:
            write(f.fileno(), 1)
            f.seek(0)
            return json.loads(f.read().decode("utf-8", "replace")).get("entry_points", {})
    return read


def calls_per_op(before, after, ops):
    """{counter: calls per operation} between two readings of a set of call counters (the shim's
    entry points, alloc_count's functions) over `ops` operations (counters that did not move left
    out)."""
    return {k: round((n - before.get(k, 0)) / ops, 3) for k, n in sorted(after.items())
            if ops and n > before.get(k, 0)}


def count_allocations(args, name, block_fn, blocks, read, read_cxx):
    """Under alloc_count: the row's allocator calls per operation over `blocks` blocks and, of
    them, those made through C++'s new and delete in their plain, array, sized and nothrow forms
    (the aligned ones reach the C library's aligned_alloc, under the shim too), printed (and as a
    JSON line with --json: {"allocs": row, "per_op": calls, "cxx_per_op": C++ calls, "by_function":
    {...}, "cxx_by_form": {...}})."""
    before, before_cxx, ops = read(), read_cxx() if read_cxx else {}, 0
    for _ in range(blocks):
        ops += block_fn()[1]
    per_fn = calls_per_op(before, read(), ops)
    per_form = calls_per_op(before_cxx, read_cxx(), ops) if read_cxx else {}
    per_op = per_fn.pop("calls", 0.0)  # the totals: every counted call, and those of 1 MiB or more
    per_fn.pop("large", None)
    cxx = round(sum(n for form, n in per_form.items() if "align" not in form), 3)
    print("%-22s %10.2f calls/op, %.2f of them C++'s (%s)" % (name, per_op, cxx,
                                                              ", ".join("%s %.2f" % kv for kv in per_fn.items())),
          flush=True)
    if args.json:
        print(json.dumps({"allocs": name, "per_op": per_op, "cxx_per_op": cxx, "ops": ops, "by_function": per_fn,
                          "cxx_by_form": per_form}), flush=True)


def replayed_step(torch, dev):
    """(step, None): one step of torch_train.py --graph's loop (the batch made and copied into the
    captured graph's input, the graph replayed, loss.item()); (None, why) when the capture failed."""
    try:
        return wl.torch_mlp_step(torch, dev, True)[0], None
    except wl.CaptureFailed as e:
        return None, str(e)


def loader_batches(torch, dev, total):
    """A function taking the next LOADER_BATCHES batches of a pinned-memory DataLoader of `total`
    batches (LOADER_WARMUP of them taken here) and copying each .to(dev, non_blocking=True)."""
    batches = iter(wl.torch_image_loader(torch, True, total))

    def take(n):
        for _ in range(n):
            x, y = next(batches)
            x.to(dev, non_blocking=True)
            y.to(dev, non_blocking=True)
    take(LOADER_WARMUP)
    return lambda: take(LOADER_BATCHES)


def jax_device_put():
    """(put, None): a block of the JAX row, put() -> (seconds, 1): a fresh 128 MiB numpy array made,
    then jax.device_put of it timed until the data is on the device; (None, why) without JAX's GPU
    backend. Called after the PyTorch rows: JAX's client starts threads and takes device memory."""
    np, jax, why = wl.jax_gpu()
    if why:
        return None, why
    base = np.tile(np.arange(4096, dtype=np.float32), JAX_WORDS // 4096)
    turn = [0]

    def put():
        turn[0] += 1
        x = base + np.float32(turn[0])
        t = time.perf_counter()
        jax.device_put(x).block_until_ready()
        return time.perf_counter() - t, 1
    return put, None


def not_measured(args, row, why):
    print("%s: not measured: %s" % (row, why))
    if args.json:
        print(json.dumps({"inprocess": None, "row": row, "skipped": why}))


def nothing_measured(args, why):
    print("inprocess_ab.py: %s; nothing measured" % why)
    if args.json:
        print(json.dumps({"inprocess": None, "skipped": why}))


if __name__ == "__main__":
    main()
