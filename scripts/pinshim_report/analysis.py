"""analysis.py: the numbers every output shows, derived once from the merged aggregate.

Contract: build(result, top) -> Report, whose fields the text, CSV, HTML and SQLite outputs read
and never recompute:
- operations: per (direction, host kind, action): count, bytes, host time, and size, host-time and
  device-time statistics (Stats), largest host time first;
- classes: copy time by (direction, host kind, action, sync/async), the "where the time went" rows;
- ceilings: per direction the measured pinned bandwidth and where it comes from;
- savings: what staging and pin-on-reuse saved and what pinning the rest would save, each with how
  it was estimated;
- sites: call sites merged across processes, each with its native frame named where the module
  can be symbolized (symbols.py: function, file:line) and the fix it needs, in the terms of the
  framework whose module made the copy (PyTorch, CuPy, JAX, CUDA C); symbol_notes say what could
  not be symbolized and why; advice; syncs;
- devices: copies by host, device ordinal and direction.
Estimates say how they were made in their `how` text; nothing here reads a log file (the
symbolizer reads the modules' files and runs addr2line, unless symbolize is False)."""
from . import aggregate, symbols
from .aggregate import (COUNT, D_BYTES, D_COUNT, D_MAX, D_MIN, D_NS, D_NS_SQ, D_TIMES, DEV, MAX_B, MAX_NS, MIN_B,
                        MIN_NS, NBYTES, NS, NS_SQ, BYTES_SQ, SIZES, TIMES)

MIB = 1 << 20
DEFAULT_PINNED_GBPS = 55.0       # the shim's documented default (FACTS.md: H200, PCIe Gen5 x16)
CEILING_PERCENTILE = 90
SMALL_COPY_BYTES = 64 * 1024
MANY_SMALL_COPIES = 1000


class Stats:
    """count, total, avg, med, min, max, stddev of one quantity; med_exact says whether the median
    is exact (else it is read from a sketch, within 1.6 %)."""

    def __init__(self, count, total, squares, low, high, dist):
        self.count, self.total, self.low, self.high = count, total, low, high
        self.avg = total / count if count else None
        self.med = dist.median() if dist is not None and count else None
        self.med_exact = dist.exact if dist is not None else False
        if count < 2:
            self.stddev = 0.0
        else:
            self.stddev = (max(count * squares - total * total, 0) / (count * (count - 1))) ** 0.5


class Operation:
    """One operation: (dir, host kind, action)."""

    def __init__(self, key):
        self.key = key
        self.count = self.bytes = self.host_ns = 0
        self.entry = None            # merged bucket entries (records), None if none
        self.complete = True         # no summary-only process contributed

    @property
    def name(self):
        direction, kind, action = self.key
        return "%s %s" % (direction, kind) + ("" if action == "pass" else " [%s]" % action)

    @property
    def sizes(self):
        e = self.entry
        return Stats(e[COUNT], e[NBYTES], e[BYTES_SQ], e[MIN_B], e[MAX_B], e[SIZES]) if e else None

    @property
    def times(self):
        e = self.entry
        return Stats(e[COUNT], e[NS], e[NS_SQ], e[MIN_NS], e[MAX_NS], e[TIMES]) if e else None

    @property
    def device(self):
        d = self.entry[DEV] if self.entry else None
        return Stats(d[D_COUNT], d[D_NS], d[D_NS_SQ], d[D_MIN], d[D_MAX], d[D_TIMES]) if d else None

    @property
    def device_bytes(self):
        d = self.entry[DEV] if self.entry else None
        return d[D_BYTES] if d else 0


def copy_entry(e):
    dev = None if e[DEV] is None else e[DEV][:D_TIMES] + [e[DEV][D_TIMES].copy()]
    return e[:SIZES] + [e[SIZES].copy(), e[TIMES].copy(), dev]


def operations(agg):
    ops = {}
    for (direction, kind, action, _async, _bucket), e in agg.buckets.items():
        op = ops.setdefault((direction, kind, action), Operation((direction, kind, action)))
        op.count += e[COUNT]
        op.bytes += e[NBYTES]
        op.host_ns += e[NS]
        if op.entry is None:
            op.entry = copy_entry(e)
        else:
            aggregate.merge_entry(op.entry, e)
    for (direction, kind, action, _bucket), (count, nbytes, ns) in agg.summary_rows.items():
        op = ops.setdefault((direction, kind, action), Operation((direction, kind, action)))
        op.count += count
        op.bytes += nbytes
        op.host_ns += ns
        op.complete = False
    return sorted(ops.values(), key=lambda o: (-o.host_ns, o.key))


