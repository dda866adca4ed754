"""logs.py: what a pinshim log is (format 1) and how to read one, record by record.

Contract:
- expand(arguments) -> the log files named by files, folders (their *.jsonl) and glob patterns,
  each once; InputError when an argument names nothing.
- first_header(path) -> the file's first record, checked to be a format-1 pinshim header (read
  before the long pass, so an unusable file stops the report at once); InputError otherwise.
- records(path, warn) -> yields (line number, type, payload) for every usable line: a header,
  driver, summary or other record as the parsed dict, a transfer record as its full tuple (FIELDS).
  A bad line is reported through warn("FILE:LINE: what is wrong; line skipped") and skipped; a
  header of another format raises InputError. The file is read line by line: memory does not
  grow with its size.
A transfer line in the shim's own field order is read with one regular expression (several times
as fast as json.loads); any other line goes through json.loads and the same checks."""
import glob
import json
import os
import re

FORMAT = 1


class InputError(Exception):
    """Input the report cannot use at all (the caller exits with status 2)."""


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


# A transfer record as a tuple of its fields' text (integers as decimal text, async as
# "true"/"false", None for null or absent), in two layouts:
# - full (FIELDS, the shim's field order): what the SQLite and trace exports write;
# - lean (LEAN, the fields the aggregation reads, indices T_NS...): what the hot path gets, since
#   every string taken out of a line costs time.
FIELDS = ("seq", "t_ns", "host_ns", "entry", "dir", "bytes", "src_kind", "dst_kind", "host_kind", "async",
          "stream", "device", "action", "tid", "site", "func", "py_site", "device_ns")
LEAN = ("t_ns", "host_ns", "dir", "bytes", "host_kind", "async", "stream", "device", "action", "site", "func",
        "py_site", "device_ns")
(T_NS, HOST_NS, DIR, BYTES, HOST_KIND, ASYNC, STREAM, DEVICE, ACTION, SITE, FUNC, PY_SITE, DEVICE_NS) = range(len(LEAN))
_LEAN_FROM_FULL = tuple(FIELDS.index(name) for name in LEAN)


def lean_of(full):
    """The lean tuple of a full one."""
    return tuple(full[i] for i in _LEAN_FROM_FULL)


# The shim's transfer line (shim/log.c, format_transfer): fixed field order, strings without
# escapes (a line with a backslash anywhere takes the json.loads path). py_site, which a later
# shim may add, is accepted before device_ns; any other layout takes the json.loads path too.
def _transfer_pattern(wanted):
    def s(name):     # no quote, no control character: what json.loads takes as is
        return r'"([^"\x00-\x1f]*)"' if name in wanted else r'"[^"\x00-\x1f]*"'

    def n(name, signed=False):
        digits = r'-?\d+' if signed else r'\d+'
        return "(%s)" % digits if name in wanted else digits

    return re.compile(
        r'\{"type":"transfer","seq":' + n("seq") + r',"t_ns":' + n("t_ns") + r',"host_ns":' + n("host_ns") +
        r',"entry":' + s("entry") + r',"dir":' + s("dir") + r',"bytes":' + n("bytes") + r',"src_kind":' +
        s("src_kind") + r',"dst_kind":' + s("dst_kind") + r',"host_kind":' + s("host_kind") +
        r',"async":(true|false),"stream":' + s("stream") + r',"device":(?:' + n("device", True) + r'|null)' +
        r',"action":' + s("action") + r',"tid":(?:' + n("tid", True) + r'|null),"site":(?:' + s("site") +
        r'|null),"func":(?:' + s("func") + r'|null)(?:,"py_site":(?:' + s("py_site") + r'|null))?' +
        r'(?:,"device_ns":' + n("device_ns") + r')?\}\s*$')


_FAST = _transfer_pattern(LEAN)
_FULL = _transfer_pattern(FIELDS)
FAST_MATCH = _FAST.match


def full_fields(text):
    """The full tuple of a line that fast_match took."""
    return _FULL.match(text).groups()


TRANSFER_INTS = ("t_ns", "host_ns", "bytes")
TRANSFER_STRS = ("dir", "host_kind")


def _opt_str(record, name, default=None):
    value = record.get(name)
    return default if value is None else str(value)


def _opt_int(record, name):
    value = record.get(name)
    return value if is_int(value) else None


