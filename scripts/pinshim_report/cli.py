"""cli.py: pinshim-report's command line: which logs, which selection, which outputs, exit
statuses (0 done, 1 an output file could not be written, 2 no usable input or a bad option).
It checks every file's header first (an unusable file stops the report before the long pass),
streams the files (stream.py), derives the views once (analysis.py) and writes the outputs."""
import argparse
import os
import shutil
import sys
import tempfile

from . import FORMAT_SCHEMA, VERSION, aggregate, analysis, logs, stream, text

EXIT_OUTPUT = 1
EXIT_INPUT = 2
LANE_BUDGET_BYTES = stream.LANE_BUDGET_BYTES
LANES_PER_PROCESS_GUESS = 4
LANE_BIN_BYTES_GUESS = 24


def id_list(text):
    """'0,2-5,9' -> {'0','2','3','4','5','9'}; other words are kept as they are."""
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, dash, high = part.partition("-")
        if dash and low.isdigit() and high.isdigit() and int(low) <= int(high):
            if int(high) - int(low) > 1_000_000:
                raise argparse.ArgumentTypeError("range %s is too long" % part)
            out.update(str(i) for i in range(int(low), int(high) + 1))
        else:
            out.add(part)
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


def seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number of seconds" % text) from None
    if value < 0:
        raise argparse.ArgumentTypeError("'%s' is negative" % text)
    return value


def positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a whole number" % text) from None
    if value < 1:
        raise argparse.ArgumentTypeError("'%s' is not at least 1" % text)
    return value


MAX_DEFAULT_JOBS = 8       # each worker holds about 20 MB: 8 keep the report well under 256 MB


def default_jobs():
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_JOBS))


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="pinshim-report",
        description="Reads pinshim logs (files, folders of *.jsonl, glob patterns) of any number of processes "
                    "and hosts, streaming them, and prints tables of the host<->device copies: where the copy "
                    "time went, what staging and pin-on-reuse saved, call sites and their fixes. --html, "
                    "--trace, --sqlite and --csv write a page with charts, a Chrome trace, an SQLite database "
                    "and CSV files.")
    parser.add_argument("logs", nargs="*", metavar="LOG", help="log file, folder (its *.jsonl) or glob pattern")
    parser.add_argument("--version", action="version",
                        version="pinshim-report %s (reads log format %d)" % (VERSION, logs.FORMAT))
    parser.add_argument("--schema", action="store_true",
                        help="print the JSON Schema of the log format (format %d) and exit" % logs.FORMAT)
    out = parser.add_argument_group("outputs (text tables on stdout when none is given)")
    out.add_argument("--html", metavar="FILE", help="write one self-contained HTML page with SVG charts")
    out.add_argument("--trace", metavar="FILE", help="write a Chrome trace (JSON) for Perfetto or chrome://tracing")
    out.add_argument("--sqlite", metavar="FILE", help="write an SQLite database: processes, transfers and the "
                     "summaries' rows (replaces FILE)")
    out.add_argument("--csv", metavar="DIR", help="write every table as a CSV file in DIR (raw bytes and ns)")
    out.add_argument("--text", action="store_true", help="print the text tables too when another output is given")
    out.add_argument("--top", type=positive, default=10, metavar="N", help="call sites shown (default 10)")
    out.add_argument("--no-symbols", action="store_true",
                     help="leave call sites as module+offset (by default each module's file is found, its build-id "
                     "checked against the log's, and its sites named with addr2line: function, file:line)")
    sel = parser.add_argument_group("selection (repeatable; lists like 0,2,5-7)")
    sel.add_argument("--rank", type=id_list, action="append", metavar="LIST", help="only these ranks")
    sel.add_argument("--pid", type=id_list, action="append", metavar="LIST", help="only these process ids")
    sel.add_argument("--host", action="append", metavar="PATTERN",
                     help="only hosts matching this glob pattern (comma-separated patterns allowed)")
    sel.add_argument("--device", type=id_list, action="append", metavar="LIST",
                     help="only copies made on these device ordinals")
    sel.add_argument("--since", type=seconds, metavar="SEC",
                     help="only copies that started at least SEC seconds after the earliest process start")
    sel.add_argument("--until", type=seconds, metavar="SEC",
                     help="only copies that started before SEC seconds after the earliest process start")
    run = parser.add_argument_group("running")
    run.add_argument("--jobs", type=positive, default=default_jobs(), metavar="N",
                     help="files read at once, one core each (default: the cores available, at most %d: %d here)"
                     % (MAX_DEFAULT_JOBS, default_jobs()))
    run.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                     help="progress line on stderr: auto (after %g s), always, never" % stream.PROGRESS_AFTER_S)
    args = parser.parse_args(argv)
    if not args.logs and not args.schema:
        parser.error("no LOG given")
    if args.since is not None and args.until is not None and args.until <= args.since:
        parser.error("--until must be later than --since")
    return args


