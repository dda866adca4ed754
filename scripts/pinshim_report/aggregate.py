"""aggregate.py: one pass over a log file into bounded, mergeable aggregates.

Contract:
- scan_file(path, options, sinks, warn, on_bytes) -> (processes, Aggregate): one ProcessInfo per
  process section of the file that the selection keeps, and the file's Aggregate. Exact counts,
  bytes and times; exact sums of squares (standard deviations), minima and maxima; medians from
  sketch.Dist (exact unless a group has more than sketch.EXACT_MAX distinct values). Memory does not
  grow with the number of records: it grows with the number of distinct (direction, host kind,
  action, async, size bucket) groups, call sites (at most MAX_SITES, the rest counted as one
  "(other sites)" row), timeline lanes (at most MAX_LANES a process) and processes.
- Aggregate.merge(other): adds another file's aggregate (the order of merges does not matter).
- sinks: the SQLite and trace part writers, fed as the file is read: begin_process(section,
  header), transfer(section, fields), sync(section, record), summary(section, record), then
  close(processes) with the sections kept (a section with no selected record is not kept).
Raises logs.InputError for a file that is not a usable log."""
import fnmatch
import math

from . import logs
from .logs import BYTES, DEVICE_NS, DIR, HOST_NS, T_NS, WHAT, WHERE, is_int
from .sketch import Dist, Lane