class CopyClass:
    """Copy time of one (dir, host kind, action, async): async None for summary rows."""

    def __init__(self, key):
        self.key = key
        self.count = self.bytes = self.host_ns = 0
        self.device_count = self.device_bytes = self.device_ns = 0

    @property
    def mode(self):
        return {True: "async", False: "sync", None: "summary"}[self.key[3]]

    def gbps(self):
        """(GB/s, source): device time where sampled; host time for sync copies; None for async
        copies without device timing (their host time is the time to enqueue them)."""
        if self.device_count and self.device_ns:
            return self.device_bytes / self.device_ns, "device"
        if self.key[3] is False and self.host_ns:
            return self.bytes / self.host_ns, "host"
        return None, None


def classes(agg):
    rows = {}
    for (direction, kind, action, is_async, _bucket), e in agg.buckets.items():
        c = rows.setdefault((direction, kind, action, is_async), CopyClass((direction, kind, action, is_async)))
        c.count += e[COUNT]
        c.bytes += e[NBYTES]
        c.host_ns += e[NS]
        if e[DEV]:
            c.device_count += e[DEV][D_COUNT]
            c.device_bytes += e[DEV][D_BYTES]
            c.device_ns += e[DEV][D_NS]
    for (direction, kind, action, _bucket), (count, nbytes, ns) in agg.summary_rows.items():
        c = rows.setdefault((direction, kind, action, None), CopyClass((direction, kind, action, None)))
        c.count += count
        c.bytes += nbytes
        c.host_ns += ns
    return sorted(rows.values(), key=lambda c: (-c.host_ns, str(c.key)))


class Ceiling:
    """The measured pinned bandwidth of one direction: gbps and how it was found."""

    def __init__(self, direction, gbps, source, how, measured=True):
        self.direction, self.gbps, self.source, self.how, self.measured = direction, gbps, source, how, measured


def _median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def ceilings(agg, directions=("h2d", "d2h")):
    """Per direction: the rate the shim measured and wrote in the summaries (link, pinned_gbps) if any
    carries it; else the 90th percentile of the device-timed pinned or registered copies of at least
    1 MiB; else that of the sync pinned copies' host time; else the documented default (not measured)."""
    out = {}
    for direction in directions:
        values = agg.pinned_gbps.get(direction) or agg.pinned_gbps.get("any")
        device, host = agg.ceiling_device.get(direction), agg.ceiling_host.get(direction)
        if values:
            out[direction] = Ceiling(direction, _median(values), "summary",
                                     "measured by the shim and recorded in the summaries (link or pinned_gbps; "
                                     "median of %d)" % len(values))
        elif device is not None and device.count():
            out[direction] = Ceiling(direction, device.percentile(CEILING_PERCENTILE) / 1000, "device",
                                     "%dth percentile of %s device-timed pinned copies of at least 1 MiB"
                                     % (CEILING_PERCENTILE, "{:,}".format(device.count())))
        elif host is not None and host.count():
            out[direction] = Ceiling(direction, host.percentile(CEILING_PERCENTILE) / 1000, "host",
                                     "%dth percentile of the host time of %s sync pinned copies of at least 1 MiB "
                                     "(device_timing was off; its figure would be better)"
                                     % (CEILING_PERCENTILE, "{:,}".format(host.count())))
        else:
            out[direction] = Ceiling(direction, DEFAULT_PINNED_GBPS, "default",
                                     "documented default for an H200 on PCIe Gen5 x16, not measured "
                                     "(no device-timed or sync pinned copy of at least 1 MiB in these logs)",
                                     measured=False)
    return out


def pageable_reference(agg):
    """{dir: {bucket: (count, bytes, ns)}}: the copies that took the driver's pageable path (host
    kind pageable, action pass), the reference for what staging and pin-on-reuse saved."""
    ref = {}
    for (direction, kind, action, _async, bucket), e in agg.buckets.items():
        if kind == "pageable" and action == "pass" and e[NS] > 0:
            row = ref.setdefault(direction, {}).setdefault(bucket, [0, 0, 0])
            row[0] += e[COUNT]
            row[1] += e[NBYTES]
            row[2] += e[NS]
    for (direction, kind, action, bucket), (count, nbytes, ns) in agg.summary_rows.items():
        if kind == "pageable" and action == "pass" and ns > 0:
            row = ref.setdefault(direction, {}).setdefault(bucket, [0, 0, 0])
            row[0] += count
            row[1] += nbytes
            row[2] += ns
    return ref


