"""svg.py: the report's charts as inline SVG strings (no script, no external resource):
bandwidth against size per memory kind (log-log), bars by kind, and a per-process timeline.
Every string that comes from a log passes through esc()."""
import html
import math

from . import stats

PALETTE = {"pageable": "#d62728", "pinned": "#2ca02c", "registered": "#1f77b4", "managed": "#9467bd",
           "device": "#8c564b", "unknown": "#7f7f7f"}
EXTRA_COLOURS = ["#ff7f0e", "#17becf", "#bcbd22", "#e377c2"]
MAX_POINTS_PER_KIND = 2000      # beyond this a scatter series is thinned by a regular stride
FONT = 'font-family="sans-serif" font-size="12"'


def esc(value):
    return html.escape(str(value), quote=True)


def colour(kind, kinds):
    if kind in PALETTE:
        return PALETTE[kind]
    others = sorted(k for k in kinds if k not in PALETTE)
    return EXTRA_COLOURS[others.index(kind) % len(EXTRA_COLOURS)] if kind in others else "#000000"


def si(value, unit):
    """1000-based label for a decade tick: 1 kB, 10 MB, 0.1 GB/s."""
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1, "")):
        if value >= factor:
            return "%g %s%s" % (value / factor, prefix, unit)
    return "%g %s" % (value, unit)


def decades(values):
    lo = math.floor(math.log10(min(values)))
    hi = math.ceil(math.log10(max(values)))
    return lo, max(hi, lo + 1)