def transfer_from_record(record):
    """The full tuple of a parsed transfer record; raises ValueError saying what is wrong."""
    for name in TRANSFER_INTS:
        if not is_int(record.get(name)) or record[name] < 0:
            raise ValueError("transfer record: field '%s' missing or not a non-negative integer" % name)
    for name in TRANSFER_STRS:
        if not isinstance(record.get(name), str):
            raise ValueError("transfer record: field '%s' missing or not a string" % name)
    device_ns = _opt_int(record, "device_ns")
    fields = {"async": "true" if record.get("async") is True else "false",
              "device_ns": None if device_ns is None or device_ns < 0 else str(device_ns),
              "action": _opt_str(record, "action", "pass"), "entry": _opt_str(record, "entry", "?"),
              "src_kind": _opt_str(record, "src_kind", "unknown"), "dst_kind": _opt_str(record, "dst_kind", "unknown")}
    for name in ("seq", "t_ns", "host_ns", "bytes", "device", "tid"):
        value = _opt_int(record, name)
        fields[name] = None if value is None else str(value)
    for name in ("dir", "host_kind", "stream", "site", "func", "py_site"):
        fields[name] = _opt_str(record, name)
    return tuple(fields[name] for name in FIELDS)


def parse_line(text):
    """The JSON object on a line, or raises ValueError saying what is wrong."""
    try:
        record = json.loads(text)
    except ValueError as e:
        raise ValueError("not valid JSON (%s)" % e) from None
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        raise ValueError("not a pinshim record (no \"type\")")
    return record


def check_header(path, number, record):
    if record.get("tool") != "pinshim":
        raise InputError("%s:%d: not a pinshim log (the header does not name tool \"pinshim\")" % (path, number))
    if record.get("format") != FORMAT:
        raise InputError("%s: log format %r; this pinshim-report reads format %d only "
                         "(use the pinshim-report of the version that wrote it)"
                         % (path, record.get("format"), FORMAT))


def expand(arguments):
    """The log files the arguments name: files as given, folders' *.jsonl, glob patterns."""
    files = []
    for arg in arguments:
        if os.path.isdir(arg):
            found = sorted(p for p in glob.glob(os.path.join(glob.escape(arg), "*.jsonl")) if os.path.isfile(p))
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
    return list(dict.fromkeys(files))


def first_header(path):
    """The file's first non-blank line as a checked header record."""
    try:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                try:
                    record = parse_line(raw.decode("utf-8", errors="replace"))
                except ValueError as e:
                    raise InputError("%s:%d: not a pinshim log (the first line is not a pinshim header: %s)"
                                     % (path, number, e)) from None
                if record["type"] != "header":
                    raise InputError("%s:%d: not a pinshim log (first record is %r, not a header)"
                                     % (path, number, record["type"]))
                check_header(path, number, record)
                return record
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror)) from None
    raise InputError("%s: empty file, not a pinshim log" % path)


def open_log(path):
    try:
        return open(path, "rb")
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror)) from None


def fast_match(text, seen_header):
    """The match of a transfer line in the shim's layout (after a header), or None. (A line with
    a backslash, an escape, is left to json.loads.)"""
    return FAST_MATCH(text) if seen_header and "\\" not in text else None


def other_record(path, number, raw, text, seen_header, warn):
    """(type, payload) of a line that fast_match did not take, or None for a line to skip: blank,
    or bad (reported through warn). A transfer's payload is its full tuple, another record's the
    parsed dict. Raises InputError for a file that is not a format-1 pinshim log."""
    if not text.strip():
        return None
    try:
        record = parse_line(text)
    except ValueError as e:
        if not seen_header:
            raise InputError("%s:%d: not a pinshim log (the first line is not a pinshim header: %s)"
                             % (path, number, e)) from None
        if not raw.endswith(b"\n"):
            warn("%s:%d: truncated last line (the file ends inside a record); line skipped" % (path, number))
        else:
            warn("%s:%d: %s; line skipped" % (path, number, e))
        return None
    kind = record["type"]
    if kind == "header":
        check_header(path, number, record)
        return kind, record
    if not seen_header:
        raise InputError("%s:%d: not a pinshim log (first record is %r, not a header)" % (path, number, kind))
    if kind == "transfer":
        try:
            return kind, transfer_from_record(record)
        except ValueError as e:
            warn("%s:%d: %s; line skipped" % (path, number, e))
            return None
    return kind, record


def records(path, warn, on_bytes=None):
    """Yields (line number, type, payload) for each usable line of a log (see the module's
    contract). on_bytes(n), if given, is called now and then with the bytes read since its last
    call. (aggregate.scan_file runs the same loop inlined, for speed.)"""
    seen_header = False
    reported = 0
    with open_log(path) as f:
        for number, raw in enumerate(f, 1):
            if not number & 4095 and on_bytes is not None:
                position = f.tell()
                on_bytes(position - reported)
                reported = position
            # Invalid UTF-8 (a command line's bytes) becomes U+FFFD rather than costing the line.
            text = raw.decode("utf-8", errors="replace")
            m = fast_match(text, seen_header)
            if m is not None:
                yield number, "transfer", full_fields(text)
                continue
            got = other_record(path, number, raw, text, seen_header, warn)
            if got is not None:
                seen_header = seen_header or got[0] == "header"
                yield (number,) + got
        if on_bytes is not None:
            on_bytes(f.tell() - reported)
    if not seen_header:
        raise InputError("%s: empty file, not a pinshim log" % path)