def nearest_bucket(buckets, bucket):
    """The bucket of `buckets` closest to `bucket` in size (log scale), the larger on a tie."""
    def distance(b):
        return abs((b or 1024).bit_length() - (bucket or 1024).bit_length())
    return min(buckets, key=lambda b: (distance(b), -b))


def comparable(reference, bucket):
    """Whether pageable copies of the reference bucket tell the speed of copies of `bucket`: the
    neighbouring bucket (4x) or the same one, or both at least 1 MiB, where the driver's pageable
    path has reached its steady bandwidth."""
    steps = abs((reference or 1024).bit_length() - (bucket or 1024).bit_length()) // 2
    return steps <= 1 or (reference >= MIB and bucket >= MIB)


def bucket_label(bucket):
    return "%s-%s" % (size_label(bucket), size_label(bucket * 4 if bucket else 4096))


def size_label(n):
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return "%g %s" % (round(n / factor, 1), unit)
    return "%d B" % n


class Saving:
    """One estimate: the time the copies took or would take without a measure (baseline_ns) and
    with it (with_ns), and how it was estimated. baseline_ns is None when it cannot be estimated."""

    def __init__(self, what, direction, count, nbytes, baseline_ns, with_ns, how):
        self.what, self.direction, self.count, self.bytes = what, direction, count, nbytes
        self.baseline_ns, self.with_ns, self.how = baseline_ns, with_ns, how

    @property
    def saved_ns(self):
        return None if self.baseline_ns is None else self.baseline_ns - self.with_ns


def _by_bucket(agg, kind, action):
    """{dir: {bucket: [count, bytes, ns]}} of the copies of one host kind and action."""
    out = {}
    for (direction, k, a, _async, bucket), e in agg.buckets.items():
        if k == kind and a == action:
            add = out.setdefault(direction, {}).setdefault(bucket, [0, 0, 0])
            add[0] += e[COUNT]
            add[1] += e[NBYTES]
            add[2] += e[NS]
    for (direction, k, a, bucket), row in agg.summary_rows.items():
        if k == kind and a == action:
            add = out.setdefault(direction, {}).setdefault(bucket, [0, 0, 0])
            for i in range(3):
                add[i] += row[i]
    return out


def savings(agg, ceiling):
    """What staging and pin-on-reuse saved, estimated per direction and size bucket as the time the
    driver's pageable path would have taken at the bandwidth these logs' own pageable copies got
    (same size bucket, else the nearest comparable one: see comparable()) minus the time they took;
    and what pinning the pageable copies that passed through would save at the pinned ceiling."""
    ref = pageable_reference(agg)
    out = []
    for action, what in (("staged", "staging"), ("registered", "pin-on-reuse")):
        for direction, per_bucket in sorted(_by_bucket(agg, "pageable", action).items()):
            count = sum(r[0] for r in per_bucket.values())
            nbytes = sum(r[1] for r in per_bucket.values())
            actual = sum(r[2] for r in per_bucket.values())
            if direction not in ref:
                out.append(Saving(what, direction, count, nbytes, None, actual,
                                  "no %s pageable copy passed through to the driver in these logs, so its "
                                  "speed is unknown: run once with PINSHIM_STAGE=off PINSHIM_PIN_ON_REUSE=off "
                                  "to measure it" % direction))
                continue
            estimate, used, missing = 0.0, [], []
            for bucket, (n, b, ns) in sorted(per_bucket.items()):
                near = nearest_bucket(ref[direction], bucket)
                if not comparable(near, bucket):
                    missing.append("%s (the nearest pageable copies are %s)" % (bucket_label(bucket), bucket_label(near)))
                    continue
                rc, rb, rns = ref[direction][near]
                estimate += b * rns / rb if rb else 0
                used.append("%s copies: pageable %.2f GB/s from %s pass copies of %s"
                            % (bucket_label(bucket), rb / rns, "{:,}".format(rc), bucket_label(near)))
            if missing:
                out.append(Saving(what, direction, count, nbytes, None, actual,
                                  "no pageable copy of a comparable size passed through to the driver in these "
                                  "logs for %s: run once with PINSHIM_STAGE=off PINSHIM_PIN_ON_REUSE=off to "
                                  "measure it" % "; ".join(missing)))
                continue
            out.append(Saving(what, direction, count, nbytes, int(estimate), actual,
                              "time the driver's pageable path would have taken (%s) minus the time taken"
                              % "; ".join(used)))
    for direction, per_bucket in sorted(_by_bucket(agg, "pageable", "pass").items()):
        c = ceiling.get(direction)
        if c is None:
            continue
        large = [r for b, r in per_bucket.items() if b >= SMALL_COPY_BYTES]
        small = [r for b, r in per_bucket.items() if b < SMALL_COPY_BYTES]
        how = ("pageable copies of at least 64 KiB that passed through, at the pinned ceiling %.1f GB/s (%s)"
               % (c.gbps, c.how))
        if small:
            how += ("; %s smaller copies are left out: a fixed cost per copy, which pinning does not remove, "
                    "dominates their time" % "{:,}".format(sum(r[0] for r in small)))
        if not large:
            continue
        count = sum(r[0] for r in large)
        nbytes = sum(r[1] for r in large)
        actual = sum(r[2] for r in large)
        pinned = nbytes / c.gbps
        out.append(Saving("pinning the rest", direction, count, nbytes, actual, int(min(actual, pinned)), how))
    return out