def union(lists):
    if not lists:
        return None
    out = set()
    for values in lists:
        out |= values
    return out


def selection_of(args):
    hosts = None
    if args.host:
        hosts = {h.strip() for arg in args.host for h in arg.split(",") if h.strip()}
    return aggregate.Selection(
        ranks=union(args.rank), pids=union(args.pid), hosts=hosts, devices=union(args.device),
        since_ns=None if args.since is None else int(args.since * 1e9),
        until_ns=None if args.until is None else int(args.until * 1e9))


def lane_bins(files):
    """Timeline bins per lane so that every file's lanes fit the lane budget (a power of two)."""
    per_bin = max(1, files) * LANES_PER_PROCESS_GUESS * LANE_BIN_BYTES_GUESS
    bins = 2048
    while bins > 64 and bins * per_bin > LANE_BUDGET_BYTES:
        bins //= 2
    return bins


def write_output(path, render):
    """render(path) writes the file; a failure is a message and exit status 1."""
    try:
        render(path)
    except OSError as e:
        stream.warn("%s: cannot write: %s" % (path, e.strerror or e))
        sys.exit(EXIT_OUTPUT)
    stream.warn("wrote %s" % path)


def write_text(path, content):
    with open(path, "w", encoding="utf-8") as f:
        f.write(content)


def parts_folder(outputs):
    """A scratch folder for the workers' part files, next to the first output (same file system)."""
    target = os.path.dirname(os.path.abspath(outputs[0])) or "."
    try:
        return tempfile.mkdtemp(prefix=".pinshim-report-", dir=target)
    except OSError as e:
        stream.warn("%s: cannot write: %s" % (outputs[0], e.strerror))
        sys.exit(EXIT_OUTPUT)


def main(argv):
    args = parse_args(argv)
    if args.schema:
        with open(FORMAT_SCHEMA, encoding="utf-8") as f:
            sys.stdout.write(f.read())
        return 0
    try:
        files = logs.expand(args.logs)
    except logs.InputError as e:
        stream.warn(str(e))
        return EXIT_INPUT
    headers, errors = [], []
    for path in files:
        try:
            headers.append(logs.first_header(path))
        except logs.InputError as e:
            errors.append(str(e))
    if errors:
        for line in errors:
            stream.warn(line)
        return EXIT_INPUT
    starts = [h["start_wall_ns"] for h in headers if logs.is_int(h.get("start_wall_ns"))]
    selection = selection_of(args)
    options = aggregate.Options(selection, min(starts) if starts else 0, lane_bins(len(files)))
    exports = [p for p in (args.sqlite, args.trace) if p]
    scratch = parts_folder(exports) if exports else None
    try:
        specs = ([("sqlite", scratch)] if args.sqlite else []) + ([("trace", scratch)] if args.trace else [])
        result = stream.scan(files, options, specs, args.jobs, args.progress)
        if result.errors:
            for message in result.errors:
                for line in message.splitlines():
                    stream.warn(line)
            return EXIT_INPUT
        report = analysis.build(result, files, selection, args.top, options.base_wall_ns, not args.no_symbols)
        if args.sqlite:
            from . import sqlite_export
            write_output(args.sqlite, lambda path: sqlite_export.finish(scratch, report, path))
        if args.trace:
            from . import trace
            write_output(args.trace, lambda path: trace.finish(scratch, report, options.base_wall_ns, path))
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.csv:
        write_output(args.csv, lambda folder: text.write_csv(report, folder))
    if args.html:
        from . import html_page
        write_output(args.html, lambda path: write_text(path, html_page.render(report)))
    if args.text or not (args.html or args.trace or args.sqlite or args.csv):
        sys.stdout.write(text.render(report))
    return 0
