"""text.py: the report's tables, built once from an analysis.Report and written as text (in the
manner of `nsys stats`: sizes in MB = 10^6 bytes, times in ns or us, numbers right-aligned) or as
CSV files (one per table, raw units: bytes and ns, no thousands separators).

Contract: tables(report) -> [Table]; render(report) -> the text report; write_csv(report, folder)
-> the paths written. The HTML page renders the same Table objects. A median read from a sketch
is an Approx, shown with a leading "~" in text and as a plain number in CSV."""
import csv
import os

MB = 1e6


class Approx(float):
    """A value read from a sketch (within 1.6 %), not exact."""


def clean(text):
    """A string from a log made safe for a terminal: control characters as \\xNN escapes."""
    return "".join(c if c.isprintable() else "\\x%02x" % ord(c) if ord(c) < 256 else "\\u%04x" % ord(c)
                   for c in str(text))


def num(value, decimals=0):
    if value is None:
        return "-"
    text = "{:,.{}f}".format(value, decimals)
    return "~" + text if isinstance(value, Approx) else text


def duration(ns):
    for unit, factor in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= factor:
            return "%.3f %s" % (ns / factor, unit)
    return "%d ns" % ns


def amount(nbytes):
    for unit, factor in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= factor:
            return "%.3f %s" % (nbytes / factor, unit)
    return "%d bytes" % nbytes


def scaled(factor, decimals):
    return lambda v: "-" if v is None else num(type(v)(v / factor) if isinstance(v, Approx) else v / factor, decimals)


def plain(v):
    return "-" if v is None else str(v)


def percent(total):
    return lambda v: "-" if v is None or not total else num(100.0 * v / total, 1)


class Column:
    """A column: its text header, its CSV header, how a raw value is shown in text, and whether
    it is left-aligned text."""

    def __init__(self, header, csv_name, fmt=plain, left=False, shown=True):
        self.header, self.csv_name, self.fmt, self.left = header, csv_name, fmt, left
        self.shown = shown         # False: in the CSV file only (text and HTML give it as a note)


class Table:
    """A titled table of raw values; all_rows (default: rows) is what its CSV file holds when the
    text shows only the top rows."""

    def __init__(self, name, title, columns, rows, notes=(), all_rows=None):
        self.name, self.title, self.columns, self.rows, self.notes = name, title, columns, rows, list(notes)
        self.all_rows = rows if all_rows is None else all_rows

    @property
    def shown_columns(self):
        return [c for c in self.columns if c.shown]

    def text_rows(self):
        """The shown columns' cells as text, control characters escaped."""
        return [[clean(c.fmt(v)) for c, v in zip(self.columns, row) if c.shown] for row in self.rows]

    def text(self):
        """Lines of the table: numbers right-aligned; the last column and left ones are text."""
        columns = self.shown_columns
        headers = [c.header for c in columns]
        rows = self.text_rows()
        widths = [len(h) for h in headers]
        for row in rows:
            widths = [max(w, len(c)) for w, c in zip(widths, row)]

        def line(cells):
            out = [c.ljust(w) if col.left else c.rjust(w) for c, w, col in zip(cells[:-1], widths[:-1], columns[:-1])]
            return " " + "  ".join(out + [cells[-1]]).rstrip()

        return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]

    def write_csv(self, path):
        """All rows and columns, raw values (an Approx as a plain number, None as an empty cell)."""
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow([c.csv_name for c in self.columns])
            for row in self.all_rows:
                w.writerow(["" if v is None else float(v) if isinstance(v, Approx) else v for v in row])


def _median(stats):
    if stats is None or stats.med is None:
        return None
    return stats.med if stats.med_exact else Approx(stats.med)


def _spread(stats, complete):
    """avg, med, min, max, stddev of a Stats, or Nones where only summary totals exist."""
    if stats is None or not complete:
        return [None] * 5
    return [stats.avg, _median(stats), stats.low, stats.high, stats.stddev]


SIZE_COLUMNS = [Column("Total (MB)", "total_bytes", scaled(MB, 3)), Column("Count", "count", num),
                Column("Avg (MB)", "avg_bytes", scaled(MB, 3)), Column("Med (MB)", "med_bytes", scaled(MB, 3)),
                Column("Min (MB)", "min_bytes", scaled(MB, 3)), Column("Max (MB)", "max_bytes", scaled(MB, 3)),
                Column("StdDev (MB)", "stddev_bytes", scaled(MB, 3)), Column("Operation", "operation", left=True)]