class Site:
    """A call site merged across processes: totals, host kinds, its operations, its named frame
    (symbols.Frame, None when it could not be named), the framework that made its copies, and the
    fix."""

    def __init__(self, key):
        self.site, self.func, self.py_site = key
        self.count = self.bytes = self.host_ns = 0
        self.kinds = {}
        self.classes = {}           # (dir, kind, action, async) -> [count, bytes, ns]
        self.processes = 0
        self.fix = ""
        self.est_saving_ns = None
        self.frame = None
        self.framework = "cuda"

    @property
    def native(self):
        """'function at file:line (module+0xoffset)' when named, else 'module+0xoffset  symbol'."""
        if self.frame is not None:
            return "%s (%s)" % (self.frame.text(), self.site)
        return self.site + ("  " + self.func if self.func else "")

    @property
    def label(self):
        return "%s (%s)" % (self.py_site, self.native) if self.py_site else self.native


# The framework a module belongs to, from its path or name (as the shim's modules.c decides).
FRAMEWORK_RULES = (("pytorch", "/torch/"), ("pytorch", "libtorch"), ("pytorch", "libc10"), ("cupy", "cupy"),
                   ("jax", "jaxlib"), ("jax", "/jax"), ("jax", "xla"))
FRAMEWORK_TITLES = {"cuda": "CUDA C", "pytorch": "PyTorch", "cupy": "CuPy", "jax": "JAX"}


def framework_of(text):
    """Inside a Python environment only the package's own path counts (a virtual environment may
    live in a folder named after another framework)."""
    cut = text.rfind("-packages/")
    if cut >= 0:
        text = text[cut + len("-packages"):]
    for framework, piece in FRAMEWORK_RULES:
        if piece in text:
            return framework
    return "cuda"


def site_framework(site, modules):
    """The framework that made a site's copies: the module record's, else from the module's name."""
    parts = symbols.split_site(site.site)
    if parts is None:
        return "cuda"
    files = modules.get(parts[0]) or {}
    for (path, _build, _base), framework in files.items():
        if framework in FRAMEWORK_TITLES:
            return framework
        return framework_of(path)
    return framework_of(parts[0])


def name_frames(merged, modules, symbolize=True):
    """Names the sites' native frames (one addr2line call per module); returns the notes."""
    wanted = {}
    for s in merged:
        parts = symbols.split_site(s.site)
        if parts is not None:
            wanted.setdefault(parts[0], set()).add(parts[1])
    if not symbolize or not wanted:
        return []
    files = {name: set(found) for name, found in modules.items()}
    frames, notes = symbols.symbolize(files, wanted)
    for s in merged:
        parts = symbols.split_site(s.site)
        if parts is not None:
            s.frame = frames.get(parts)
    return notes


