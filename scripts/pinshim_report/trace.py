"""trace.py: a Chrome trace (the JSON Object Format that Perfetto and chrome://tracing open):
one "X" event per transfer record, ts/dur in microseconds on a clock shared by all processes
(their wall-clock start plus the record's offset), one track per stream for async copies and per
thread for the others, and "M" events naming the processes and tracks."""
import json


def track_of(t):
    """(sort key, name) of the track a transfer record is drawn on."""
    if t["async"] and t["stream"] is not None:
        return (0, str(t["stream"])), "stream %s" % t["stream"]
    return (1, str(t["tid"])), "thread %s" % (t["tid"] if t["tid"] is not None else "?")


def trace_pids(processes):
    """A distinct trace pid per process: its own pid, unless another process (another host, or
    the same pid reused) already has it."""
    used, pids = set(), []
    for p in processes:
        pid = p.pid if isinstance(p.pid, int) else 0
        while pid in used:
            pid += 1 << 22          # above Linux's pid_max, so never a real pid
        used.add(pid)
        pids.append(pid)
    return pids


def transfer_event(t, pid, tid, offset_ns):
    args = {"bytes": t["bytes"], "dir": t["dir"], "host_kind": t["host_kind"], "src_kind": t["src_kind"],
            "dst_kind": t["dst_kind"], "action": t["action"], "entry": t["entry"], "async": t["async"],
            "stream": t["stream"], "device": t["device"], "seq": t["seq"], "site": t["site"], "func": t["func"]}
    if t["device_ns"] is not None:
        args["device_ns"] = t["device_ns"]
    return {"name": "%s %s" % (t["dir"], t["host_kind"]), "cat": "copy", "ph": "X",
            "ts": (offset_ns + t["t_ns"]) / 1e3, "dur": t["host_ns"] / 1e3, "pid": pid, "tid": tid, "args": args}


def events(processes):
    starts = [p.start_wall_ns for p in processes]
    base = min(starts) if starts else 0
    out = []
    for index, (p, pid) in enumerate(zip(processes, trace_pids(processes))):
        name = "%s (rank %s, %s, pid %s)" % (p.program, p.rank, p.host, p.pid)
        out.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": index}})
        tracks = {}
        for t in p.transfers:
            key, track_name = track_of(t)
            tracks.setdefault(key, track_name)
        tids = {key: i + 1 for i, key in enumerate(sorted(tracks))}
        for key, tid in tids.items():
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": tracks[key]}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        offset = p.start_wall_ns - base
        for t in p.transfers:
            out.append(transfer_event(t, pid, tids[track_of(t)[0]], offset))
    return out


def render(processes):
    return json.dumps({"traceEvents": events(processes), "displayTimeUnit": "ns",
                       "otherData": {"tool": "pinshim-report", "clock": "wall clock, microseconds from the "
                                     "earliest process start"}}, indent=None, separators=(",", ":")) + "\n"
