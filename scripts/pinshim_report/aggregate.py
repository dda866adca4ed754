"""aggregate.py: bounded, mergeable aggregates of log files (scan.py fills them, a file at a time).

Contract:
- Aggregate: what the outputs need over any number of processes. Exact counts, bytes and times;
  exact sums of squares (standard deviations), minima and maxima; medians from sketch.Dist (exact
  unless a group has more than sketch.EXACT_MAX distinct values). Memory does not grow with the
  number of records: it grows with the number of distinct (direction, host kind, action, async,
  size bucket) groups, call sites (at most MAX_SITES, the rest counted as one "(other sites)"
  row), timeline lanes (at most scan.MAX_LANES a process) and processes.
- Aggregate.merge(other): adds another file's aggregate (the order of merges does not matter).
- Selection (which processes and copies), Options (what a scan needs besides the file),
  ProcessInfo (one process section of a log), and the bucket entries' layout (COUNT...DEV).
"""
import fnmatch

from . import logs
from .logs import is_int
from .sketch import Dist

MIB = 1 << 20
MAX_SITES = 20000            # distinct (call site, operation) rows kept per aggregate
MAX_ADVICE = 5000            # distinct advice messages kept
MAX_MODULES = 10000          # distinct module records (name, path, build-id, base) kept
MAX_DEVICE_ROWS = 100000     # (host, device, dir) rows kept
CEILING_MIN_BYTES = MIB      # copies at least this large measure the link's pinned bandwidth
PINNED_KINDS = ("pinned", "registered")
OTHER_SITES = ("(other sites)", None, None)

# A bucket entry: the copies of one (dir, host kind, action, async, size bucket).
(COUNT, NBYTES, NS, BYTES_SQ, NS_SQ, MIN_B, MAX_B, MIN_NS, MAX_NS, SIZES, TIMES, DEV) = range(12)
# Its device-timed part (entry[DEV], None until a device-timed copy): count, bytes, ns, ns squared,
# min ns, max ns, Dist of ns.
(D_COUNT, D_BYTES, D_NS, D_NS_SQ, D_MIN, D_MAX, D_TIMES) = range(7)