def sites(agg, ceiling, symbolize=True):
    """The merged sites, most host time first, and the symbolizer's notes."""
    merged = {}
    for (site, func, py_site, direction, kind, action, is_async), (count, nbytes, ns) in agg.sites.items():
        key = (site or "?", func, py_site)
        s = merged.get(key)
        if s is None:
            s = merged[key] = Site(key)
        s.count += count
        s.bytes += nbytes
        s.host_ns += ns
        s.kinds[kind] = s.kinds.get(kind, 0) + count
        aggregate.add_counts(s.classes, (direction, kind, action, is_async), (count, nbytes, ns))
    for key, n in agg.site_processes.items():
        s = merged.get((key[0] or "?",) + key[1:])
        if s is not None:
            s.processes += n
    ref = pageable_reference(agg)
    for s in merged.values():
        s.framework = site_framework(s, agg.modules)
        s.fix, s.est_saving_ns = site_fix(s, ceiling, ref)
    out = sorted(merged.values(), key=lambda s: (-s.host_ns, s.site, s.func or "", s.py_site or ""))
    return out, name_frames(out, agg.modules, symbolize)


# The fix in the terms of the framework that made the copy, per direction.
FIXES = {
    ("pytorch", "h2d"): "in PyTorch: DataLoader(pin_memory=True) for batches, or tensor.pin_memory() once for a tensor "
                        "copied again and again, then .to(\"cuda\", non_blocking=True)",
    ("pytorch", "d2h"): "in PyTorch: .to(\"cpu\") allocates a fresh pageable tensor you cannot pin; preallocate a pinned "
                        "tensor once (torch.empty(..., pin_memory=True)) and out.copy_(t, non_blocking=True) into it, "
                        "synchronizing before reading it",
    ("cupy", "h2d"): "in CuPy: build the host array in pinned memory (cupyx.empty_pinned, or the pinned memory pool) "
                     "and copy it with ndarray.set(host, stream=s)",
    ("cupy", "d2h"): "in CuPy: a.get(out=pinned, stream=s) into an array from cupyx.empty_pinned instead of "
                     "cupy.asnumpy into fresh memory",
    ("jax", "h2d"): "in JAX: keep the data on the device (one jax.device_put, the array reused), or host data in "
                    "pinned host memory (a sharding with memory_kind=\"pinned_host\")",
    ("jax", "d2h"): "in JAX: np.asarray copies into fresh pageable memory; fetch less often, or move results to "
                    "pinned host memory (a sharding with memory_kind=\"pinned_host\")",
    ("cuda", "h2d"): "in CUDA C: cudaMallocHost/cudaHostAlloc the source, or cudaHostRegister a buffer copied again "
                     "and again, and cudaMemcpyAsync on a stream",
    ("cuda", "d2h"): "in CUDA C: copy into a destination from cudaMallocHost/cudaHostAlloc, or cudaHostRegister it "
                     "once, with cudaMemcpyAsync on a stream and a synchronize before reading it",
}


def framework_fix(framework, direction):
    fix = FIXES.get((framework, direction)) or FIXES.get(("cuda", direction))
    return fix or ""


