"""scan.py: one pass over a log file into an Aggregate (aggregate.py) and its processes.

Contract:
- scan_file(path, options, sinks, warn, on_bytes) -> (processes, Aggregate): one ProcessInfo per
  process section of the file that the selection keeps, and the file's Aggregate (exact counts,
  sums, minima and maxima; memory bounded as aggregate.py says). on_bytes(n): n more bytes read.
- sinks: the SQLite and trace part writers, fed in the file's order as it is read:
  begin_process(section, header), transfer(section, fields), sync(section, record),
  summary(section, record), then close(processes) with the sections kept (a section with no
  selected record is not kept).
Raises logs.InputError for a file that is not a usable log.

How it is fast (one core): logs.row_chunks cuts a chunk of lines into rows in one call; a
transfer row goes, by its KEY text and one dictionary look-up, straight onto the row list of its
group of copies (a signature, below); at the end of the chunk each group's rows are added at once
with the built-ins (sums, minima, maxima, counting), which run in C. Only the first row of a new
KEY, a device-timed copy, any other line and every row when a time window or an export is asked
for take Scan.row. Exact sums do not depend on the order copies are added in; what keeps an order
(the bandwidth chart's points, tables in first-seen order) is added in the file's order, so the
result is the one of adding the records one by one, as Section.add_one does for device-timed
copies and for the lines json.loads reads (with logs.JSON_ONLY_ENV set, every line: the tests
compare the two)."""
import math
from collections import _count_elements as count_into     # Counter's counting loop: C in CPython
from itertools import repeat
from operator import add, and_, floordiv, itemgetter, lshift, mul, rshift, sub

from . import logs
from .aggregate import (BYTES_SQ, CEILING_MIN_BYTES, COUNT, D_BYTES, D_COUNT, D_MAX, D_MIN, D_NS, D_NS_SQ, D_TIMES,
                        DEV, MAX_B, MAX_NS, MAX_SITES, MIN_B, MIN_NS, NBYTES, NS, NS_SQ, OTHER_SITES, PINNED_KINDS,
                        SIZES, TIMES, Aggregate, BW_BINS_PER_OCTAVE, ProcessInfo, add_counts, new_entry, size_bin)
from .logs import BYTES, HOST_NS, KEY, LINE, OTHER, T_NS, is_int
from .sketch import Dist, Lane

MAX_LANES = 16               # timeline lanes (device, stream) per process; more streams share one lane
MAX_SIGNATURES = 20000       # groups of copies a section holds before adding them to the aggregate
MAX_KEYS = 50000             # KEY texts remembered (a cache: forgetting one costs a slower row)
OTHER_STREAMS = "other streams"
NOT_THE_LAYOUT = "not the shim's layout"      # in Scan.keys: a KEY key_parts refused

# A signature entry: the copies of one (dir, size bucket, the record's what and where text: see
# logs.lean_of) in one process section: count, bytes, ns, device-timed count and ns, the bucket
# entry and the lane (and its busy array for this kind) its copies also go to, its bandwidth
# histogram {(size bin, bandwidth bin): copies} (None for async copies: their host time is no
# bandwidth), whether its copies measure the pinned ceiling by host time (sync, pinned or
# registered, at least 1 MiB), whether the selection leaves it out (device), its decoded fields
# (dir, kind, action, async, bucket, site, func, py_site, device, stream), all found once, when
# the signature is first seen; the rows (logs.row_chunks's layout) of its copies not yet added, and
# the (start, duration) in its timeline lane of its device-timed copies not yet added to the lane.
(S_COUNT, S_BYTES, S_NS, S_DEV_COUNT, S_DEV_NS, S_ENTRY, S_LANE, S_BUSY, S_BW, S_CEILING, S_SKIP,
 S_FIELDS, S_ROWS, S_TIMED) = range(14)
_T_NS, _HOST_NS, _BYTES = itemgetter(T_NS), itemgetter(HOST_NS), itemgetter(BYTES)


def bucket_of_size(nbytes):
    """The size bucket of a signature (aggregate.bucket_min, from the bit length)."""
    bits = nbytes.bit_length()
    return 0 if bits < 13 else 1 << ((bits - 1) & ~1)


