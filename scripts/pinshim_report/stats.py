"""stats.py: the numbers every output shows, computed once from the processes' logs.
A process's transfers come from its transfer records when it has any, else from its summary's
rows (log_level=summary), which give count, bytes and time but no per-copy distribution."""
import statistics

from .logs import is_int


class Group:
    """One operation (direction x host memory kind x the shim's action): per-copy sizes and
    times when every contribution has records, else only the totals."""

    def __init__(self, key):
        self.key = key
        self.count = self.bytes = self.host_ns = 0
        self.sizes, self.times, self.device_times = [], [], []
        self.complete = True          # every copy is in sizes/times (no summary-only process)

    @property
    def name(self):
        direction, kind, action = self.key
        return "%s %s" % (direction, kind) + ("" if action == "pass" else " [%s]" % action)


def describe(values):
    """nsys stats' columns for a list of numbers: total, count, avg, med, min, max, stddev
    (the sample standard deviation; 0 for one value)."""
    n = len(values)
    return {"total": sum(values), "count": n, "avg": sum(values) / n, "med": statistics.median(values),
            "min": min(values), "max": max(values), "stddev": statistics.stdev(values) if n > 1 else 0.0}


def summary_rows(process):
    """The summary's transfer rows that are well formed."""
    rows = (process.summary or {}).get("transfers") or []
    return [r for r in rows if isinstance(r, dict) and all(is_int(r.get(k)) for k in ("count", "bytes", "host_ns"))
            and isinstance(r.get("dir"), str) and isinstance(r.get("host_kind"), str)]


def operations(processes):
    """Groups by (dir, host_kind, action), largest total host time first."""
    groups = {}
    for p in processes:
        if p.transfers:
            for t in p.transfers:
                key = (t["dir"], t["host_kind"], str(t["action"]))
                g = groups.setdefault(key, Group(key))
                g.count += 1
                g.bytes += t["bytes"]
                g.host_ns += t["host_ns"]
                g.sizes.append(t["bytes"])
                g.times.append(t["host_ns"])
                if t["device_ns"] is not None:
                    g.device_times.append(t["device_ns"])
        else:
            for r in summary_rows(p):
                key = (r["dir"], r["host_kind"], str(r.get("action", "pass")))
                g = groups.setdefault(key, Group(key))
                g.count += r["count"]
                g.bytes += r["bytes"]
                g.host_ns += r["host_ns"]
                g.complete = False
    return sorted(groups.values(), key=lambda g: (-g.host_ns, g.key))


def process_totals(p):
    """(transfers, bytes, host ns, source) for one process."""
    if p.transfers:
        return (len(p.transfers), sum(t["bytes"] for t in p.transfers),
                sum(t["host_ns"] for t in p.transfers), "records")
    rows = summary_rows(p)
    return (sum(r["count"] for r in rows), sum(r["bytes"] for r in rows),
            sum(r["host_ns"] for r in rows), "summary")


def process_status(p):
    if p.summary is None:
        return "no summary (killed?)"
    if not p.transfers:
        return "summary only"
    if p.dropped:
        return "%d records dropped" % p.dropped
    return "complete"


def sites(processes):
    """Call sites merged across processes (same site and function), most host time first.
    Each: site, func, count, bytes, host_ns, kinds {host_kind: count}, processes."""
    merged = {}

    def add(p, site, func, count, nbytes, host_ns, kinds):
        s = merged.setdefault((site, func), {"site": site, "func": func, "count": 0, "bytes": 0,
                                             "host_ns": 0, "kinds": {}, "pids": set()})
        s["count"] += count
        s["bytes"] += nbytes
        s["host_ns"] += host_ns
        s["pids"].add((p.host, p.pid, p.start_wall_ns))
        for kind, n in kinds.items():
            s["kinds"][kind] = s["kinds"].get(kind, 0) + n

    for p in processes:
        if p.transfers:
            for t in p.transfers:
                add(p, t["site"] or "?", t["func"], 1, t["bytes"], t["host_ns"], {t["host_kind"]: 1})
        else:
            for s in (p.summary or {}).get("sites") or []:
                if isinstance(s, dict) and all(is_int(s.get(k)) for k in ("count", "bytes", "host_ns")):
                    kinds = {k: v for k, v in (s.get("kinds") or {}).items() if is_int(v)}
                    add(p, str(s.get("site") or "?"), s.get("func"), s["count"], s["bytes"], s["host_ns"], kinds)
    rows = sorted(merged.values(), key=lambda s: (-s["host_ns"], s["site"]))
    for s in rows:
        s["processes"] = len(s.pop("pids"))
    return rows


def advice(processes):
    """Each summary's advice, deduplicated by (rule, message): with the number of processes that
    gave it and their summed estimated saving, largest saving first."""
    merged = {}
    for p in processes:
        for a in (p.summary or {}).get("advice") or []:
            if not isinstance(a, dict) or not isinstance(a.get("message"), str):
                continue
            key = (str(a.get("rule", "?")), a["message"])
            m = merged.setdefault(key, {"rule": key[0], "message": key[1], "processes": 0, "est_saving_ns": 0})
            m["processes"] += 1
            if is_int(a.get("est_saving_ns")):
                m["est_saving_ns"] += a["est_saving_ns"]
    return sorted(merged.values(), key=lambda m: (-m["est_saving_ns"], m["rule"], m["message"]))


def bandwidth_points(processes):
    """{host_kind: [(bytes, GB/s)]}: one point per transfer record (host time), or per summary row
    (its average size) for a process without records."""
    points = {}
    for p in processes:
        if p.transfers:
            for t in p.transfers:
                if t["bytes"] > 0 and t["host_ns"] > 0:
                    points.setdefault(t["host_kind"], []).append((t["bytes"], t["bytes"] / t["host_ns"]))
        else:
            for r in summary_rows(p):
                if r["count"] > 0 and r["bytes"] > 0 and r["host_ns"] > 0:
                    points.setdefault(r["host_kind"], []).append((r["bytes"] / r["count"], r["bytes"] / r["host_ns"]))
    return points


def by_kind(processes):
    """{host_kind: (bytes, host ns)} over all directions."""
    totals = {}
    for g in operations(processes):
        b, t = totals.get(g.key[1], (0, 0))
        totals[g.key[1]] = (b + g.bytes, t + g.host_ns)
    return totals
