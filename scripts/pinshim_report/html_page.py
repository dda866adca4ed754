"""html_page.py: one self-contained HTML page (inline CSS and SVG, no script, nothing fetched)
from an analysis.Report: "where the time went" first (copy time by operation and mode, what
staging and pin-on-reuse saved, the pinned ceiling, the top call sites and their fixes, sync
points), then bandwidth against size per direction, bytes and time by host kind, the timeline,
and the text report's tables. Every string from a log is escaped. Its size is bounded whatever
the number of records: charts are drawn from bins, long tables are cut (the CSV files have all)."""
from . import svg, text
from .svg import esc

MAX_TABLE_ROWS = 2000
MAX_NOTES = 200

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; } h3 { font-size: 14px; margin-top: 18px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td.text { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
.note { color: #555; font-size: 13px; max-width: 1100px; }
.headline { font-size: 15px; }
.scroll { overflow-x: auto; max-width: 100%; }
"""


def html_table(table, limit=MAX_TABLE_ROWS):
    columns = table.shown_columns
    last = len(columns) - 1
    out = ["<table><tr>%s</tr>" % "".join("<th>%s</th>" % esc(c.header) for c in columns)]
    rows = table.text_rows()
    for row in rows[:limit]:
        cells = ['<td class="text">%s</td>' % esc(v) if i == last or columns[i].left else "<td>%s</td>" % esc(v)
                 for i, v in enumerate(row)]
        out.append("<tr>%s</tr>" % "".join(cells))
    out.append("</table>")
    notes = list(table.notes)
    if len(rows) > limit:
        notes.append("%d more rows: --csv writes them all" % (len(rows) - limit))
    if notes:
        out.append('<p class="note">%s</p>' % "<br>".join(esc(n) for n in notes))
    return "".join(out)


def section(title, table):
    return "<h3>%s</h3>%s" % (esc(table.title if title is None else title), html_table(table))


def where_it_went(report, tables):
    out = ["<h2>Where the copy time went</h2>"]
    out.append('<p class="headline">%s</p>' % "<br>".join(esc(line) for line in text.overview(report)))
    out.append(svg.class_bars(report))
    out.append('<p class="note">Host time is the time inside the copy calls. Bandwidth is from device time where '
               'device_timing sampled copies, else from the host time of sync copies; async copies without device '
               'timing get none (their host time is the time to enqueue them).</p>')
    for name in ("devices", "savings", "ceilings", "fixes", "syncs"):
        if name in tables:
            out.append(section(None, tables[name]))
    if not report.syncs:
        out.append('<p class="note">No sync call in these logs\' summaries.</p>')
    if report.agg.py_sites:
        out.append('<p class="note">Call sites with a Python file:line show it first, the native frame after.</p>')
    return "".join(out)


def bandwidth(report):
    out = ["<h2>Bandwidth against copy size</h2>"]
    untimed = sum(report.agg.async_untimed.values())
    notes = ["One marker per bin of copies (a quarter octave of size by an eighth of an octave of bandwidth; "
             "bigger markers hold more copies): filled circles from device time (device_ns, the copies "
             "device_timing sampled), hollow squares from the host time of sync copies. The dashed line is the "
             "pinned ceiling (see its source above)."]
    if untimed:
        notes.append("%s async copies without device timing are not drawn: the time inside an async call is the "
                     "time to enqueue the copy, not a bandwidth (device_timing = on measures them)."
                     % "{:,}".format(untimed))
    if report.summary_only:
        notes.append("%d summary-only process(es) are not drawn (their rows are averages, sync and async mixed)."
                     % len(report.summary_only))
    out.append('<p class="note">%s</p>' % "<br>".join(esc(n) for n in notes))
    charts = []
    directions = sorted({k[0] for k in report.agg.bw})
    for direction in ("h2d", "d2h"):
        if direction in directions:
            charts.append(svg.bandwidth_chart(report, (direction,), "bandwidth-%s" % direction))
    others = tuple(d for d in directions if d not in ("h2d", "d2h"))
    if others:
        charts.append(svg.bandwidth_chart(report, others, "bandwidth-other"))
    out.append('<div class="charts">%s</div>' % "".join(charts) if charts else
               "<p>No copies with a size and a bandwidth to plot.</p>")
    return "".join(out)


def timeline(report):
    out = ["<h2>Timeline</h2>"]
    notes = ["One lane per process, device and stream (legacy default stream 0x1, per-thread default stream 0x2); "
             "each pixel column is as tall as the share of its time the lane spent in copies (host time; device "
             "time for async copies device_timing sampled), at least a tick where a copy started, coloured by "
             "the host kind with the most copy time there. For copy-by-copy zoom, open --trace in Perfetto."]
    if report.sync_records:
        notes.append("Sync calls from the logs' sync records are drawn in each process's \"sync calls\" lane.")
    else:
        notes.append("These logs have no per-sync records (format 1 logs count sync calls in the summary only): "
                     "a sync copy is itself a sync point, and each process's summary counts are in its row's "
                     "tooltip and in the sync points table above.")
    out.append('<p class="note">%s</p>' % "<br>".join(esc(n) for n in notes))
    out.append(svg.timeline(report))
    return "".join(out)


def render(report):
    tables = {t.name: t for t in text.tables(report)}
    processes, files = report.processes, report.files
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
           "<title>pinshim report</title><style>%s</style></head><body>" % STYLE,
           "<h1>pinshim report: %d process%s from %d log file%s</h1>"
           % (len(processes), "" if len(processes) == 1 else "es", len(files), "" if len(files) == 1 else "s"),
           '<p class="note">%s</p>' % esc(text.heading(report))]
    if report.operations:
        out.append(where_it_went(report, tables))
        out.append(bandwidth(report))
        out.append("<h2>Bytes and time by host memory kind</h2>")
        out.append('<div class="charts">%s</div>' % svg.kind_bars(report))
    else:
        out.append("<p>No host&lt;-&gt;device copies in these logs.</p>")
    out.append(timeline(report))
    out.append("<h2>Tables</h2>")
    for name in ("sizes", "host_times", "device_times", "processes", "sites", "advice"):
        if name in tables:
            out.append(section(None, tables[name]))
    note = text.median_note(list(tables.values()))
    if note:
        out.append('<p class="note">%s</p>' % esc(note[0].strip()))
    if report.warnings:
        shown = report.warnings[:MAX_NOTES]
        more = len(report.warnings) - len(shown)
        out.append("<h2>Input notes</h2><ul class=\"note\">%s%s</ul>"
                   % ("".join("<li>%s</li>" % esc(w) for w in shown),
                      "<li>%d more (on stderr)</li>" % more if more else ""))
    shown = files[:MAX_NOTES]
    out.append("<h2>Log files</h2><ul class=\"note\">%s%s</ul>"
               % ("".join("<li>%s</li>" % esc(f) for f in shown),
                  "<li>%d more</li>" % (len(files) - len(shown)) if len(files) > len(shown) else ""))
    out.append("</body></html>\n")
    return "\n".join(out)
