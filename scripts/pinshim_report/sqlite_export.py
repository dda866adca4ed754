"""sqlite_export.py: the selected records as an SQLite database (Python's sqlite3), for SQL over
any number of processes, as `nsys export --type sqlite` serves Nsight users.

Contract: each worker writes its file's rows into a part database as it reads them (PartWriter);
finish() creates the database at its path (replacing a file there) and copies every part into it
with INSERT ... SELECT, processes numbered 1.. in the report's order (rank order). Tables:
  meta(key, value)                         tool, version, log format, selection, files
  processes(process_id, host, rank, pid, ppid, program, cmdline, start_wall_ns, version, status,
            transfers, bytes, host_ns, failed_copies, dropped, log_file, log_line)
  transfers(process_id, seq, t_ns, wall_ns, host_ns, device_ns, entry, dir, bytes, src_kind,
            dst_kind, host_kind, async, stream, device, action, tid, site, func, py_site, py_func)
  summary_transfers(process_id, dir, host_kind, bucket_min, action, count, bytes, host_ns, device)
  summary_sites(process_id, site, func, py_site, py_func, count, bytes, host_ns, kinds)
  summary_syncs(process_id, call, count, host_ns)
  advice(process_id, rule, message, est_saving_ns)
  sync_records(process_id, t_ns, wall_ns, host_ns, call, stream, tid)   (logs with sync records)
and the view operations(dir, host_kind, action, copies, bytes, host_ns, gbps). Times in ns;
t_ns from the process start, wall_ns = the process's start_wall_ns + t_ns (one clock for all)."""
import json
import os
import sqlite3

from . import VERSION
from .logs import FIELDS, FORMAT, is_int

F = {name: i for i, name in enumerate(FIELDS)}
BATCH = 20000

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE processes(process_id INTEGER PRIMARY KEY, host TEXT, rank TEXT, pid INTEGER, ppid INTEGER,
    program TEXT, cmdline TEXT, start_wall_ns INTEGER, version TEXT, status TEXT, transfers INTEGER,
    bytes INTEGER, host_ns INTEGER, failed_copies INTEGER, dropped INTEGER, log_file TEXT, log_line INTEGER);
CREATE TABLE transfers(process_id INTEGER, seq INTEGER, t_ns INTEGER, wall_ns INTEGER, host_ns INTEGER,
    device_ns INTEGER, entry TEXT, dir TEXT, bytes INTEGER, src_kind TEXT, dst_kind TEXT, host_kind TEXT,
    async INTEGER, stream TEXT, device INTEGER, action TEXT, tid INTEGER, site TEXT, func TEXT, py_site TEXT,
    py_func TEXT);
CREATE TABLE summary_transfers(process_id INTEGER, dir TEXT, host_kind TEXT, bucket_min INTEGER, action TEXT,
    count INTEGER, bytes INTEGER, host_ns INTEGER, device INTEGER);
CREATE TABLE summary_sites(process_id INTEGER, site TEXT, func TEXT, py_site TEXT, py_func TEXT, count INTEGER, bytes INTEGER,
    host_ns INTEGER, kinds TEXT);
CREATE TABLE summary_syncs(process_id INTEGER, call TEXT, count INTEGER, host_ns INTEGER);
CREATE TABLE advice(process_id INTEGER, rule TEXT, message TEXT, est_saving_ns INTEGER);
CREATE TABLE sync_records(process_id INTEGER, t_ns INTEGER, wall_ns INTEGER, host_ns INTEGER, call TEXT,
    stream TEXT, tid INTEGER);
"""
VIEWS = """
CREATE VIEW operations AS SELECT dir, host_kind, action, count(*) AS copies, sum(bytes) AS bytes,
    sum(host_ns) AS host_ns, sum(bytes) * 1.0 / nullif(sum(host_ns), 0) AS gbps
    FROM transfers GROUP BY dir, host_kind, action;