def size_table(report):
    rows = []
    for op in sorted(report.operations, key=lambda o: (-o.bytes, o.key)):
        spread = _spread(op.sizes, op.complete)
        if spread[0] is None and op.count:
            spread[0] = op.bytes / op.count
        rows.append([op.bytes, op.count] + spread + [op.name])
    return Table("sizes", "Copy sizes by operation (direction, host memory kind, [the shim's action] when not pass)",
                 SIZE_COLUMNS, rows)


def time_columns(total):
    return [Column("Time (%)", "time_percent", lambda v: percent(total)(v)), Column("Total Time (ns)", "total_ns", num),
            Column("Count", "count", num), Column("Avg (ns)", "avg_ns", lambda v: num(v, 1)),
            Column("Med (ns)", "med_ns", lambda v: num(v, 1)), Column("Min (ns)", "min_ns", num),
            Column("Max (ns)", "max_ns", num), Column("StdDev (ns)", "stddev_ns", lambda v: num(v, 1)),
            Column("Operation", "operation", left=True)]


def host_time_table(report):
    rows = []
    for op in report.operations:
        spread = _spread(op.times, op.complete)
        if spread[0] is None and op.count:
            spread[0] = op.host_ns / op.count
        rows.append([op.host_ns, op.host_ns, op.count] + spread + [op.name])
    return Table("host_times", "Copy time by operation (host time inside the copy call)",
                 time_columns(report.total_ns), rows)


def device_time_table(report):
    ops = [op for op in report.operations if op.device]
    total = sum(op.device.total for op in ops)
    rows = [[op.device.total, op.device.total, op.device.count] + _spread(op.device, True) + [op.name] for op in ops]
    return Table("device_times", "Copy time by operation (device time of the copies device_timing sampled)",
                 time_columns(total), rows)


def process_table(report):
    rows = []
    for p in sorted(report.processes, key=lambda p: (p.host, p.rank, p.pid)):
        rows.append([p.pid, p.rank, p.host, p.count, p.bytes, p.host_ns,
                     p.bytes / p.host_ns if p.host_ns else None, p.failed, p.status, p.program])
    columns = [Column("PID", "pid"), Column("Rank", "rank", left=True), Column("Host", "host", left=True),
               Column("Transfers", "transfers", num), Column("Total (MB)", "total_bytes", scaled(MB, 3)),
               Column("Host time (us)", "host_ns", scaled(1e3, 1)), Column("GB/s", "gbps", lambda v: num(v, 2)),
               Column("Failed", "failed_copies"), Column("Status", "status", left=True),
               Column("Program", "program", left=True)]
    return Table("processes", "Processes", columns, rows)


FRAMEWORK_TITLES = {"cuda": "CUDA C", "pytorch": "PyTorch", "cupy": "CuPy", "jax": "JAX"}


def site_table(report):
    shown = report.sites[:report.top]
    total = report.total_ns
    rows = []
    for s in report.sites:
        kinds = ", ".join("%s %d" % kv for kv in sorted(s.kinds.items(), key=lambda kv: (-kv[1], kv[0])))
        frame = s.frame
        rows.append([s.host_ns, s.host_ns, s.count, s.bytes, s.processes, kinds or "-",
                     FRAMEWORK_TITLES.get(s.framework, s.framework), s.label, s.site,
                     frame.function if frame else None, frame.file_line if frame else None])
    columns = [Column("Time (%)", "time_percent", percent(total)), Column("Total Time (us)", "host_ns", scaled(1e3, 1)),
               Column("Count", "count", num), Column("Total (MB)", "total_bytes", scaled(MB, 3)),
               Column("Procs", "processes"), Column("Host kinds", "host_kinds", left=True),
               Column("Framework", "framework", shown=False), Column("Site  Function", "label", left=True),
               Column("Native site", "site", left=True, shown=False), Column("Function", "function", shown=False),
               Column("File:line", "file_line", shown=False)]
    return Table("sites", "Top call sites by host time in copies (%d of %d)" % (len(shown), len(report.sites)),
                 columns, rows[:len(shown)], report.symbol_notes, all_rows=rows)


