"""text.py: the text report, tables in the manner of `nsys stats` (cuda_gpu_mem_size_sum,
cuda_gpu_mem_time_sum): sizes in MB (10^6 bytes), times in ns or us, numbers right-aligned."""
from . import stats
from .logs import is_int

MB = 1e6


def clean(text):
    """A string from a log made safe for a terminal: control characters as \\xNN escapes."""
    return "".join(c if c.isprintable() else "\\x%02x" % ord(c) if ord(c) < 256 else "\\u%04x" % ord(c)
                   for c in str(text))


def table(headers, rows, left=()):
    """Lines of a table: numbers right-aligned; the last column and those in left are text."""
    rows = [[clean(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells):
        out = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells[:-1], widths[:-1]))]
        return " " + "  ".join(out + [cells[-1]]).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def num(value, decimals=0):
    return "{:,.{}f}".format(value, decimals)


def size_rows(groups):
    rows = []
    for g in sorted(groups, key=lambda g: (-g.bytes, g.key)):
        if g.complete and g.sizes:
            d = stats.describe(g.sizes)
            spread = [num(d[k] / MB, 3) for k in ("avg", "med", "min", "max", "stddev")]
        else:
            spread = [num(g.bytes / MB / g.count, 3) if g.count else "-", "-", "-", "-", "-"]
        rows.append([num(g.bytes / MB, 3), num(g.count)] + spread + [g.name])
    return rows


def time_rows(groups, total_ns, field):
    rows = []
    for g in groups:
        values = g.times if field == "host" else g.device_times
        if field == "device" and len(values) != g.count:
            continue
        total = g.host_ns if field == "host" else sum(values)
        percent = num(100.0 * total / total_ns, 1) if total_ns else "-"
        if g.complete and values:
            d = stats.describe(values)
            spread = [num(d["avg"], 1), num(d["med"], 1), num(d["min"]), num(d["max"]), num(d["stddev"], 1)]
        else:
            spread = [num(total / g.count, 1) if g.count else "-", "-", "-", "-", "-"]
        rows.append([percent, num(total), num(g.count)] + spread + [g.name])
    return rows


def process_rows(processes):
    rows = []
    for p in sorted(processes, key=lambda p: (p.host, p.rank, p.pid)):
        count, nbytes, host_ns, _ = stats.process_totals(p)
        failed = (p.summary or {}).get("failed_copies")
        rows.append([str(p.pid), p.rank, p.host, num(count), num(nbytes / MB, 3), num(host_ns / 1e3, 1),
                     num(nbytes / host_ns, 2) if host_ns else "-",
                     str(failed) if is_int(failed) else "-", stats.process_status(p), p.program])
    return rows


def site_rows(sites, total_ns):
    rows = []
    for s in sites:
        kinds = ", ".join("%s %d" % kv for kv in sorted(s["kinds"].items(), key=lambda kv: (-kv[1], kv[0])))
        rows.append([num(100.0 * s["host_ns"] / total_ns, 1) if total_ns else "-", num(s["host_ns"] / 1e3, 1),
                     num(s["count"]), num(s["bytes"] / MB, 3), str(s["processes"]), kinds or "-",
                     s["site"] + ("  " + str(s["func"]) if s["func"] else "")])
    return rows


def render(processes, files, top):
    groups = stats.operations(processes)
    total_ns = sum(g.host_ns for g in groups)
    hosts = sorted({p.host for p in processes})
    ranks = sorted({p.rank for p in processes}, key=lambda r: (not r.isdigit(), int(r) if r.isdigit() else 0, r))
    out = ["pinshim-report: %d process%s from %d log file%s (hosts: %s; ranks: %s)"
           % (len(processes), "" if len(processes) == 1 else "es", len(files), "" if len(files) == 1 else "s",
              ", ".join(hosts), ", ".join(ranks)), ""]
    if not groups:
        out += ["No host<->device copies in these logs.", ""]
    else:
        out += ["** Copy sizes by operation (direction, host memory kind, [the shim's action] when not pass):", ""]
        out += table(["Total (MB)", "Count", "Avg (MB)", "Med (MB)", "Min (MB)", "Max (MB)", "StdDev (MB)",
                      "Operation"], size_rows(groups)) + [""]
        out += ["** Copy time by operation (host time inside the copy call):", ""]
        time_headers = ["Time (%)", "Total Time (ns)", "Count", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
                        "StdDev (ns)", "Operation"]
        out += table(time_headers, time_rows(groups, total_ns, "host")) + [""]
        device_total = sum(sum(g.device_times) for g in groups if len(g.device_times) == g.count)
        device_rows = time_rows(groups, device_total, "device")
        if any(g.device_times for g in groups) and device_rows:
            out += ["** Copy time by operation (device time of the copy):", ""]
            out += table(time_headers, device_rows) + [""]
        if not all(g.complete for g in groups):
            out += ["  '-': some processes logged only their summary (log_level=summary); the",
                    "  distribution columns need per-transfer records.", ""]
    out += ["** Processes:", ""]
    out += table(["PID", "Rank", "Host", "Transfers", "Total (MB)", "Host time (us)", "GB/s", "Failed", "Status",
                  "Program"], process_rows(processes), left=(1, 2, 8)) + [""]
    site_list = stats.sites(processes)
    if site_list:
        shown = site_list[:top]
        out += ["** Top call sites by host time in copies (%d of %d):" % (len(shown), len(site_list)), ""]
        out += table(["Time (%)", "Total Time (us)", "Count", "Total (MB)", "Procs", "Host kinds", "Site  Function"],
                     site_rows(shown, total_ns), left=(5,)) + [""]
    advice = stats.advice(processes)
    if advice:
        out += ["** Advice (from the processes' summaries, deduplicated):", ""]
        out += table(["Procs", "Est. saving (us)", "Rule", "Message"],
                     [[str(a["processes"]), num(a["est_saving_ns"] / 1e3, 1), a["rule"], a["message"]]
                      for a in advice], left=(2,)) + [""]
    return "\n".join(out)
