"""logs.py: finds pinshim logs (files, folders, globs) and reads them into Process objects.
A bad line is reported as FILE:LINE and skipped; a file that is not a format-1 pinshim log, or
arguments that name no log at all, raise InputError (the caller exits with status 2)."""
import glob
import json
import os
import sys

FORMAT = 1
TRANSFER_INTS = ("t_ns", "host_ns", "bytes")
TRANSFER_STRS = ("dir", "host_kind")
TRANSFER_DEFAULTS = {"seq": None, "entry": "?", "src_kind": "unknown", "dst_kind": "unknown",
                     "async": False, "stream": None, "device": None, "action": "pass", "tid": None,
                     "site": None, "func": None, "device_ns": None}


class InputError(Exception):
    """Input the report cannot use at all."""


WARNINGS = []   # every warning given, for the HTML page's input notes


def warn(message):
    WARNINGS.append(message)
    sys.stderr.write("pinshim-report: %s\n" % message)


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class Process:
    """One process's log: its header, driver record, transfer records and summary (or None)."""

    def __init__(self, path, line, header):
        self.path, self.line, self.header = path, line, header
        self.driver = None
        self.transfers = []
        self.summary = None

    def field(self, name, default=None):
        value = self.header.get(name)
        return default if value is None else value

    @property
    def pid(self):
        return self.field("pid", 0)

    @property
    def host(self):
        return str(self.field("host", "?"))

    @property
    def rank(self):
        return str(self.field("rank", "na"))

    @property
    def program(self):
        if self.summary and isinstance(self.summary.get("program"), str):
            return self.summary["program"]
        cmdline = self.header.get("cmdline")
        if isinstance(cmdline, list) and cmdline:
            return str(cmdline[0])
        return "?"

    @property
    def start_wall_ns(self):
        value = self.header.get("start_wall_ns")
        return value if is_int(value) else 0

    @property
    def dropped(self):
        value = (self.summary or {}).get("dropped")
        return value if is_int(value) else 0

    def label(self):
        return "pid %s rank %s on %s (%s)" % (self.pid, self.rank, self.host, self.program)


def expand(arguments):
    """The log files the arguments name: files as given, folders' *.jsonl, glob patterns."""
    files = []
    for arg in arguments:
        if os.path.isdir(arg):
            found = sorted(p for p in glob.glob(os.path.join(glob.escape(arg), "*.jsonl"))
                           if os.path.isfile(p))
            if not found:
                raise InputError("%s: no *.jsonl log in this folder" % arg)
            files.extend(found)
        elif os.path.exists(arg):
            files.append(arg)
        elif glob.has_magic(arg):
            found = sorted(p for p in glob.glob(arg) if os.path.isfile(p))
            if not found:
                raise InputError("%s: no file matches" % arg)
            files.extend(found)
        else:
            raise InputError("%s: no such file or folder" % arg)
    unique = []
    for path in files:
        if path not in unique:
            unique.append(path)
    return unique


def check_header(path, number, record):
    if record.get("tool") != "pinshim":
        raise InputError("%s:%d: not a pinshim log (the header does not name tool \"pinshim\")"
                         % (path, number))
    if record.get("format") != FORMAT:
        raise InputError("%s: log format %r; this pinshim-report reads format %d only "
                         "(use the pinshim-report of the version that wrote it)"
                         % (path, record.get("format"), FORMAT))


def check_transfer(record):
    """None if the record is usable, else what is wrong with it; fills optional fields."""
    for name in TRANSFER_INTS:
        if not is_int(record.get(name)) or record[name] < 0:
            return "transfer record: field '%s' missing or not a non-negative integer" % name
    for name in TRANSFER_STRS:
        if not isinstance(record.get(name), str):
            return "transfer record: field '%s' missing or not a string" % name
    for name, default in TRANSFER_DEFAULTS.items():
        record.setdefault(name, default)
    if not is_int(record["device_ns"]):
        record["device_ns"] = None
    return None


def parse_line(text):
    """The JSON object on a line, or raises ValueError saying what is wrong."""
    try:
        record = json.loads(text)
    except ValueError as e:
        raise ValueError("not valid JSON (%s)" % e) from None
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        raise ValueError("not a pinshim record (no \"type\")")
    return record


def read_file(path):
    """The processes in one log file (usually one; more if a file was appended to). Read line by
    line: a log of millions of records is never held as text."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    with f:
        return read_lines(path, f)


def read_lines(path, lines):
    """Processes from an iterable of raw lines (bytes); bad lines are reported and skipped."""
    processes, current, seen = [], None, False
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        seen = True
        try:
            # Invalid UTF-8 (a command line's bytes) becomes U+FFFD rather than costing the line.
            record = parse_line(raw.decode("utf-8", errors="replace"))
        except ValueError as e:
            if current is None:
                raise InputError("%s:%d: not a pinshim log (the first line is not a pinshim header: %s)"
                                 % (path, number, e))
            if not raw.endswith(b"\n"):
                warn("%s:%d: truncated last line (the file ends inside a record); line skipped"
                     % (path, number))
            else:
                warn("%s:%d: %s; line skipped" % (path, number, e))
            continue
        kind = record["type"]
        if kind == "header":
            check_header(path, number, record)
            current = Process(path, number, record)
            processes.append(current)
        elif current is None:
            raise InputError("%s:%d: not a pinshim log (first record is %r, not a header)"
                             % (path, number, kind))
        elif kind == "transfer":
            problem = check_transfer(record)
            if problem:
                warn("%s:%d: %s; line skipped" % (path, number, problem))
            else:
                current.transfers.append(record)
        elif kind == "summary":
            current.summary = record
        elif kind == "driver":
            current.driver = record
        # Other record types are left for later versions of this report.
    if not seen:
        raise InputError("%s: empty file, not a pinshim log" % path)
    for p in processes:
        if p.summary is None:
            warn("%s: %s has no summary record: the process did not exit normally (killed?); "
                 "using its %d transfer records" % (path, p.label(), len(p.transfers)))
        elif p.dropped:
            warn("%s: %s dropped %d transfer records; per-transfer tables and charts miss them"
                 % (path, p.label(), p.dropped))
    return processes


def load(files):
    """All processes in the log files (from expand). Raises InputError listing every unusable file."""
    processes, errors = [], []
    for path in files:
        try:
            processes.extend(read_file(path))
        except InputError as e:
            errors.append(str(e))
    if errors:
        raise InputError("\n".join(errors))
    return sorted(processes, key=order)


def order(p):
    """Processes in rank order (numeric ranks first), then host, start time, pid."""
    numeric = p.rank.isdigit()
    return (not numeric, int(p.rank) if numeric else 0, p.rank, p.host, p.start_wall_ns, str(p.pid))
