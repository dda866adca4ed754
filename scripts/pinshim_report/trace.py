"""trace.py: a Chrome trace (the JSON Object Format that Perfetto and chrome://tracing open),
written without holding the records: each worker writes the events of its file's processes into
part files as it reads them (PartWriter), and finish() joins the parts into one file.

Contract: one "X" event per selected transfer record (and per sync record, where a log has
them), ts/dur in microseconds on a clock shared by all processes (their wall-clock start plus the
record's offset, from the earliest process start), one track per stream for async copies and per
thread for the others, args with the record's fields; "M" events name each process (program,
rank, host, pid) and track. Every process gets its own trace pid: its pid, unless an earlier
process (another host, or a reused pid) has it, then its pid plus a multiple of 2**22 (above
Linux's pid_max, so never a real pid)."""
import json
import os
import shutil

from .logs import FIELDS

F = {name: i for i, name in enumerate(FIELDS)}
PID_STEP = 1 << 22


class Quoter:
    """JSON string literals, cached: most strings in a log repeat (kinds, entry points, sites)."""

    def __init__(self, limit=50000):
        self.cache, self.limit = {}, limit

    def __call__(self, value):
        if value is None:
            return "null"
        q = self.cache.get(value)
        if q is None:
            if len(self.cache) >= self.limit:
                self.cache.clear()
            q = self.cache[value] = json.dumps(value)
        return q


def part_path(folder, file_index, section):
    return os.path.join(folder, "part-%06d-%d.trace" % (file_index, section))


class PartWriter:
    """Writes one file's events, one part file per process section (see the module's contract)."""

    def __init__(self, folder, file_index, base_wall_ns):
        self.folder, self.file_index, self.base = folder, file_index, base_wall_ns
        self.quote = Quoter()
        self.out = None
        self.section = None
        self.tracks = {}           # track key -> (tid, name)
        self.written = []

    def begin_process(self, section, header):
        self._end_section()
        self.section = section
        self.pid = header.get("pid") if isinstance(header.get("pid"), int) else 0
        start = header.get("start_wall_ns") if isinstance(header.get("start_wall_ns"), int) else 0
        self.offset = start - self.base
        self.tracks = {}
        path = part_path(self.folder, self.file_index, section)
        self.out = open(path, "w", encoding="utf-8")
        self.written.append(path)

    def _tid(self, key, name):
        track = self.tracks.get(key)
        if track is None:
            track = self.tracks[key] = (len(self.tracks) + 1, name)
        return track[0]

    def transfer(self, section, f):
        q = self.quote
        if f[F["async"]] == "true" and f[F["stream"]] is not None:
            tid = self._tid(("stream", f[F["stream"]]), "stream %s" % f[F["stream"]])
        else:
            tid = self._tid(("thread", f[F["tid"]]), "thread %s" % (f[F["tid"]] if f[F["tid"]] is not None else "?"))
        device_ns = f[F["device_ns"]]
        self.out.write(
            '{"pid":%d,"tid":%d,"ph":"X","cat":"copy","name":%s,"ts":%.3f,"dur":%.3f,"args":{"bytes":%s,'
            '"dir":%s,"host_kind":%s,"src_kind":%s,"dst_kind":%s,"action":%s,"entry":%s,"async":%s,"stream":%s,'
            '"device":%s,"seq":%s,"tid":%s,"site":%s,"func":%s%s%s%s}},\n'
            % (self.pid, tid, q("%s %s" % (f[F["dir"]], f[F["host_kind"]])),
               (self.offset + int(f[F["t_ns"]])) / 1e3, int(f[F["host_ns"]]) / 1e3, f[F["bytes"]],
               q(f[F["dir"]]), q(f[F["host_kind"]]), q(f[F["src_kind"]]), q(f[F["dst_kind"]]), q(f[F["action"]]),
               q(f[F["entry"]]), f[F["async"]], q(f[F["stream"]]), f[F["device"]] or "null", f[F["seq"]] or "null",
               f[F["tid"]] or "null", q(f[F["site"]]), q(f[F["func"]]),
               "" if f[F["py_site"]] is None else ',"py_site":' + q(f[F["py_site"]]),
               "" if f[F["py_func"]] is None else ',"py_func":' + q(f[F["py_func"]]),
               "" if device_ns is None else ',"device_ns":' + device_ns))

    def sync(self, section, record):
        tid_value = record.get("tid")
        tid = self._tid(("thread", str(tid_value)), "thread %s" % tid_value)
        args = {k: v for k, v in record.items() if k not in ("type", "t_ns", "host_ns")}
        self.out.write(json.dumps({"pid": self.pid, "tid": tid, "ph": "X", "cat": "sync",
                                   "name": str(record.get("call", "sync")),
                                   "ts": (self.offset + record["t_ns"]) / 1e3, "dur": record["host_ns"] / 1e3,
                                   "args": args}, separators=(",", ":")) + ",\n")

    def summary(self, section, record):
        pass

    def _end_section(self):
        if self.out is None:
            return
        for key, (tid, name) in sorted(self.tracks.items(), key=lambda kv: (kv[0][0] != "stream", str(kv[0][1]))):
            self.out.write(json.dumps({"pid": self.pid, "tid": tid, "ph": "M", "name": "thread_name",
                                       "args": {"name": name}}, separators=(",", ":")) + ",\n")
        for index, (key, (tid, name)) in enumerate(
                sorted(self.tracks.items(), key=lambda kv: (kv[0][0] != "stream", str(kv[0][1]))), 1):
            self.out.write(json.dumps({"pid": self.pid, "tid": tid, "ph": "M", "name": "thread_sort_index",
                                       "args": {"sort_index": index}}, separators=(",", ":")) + ",\n")
        self.out.close()
        self.out = None

    def close(self, processes):
        self._end_section()
        kept = {part_path(self.folder, self.file_index, p.section) for p in processes}
        for path in self.written:
            if path not in kept:
                os.unlink(path)

    def abort(self):
        if self.out is not None:
            self.out.close()
            self.out = None
        for path in self.written:
            if os.path.exists(path):
                os.unlink(path)


def trace_pids(processes):
    used, pids = set(), []
    for p in processes:
        pid = p.pid if isinstance(p.pid, int) else 0
        while pid in used:
            pid += PID_STEP
        used.add(pid)
        pids.append(pid)
    return pids


def finish(folder, report, base_wall_ns, path):
    """Joins the part files into the trace at path, processes in the report's order."""
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"displayTimeUnit":"ns","otherData":{"tool":"pinshim-report","clock":"wall clock, '
                  'microseconds from the earliest process start"},"traceEvents":[\n')
        last = None        # every event line ends with a comma: the last one is written again without
        for index, (p, pid) in enumerate(zip(report.processes, trace_pids(report.processes))):
            name = "%s (rank %s, %s, pid %s)" % (p.program, p.rank, p.host, p.pid)
            last = json.dumps({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}},
                              separators=(",", ":"))
            out.write(last + ",\n")
            out.write(json.dumps({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                                  "args": {"sort_index": index}}, separators=(",", ":")) + ",\n")
            part = part_path(folder, p.file_index, p.section)
            if not os.path.exists(part):
                continue
            with open(part, encoding="utf-8") as f:
                if pid == p.pid:
                    shutil.copyfileobj(f, out, 1 << 20)
                else:
                    old, new = '{"pid":%d,' % p.pid, '{"pid":%d,' % pid
                    for line in f:
                        out.write(new + line[len(old):] if line.startswith(old) else line)
        out.write((last or "") + "\n]}\n")