"""
# In a part, process_id is the file's section number; finish() maps it.
TABLES = ("transfers", "summary_transfers", "summary_sites", "summary_syncs", "advice", "sync_records")


def _int(text):
    return None if text is None else int(text)


def part_path(folder, file_index):
    return os.path.join(folder, "part-%06d.sqlite" % file_index)


class PartWriter:
    """One file's rows in a part database (see the module's contract)."""

    def __init__(self, folder, file_index):
        self.path = part_path(folder, file_index)
        self.db = sqlite3.connect(self.path)
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
        self.rows = []
        self.summaries = {}
        self.start = 0

    def begin_process(self, section, header):
        self.start = header.get("start_wall_ns") if is_int(header.get("start_wall_ns")) else 0

    def transfer(self, section, f):
        t_ns = int(f[F["t_ns"]])
        self.rows.append((section, _int(f[F["seq"]]), t_ns, self.start + t_ns, int(f[F["host_ns"]]),
                          _int(f[F["device_ns"]]), f[F["entry"]], f[F["dir"]], int(f[F["bytes"]]),
                          f[F["src_kind"]], f[F["dst_kind"]], f[F["host_kind"]], 1 if f[F["async"]] == "true" else 0,
                          f[F["stream"]], _int(f[F["device"]]), f[F["action"]], _int(f[F["tid"]]), f[F["site"]],
                          f[F["func"]], f[F["py_site"]], f[F["py_func"]]))
        if len(self.rows) >= BATCH:
            self._flush()

    def _flush(self):
        self.db.executemany("INSERT INTO transfers VALUES (%s)" % ",".join("?" * 21), self.rows)
        self.rows = []

    def sync(self, section, r):
        self.db.execute("INSERT INTO sync_records VALUES (?,?,?,?,?,?,?)",
                        (section, r["t_ns"], self.start + r["t_ns"], r["host_ns"], str(r.get("call", "?")),
                         None if r.get("stream") is None else str(r.get("stream")),
                         r.get("tid") if is_int(r.get("tid")) else None))

    def summary(self, section, record):
        self.summaries[section] = record

    def close(self, processes):
        self._flush()
        db = self.db
        for p in processes:
            db.execute("INSERT INTO processes VALUES (%s)" % ",".join("?" * 17),
                       (p.section, p.host, p.rank, p.pid, p.ppid, p.program, json.dumps(p.cmdline), p.start_wall_ns,
                        p.version, p.status, p.count, p.bytes, p.host_ns, p.failed, p.dropped, p.path, p.line))
            s = self.summaries.get(p.section) or {}
            for r in s.get("transfers") or []:
                if isinstance(r, dict) and all(is_int(r.get(k)) for k in ("count", "bytes", "host_ns")):
                    db.execute("INSERT INTO summary_transfers VALUES (?,?,?,?,?,?,?,?,?)",
                               (p.section, str(r.get("dir")), str(r.get("host_kind")),
                                r.get("bucket_min") if is_int(r.get("bucket_min")) else None,
                                str(r.get("action") or "pass"), r["count"], r["bytes"], r["host_ns"],
                                r.get("device") if is_int(r.get("device")) else None))
            for r in s.get("sites") or []:
                if isinstance(r, dict) and all(is_int(r.get(k)) for k in ("count", "bytes", "host_ns")):
                    db.execute("INSERT INTO summary_sites VALUES (?,?,?,?,?,?,?,?,?)",
                               (p.section, str(r.get("site")), r.get("func") if isinstance(r.get("func"), str) else None,
                                r.get("py_site") if isinstance(r.get("py_site"), str) else None,
                                r.get("py_func") if isinstance(r.get("py_func"), str) else None,
                                r["count"], r["bytes"], r["host_ns"], json.dumps(r.get("kinds") or {})))
            for call, count, ns in p.syncs:
                db.execute("INSERT INTO summary_syncs VALUES (?,?,?,?)", (p.section, call, count, ns))
            for a in s.get("advice") or []:
                if isinstance(a, dict) and isinstance(a.get("message"), str):
                    db.execute("INSERT INTO advice VALUES (?,?,?,?)",
                               (p.section, str(a.get("rule", "?")), a["message"],
                                a.get("est_saving_ns") if is_int(a.get("est_saving_ns")) else None))
        db.commit()
        db.close()

    def abort(self):
        self.db.close()
        os.unlink(self.path)


def finish(folder, report, path):
    """Creates the database at path from the parts (see the module's contract)."""
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    try:
        db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA + VIEWS)
        meta = {"tool": "pinshim-report", "version": VERSION, "log_format": str(FORMAT),
                "selection": report.selection.describe() or "all", "files": json.dumps(report.files),
                "clock": "t_ns: ns from the process start; wall_ns: its start_wall_ns + t_ns"}
        db.executemany("INSERT INTO meta VALUES (?,?)", sorted(meta.items()))
        ids = {(p.file_index, p.section): i for i, p in enumerate(report.processes, 1)}
        for file_index in sorted({p.file_index for p in report.processes}):
            db.execute("ATTACH DATABASE ? AS part", (part_path(folder, file_index),))
            db.execute("CREATE TEMP TABLE ids(section INTEGER PRIMARY KEY, process_id INTEGER)")
            db.executemany("INSERT INTO ids VALUES (?,?)",
                           [(section, pid) for (f, section), pid in ids.items() if f == file_index])
            db.execute("INSERT INTO main.processes SELECT ids.process_id, host, rank, pid, ppid, program, cmdline, "
                       "start_wall_ns, version, status, transfers, bytes, host_ns, failed_copies, dropped, log_file, "
                       "log_line FROM part.processes p JOIN ids ON ids.section = p.process_id")
            for table in TABLES:
                columns = [row[1] for row in db.execute("PRAGMA part.table_info(%s)" % table)][1:]
                db.execute("INSERT INTO main.%s SELECT ids.process_id, %s FROM part.%s t JOIN ids "
                           "ON ids.section = t.process_id" % (table, ", ".join("t." + c for c in columns), table))
            db.commit()
            db.execute("DROP TABLE temp.ids")
            db.execute("DETACH DATABASE part")
        db.execute("CREATE INDEX transfers_process ON transfers(process_id, t_ns)")
        db.commit()
    finally:
        db.close()
