"""cli.py: pinshim-report's command line: which logs, which outputs, exit statuses
(0 done, 1 an output file could not be written, 2 no usable input or a bad option)."""
import argparse
import sys

from . import logs, text

EXIT_OUTPUT = 1
EXIT_INPUT = 2


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="pinshim-report",
        description="Reads pinshim logs (files, folders of *.jsonl, glob patterns) and prints tables of the "
                    "host<->device copies; --html and --trace write a page with charts and a Chrome trace.")
    parser.add_argument("logs", nargs="+", metavar="LOG", help="log file, folder (its *.jsonl) or glob pattern")
    parser.add_argument("--html", metavar="FILE", help="write one self-contained HTML page with SVG charts")
    parser.add_argument("--trace", metavar="FILE",
                        help="write a Chrome trace (JSON) for Perfetto or chrome://tracing")
    parser.add_argument("--text", action="store_true",
                        help="print the text tables too when --html or --trace is given")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="call sites shown (default 10)")
    return parser.parse_args(argv)


def write(path, content):
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
    except OSError as e:
        logs.warn("%s: cannot write: %s" % (path, e.strerror))
        sys.exit(EXIT_OUTPUT)
    logs.warn("wrote %s" % path)


def main(argv):
    args = parse_args(argv)
    try:
        files = logs.expand(args.logs)
        processes = logs.load(files)
    except logs.InputError as e:
        for line in str(e).splitlines():
            logs.warn(line)
        return EXIT_INPUT
    if args.html:
        from . import html_page
        write(args.html, html_page.render(processes, files, args.top))
    if args.trace:
        from . import trace
        write(args.trace, trace.render(processes))
    if args.text or not (args.html or args.trace):
        sys.stdout.write(text.render(processes, files, args.top) + "\n")
    return 0