class Section:
    """The process section being read: its ProcessInfo and its signatures, and two caches of the
    signatures by KEY text that the reading loop looks in: keys (KEY -> signature) and rows
    (KEY -> the signature's row list, for the rows that may skip Scan.row). Both are emptied
    whenever the signatures are."""

    def __init__(self, info, options, keys, rows):
        self.info = info
        self.signatures = {}
        self.keys, self.rows = keys, rows
        self.sites_seen = set()
        self.lane_bins = options.lane_bins
        self.devices = options.selection.devices

    def signature(self, key, agg):
        """The signature of (dir, bucket, what, where): the one already there or a new one."""
        sig = self.signatures.get(key)
        if sig is not None:
            return sig
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
                                      skip, fields, [], []]
        return sig

    def add_one(self, sig, agg, t_ns, ns, nbytes, dev_ns, lane_later=False):
        """One copy, at once (a device-timed copy, or any copy of a json.loads line; add_rows
        gives what this gives for each of its rows): its host time in the signature and the bucket
        entry; its device time (dev_ns, None if not sampled) in the entry, and with the bandwidth
        chart's points and the ceiling's distribution in the file's order; else, for a sync copy,
        its host-time bandwidth; and its place in the timeline lane (from its device time when it
        is async: its host time is the time to enqueue it), now or with add_rows (lane_later)."""
        sig[S_COUNT] += 1
        sig[S_BYTES] += nbytes
        sig[S_NS] += ns
        e = sig[S_ENTRY]
        e[BYTES_SQ] += nbytes * nbytes
        e[NS_SQ] += ns * ns
        e[MIN_B] = min(e[MIN_B], nbytes)
        e[MAX_B] = max(e[MAX_B], nbytes)
        e[MIN_NS] = min(e[MIN_NS], ns)
        e[MAX_NS] = max(e[MAX_NS], ns)
        e[SIZES].add(nbytes)
        e[TIMES].add(ns)
        direction, kind, action = sig[S_FIELDS][:3]
        hist = sig[S_BW]
        duration = ns
        if dev_ns is not None:
            d = e[DEV]
            if d is None:
                d = e[DEV] = [0, 0, 0, 0, dev_ns, dev_ns, Dist()]
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
                bkey = (direction, kind, "device", size_bin(nbytes),
                        math.floor(math.log2(nbytes / dev_ns) * BW_BINS_PER_OCTAVE))
                agg.bw[bkey] = agg.bw.get(bkey, 0) + 1
                if nbytes >= CEILING_MIN_BYTES and (kind in PINNED_KINDS or action == "registered"):
                    c = agg.ceiling_device.get(direction)
                    if c is None:
                        c = agg.ceiling_device[direction] = Dist()
                    c.add(nbytes * 1000 // dev_ns)
            if hist is None:
                duration = dev_ns
        elif hist is not None and ns and nbytes:
            if sig[S_ROWS]:
                self.add_rows(sig, agg)        # the rows before it first: the histogram keeps their order
            bits, ns_bits = nbytes.bit_length(), ns.bit_length()
            bkey = (bits * 4 + ((nbytes << 2 >> bits) & 3),
                    ((bits - ns_bits) * 32 + ((nbytes << 6 >> bits) & 31) - ((ns << 6 >> ns_bits) & 31)) >> 2)
            hist[bkey] = hist.get(bkey, 0) + 1
            if sig[S_CEILING]:
                self._ceiling(agg, sig).add(nbytes * 1000 // ns)
        if lane_later:
            sig[S_TIMED].append((t_ns, duration))
        else:
            sig[S_LANE].add(t_ns, duration, kind)

    def add_rows(self, sig, agg):
        """The copies on a signature's row list (none device-timed) and the lane places of its
        device-timed ones, all at once: what adding them one by one, in their order, gives."""
        rows = sig[S_ROWS]
        if sig[S_SKIP]:
            rows.clear()                       # a device the selection leaves out
            return
        n = len(rows)
        if not n:
            starts = times = []
        else:
            texts = list(map(_BYTES, rows))
            nbytes = int(texts[0])
            sizes = None if texts.count(texts[0]) == n else list(map(int, texts))     # None: all nbytes
            times = list(map(int, map(_HOST_NS, rows)))
            starts = list(map(int, map(_T_NS, rows)))
            rows.clear()
            e = sig[S_ENTRY]
            if sizes is None:
                total = nbytes * n
                e[BYTES_SQ] += nbytes * nbytes * n
                low = high = nbytes
                e[SIZES].add_count(nbytes, n)
            else:
                total = sum(sizes)
                e[BYTES_SQ] += sum(map(mul, sizes, sizes))
                low, high = min(sizes), max(sizes)
                e[SIZES].add_many(sizes)
            sig[S_COUNT] += n
            sig[S_BYTES] += total
            sig[S_NS] += sum(times)
            e[NS_SQ] += sum(map(mul, times, times))
            e[MIN_B] = min(e[MIN_B], low)
            e[MAX_B] = max(e[MAX_B], high)
            e[MIN_NS] = min(e[MIN_NS], min(times))
            e[MAX_NS] = max(e[MAX_NS], max(times))
            e[TIMES].add_many(times)
            if sig[S_BW] is not None:
                self._host_bandwidth(sig, agg, nbytes, sizes, times)
        timed = sig[S_TIMED]
        if timed:
            starts = starts + [t for t, _ in timed]
            times = times + [d for _, d in timed]
            timed.clear()
        self._lane(sig, starts, times)

    @staticmethod
    def _lane(sig, starts, durations):
        """Copies in the signature's timeline lane: Lane.add for each, the bins found for all at once."""
        lane = sig[S_LANE]
        ends = list(map(add, starts, durations))
        lane.grow(max(ends))
        width = lane.width
        firsts = list(map(floordiv, starts, repeat(width)))
        lasts = list(map(floordiv, ends, repeat(width)))
        busy = sig[S_BUSY]
        if firsts == lasts:                    # every copy within one bin
            for b, ns in zip(firsts, durations):
                busy[b] += ns
        else:
            for b, last, start, ns in zip(firsts, lasts, starts, durations):
                if b == last:
                    busy[b] += ns
                else:                          # Lane.spread
                    busy[b] += (b + 1) * width - start
                    for i in range(b + 1, last):
                        busy[i] += width
                    busy[last] += start + ns - last * width
        counts = {}
        count_into(counts, firsts)
        lane_starts = lane.starts
        for b, k in counts.items():
            lane_starts[b] += k

    def _host_bandwidth(self, sig, agg, nbytes, sizes, times):
        """Sync copies' bandwidth from host time, into the signature's histogram in the copies'
        order: 1/8 octave of bytes/ns from the two numbers' leading bits (a piecewise-linear log2,
        within 6 %); for large pinned copies, their MB/s in the host-time ceiling too. Copies of
        0 bytes or 0 ns have no bandwidth."""
        hist = sig[S_BW]
        if sizes is None:
            if not nbytes:
                return
            timed = times if min(times) else [ns for ns in times if ns]
            if not timed:
                return
            bits = nbytes.bit_length()
            size = bits * 4 + ((nbytes << 2 >> bits) & 3)
            base = bits * 32 + ((nbytes << 6 >> bits) & 31)
            ns_bits = list(map(int.bit_length, timed))
            lead = map(and_, map(rshift, map(lshift, timed, repeat(6)), ns_bits), repeat(31))
            bws = map(rshift, map(sub, map(sub, repeat(base), map(mul, ns_bits, repeat(32))), lead), repeat(2))
            count_into(hist, zip(repeat(size), bws))
            if sig[S_CEILING]:
                self._ceiling(agg, sig).add_many(list(map(floordiv, repeat(nbytes * 1000), timed)))
            return
        rates = []
        for nbytes, ns in zip(sizes, times):
            if ns and nbytes:
                bits, ns_bits = nbytes.bit_length(), ns.bit_length()
                bkey = (bits * 4 + ((nbytes << 2 >> bits) & 3),
                        ((bits - ns_bits) * 32 + ((nbytes << 6 >> bits) & 31) - ((ns << 6 >> ns_bits) & 31)) >> 2)
                hist[bkey] = hist.get(bkey, 0) + 1
                rates.append(nbytes * 1000 // ns)
        if rates and sig[S_CEILING]:
            self._ceiling(agg, sig).add_many(rates)

    @staticmethod
    def _ceiling(agg, sig):
        direction = sig[S_FIELDS][0]
        c = agg.ceiling_host.get(direction)
        if c is None:
            c = agg.ceiling_host[direction] = Dist()
        return c

    def add_all_rows(self, agg):
        for sig in self.signatures.values():
            if sig[S_ROWS] or sig[S_TIMED]:
                self.add_rows(sig, agg)

    def flush(self, agg):
        """Adds the signatures so far to the file's aggregate and the process's totals, and forgets
        them (the dictionaries are emptied in place: the reading loop holds them)."""
        self.add_all_rows(agg)
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
            agg.add_device_row(info, device, direction, sig[:3])
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
        self.keys.clear()
        self.rows.clear()

    def finish(self, agg):
        """The end of the section: its signatures, the process's end, its call sites counted once."""
        self.flush(agg)
        info = self.info
        info.records = info.count
        info.end_ns = max([lane.end() for lane in info.lanes.values()] or [0])
        for key in self.sites_seen:
            agg.site_processes[key] = agg.site_processes.get(key, 0) + 1
        for device in info.devices:
            key = (info.host, device)
            agg.device_procs[key] = agg.device_procs.get(key, 0) + 1


class Scan:
    """The reading of one file: the section being read and the rows that scan_file's loop hands
    over one at a time (row)."""

    def __init__(self, path, options, sinks, warn):
        self.path, self.options, self.sinks, self.warn = path, options, sinks, warn
        selection = options.selection
        self.selection = selection
        self.per_record = selection.per_record
        self.window = selection.since_ns is not None or selection.until_ns is not None
        self.fast = not sinks and not self.window       # rows may go straight onto their signature
        self.agg = Aggregate()
        self.processes = []
        self.keys, self.rows = {}, {}                   # the section's caches (see Section)
        self.section = None         # the section being read; None while a section is not selected
        self.since = self.until = None
        self.sections = 0           # selected process sections so far (the sinks' numbering)
        self.seen_header = False
        self.chunk = self.chunk_text = self.lines = None    # the chunk being read: its rows, bytes, lines,
        self.number = 1             # its first line's number, the next row to look for a line
        self.next_index = 0         # number from, whether its last line has no newline
        self.unterminated = False

    def begin_chunk(self, rows, chunk, unterminated):
        self.chunk, self.chunk_text, self.unterminated = rows, chunk, unterminated
        self.next_index, self.lines = 0, None

    def end_chunk(self):
        if self.section is not None:
            self.section.add_all_rows(self.agg)
        self.number += len(self.chunk)

    def row(self, row):
        """A row the loop does not file itself (see the module's contract)."""
        if not row[T_NS]:
            self._json_line(row)               # not a transfer in the shim's layout
            return
        section = self.section
        key, dev_ns = logs.split_key(row[KEY])
        if section is None:
            if not self.seen_header or logs.key_parts(key) is None:
                self._json_line(row)           # not the shim's layout after all, or before the header
            return
        sig = self.keys.get(key)
        if sig is None:
            parts = logs.key_parts(key)
            if len(self.keys) >= MAX_KEYS:
                self.keys.clear()
                self.rows.clear()
            if parts is None:
                self.keys[key] = sig = NOT_THE_LAYOUT
            elif self.window and self._outside(int(row[T_NS])):
                return
            else:
                direction, nbytes, what, where = parts
                sig = section.signature((direction, bucket_of_size(int(nbytes)), what, where), self.agg)
                self.keys[key] = sig           # (after signature(), which may empty the caches)
                if self.fast:
                    self.rows[key] = sig[S_ROWS]
        if sig is NOT_THE_LAYOUT:
            self._json_line(row)
            return
        if self.window and self._outside(int(row[T_NS])):
            return
        if sig[S_SKIP]:
            return                             # a device the selection leaves out
        if dev_ns is not None:
            section.add_one(sig, self.agg, int(row[T_NS]), int(row[HOST_NS]), int(row[BYTES]), int(dev_ns),
                            lane_later=True)
        else:
            sig[S_ROWS].append(row)
        if self.sinks:
            full = logs.full_fields(row[LINE])
            for sink in self.sinks:
                sink.transfer(section.info.section, full)

    def _outside(self, t_ns):
        return (self.since is not None and t_ns < self.since) or (self.until is not None and t_ns >= self.until)

    def _index(self, row):
        """The row's place in its chunk (the rows are looked for in their order)."""
        rows = self.chunk
        i = rows.index(row, self.next_index)
        while rows[i] is not row:              # an equal row before it
            i = rows.index(row, i + 1)
        self.next_index = i + 1
        return i

    def _json_line(self, row):
        """A line that is not a transfer in the shim's layout: through json.loads (logs.other_record)."""
        index = self._index(row)
        number = self.number + index
        if not row[T_NS]:
            line = row[OTHER]
        elif row[LINE]:
            line = row[LINE]
        else:
            if self.lines is None:
                self.lines = self.chunk_text.split(b"\n")
            line = self.lines[index]
        raw = line if self.unterminated else line + b"\n"
        # Invalid UTF-8 (a command line's bytes) becomes U+FFFD rather than costing the line.
        text = raw.decode("utf-8", errors="replace")
        got = logs.other_record(self.path, number, raw, text, self.seen_header, self.warn)
        if got is None:
            return
        kind, t = got
        self.seen_header = self.seen_header or kind == "header"
        if kind != "transfer":
            self._record(number, kind, t)
            return
        section = self.section
        if section is None:
            return
        t_ns, host_ns, direction, nbytes, what, where, dev_ns = logs.lean_of(t)
        if self.window and self._outside(int(t_ns)):
            return
        sig = section.signature((direction, bucket_of_size(int(nbytes)), what, where), self.agg)
        if sig[S_SKIP]:
            return
        section.add_one(sig, self.agg, int(t_ns), int(host_ns), int(nbytes), None if dev_ns is None else int(dev_ns))
        for sink in self.sinks:
            sink.transfer(section.info.section, t)

    def finish_section(self):
        section = self.section
        if section is None:
            return
        section.finish(self.agg)
        if section.info.records == 0 and self.per_record:
            return              # nothing of this process is in the window or on the devices chosen
        self.processes.append(section.info)

    def _record(self, number, kind, t):
        """A header, summary, sync or other record."""
        selection, options = self.selection, self.options
        if kind == "header":
            self.finish_section()
            self.section = None
            if selection.keeps_process(t):
                info = ProcessInfo(self.path, number, t)
                info.section = self.sections
                self.sections += 1
                self.section = Section(info, options, self.keys, self.rows)
                offset = info.start_wall_ns - options.base_wall_ns   # the window is from the earliest start
                self.since = None if selection.since_ns is None else selection.since_ns - offset
                self.until = None if selection.until_ns is None else selection.until_ns - offset
                for sink in self.sinks:
                    sink.begin_process(info.section, t)
            return
        if kind == "module":
            self.agg.add_module(t)     # whatever the selection: a module names sites of any process
            return
        section = self.section
        if section is None:
            return
        if kind == "summary":
            info = section.info
            info.has_summary = True
            if is_int(t.get("failed_copies")):
                info.failed = t["failed_copies"]
            if is_int(t.get("dropped")):
                info.dropped = t["dropped"]
            if isinstance(t.get("program"), str):
                info.program = t["program"]
            summary_only = not section.signatures and not self.per_record
            if summary_only:
                info.source = "summary"
            self.agg.add_summary(info, t, summary_only)
            for sink in self.sinks:
                sink.summary(info.section, t)
        elif kind == "sync":
            t_ns, ns = t.get("t_ns"), t.get("host_ns")
            if not (is_int(t_ns) and is_int(ns) and t_ns >= 0 and ns >= 0):
                return
            if self._outside(t_ns):
                return
            lanes = section.info.lanes
            lane = lanes.get((None, "sync calls"))
            if lane is None:
                lane = lanes[(None, "sync calls")] = Lane(options.lane_bins)
            lane.add(t_ns, ns, "sync")
            section.info.sync_records += 1
            for sink in self.sinks:
                sink.sync(section.info.section, t)


def scan_file(path, options, sinks=(), warn=None, on_bytes=None):
    """Reads one log file (see the module's contract). The loop below runs once per line: one
    dictionary look-up files a transfer row onto its signature's row list; Scan.row takes the rest."""
    scan = Scan(path, options, sinks, warn)
    with logs.open_log(path) as f:
        for rows, chunk, unterminated, nbytes in logs.row_chunks(f, with_line=bool(sinks)):
            scan.begin_chunk(rows, chunk, unterminated)
            row_list_of = scan.rows.get
            slow = scan.row
            for row in rows:
                pending = row_list_of(row[KEY])
                if pending is None:
                    slow(row)
                else:
                    pending.append(row)
            scan.end_chunk()
            if on_bytes is not None:
                on_bytes(nbytes)
    if not scan.seen_header:
        raise logs.InputError("%s: empty file, not a pinshim log" % path)
    scan.finish_section()
    for info in scan.processes:
        if not info.has_summary:
            warn("%s: %s has no summary record: the process did not exit normally (killed?); "
                 "using its %d transfer records" % (path, info.label(), info.records))
        elif info.dropped:
            warn("%s: %s dropped %d transfer records; per-transfer tables and charts miss them"
                 % (path, info.label(), info.dropped))
    for sink in sinks:
        sink.close(scan.processes)
    return scan.processes, scan.agg