def device_table(report):
    """Copies by host, device ordinal and direction: a process driving several GPUs shows each."""
    all_rows = [[r.host, r.device, r.direction, r.count, r.bytes, r.host_ns, r.processes] for r in report.devices]
    limit = max(report.top, 64)
    columns = [Column("Host", "host", left=True), Column("Device", "device", lambda v: "?" if v is None else v),
               Column("Dir", "dir", left=True), Column("Count", "count", num),
               Column("Total (MB)", "total_bytes", scaled(MB, 3)), Column("Host time (ms)", "host_ns", scaled(1e6, 3)),
               Column("Procs", "processes")]
    notes = ["Device: the ordinal of the copy's context on its host ('?': unknown)."]
    if len(all_rows) > limit:
        notes.append("%d more rows in the CSV file (--csv)" % (len(all_rows) - limit))
    return Table("devices", "Copies by device (host, device ordinal, direction)", columns, all_rows[:limit], notes,
                 all_rows)


def advice_table(report):
    all_rows = [[a["processes"], a["est_saving_ns"], a["rule"], a["message"]] for a in report.advice]
    rows = all_rows[:max(report.top, 10)]
    columns = [Column("Procs", "processes"), Column("Est. saving (us)", "est_saving_ns", scaled(1e3, 1)),
               Column("Rule", "rule", left=True), Column("Message", "message", left=True)]
    notes = []
    if len(all_rows) > len(rows):
        notes.append("%d more advice rows (--top N shows more; --csv writes them all)" % (len(all_rows) - len(rows)))
    return Table("advice", "Advice (from the processes' summaries, deduplicated)", columns, rows, notes, all_rows)


def class_name(key):
    direction, kind, action, _ = key
    return "%s %s" % (direction, kind) + ("" if action == "pass" else " [%s]" % action)


def where_table(report):
    rows = []
    for c in report.classes:
        gbps, source = c.gbps()
        rows.append([c.host_ns, c.host_ns, c.count, c.bytes, gbps, source or "-", c.mode, class_name(c.key)])
    columns = [Column("Time (%)", "time_percent", percent(report.total_ns)),
               Column("Host time (ms)", "host_ns", scaled(1e6, 3)), Column("Count", "count", num),
               Column("Total (MB)", "total_bytes", scaled(MB, 3)), Column("GB/s", "gbps", lambda v: num(v, 2)),
               Column("From", "gbps_from", left=True), Column("Mode", "mode", left=True),
               Column("Operation", "operation", left=True)]
    notes = ["GB/s from device time where device_timing sampled copies, else from host time for sync copies;",
             "'-' for async copies without device timing: their host time is the time to enqueue them."]
    return Table("where", "Where the copy time went (host time inside the copy calls, by operation and mode)",
                 columns, rows, notes)


def savings_table(report):
    rows = [[i, s.what, s.direction, s.count, s.bytes, s.with_ns, s.baseline_ns, s.saved_ns, s.how]
            for i, s in enumerate(report.savings, 1)]
    columns = [Column("#", "row"), Column("Measure", "measure", left=True), Column("Dir", "dir", left=True),
               Column("Count", "count", num), Column("Total (MB)", "total_bytes", scaled(MB, 3)),
               Column("With (ms)", "with_ns", scaled(1e6, 3)), Column("Without (ms)", "without_ns", scaled(1e6, 3)),
               Column("Saved (ms)", "saved_ns", scaled(1e6, 3)), Column("How", "how", left=True, shown=False)]
    notes = ["(%d) %s" % (i, s.how) for i, s in enumerate(report.savings, 1)]
    return Table("savings", "What staging and pin-on-reuse saved, and what pinning the rest would save (estimates)",
                 columns, rows, notes)


def ceiling_table(report):
    rows = [[c.direction, c.gbps, c.source, c.how] for c in report.ceilings.values()]
    columns = [Column("Dir", "dir", left=True), Column("GB/s", "gbps", lambda v: num(v, 2)),
               Column("Source", "source", left=True), Column("How", "how", left=True, shown=False)]
    notes = ["%s: %s" % (c.direction, c.how) for c in report.ceilings.values()]
    return Table("ceilings", "Pinned bandwidth ceiling per direction (the line on the bandwidth charts)",
                 columns, rows, notes)


def fix_table(report):
    all_rows = [[s.host_ns, s.host_ns, s.est_saving_ns, s.label, FRAMEWORK_TITLES.get(s.framework, s.framework), s.fix]
                for s in report.sites]
    columns = [Column("Time (%)", "time_percent", percent(report.total_ns)),
               Column("Host time (ms)", "host_ns", scaled(1e6, 3)),
               Column("Est. saving (ms)", "est_saving_ns", scaled(1e6, 3)), Column("Site", "site", left=True),
               Column("Framework", "framework", shown=False), Column("Fix", "fix", left=True)]
    return Table("fixes", "Top call sites and the fix each needs", columns, all_rows[:report.top],
                 report.symbol_notes, all_rows=all_rows)


