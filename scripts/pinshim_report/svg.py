"""svg.py: the report's charts as inline SVG strings (no script, no external resource), drawn from
an analysis.Report's bounded aggregates, so a chart's size does not grow with the number of copies:
- bandwidth_chart(report, dirs): bandwidth against copy size (log-log), one marker per bin of
  copies (device time: filled circle; host time of sync copies: hollow square), a dashed line at
  the pinned ceiling;
- class_bars(report): where the copy time went, one bar per operation and mode;
- kind_bars(report): bytes and host time per host memory kind;
- timeline(report): one lane per process, device and stream, each pixel column a bar whose height
  is the share of that time the lane spent copying (at least a visible tick where a copy started),
  coloured by the host kind with the most copy time there.
Every string that comes from a log passes through esc()."""
import html
import math

from .aggregate import bw_bin_value, size_bin_value

PALETTE = {"pageable": "#d62728", "pinned": "#2ca02c", "registered": "#1f77b4", "managed": "#9467bd",
           "device": "#8c564b", "unknown": "#7f7f7f", "sync": "#000000"}
EXTRA_COLOURS = ["#ff7f0e", "#17becf", "#bcbd22", "#e377c2"]
FONT = 'font-family="sans-serif" font-size="12"'
MAX_LANES = 64                 # timeline lanes drawn; the rest are counted in a note
LANE_HEIGHT = 14
TIMELINE_WIDTH = 1400          # plot width in pixels
MIN_TICK = 0.35                # a column where a copy started is drawn at least this high


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