def nice_step(span, ticks):
    raw = span / max(ticks, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


def legend(kinds, all_kinds, x, y):
    out = []
    for i, kind in enumerate(kinds):
        out.append('<g class="legend-item"><rect x="%d" y="%d" width="12" height="12" fill="%s"/>'
                   '<text x="%d" y="%d" %s>%s</text></g>'
                   % (x, y + 18 * i, colour(kind, all_kinds), x + 18, y + 18 * i + 11, FONT, esc(kind)))
    return '<g class="legend">%s</g>' % "".join(out)


def bandwidth_chart(processes):
    """Scatter of achieved bandwidth (bytes / host time) against copy size, log-log, per host kind."""
    points = stats.bandwidth_points(processes)
    if not points:
        return "<p>No copies with a size and a time to plot.</p>"
    width, height, left, right, top, bottom = 900, 440, 80, 170, 20, 60
    pw, ph = width - left - right, height - top - bottom
    all_x = [x for pts in points.values() for x, _ in pts]
    all_y = [y for pts in points.values() for _, y in pts]
    x0, x1 = decades(all_x)
    y0, y1 = decades(all_y)

    def sx(v):
        return left + pw * (math.log10(v) - x0) / (x1 - x0)

    def sy(v):
        return top + ph - ph * (math.log10(v) - y0) / (y1 - y0)

    out = ['<svg class="chart" id="bandwidth" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" role="img"><title>achieved bandwidth against copy size</title>'
           % (width, height, width, height)]
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#ffffff" stroke="#333333"/>' % (left, top, pw, ph))
    for d in range(x0, x1 + 1):
        x = sx(10 ** d)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>' % (x, top, x, top + ph))
        out.append('<text x="%.1f" y="%d" text-anchor="middle" %s>%s</text>' % (x, top + ph + 16, FONT, si(10 ** d, "B")))
    for d in range(y0, y1 + 1):
        y = sy(10 ** d)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>' % (left, y, left + pw, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end" %s>%g</text>' % (left - 6, y + 4, FONT, 10.0 ** d))
    out.append('<text class="axis-label" x="%d" y="%d" text-anchor="middle" %s>copy size (bytes, log scale)</text>'
               % (left + pw // 2, height - 15, FONT))
    out.append('<text class="axis-label" transform="translate(18,%d) rotate(-90)" text-anchor="middle" %s>'
               'achieved bandwidth (GB/s = bytes / host time, log scale)</text>' % (top + ph // 2, FONT))
    kinds = sorted(points)
    for kind in kinds:
        pts = points[kind]
        stride = max(1, math.ceil(len(pts) / MAX_POINTS_PER_KIND))
        shown = pts[::stride]
        out.append('<g class="series" data-kind="%s" fill="%s" fill-opacity="0.65"><title>%s: %d copies%s</title>'
                   % (esc(kind), colour(kind, kinds), esc(kind), len(pts),
                      "" if stride == 1 else " (every %dth drawn)" % stride))
        out.extend('<circle cx="%.1f" cy="%.1f" r="3"/>' % (sx(x), sy(y)) for x, y in shown)
        out.append("</g>")
    out.append(legend(kinds, kinds, left + pw + 20, top + 10))
    out.append("</svg>")
    return "".join(out)


def bar_chart(chart_id, title, values, unit_label, fmt, kinds):
    """Horizontal bars, one per host kind: values {kind: number}."""
    width, bar, gap, left, right = 440, 22, 8, 110, 120
    height = 40 + len(values) * (bar + gap) + 20
    top = 30
    biggest = max(values.values()) or 1
    out = ['<svg class="chart" id="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" role="img"><title>%s</title>' % (chart_id, width, height, width, height, esc(title))]
    out.append('<text x="%d" y="18" %s font-weight="bold">%s</text>' % (left, FONT, esc(title)))
    for i, kind in enumerate(sorted(values, key=lambda k: (-values[k], k))):
        y = top + i * (bar + gap)
        w = (width - left - right) * values[kind] / biggest
        out.append('<g class="bar" data-kind="%s"><title>%s: %s</title>'
                   '<text x="%d" y="%d" text-anchor="end" %s>%s</text>'
                   '<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                   '<text x="%.1f" y="%d" %s>%s</text></g>'
                   % (esc(kind), esc(kind), esc(fmt(values[kind])), left - 6, y + 15, FONT, esc(kind), left, y, w, bar,
                      colour(kind, kinds), left + w + 6, y + 15, FONT, esc(fmt(values[kind]))))
    out.append('<text x="%d" y="%d" %s>%s</text>' % (left, height - 6, FONT, esc(unit_label)))
    out.append("</svg>")
    return "".join(out)


def kind_bars(processes):
    totals = stats.by_kind(processes)
    if not totals:
        return ""
    kinds = sorted(totals)
    return (bar_chart("bytes-by-kind", "bytes by host memory kind", {k: v[0] for k, v in totals.items()},
                      "MB (10^6 bytes), all directions", lambda v: "{:,.3f} MB".format(v / 1e6), kinds) +
            bar_chart("time-by-kind", "host time by host memory kind", {k: v[1] for k, v in totals.items()},
                      "ms inside the copy calls, all directions", lambda v: "{:,.3f} ms".format(v / 1e6), kinds))


def merged_bars(transfers, scale, offset_ns):
    """{kind: [(x0, x1, count, bytes)]}: per host kind, copies closer than a pixel merged into
    one bar, so a row has at most a few bars per pixel column, not one per copy."""
    runs = {}
    for t in sorted(transfers, key=lambda t: t["t_ns"]):
        x0 = (offset_ns + t["t_ns"]) * scale
        x1 = max(x0 + 1.0, (offset_ns + t["t_ns"] + t["host_ns"]) * scale)
        bars = runs.setdefault(t["host_kind"], [])
        if bars and x0 <= bars[-1][1] + 1.0:
            last = bars[-1]
            bars[-1] = (last[0], max(last[1], x1), last[2] + 1, last[3] + t["bytes"])
        else:
            bars.append((x0, x1, 1, t["bytes"]))
    return runs


def timeline(processes):
    """One row per process; each copy (host time) a bar coloured by host kind."""
    if not processes:
        return ""
    base = min(p.start_wall_ns for p in processes)
    end = max([p.start_wall_ns - base + t["t_ns"] + t["host_ns"] for p in processes for t in p.transfers] or [1])
    kinds = sorted({t["host_kind"] for p in processes for t in p.transfers})
    left, right, top, row, width = 230, 150, 30, 26, 1100
    pw = width - left - right
    height = top + row * len(processes) + 50
    scale = pw / end
    out = ['<svg class="chart" id="timeline" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" role="img"><title>copies over time, one row per process</title>'
           % (width, height, width, height)]
    step = nice_step(end / 1e6, 8)
    tick = 0.0
    while tick * 1e6 <= end * 1.0001:
        x = left + tick * 1e6 * scale
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>' % (x, top - 4, x, top + row * len(processes)))
        out.append('<text x="%.1f" y="%d" text-anchor="middle" %s>%g</text>'
                   % (x, top + row * len(processes) + 16, FONT, round(tick, 9)))
        tick += step
    out.append('<text class="axis-label" x="%d" y="%d" text-anchor="middle" %s>time since the first process '
               'started (ms, wall clock)</text>' % (left + pw // 2, height - 8, FONT))
    for i, p in enumerate(processes):
        y = top + i * row
        label = "pid %s rank %s %s" % (p.pid, p.rank, p.host)
        out.append('<g class="process-row" data-pid="%s"><title>%s</title><text x="%d" y="%d" text-anchor="end" %s>%s</text>'
                   % (esc(p.pid), esc(p.label()), left - 8, y + 16, FONT, esc(label[:34])))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#eeeeee"/>' % (left, y + row - 1, left + pw, y + row - 1))
        if not p.transfers:
            out.append('<text x="%d" y="%d" %s fill="#777777">no transfer records (summary only)</text>'
                       % (left + 6, y + 16, FONT))
        runs = merged_bars(p.transfers, scale, p.start_wall_ns - base)
        lane = (row - 8) / max(len(runs), 1)      # one lane per host kind within the row
        for k, kind in enumerate(sorted(runs)):
            for x0, x1, count, nbytes in runs[kind]:
                out.append('<rect class="copy" data-kind="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" '
                           'fill="%s"><title>%s: %d cop%s, %.3f MB</title></rect>'
                           % (esc(kind), left + x0, y + 4 + k * lane, x1 - x0, lane - 1, colour(kind, kinds),
                              esc(kind), count, "y" if count == 1 else "ies", nbytes / 1e6))
        out.append("</g>")
    out.append(legend(kinds, kinds, left + pw + 20, top))
    out.append("</svg>")
    return "".join(out)