def sync_table(report):
    rows = [[count, ns, procs, call] for call, count, ns, procs in report.syncs]
    columns = [Column("Calls", "count", num), Column("Time (ms)", "host_ns", scaled(1e6, 3)),
               Column("Procs", "processes"), Column("Call", "call", left=True)]
    return Table("syncs", "Sync points (from the summaries: count and time inside the calls)", columns, rows)


def tables(report):
    """Every table, in the text report's order."""
    out = [where_table(report)]
    if report.devices:
        out.append(device_table(report))
    out += [savings_table(report), ceiling_table(report)]
    if report.sites:
        out.append(fix_table(report))
    if report.syncs:
        out.append(sync_table(report))
    out += [size_table(report), host_time_table(report)]
    if report.device_timed:
        out.append(device_time_table(report))
    out.append(process_table(report))
    if report.sites:
        out.append(site_table(report))
    if report.advice:
        out.append(advice_table(report))
    return out


def summarize_ranks(ranks):
    """'0, 1, 2' for a few ranks; numeric runs as ranges ('0-63, 70') when there are many."""
    if len(ranks) <= 8:
        return ", ".join(ranks)
    out, run = [], []
    for r in ranks:
        if r.isdigit() and run and run[-1].isdigit() and int(r) == int(run[-1]) + 1:
            run.append(r)
            continue
        if run:
            out.append(run[0] if len(run) == 1 else "%s-%s" % (run[0], run[-1]))
        run = [r]
    if run:
        out.append(run[0] if len(run) == 1 else "%s-%s" % (run[0], run[-1]))
    return ", ".join(out)


def summarize_hosts(hosts):
    return ", ".join(hosts) if len(hosts) <= 8 else "%s, ... %s (%d hosts)" % (", ".join(hosts[:3]), hosts[-1],
                                                                              len(hosts))


def heading(report):
    processes = report.processes
    hosts = sorted({p.host for p in processes})
    ranks = sorted({p.rank for p in processes}, key=lambda r: (not r.isdigit(), int(r) if r.isdigit() else 0, r))
    files = report.files
    return ("pinshim-report: %d process%s from %d log file%s (hosts: %s; ranks: %s)"
            % (len(processes), "" if len(processes) == 1 else "es", len(files), "" if len(files) == 1 else "s",
               summarize_hosts(hosts), summarize_ranks(ranks)))


def overview(report):
    """The lines under the heading: what was selected, totals, what the numbers rest on."""
    out = []
    if report.selection.describe():
        out.append("selection: %s" % report.selection.describe())
    sync_ns = sum(s[2] for s in report.syncs)
    out.append("%s copies, %s, %s inside the copy calls; %s inside sync calls (%s)"
               % ("{:,}".format(report.total_count), amount(report.total_bytes), duration(report.total_ns),
                  duration(sync_ns), "from the summaries" if report.syncs else "no sync call in the summaries"))
    if report.summary_only:
        out.append("%d process(es) logged only their summary: they count in totals, not in distributions, "
                   "the bandwidth chart or the timeline" % len(report.summary_only))
    return out


def median_note(tables_list):
    approx = any(isinstance(v, Approx) for t in tables_list for row in t.rows for v in row)
    if approx:
        return ["  Medians marked ~ are read from a bounded sketch (within 1.6 %); all other figures are exact."]
    return []


def render(report):
    out = [heading(report), ""] + overview(report) + [""]
    all_tables = tables(report)
    if not report.operations:
        out += ["No host<->device copies in these logs.", ""]
    for table in all_tables:
        if not report.operations and table.name in ("where", "savings", "ceilings", "sizes", "host_times"):
            continue
        out += ["** %s:" % table.title, ""] + table.text() + [""]
        out += ["  " + n for n in table.notes] + ([""] if table.notes else [])
        if table.name == "host_times" and not report.complete:
            out += ["  '-': some processes logged only their summary (log_level=summary); the",
                    "  distribution columns need per-transfer records.", ""]
    out += median_note(all_tables)
    return "\n".join(out).rstrip("\n") + "\n"


def write_csv(report, folder):
    os.makedirs(folder, exist_ok=True)
    paths = []
    for table in tables(report):
        path = os.path.join(folder, table.name + ".csv")
        table.write_csv(path)
        paths.append(path)
    return paths