def bucket_min(nbytes):
    """The shim summary's size bucket: powers of 4 from 4 KiB; 0 below 4 KiB."""
    if nbytes < 4096:
        return 0
    return 1 << (2 * ((nbytes.bit_length() - 1) // 2))


def size_bin(nbytes):
    """Quarter-octave bin of a size (for the bandwidth chart)."""
    bits = nbytes.bit_length()
    return bits * 4 + ((nbytes << 2 >> bits) & 3)


def size_bin_value(b):
    """A representative size of a size_bin: the middle of its range."""
    bits, quarter = b // 4, b % 4
    return (4 + quarter + 0.5) * 2.0 ** (bits - 3)


BW_BINS_PER_OCTAVE = 8


def bw_bin_value(b):
    """The GB/s in the middle of a bandwidth bin (1/8 octave of bytes per ns)."""
    return 2 ** ((b + 0.5) / BW_BINS_PER_OCTAVE)


def new_entry(nbytes, ns):
    return [0, 0, 0, 0, 0, nbytes, nbytes, ns, ns, Dist(), Dist(), None]


def merge_entry(mine, other):
    for i in (COUNT, NBYTES, NS, BYTES_SQ, NS_SQ):
        mine[i] += other[i]
    mine[MIN_B] = min(mine[MIN_B], other[MIN_B])
    mine[MAX_B] = max(mine[MAX_B], other[MAX_B])
    mine[MIN_NS] = min(mine[MIN_NS], other[MIN_NS])
    mine[MAX_NS] = max(mine[MAX_NS], other[MAX_NS])
    mine[SIZES].merge(other[SIZES])
    mine[TIMES].merge(other[TIMES])
    if other[DEV] is not None:
        if mine[DEV] is None:           # a copy: `other` may live on (analysis merges an aggregate's entries)
            mine[DEV] = other[DEV][:D_TIMES] + [other[DEV][D_TIMES].copy()]
        else:
            d, o = mine[DEV], other[DEV]
            for i in (D_COUNT, D_BYTES, D_NS, D_NS_SQ):
                d[i] += o[i]
            d[D_MIN] = min(d[D_MIN], o[D_MIN])
            d[D_MAX] = max(d[D_MAX], o[D_MAX])
            d[D_TIMES].merge(o[D_TIMES])


def add_counts(table, key, values):
    """table[key] += values, element by element."""
    row = table.get(key)
    if row is None:
        table[key] = list(values)
    else:
        for i, v in enumerate(values):
            row[i] += v


class Selection:
    """Which processes and copies the report covers. ranks/pids/devices: sets of strings (None:
    all); hosts: glob patterns; since_ns/until_ns: a window from the earliest process start."""

    def __init__(self, ranks=None, pids=None, hosts=None, devices=None, since_ns=None, until_ns=None):
        self.ranks, self.pids, self.hosts, self.devices = ranks, pids, hosts, devices
        self.since_ns, self.until_ns = since_ns, until_ns

    @property
    def per_record(self):
        """Whether copies are chosen one by one (then summary-only processes cannot be used)."""
        return self.devices is not None or self.since_ns is not None or self.until_ns is not None

    def keeps_process(self, header):
        if self.ranks is not None and str(header.get("rank", "na")) not in self.ranks:
            return False
        if self.pids is not None and str(header.get("pid")) not in self.pids:
            return False
        if self.hosts is not None and not any(fnmatch.fnmatchcase(str(header.get("host", "?")), h)
                                              for h in self.hosts):
            return False
        return True

    def describe(self):
        parts = []
        for name, values in (("rank", self.ranks), ("pid", self.pids), ("host", self.hosts),
                             ("device", self.devices)):
            if values is not None:
                parts.append("%s %s" % (name, ",".join(sorted(values))))
        if self.since_ns is not None:
            parts.append("from %g s" % (self.since_ns / 1e9))
        if self.until_ns is not None:
            parts.append("until %g s" % (self.until_ns / 1e9))
        return "; ".join(parts)


class Options:
    """What scan_file needs besides the file: the selection, the earliest process start (the
    time window's origin) and the timeline's bins per lane."""

    def __init__(self, selection, base_wall_ns, lane_bins):
        self.selection, self.base_wall_ns, self.lane_bins = selection, base_wall_ns, lane_bins


class ProcessInfo:
    """One process section of a log: who it was, its totals, its timeline lanes, its summary's
    facts. Small: the report keeps one per process."""

    def __init__(self, path, line, header):
        self.path, self.line = path, line
        self.section = 0               # its number among the file's selected sections
        self.file_index = 0            # its file's place in the report's list of files
        h = header
        self.pid = h.get("pid") if is_int(h.get("pid")) else 0
        self.ppid = h.get("ppid") if is_int(h.get("ppid")) else None
        self.host = str(h.get("host") if h.get("host") is not None else "?")
        self.rank = str(h.get("rank") if h.get("rank") is not None else "na")
        self.version = str(h.get("version", "?"))
        cmdline = h.get("cmdline")
        self.cmdline = [str(c) for c in cmdline] if isinstance(cmdline, list) else []
        self.start_wall_ns = h.get("start_wall_ns") if is_int(h.get("start_wall_ns")) else 0
        self.program = self.cmdline[0] if self.cmdline else "?"
        self.has_summary = False
        self.records = 0               # transfer records read (selected)
        self.count = self.bytes = self.host_ns = 0
        self.device_count = self.device_ns = 0
        self.source = "records"        # or "summary" (a summary-only process)
        self.failed = None
        self.dropped = 0
        self.syncs = []                # [(call, count, ns)] from the summary
        self.sync_records = 0
        self.lanes = {}                # (device, stream) -> Lane
        self.end_ns = 0                # end of the last copy, ns from the process start
        self.devices = set()

    def label(self):
        return "pid %s rank %s on %s (%s)" % (self.pid, self.rank, self.host, self.program)

    @property
    def status(self):
        if not self.has_summary:
            return "no summary (killed?)"
        if self.source == "summary":
            return "summary only"
        if self.dropped:
            return "%d records dropped" % self.dropped
        return "complete"

    def order(self):
        """Rank order (numeric ranks first), then host, start time, pid."""
        numeric = self.rank.isdigit()
        return (not numeric, int(self.rank) if numeric else 0, self.rank, self.host, self.start_wall_ns, str(self.pid))


class Aggregate:
    """Everything the outputs need, over any number of processes (see the module's contract)."""

    def __init__(self):
        self.buckets = {}          # (dir, kind, action, async, bucket_min) -> entry (records)
        self.summary_rows = {}     # (dir, kind, action, bucket_min) -> [count, bytes, ns] (summary-only processes)
        self.sites = {}            # (site, func, py_site, dir, kind, action, async|None) -> [count, bytes, ns]
        self.site_processes = {}   # (site, func, py_site) -> processes
        self.bw = {}               # (dir, kind, "device"|"host", size bin, bw bin) -> copies
        self.async_untimed = {}    # (dir, kind) -> async copies without device timing
        self.ceiling_device = {}   # dir -> Dist of MB/s, device-timed pinned/registered copies >= 1 MiB
        self.ceiling_host = {}     # dir -> Dist of MB/s, sync pinned copies >= 1 MiB, host time
        self.pinned_gbps = {}      # dir -> [GB/s values from summaries' pinned_gbps]
        self.advice = {}           # (rule, message) -> [processes, est_saving_ns]
        self.advice_dropped = 0
        self.syncs = {}            # call -> [count, ns, processes]
        self.staging = {}          # summary's staging counters, summed
        self.registration = {}     # summary's pin-on-reuse counters, summed
        self.py_sites = False
        self.modules = {}          # module name -> {(path, build_id or None, base_vaddr): framework}
        self.devices = {}          # (host, device or None, dir) -> [count, bytes, ns]
        self.device_procs = {}     # (host, device or None) -> processes

    def merge(self, other):
        for key, entry in other.buckets.items():
            mine = self.buckets.get(key)
            if mine is None:
                self.buckets[key] = entry
            else:
                merge_entry(mine, entry)
        for key, row in other.summary_rows.items():
            add_counts(self.summary_rows, key, row)
        for key, row in other.sites.items():
            if key in self.sites or len(self.sites) < MAX_SITES:
                add_counts(self.sites, key, row)
            else:
                add_counts(self.sites, OTHER_SITES + key[3:], row)
        for key, n in other.site_processes.items():
            if key in self.site_processes or len(self.site_processes) < MAX_SITES:
                self.site_processes[key] = self.site_processes.get(key, 0) + n
        for key, n in other.bw.items():
            self.bw[key] = self.bw.get(key, 0) + n
        for key, n in other.async_untimed.items():
            self.async_untimed[key] = self.async_untimed.get(key, 0) + n
        for table, theirs in ((self.ceiling_device, other.ceiling_device), (self.ceiling_host, other.ceiling_host)):
            for key, dist in theirs.items():
                if key in table:
                    table[key].merge(dist)
                else:
                    table[key] = dist
        for key, values in other.pinned_gbps.items():
            self.pinned_gbps.setdefault(key, []).extend(values)
        for key, row in other.advice.items():
            if key in self.advice or len(self.advice) < MAX_ADVICE:
                add_counts(self.advice, key, row)
            else:
                self.advice_dropped += 1
        self.advice_dropped += other.advice_dropped
        for key, row in other.syncs.items():
            add_counts(self.syncs, key, row)
        for mine, theirs in ((self.staging, other.staging), (self.registration, other.registration)):
            for key, v in theirs.items():
                mine[key] = mine.get(key, 0) + v
        self.py_sites = self.py_sites or other.py_sites
        for name, files in other.modules.items():
            for key, framework in files.items():
                self.add_module_file(name, key, framework)
        for key, row in other.devices.items():
            if key in self.devices or len(self.devices) < MAX_DEVICE_ROWS:
                add_counts(self.devices, key, row)
        for key, n in other.device_procs.items():
            self.device_procs[key] = self.device_procs.get(key, 0) + n

    def add_module_file(self, name, key, framework):
        files = self.modules.get(name)
        if files is None:
            if len(self.modules) >= MAX_MODULES:
                return
            files = self.modules[name] = {}
        files.setdefault(key, framework)

    def add_module(self, record):
        """A module record: where the call sites of one module can be symbolized."""
        name, path = record.get("name"), record.get("path")
        if not isinstance(name, str) or not isinstance(path, str) or not path:
            return
        build = record.get("build_id") if isinstance(record.get("build_id"), str) else None
        base = record.get("base_vaddr") if is_int(record.get("base_vaddr")) else 0
        framework = record.get("framework") if isinstance(record.get("framework"), str) else None
        self.add_module_file(name, (path, build, base), framework)

    # --- what a summary record adds ---

    def add_summary(self, info, summary, rows_too):
        """A process's summary: advice, syncs, staging and registration counters, pinned_gbps,
        and (rows_too: a process without transfer records) its transfer rows and call sites."""
        for a in summary.get("advice") or []:
            if isinstance(a, dict) and isinstance(a.get("message"), str):
                key = (str(a.get("rule", "?")), a["message"])
                saving = a.get("est_saving_ns") if is_int(a.get("est_saving_ns")) else 0
                if key in self.advice or len(self.advice) < MAX_ADVICE:
                    add_counts(self.advice, key, (1, saving))
                else:
                    self.advice_dropped += 1
        for s in summary.get("syncs") or []:
            if isinstance(s, dict) and is_int(s.get("count")) and is_int(s.get("host_ns")):
                add_counts(self.syncs, str(s.get("call", "?")), (s["count"], s["host_ns"], 1))
                info.syncs.append((str(s.get("call", "?")), s["count"], s["host_ns"]))
        for name, table in (("staging", self.staging), ("registration", self.registration)):
            section = summary.get(name)
            if isinstance(section, dict):
                for key, v in section.items():
                    if is_int(v):
                        table[key] = table.get(key, 0) + v
        self._add_pinned_gbps(summary.get("pinned_gbps"))
        for link in summary.get("link") or []:       # the shim's link_probe: per device, measured
            if isinstance(link, dict):
                self._add_pinned_gbps({"h2d": link.get("h2d_gbps"), "d2h": link.get("d2h_gbps")})
        if rows_too:
            self._add_summary_rows(info, summary)

    def add_device_row(self, info, device, direction, row):
        key = (info.host, device, direction)
        if key in self.devices or len(self.devices) < MAX_DEVICE_ROWS:
            add_counts(self.devices, key, row)

    def _add_pinned_gbps(self, value):
        """A measured pinned bandwidth from a summary: its "link" list (the shim's link_probe:
        [{"device": n, "h2d_gbps": x, "d2h_gbps": y}]) or a "pinned_gbps" field: a number,
        {dir: number}, {device: {dir: number}} or [{"device": n, dir: number}, ...]. Whatever its
        shape, each (dir, number) is kept."""
        def numbers(v, direction):
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
                self.pinned_gbps.setdefault(direction, []).append(float(v))
            elif isinstance(v, dict):
                for key, inner in v.items():
                    numbers(inner, key if key in ("h2d", "d2h") else direction)
            elif isinstance(v, list):
                for inner in v:
                    numbers(inner, direction)
        numbers(value, "any")

    def _add_summary_rows(self, info, summary):
        for r in summary.get("transfers") or []:
            if (isinstance(r, dict) and all(is_int(r.get(k)) for k in ("count", "bytes", "host_ns"))
                    and isinstance(r.get("dir"), str) and isinstance(r.get("host_kind"), str)):
                bucket = r.get("bucket_min") if is_int(r.get("bucket_min")) else 0
                key = (r["dir"], r["host_kind"], str(r.get("action") or "pass"), bucket)
                add_counts(self.summary_rows, key, (r["count"], r["bytes"], r["host_ns"]))
                device = str(r["device"]) if is_int(r.get("device")) else None
                self.add_device_row(info, device, r["dir"], (r["count"], r["bytes"], r["host_ns"]))
                info.devices.add(device)
                info.count += r["count"]
                info.bytes += r["bytes"]
                info.host_ns += r["host_ns"]
        for s in summary.get("sites") or []:
            if isinstance(s, dict) and all(is_int(s.get(k)) for k in ("count", "bytes", "host_ns")):
                kinds = {k: v for k, v in (s.get("kinds") or {}).items() if is_int(v) and v > 0}
                site = (str(s.get("site") or "?"), s.get("func") if isinstance(s.get("func"), str) else None,
                        logs.py_label(s.get("py_site"), s.get("py_func")))
                self.py_sites = self.py_sites or site[2] is not None
                # The summary splits a site by host kind in counts only: bytes and time go to the
                # kind with the most copies.
                main_kind = max(kinds, key=lambda k: (kinds[k], k)) if kinds else "unknown"
                for kind, n in kinds.items() or [("unknown", s["count"])]:
                    share = (s["bytes"], s["host_ns"]) if kind == main_kind else (0, 0)
                    add_counts(self.sites, site + ("?", kind, "?", None), (n,) + share)
                self.site_processes[site] = self.site_processes.get(site, 0) + 1
