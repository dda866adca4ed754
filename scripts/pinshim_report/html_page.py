"""html_page.py: one self-contained HTML page (inline CSS and SVG, no script, nothing fetched):
the charts of svg.py and the tables of the text report. Every string from a log is escaped."""
from . import logs, stats, svg, text
from .svg import esc

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td.text { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
.note { color: #555; font-size: 13px; }
"""


def html_table(headers, rows, text_columns=()):
    """A table; the last column and those in text_columns are left-aligned text."""
    last = len(headers) - 1
    out = ["<table><tr>%s</tr>" % "".join("<th>%s</th>" % esc(h) for h in headers)]
    for row in rows:
        cells = ['<td class="text">%s</td>' % esc(c) if i == last or i in text_columns else "<td>%s</td>" % esc(c)
                 for i, c in enumerate(row)]
        out.append("<tr>%s</tr>" % "".join(cells))
    out.append("</table>")
    return "".join(out)


def render(processes, files, top):
    groups = stats.operations(processes)
    total_ns = sum(g.host_ns for g in groups)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
           "<title>pinshim report</title><style>%s</style></head><body>" % STYLE,
           "<h1>pinshim report: %d process%s from %d log file%s</h1>"
           % (len(processes), "" if len(processes) == 1 else "es", len(files), "" if len(files) == 1 else "s")]
    out.append("<h2>Achieved bandwidth against copy size</h2>")
    out.append('<p class="note">One point per copy (bytes over the time inside the copy call); for async copies '
               'that time ends when the call returns, not when the DMA does. Processes that logged only their '
               'summary give one point per summary row (its average size).</p>')
    out.append(svg.bandwidth_chart(processes))
    out.append("<h2>Bytes and time by host memory kind</h2>")
    out.append('<div class="charts">%s</div>' % svg.kind_bars(processes))
    out.append("<h2>Timeline</h2>")
    out.append('<p class="note">One row per process; bars are copies (host time), coloured by host memory kind; '
               'copies closer than a pixel are drawn as one bar.</p>')
    out.append(svg.timeline(processes))
    if groups:
        out.append("<h2>Copy sizes by operation</h2>")
        out.append(html_table(["Total (MB)", "Count", "Avg (MB)", "Med (MB)", "Min (MB)", "Max (MB)", "StdDev (MB)",
                               "Operation"], text.size_rows(groups)))
        out.append("<h2>Copy time by operation (host time inside the copy call)</h2>")
        out.append(html_table(["Time (%)", "Total Time (ns)", "Count", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
                               "StdDev (ns)", "Operation"], text.time_rows(groups, total_ns, "host")))
    out.append("<h2>Processes</h2>")
    out.append(html_table(["PID", "Rank", "Host", "Transfers", "Total (MB)", "Host time (us)", "GB/s", "Failed",
                           "Status", "Program"], text.process_rows(processes), text_columns=(1, 2, 8)))
    sites = stats.sites(processes)[:top]
    if sites:
        out.append("<h2>Top call sites by host time</h2>")
        out.append(html_table(["Time (%)", "Total Time (us)", "Count", "Total (MB)", "Procs", "Host kinds",
                               "Site  Function"], text.site_rows(sites, total_ns), text_columns=(5,)))
    advice = stats.advice(processes)
    if advice:
        out.append("<h2>Advice</h2>")
        out.append(html_table(["Procs", "Est. saving (us)", "Rule", "Message"],
                              [[str(a["processes"]), text.num(a["est_saving_ns"] / 1e3, 1), a["rule"], a["message"]]
                               for a in advice], text_columns=(2,)))
    if logs.WARNINGS:
        out.append("<h2>Input notes</h2><ul class=\"note\">%s</ul>"
                   % "".join("<li>%s</li>" % esc(w) for w in logs.WARNINGS))
    out.append("<h2>Log files</h2><ul class=\"note\">%s</ul>" % "".join("<li>%s</li>" % esc(f) for f in files))
    out.append("</body></html>\n")
    return "\n".join(out)