def shim_saving(site, ref):
    """(ns the shim's staging and registrations saved at this site against the driver's pageable
    path, estimated, or None; how): its staged and registered copies at the pageable bandwidth these
    logs' own pass copies got in the comparable bucket nearest to their mean size."""
    saved, used = 0.0, []
    for (direction, kind, action, _async), (count, nbytes, ns) in sorted(site.classes.items(), key=str):
        if kind != "pageable" or action not in ("staged", "registered") or not count:
            continue
        per_bucket = ref.get(direction)
        bucket = aggregate.bucket_min(nbytes // count)
        if not per_bucket:
            return None, None
        near = nearest_bucket(per_bucket, bucket)
        if not comparable(near, bucket):
            return None, None
        rc, rb, rns = per_bucket[near]
        saved += nbytes * rns / rb - ns
        used.append("%s %s: pageable %.2f GB/s from %s pass copies of %s" % (
            action, direction, rb / rns, "{:,}".format(rc), bucket_label(near)))
    return (int(saved), "; ".join(used)) if used else (None, None)


def site_fix(site, ceiling, ref=None):
    """(what to do at this call site, estimated saving in ns or None), from the operation that
    takes most of its time; for pageable memory in the terms of the site's framework."""
    (direction, kind, action, is_async), (count, nbytes, ns) = max(
        site.classes.items(), key=lambda kv: (kv[1][2], str(kv[0])))
    c = ceiling.get(direction)
    pinned_ns = nbytes / c.gbps if c and count and nbytes / count >= SMALL_COPY_BYTES else None
    saving = int(ns - pinned_ns) if pinned_ns is not None and ns > pinned_ns else None
    if count >= MANY_SMALL_COPIES and nbytes / count < SMALL_COPY_BYTES:
        return ("%s copies of %s on average: batch them into fewer, larger copies (each copy pays a fixed "
                "cost that pinning does not remove)" % ("{:,}".format(count), size_label(nbytes // count)), None)
    if direction in ("d2d", "peer") or kind == "device":
        return "device-side copy: not a host transfer; nothing to pin", None
    fix = framework_fix(site.framework, direction)
    if kind == "pageable" and action == "pass":
        if is_async:
            return ("async copy of pageable memory: it ran synchronously; pin the buffer so it can overlap (%s)"
                    % fix, saving)
        return "pageable memory: pin or register the buffer (%s)" % fix, saving
    if kind == "pageable" and action in ("staged", "registered"):
        done, how = shim_saving(site, ref or {})
        did = ("staged by the shim through its pinned pool" if action == "staged"
               else "registered by pin-on-reuse after its first copies")
        if done is not None and done >= 0:
            did += (", about %s faster than the driver's pageable path would have been without the shim (estimate: %s)"
                    % (duration_text(done), how))
        elif done is not None:
            did += ", about %s slower than the driver's pageable path (estimate: %s)" % (duration_text(-done), how)
        else:
            did += (" (what that saved is not estimated: no pageable copy of a comparable size passed through "
                    "in these logs)")
        return "%s; to need no shim: %s" % (did, fix), saving if action == "staged" else None
    if kind == "managed":
        return "managed memory: prefetch it (cudaMemPrefetchAsync) rather than copy", None
    if kind in ("pinned", "registered") and is_async is False:
        return ("sync copy of pinned memory: the thread waits for the DMA; an async copy on a stream "
                "would let it overlap other work", None)
    if kind in ("pinned", "registered"):
        return "pinned and async: nothing to fix", None
    return "", None


def duration_text(ns):
    for unit, factor in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= factor:
            return "%.3g %s" % (ns / factor, unit)
    return "%d ns" % ns


class DeviceRow:
    """Copies of one (host, device ordinal or None, direction)."""

    def __init__(self, key, row, processes):
        (self.host, self.device, self.direction), (self.count, self.bytes, self.host_ns) = key, row
        self.processes = processes


def devices(agg):
    rows = [DeviceRow(key, row, agg.device_procs.get(key[:2], 0)) for key, row in agg.devices.items()]
    return sorted(rows, key=lambda r: (r.host, r.device is None, int(r.device) if r.device and r.device.isdigit() else 0,
                                       str(r.device), r.direction))


class Report:
    """Every derived view (see the module's contract)."""

    def __init__(self, result, files, selection, top, base_wall_ns, symbolize=True):
        agg = result.agg
        self.files, self.selection, self.top = files, selection, top
        self.base_wall_ns = base_wall_ns          # the earliest process start: the timeline's origin
        self.processes = result.processes
        self.warnings = result.warnings
        self.agg = agg
        self.operations = operations(agg)
        self.total_ns = sum(o.host_ns for o in self.operations)
        self.total_bytes = sum(o.bytes for o in self.operations)
        self.total_count = sum(o.count for o in self.operations)
        self.classes = classes(agg)
        self.ceilings = ceilings(agg)
        self.savings = savings(agg, self.ceilings)
        self.sites, self.symbol_notes = sites(agg, self.ceilings, symbolize)
        self.devices = devices(agg)
        self.advice = sorted(({"rule": k[0], "message": k[1], "processes": v[0], "est_saving_ns": v[1]}
                              for k, v in agg.advice.items()),
                             key=lambda a: (-a["est_saving_ns"], a["rule"], a["message"]))
        self.syncs = sorted(((call, v[0], v[1], v[2]) for call, v in agg.syncs.items()), key=lambda s: -s[2])
        self.sync_records = sum(p.sync_records for p in self.processes)
        self.complete = all(o.complete for o in self.operations)
        self.device_timed = any(o.device for o in self.operations)
        self.summary_only = [p for p in self.processes if p.source == "summary"]


def build(result, files, selection, top, base_wall_ns, symbolize=True):
    return Report(result, files, selection, top, base_wall_ns, symbolize)