def _svg_open(chart_id, width, height, title):
    return ('<svg class="chart" id="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'viewBox="0 0 %d %d" role="img"><title>%s</title>' % (chart_id, width, height, width, height, esc(title)))


def bandwidth_chart(report, directions, chart_id):
    """Bandwidth against size for the copies of some directions (see the module's contract)."""
    bins = {k: n for k, n in report.agg.bw.items() if k[0] in directions}
    ceilings = [report.ceilings[d] for d in directions if d in report.ceilings]
    if not bins:
        return ""
    width, height, left, right, top, bottom = 900, 420, 80, 250, 20, 60
    pw, ph = width - left - right, height - top - bottom
    xs = [size_bin_value(k[3]) for k in bins]
    ys = [bw_bin_value(k[4]) for k in bins] + [c.gbps for c in ceilings]
    x0, x1 = decades(xs)
    y0, y1 = decades(ys)

    def sx(v):
        return left + pw * (math.log10(v) - x0) / (x1 - x0)

    def sy(v):
        return top + ph - ph * (math.log10(v) - y0) / (y1 - y0)

    title = "bandwidth against copy size, %s" % ", ".join(directions)
    out = [_svg_open(chart_id, width, height, title)]
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
               'bandwidth (GB/s, log scale)</text>' % (top + ph // 2, FONT))
    kinds = sorted({k[1] for k in bins})
    for kind in kinds:
        for source in ("device", "host"):
            points = sorted((k, n) for k, n in bins.items() if k[1] == kind and k[2] == source)
            if not points:
                continue
            total = sum(n for _, n in points)
            c = colour(kind, kinds)
            style = ('fill="%s" fill-opacity="0.6"' % c if source == "device"
                     else 'fill="none" stroke="%s" stroke-width="1.5"' % c)
            out.append('<g class="series" data-kind="%s" data-source="%s" %s><title>%s, %s time: %s copies</title>'
                       % (esc(kind), source, style, esc(kind), source, "{:,}".format(total)))
            for (direction, _, _, sbin, bbin), n in points:
                x, y = sx(size_bin_value(sbin)), sy(bw_bin_value(bbin))
                r = 3.5 + 1.2 * math.log10(n)
                tip = "%s %s: %s cop%s of about %s at about %.3g GB/s (%s time)" % (
                    direction, kind, "{:,}".format(n), "y" if n == 1 else "ies", si(size_bin_value(sbin), "B"),
                    bw_bin_value(bbin), source)
                if source == "device":
                    out.append('<circle cx="%.1f" cy="%.1f" r="%.1f"><title>%s</title></circle>' % (x, y, r, esc(tip)))
                else:
                    out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>'
                               % (x - r, y - r, 2 * r, 2 * r, esc(tip)))
            out.append("</g>")
    for i, c in enumerate(ceilings):
        y = sy(c.gbps)
        dash = "6,4" if c.measured else "2,4"
        out.append('<g class="ceiling" data-dir="%s" data-source="%s"><title>%s</title>'
                   '<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333333" stroke-width="1.5" '
                   'stroke-dasharray="%s"/><text x="%d" y="%.1f" text-anchor="end" %s>%s pinned ceiling %.1f GB/s%s'
                   '</text></g>'
                   % (c.direction, c.source, esc(c.how), left, y, left + pw, y, dash, left + pw - 6,
                      y - 5 - 14 * i, FONT, c.direction, c.gbps, " (not measured)" if not c.measured else
                      " (%s)" % {"summary": "from the logs", "device": "device-timed copies",
                                 "host": "host time"}.get(c.source, c.source)))
    lx, ly = left + pw + 20, top + 10
    out.append(legend(kinds, kinds, lx, ly))
    ly += 18 * len(kinds) + 8
    out.append('<g class="legend-marks"><circle cx="%d" cy="%d" r="5" fill="#555555"/><text x="%d" y="%d" %s>'
               'device time (sampled)</text><rect x="%d" y="%d" width="10" height="10" fill="none" stroke="#555555"/>'
               '<text x="%d" y="%d" %s>host time, sync copy</text></g>'
               % (lx + 6, ly + 6, lx + 18, ly + 10, FONT, lx + 1, ly + 19, lx + 18, ly + 28, FONT))
    out.append("</svg>")
    return "".join(out)


def bar_chart(chart_id, title, rows, unit_label, kinds, width=440):
    """Horizontal bars: rows [(label, kind, value, value text)], largest first."""
    bar, gap, left, right, top = 20, 6, 230 if width > 440 else 110, 360 if width > 440 else 150, 30
    height = top + len(rows) * (bar + gap) + 24
    biggest = max([r[2] for r in rows] or [0]) or 1
    out = [_svg_open(chart_id, width, height, title)]
    out.append('<text x="%d" y="18" %s font-weight="bold">%s</text>' % (left, FONT, esc(title)))
    for i, (label, kind, value, shown) in enumerate(rows):
        y = top + i * (bar + gap)
        w = (width - left - right) * value / biggest
        out.append('<g class="bar" data-kind="%s"><title>%s: %s</title>'
                   '<text x="%d" y="%d" text-anchor="end" %s>%s</text>'
                   '<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                   '<text x="%.1f" y="%d" %s>%s</text></g>'
                   % (esc(kind), esc(label), esc(shown), left - 6, y + 14, FONT, esc(label), left, y, w, bar,
                      colour(kind, kinds), left + w + 6, y + 14, FONT, esc(shown)))
    out.append('<text x="%d" y="%d" %s>%s</text>' % (left, height - 6, FONT, esc(unit_label)))
    out.append("</svg>")
    return "".join(out)


def kind_bars(report):
    totals = {}
    for op in report.operations:
        b, t = totals.get(op.key[1], (0, 0))
        totals[op.key[1]] = (b + op.bytes, t + op.host_ns)
    if not totals:
        return ""
    kinds = sorted(totals)
    by_bytes = sorted(totals, key=lambda k: (-totals[k][0], k))
    by_time = sorted(totals, key=lambda k: (-totals[k][1], k))
    return (bar_chart("bytes-by-kind", "bytes by host memory kind",
                      [(k, k, totals[k][0], "{:,.3f} MB".format(totals[k][0] / 1e6)) for k in by_bytes],
                      "MB (10^6 bytes), all directions", kinds) +
            bar_chart("time-by-kind", "host time by host memory kind",
                      [(k, k, totals[k][1], "{:,.3f} ms".format(totals[k][1] / 1e6)) for k in by_time],
                      "ms inside the copy calls, all directions", kinds))


def class_bars(report):
    """Where the copy time went: host time per (operation, mode), largest first."""
    if not report.classes:
        return ""
    kinds = sorted({c.key[1] for c in report.classes})
    rows = []
    for c in report.classes[:16]:
        direction, kind, action, _ = c.key
        label = "%s %s%s, %s" % (direction, kind, "" if action == "pass" else " [%s]" % action, c.mode)
        share = 100.0 * c.host_ns / report.total_ns if report.total_ns else 0.0
        gbps, source = c.gbps()
        rate = "" if gbps is None else ", %.2f GB/s (%s)" % (gbps, source)
        rows.append((label, kind, c.host_ns, "{:,.3f} ms, {:.1f} %{}".format(c.host_ns / 1e6, share, rate)))
    return bar_chart("where-time-went", "host time inside the copy calls", rows,
                     "host time inside the copy calls (ms); share of all copy time", kinds, width=1100)


def _lane_columns(lane, offset_ns, scale, columns):
    """[busy ns, copies, {kind: busy ns}] per pixel column of one lane."""
    cols = [None] * columns
    kinds = list(lane.busy.items())
    width = lane.width
    for i in range(lane.nbins):
        starts = lane.starts[i]
        busy = [(kind, values[i]) for kind, values in kinds if values[i]]
        if not starts and not busy:
            continue
        x0 = (offset_ns + i * width) * scale
        x1 = (offset_ns + (i + 1) * width) * scale
        first, last = int(x0), min(columns - 1, max(int(x0), int(math.ceil(x1)) - 1))
        span = max(x1 - x0, 1e-9)
        for col in range(max(first, 0), last + 1):
            share = (min(x1, col + 1) - max(x0, col)) / span if last > first else 1.0
            c = cols[col]
            if c is None:
                c = cols[col] = [0.0, 0.0, {}]
            c[1] += starts * share if col == first else 0.0
            for kind, ns in busy:
                c[0] += ns * share
                c[2][kind] = c[2].get(kind, 0.0) + ns * share
    return cols


def timeline(report):
    """Lanes per process, device and stream (see the module's contract)."""
    base = report.base_wall_ns
    lanes = []
    for p in report.processes:
        for (device, stream), lane in sorted(p.lanes.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
            lanes.append((p, device, stream, lane))
    if not lanes:
        return "<p>No transfer records to draw.</p>"
    hidden = 0
    if len(lanes) > MAX_LANES:                 # whole processes, in rank order
        drawn = {id(p) for p, _, _, _ in lanes[:MAX_LANES]}
        if len(drawn) > 1:
            drawn.discard(id(lanes[MAX_LANES][0]))   # no process drawn in part
        hidden = sum(1 for p in report.processes if p.lanes and id(p) not in drawn)
        lanes = [l for l in lanes if id(l[0]) in drawn][:MAX_LANES]
    end = max([p.start_wall_ns - base + p.end_ns for p, _, _, _ in lanes] + [1])
    left, right, top = 330, 30, 30
    pw = TIMELINE_WIDTH
    width = left + pw + right
    height = top + LANE_HEIGHT * len(lanes) + 50
    scale = pw / end
    kinds = sorted({k for _, _, _, lane in lanes for k in lane.busy})
    out = [_svg_open("timeline", width, height, "copies over time, one lane per process, device and stream")]
    step = nice_step(end / 1e6, 10)
    tick = 0.0
    bottom = top + LANE_HEIGHT * len(lanes)
    while tick * 1e6 <= end * 1.0001:
        x = left + tick * 1e6 * scale
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>' % (x, top - 4, x, bottom))
        out.append('<text x="%.1f" y="%d" text-anchor="middle" %s>%g</text>' % (x, bottom + 16, FONT, round(tick, 9)))
        tick += step
    out.append('<text class="axis-label" x="%d" y="%d" text-anchor="middle" %s>time since the first process '
               'started (ms, wall clock)</text>' % (left + pw // 2, height - 8, FONT))
    previous = None
    for row, (p, device, stream, lane) in enumerate(lanes):
        y = top + row * LANE_HEIGHT
        if p is not previous:
            if previous is not None:
                out.append("</g>")
            syncs = ", ".join("%s %d (%.3f ms)" % (call, n, ns / 1e6) for call, n, ns in p.syncs)
            out.append('<g class="process-row" data-pid="%s"><title>%s%s</title>'
                       % (esc(p.pid), esc(p.label()), esc("; sync calls: " + syncs if syncs else "")))
            out.append('<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#bbbbbb"/>' % (y, left + pw, y))
            previous = p
            label = "rank %s pid %s %s" % (p.rank, p.pid, p.host)
        else:
            label = ""
        lane_name = "sync calls" if stream == "sync calls" else "dev %s %s" % ("?" if device is None else device,
                                                                              stream)
        out.append('<text x="%d" y="%d" %s>%s</text><text x="%d" y="%d" text-anchor="end" %s>%s</text>'
                   % (4, y + 11, FONT, esc(label[:30]), left - 6, y + 11, FONT, esc(lane_name[:24])))
        cols = _lane_columns(lane, p.start_wall_ns - base, scale, pw)
        column_ns = 1 / scale
        paths = {}
        for x, c in enumerate(cols):
            if c is None:
                continue
            share = min(1.0, c[0] / column_ns)
            if c[1] > 0:
                share = max(share, MIN_TICK)
            h = max(1, int(round(share * (LANE_HEIGHT - 2))))
            kind = max(c[2], key=lambda k: c[2][k]) if c[2] else "unknown"
            paths.setdefault(kind, []).append((x, h))
        for kind, bars in sorted(paths.items()):
            d, run = [], None
            for x, h in bars + [(None, None)]:         # runs of equal height become one rectangle
                if run and x == run[0] + run[1] and h == run[2]:
                    run[1] += 1
                    continue
                if run:
                    d.append("M%d %dh%dv%dh-%dz" % (left + run[0], y + LANE_HEIGHT - 1 - run[2], run[1], run[2], run[1]))
                run = [x, 1, h] if x is not None else None
            out.append('<path class="copy" data-kind="%s" fill="%s" d="%s"><title>%s: %s copies, %.3f ms copying'
                       '</title></path>' % (esc(kind), colour(kind, kinds), "".join(d), esc(lane_name),
                                            "{:,}".format(lane.copies), lane.total_busy / 1e6))
        if not cols or all(c is None for c in cols):
            out.append('<text x="%d" y="%d" %s fill="#777777">no copies drawn</text>' % (left + 6, y + 11, FONT))
    out.append("</g>")
    for i, kind in enumerate(kinds):            # the legend, in one line above the lanes
        out.append('<g class="legend-item"><rect x="%d" y="8" width="12" height="12" fill="%s"/>'
                   '<text x="%d" y="19" %s>%s</text></g>' % (left + 130 * i, colour(kind, kinds), left + 130 * i + 18,
                                                             FONT, esc(kind)))
    out.append("</svg>")
    note = ""
    if hidden:
        note = ('<p class="note">The lanes of %d more processes are not drawn (at most %d lanes, whole processes in '
                'rank order): --rank, --host or --pid choose which.</p>' % (hidden, MAX_LANES))
    return '<div class="scroll">%s</div>%s' % ("".join(out), note)