MIB = 1 << 20
MAX_SITES = 20000            # distinct (call site, operation) rows kept per aggregate
MAX_LANES = 16               # timeline lanes (device, stream) per process; more streams share one lane
MAX_SIGNATURES = 20000       # groups of copies a section holds before adding them to the aggregate
MAX_ADVICE = 5000            # distinct advice messages kept
CEILING_MIN_BYTES = MIB      # copies at least this large measure the link's pinned bandwidth
PINNED_KINDS = ("pinned", "registered")
OTHER_SITES = ("(other sites)", None, None)
OTHER_STREAMS = "other streams"

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

    # --- the less common parts of a transfer record (called from scan_file) ---

    def add_device_time(self, entry, sig, nbytes, dev_ns):
        """A device-timed copy: its device time in the bucket entry and the bandwidth chart, and, for
        a large pinned or registered copy, in the ceiling's distribution. Returns dev_ns."""
        d = entry[DEV]
        if d is None:
            d = entry[DEV] = [0, 0, 0, 0, dev_ns, dev_ns, Dist()]
        d[D_COUNT] += 1
        d[D_BYTES] += nbytes
        d[D_NS] += dev_ns
        d[D_NS_SQ] += dev_ns * dev_ns
        d[D_MIN] = min(d[D_MIN], dev_ns)
        d[D_MAX] = max(d[D_MAX], dev_ns)
        d[D_TIMES].add(dev_ns)
        sig[S_DEV_COUNT] += 1
        sig[S_DEV_NS] += dev_ns
        if dev_ns and nbytes:
            direction, kind, action = sig[S_FIELDS][:3]
            bkey = (direction, kind, "device", size_bin(nbytes), math.floor(math.log2(nbytes / dev_ns) * BW_BINS_PER_OCTAVE))
            self.bw[bkey] = self.bw.get(bkey, 0) + 1
            if nbytes >= CEILING_MIN_BYTES and (kind in PINNED_KINDS or action == "registered"):
                c = self.ceiling_device.get(direction)
                if c is None:
                    c = self.ceiling_device[direction] = Dist()
                c.add(nbytes * 1000 // dev_ns)
        return dev_ns

    def add_host_ceiling(self, direction, nbytes, ns):
        c = self.ceiling_host.get(direction)
        if c is None:
            c = self.ceiling_host[direction] = Dist()
        c.add(nbytes * 1000 // ns)

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
                info.count += r["count"]
                info.bytes += r["bytes"]
                info.host_ns += r["host_ns"]
        for s in summary.get("sites") or []:
            if isinstance(s, dict) and all(is_int(s.get(k)) for k in ("count", "bytes", "host_ns")):
                kinds = {k: v for k, v in (s.get("kinds") or {}).items() if is_int(v) and v > 0}
                site = (str(s.get("site") or "?"), s.get("func") if isinstance(s.get("func"), str) else None,
                        s.get("py_site") if isinstance(s.get("py_site"), str) else None)
                self.py_sites = self.py_sites or site[2] is not None
                # The summary splits a site by host kind in counts only: bytes and time go to the
                # kind with the most copies.
                main_kind = max(kinds, key=lambda k: (kinds[k], k)) if kinds else "unknown"
                for kind, n in kinds.items() or [("unknown", s["count"])]:
                    share = (s["bytes"], s["host_ns"]) if kind == main_kind else (0, 0)
                    add_counts(self.sites, site + ("?", kind, "?", None), (n,) + share)
                self.site_processes[site] = self.site_processes.get(site, 0) + 1


# A signature entry: the copies of one (dir, size bucket, the record's WHAT and WHERE text: see
# logs) in one process section: count, bytes, ns, device-timed count and ns, the bucket entry and
# the lane (and its busy array for this kind) its copies also go to, its bandwidth histogram
# {(size bin, bandwidth bin): copies} (None for async copies: their host time is no bandwidth),
# whether its copies measure the pinned ceiling by host time (sync, pinned or registered, at least
# 1 MiB), whether the selection leaves it out (device), and its decoded fields
# (dir, kind, action, async, bucket, site, func, py_site, device, stream). All found once, when the
# signature is first seen.
(S_COUNT, S_BYTES, S_NS, S_DEV_COUNT, S_DEV_NS, S_ENTRY, S_LANE, S_BUSY, S_BW, S_CEILING, S_SKIP,
 S_FIELDS) = range(12)


class Section:
    """The process section being read: its ProcessInfo and its signatures."""

    def __init__(self, info, options):
        self.info = info
        self.signatures = {}
        self.sites_seen = set()
        self.lane_bins = options.lane_bins
        self.devices = options.selection.devices

    def new_signature(self, key, agg):
        if len(self.signatures) >= MAX_SIGNATURES:
            self.flush(agg)                    # memory stays bounded whatever the variety of copies
        direction, bucket, what, where = key
        f = logs.what_where(what, where)
        direction = direction.decode("utf-8", errors="replace")
        kind, action, is_async, device, stream = f["host_kind"], f["action"], f["async"], f["device"], f["stream"]
        fields = (direction, kind, action, is_async, bucket, f["site"], f["func"], f["py_site"], device, stream)
        skip = self.devices is not None and device not in self.devices
        bkey = (direction, kind, action, is_async, bucket)
        entry = agg.buckets.get(bkey)
        if entry is None:
            entry = agg.buckets[bkey] = new_entry(1 << 62, 1 << 62)
            entry[MAX_B] = entry[MAX_NS] = -1
        lanes = self.info.lanes
        lkey = (device, stream)
        lane = lanes.get(lkey)
        if lane is None and not skip:
            if len(lanes) >= MAX_LANES:
                lkey = (device, OTHER_STREAMS)
                lane = lanes.get(lkey)
            if lane is None:
                lane = lanes[lkey] = Lane(self.lane_bins)
        sig = self.signatures[key] = [0, 0, 0, 0, 0, entry, lane, None if skip else lane.busy_of(kind),
                                      None if is_async else {},
                                      not is_async and kind in PINNED_KINDS and bucket >= CEILING_MIN_BYTES,
                                      skip, fields]
        return sig

    def flush(self, agg):
        """Adds the signatures so far to the file's aggregate and the process's totals, and forgets
        them (the dictionary is emptied in place: scan_file holds it)."""
        info = self.info
        seen = self.sites_seen
        for sig in self.signatures.values():
            if sig[S_SKIP] or not sig[S_COUNT]:
                continue
            direction, kind, action, is_async, _bucket, site, func, py_site, device, _stream = sig[S_FIELDS]
            entry = sig[S_ENTRY]
            entry[COUNT] += sig[S_COUNT]
            entry[NBYTES] += sig[S_BYTES]
            entry[NS] += sig[S_NS]
            if sig[S_BW] is None:
                untimed = sig[S_COUNT] - sig[S_DEV_COUNT]
                if untimed:
                    agg.async_untimed[(direction, kind)] = agg.async_untimed.get((direction, kind), 0) + untimed
            else:
                for (size, bw), n in sig[S_BW].items():
                    bkey = (direction, kind, "host", size, bw)
                    agg.bw[bkey] = agg.bw.get(bkey, 0) + n
            info.count += sig[S_COUNT]
            info.bytes += sig[S_BYTES]
            info.host_ns += sig[S_NS]
            info.device_count += sig[S_DEV_COUNT]
            info.device_ns += sig[S_DEV_NS]
            info.devices.add(device)
            skey = (site, func, py_site, direction, kind, action, is_async)
            if skey not in agg.sites and len(agg.sites) >= MAX_SITES:
                skey = OTHER_SITES + skey[3:]
            add_counts(agg.sites, skey, sig[:3])
            seen.add(skey[:3])
            if py_site is not None:
                agg.py_sites = True
        for bkey, entry in list(agg.buckets.items()):
            if not entry[COUNT]:
                del agg.buckets[bkey]          # only signatures the selection left out went there
        self.signatures.clear()

    def finish(self, agg):
        """The end of the section: its signatures, the process's end, its call sites counted once."""
        self.flush(agg)
        info = self.info
        info.records = info.count
        info.end_ns = max([lane.end() for lane in info.lanes.values()] or [0])
        for key in self.sites_seen:
            agg.site_processes[key] = agg.site_processes.get(key, 0) + 1


def scan_file(path, options, sinks=(), warn=None, on_bytes=None):
    """Reads one log file (see the module's contract). The transfer branch runs once per record:
    it is written for speed (locals, one dictionary look-up per record, no calls but the
    distributions' and the lane's)."""
    selection = options.selection
    per_record = selection.per_record
    agg = Aggregate()
    processes = []
    section = None              # the section being read; None while a section is not selected
    signatures = None
    since = until = None
    sections = 0                # selected process sections so far (the sinks' numbering)

    def finish_section():
        if section is None:
            return
        section.finish(agg)
        if section.info.records == 0 and per_record:
            return              # nothing of this process is in the window or on the devices chosen
        processes.append(section.info)

    def handle_other(number, kind, t):
        """A header, summary, sync or other record: rare, so kept out of the loop below."""
        nonlocal section, signatures, since, until, sections
        if kind == "header":
            finish_section()
            section = signatures = None
            if selection.keeps_process(t):
                info = ProcessInfo(path, number, t)
                info.section = sections
                sections += 1
                section = Section(info, options)
                signatures = section.signatures
                offset = info.start_wall_ns - options.base_wall_ns   # the window is from the earliest start
                since = None if selection.since_ns is None else selection.since_ns - offset
                until = None if selection.until_ns is None else selection.until_ns - offset
                for sink in sinks:
                    sink.begin_process(info.section, t)
        elif section is None:
            return
        elif kind == "summary":
            info = section.info
            info.has_summary = True
            if is_int(t.get("failed_copies")):
                info.failed = t["failed_copies"]
            if is_int(t.get("dropped")):
                info.dropped = t["dropped"]
            if isinstance(t.get("program"), str):
                info.program = t["program"]
            summary_only = not signatures and not per_record
            if summary_only:
                info.source = "summary"
            agg.add_summary(info, t, summary_only)
            for sink in sinks:
                sink.summary(info.section, t)
        elif kind == "sync":
            t_ns, ns = t.get("t_ns"), t.get("host_ns")
            if not (is_int(t_ns) and is_int(ns) and t_ns >= 0 and ns >= 0):
                return
            if (since is not None and t_ns < since) or (until is not None and t_ns >= until):
                return
            lanes = section.info.lanes
            lane = lanes.get((None, "sync calls"))
            if lane is None:
                lane = lanes[(None, "sync calls")] = Lane(options.lane_bins)
            lane.add(t_ns, ns, "sync")
            section.info.sync_records += 1
            for sink in sinks:
                sink.sync(section.info.section, t)

    with logs.open_log(path) as f:
        match = logs.FAST_MATCH
        seen_header = False
        reported = 0
        for number, raw in enumerate(f, 1):
            if not number & 4095 and on_bytes is not None:
                position = f.tell()
                on_bytes(position - reported)
                reported = position
            m = match(raw) if seen_header and b"\\" not in raw else None     # logs.FAST_MATCH
            if m is None:
                # Invalid UTF-8 (a command line's bytes) becomes U+FFFD rather than costing the line.
                text = raw.decode("utf-8", errors="replace")
                got = logs.other_record(path, number, raw, text, seen_header, warn)
                if got is None:
                    continue
                kind, t = got
                seen_header = seen_header or kind == "header"
                if kind != "transfer":
                    handle_other(number, kind, t)
                    continue
                full = t
                t = logs.lean_of(full)
            else:
                t = m.groups()
                full = None
            if section is None:
                continue
            t_ns = int(t[T_NS])
            if per_record and ((since is not None and t_ns < since) or (until is not None and t_ns >= until)):
                continue
            nbytes = int(t[BYTES])
            ns = int(t[HOST_NS])
            bits = nbytes.bit_length()
            key = (t[DIR], 0 if bits < 13 else 1 << ((bits - 1) & ~1), t[WHAT], t[WHERE])
            sig = signatures.get(key)
            if sig is None:
                sig = section.new_signature(key, agg)
            if sig[S_SKIP]:
                continue                       # a device the selection leaves out
            sig[S_COUNT] += 1
            sig[S_BYTES] += nbytes
            sig[S_NS] += ns
            # the operation and size bucket: sums of squares, min, max, and the distributions
            e = sig[S_ENTRY]
            e[BYTES_SQ] += nbytes * nbytes
            e[NS_SQ] += ns * ns
            if nbytes < e[MIN_B]:
                e[MIN_B] = nbytes
            if nbytes > e[MAX_B]:
                e[MAX_B] = nbytes
            if ns < e[MIN_NS]:
                e[MIN_NS] = ns
            if ns > e[MAX_NS]:
                e[MAX_NS] = ns
            dist = e[SIZES]                    # Dist.add, inlined for its common cases
            counts = dist.counts
            if dist.exact and nbytes in counts:
                counts[nbytes] += 1
            else:
                dist.add(nbytes)
            ns_bits = ns.bit_length()
            dist = e[TIMES]
            counts = dist.counts
            if dist.exact:
                if ns in counts:
                    counts[ns] += 1
                else:
                    dist.add(ns)
            else:
                b = ns if ns < 64 else (ns_bits << 5) | ((ns >> (ns_bits - 6)) & 31)
                counts[b] = counts.get(b, 0) + 1
            # bandwidth: device time where sampled, else host time of sync copies (async copies'
            # host time is the time to enqueue them, not a bandwidth). Host-time bins: 1/8 octave
            # of bytes/ns from the two numbers' leading bits (a piecewise-linear log2, within 6 %).
            hist = sig[S_BW]
            dev_ns = t[DEVICE_NS]
            duration = ns
            if dev_ns is not None:
                dev_ns = agg.add_device_time(e, sig, nbytes, int(dev_ns))
                if hist is None:
                    duration = dev_ns
            elif hist is not None and ns and nbytes:
                bkey = (bits * 4 + ((nbytes << 2 >> bits) & 3),
                        ((bits - ns_bits) * 32 + ((nbytes << 6 >> bits) & 31) - ((ns << 6 >> ns_bits) & 31)) >> 2)
                hist[bkey] = hist.get(bkey, 0) + 1
                if sig[S_CEILING]:
                    agg.add_host_ceiling(sig[S_FIELDS][0], nbytes, ns)
            # the timeline lane (device, stream): Lane.add, inlined for a copy within one bin
            lane = sig[S_LANE]
            end = t_ns + duration
            width = lane.width
            first = t_ns // width
            if end < lane.limit and end // width == first:
                sig[S_BUSY][first] += duration
                lane.starts[first] += 1
            else:
                lane.add(t_ns, duration, sig[S_FIELDS][1])
            if sinks:
                if full is None:
                    full = logs.full_fields(raw)
                for sink in sinks:
                    sink.transfer(section.info.section, full)
        if on_bytes is not None:
            on_bytes(f.tell() - reported)
    if not seen_header:
        raise logs.InputError("%s: empty file, not a pinshim log" % path)
    finish_section()
    for info in processes:
        if not info.has_summary:
            warn("%s: %s has no summary record: the process did not exit normally (killed?); "
                 "using its %d transfer records" % (path, info.label(), info.records))
        elif info.dropped:
            warn("%s: %s dropped %d transfer records; per-transfer tables and charts miss them"
                 % (path, info.label(), info.dropped))
    for sink in sinks:
        sink.close(processes)
    return processes, agg
