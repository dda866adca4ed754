"""logs.py: what a pinshim log is (format 1) and how to read its lines.

Contract:
- expand(arguments) -> the log files named by files, folders (their *.jsonl) and glob patterns,
  each once; InputError when an argument names nothing.
- first_header(path) -> the file's first record, checked to be a format-1 pinshim header (read
  before the long pass, so an unusable file stops the report at once); InputError otherwise.
- open_log(path), then for each raw line (aggregate.scan_file runs this loop): FAST_MATCH(raw)
  for a transfer line in the shim's own layout (several times as fast as json.loads), giving the
  lean tuple; other_record(...) for any other line: (type, payload) with a transfer's full tuple
  or another record's dict, or None for a blank or bad line (reported through warn as
  "FILE:LINE: what is wrong; line skipped"); a header of another format raises InputError.
- full_fields(raw), lean_of(full), what_where(what, where): the conversions between layouts.
Both paths give the same fields for the same record (a test checks it)."""
import glob
import json
import os
import re

FORMAT = 1


class InputError(Exception):
    """Input the report cannot use at all (the caller exits with status 2)."""


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


# A transfer record, in two layouts:
# - full (FIELDS, the shim's field order): a tuple of each field's text (integers as decimal text,
#   async as "true"/"false", None for null or absent); what the SQLite and trace exports write.
# - lean (indices T_NS, HOST_NS, DIR, BYTES, WHAT, WHERE, DEVICE_NS): bytes taken straight out of
#   the line, for the aggregation's hot path, where every string costs time. WHAT is the text of
#   the fields src_kind to action ("src_kind":"pageable",...,"action":"pass"), WHERE that of site,
#   func, py_site and py_func: the aggregation groups copies by them as they are and decodes them
#   (what_where) once per group.
FIELDS = ("seq", "t_ns", "host_ns", "entry", "dir", "bytes", "src_kind", "dst_kind", "host_kind", "async",
          "stream", "device", "action", "tid", "site", "func", "py_site", "py_func", "device_ns")
(T_NS, HOST_NS, DIR, BYTES, WHAT, WHERE, DEVICE_NS) = range(7)
F = {name: i for i, name in enumerate(FIELDS)}

# The shim's transfer line (shim/log.c, format_transfer): fixed field order, strings without
# escapes or control characters (a line with a backslash anywhere takes the json.loads path).
# py_site and py_func (the Python line, in a CPython process) are accepted before device_ns; any
# other layout takes the json.loads path too.
_STR = r'"[^"\x00-\x1f]*"'
_FULL = re.compile(
    r'\{"type":"transfer","seq":(\d+),"t_ns":(\d+),"host_ns":(\d+),"entry":"([^"\x00-\x1f]*)","dir":'
    r'"([^"\x00-\x1f]*)","bytes":(\d+),"src_kind":"([^"\x00-\x1f]*)","dst_kind":"([^"\x00-\x1f]*)",'
    r'"host_kind":"([^"\x00-\x1f]*)","async":(true|false),"stream":"([^"\x00-\x1f]*)",'
    r'"device":(?:(-?\d+)|null),"action":"([^"\x00-\x1f]*)","tid":(?:(-?\d+)|null),'
    r'"site":(?:"([^"\x00-\x1f]*)"|null),"func":(?:"([^"\x00-\x1f]*)"|null)'
    r'(?:,"py_site":(?:"([^"\x00-\x1f]*)"|null))?(?:,"py_func":(?:"([^"\x00-\x1f]*)"|null))?'
    r'(?:,"device_ns":(\d+))?\}\s*$')
_LEAN = re.compile((
    r'\{"type":"transfer","seq":\d+,"t_ns":(\d+),"host_ns":(\d+),"entry":' + _STR + r',"dir":'
    r'"([^"\x00-\x1f]*)","bytes":(\d+),("src_kind":' + _STR + r',"dst_kind":' + _STR + r',"host_kind":' + _STR +
    r',"async":(?:true|false),"stream":' + _STR + r',"device":(?:-?\d+|null),"action":' + _STR + r'),'
    r'"tid":(?:-?\d+|null),("site":(?:' + _STR + r'|null),"func":(?:' + _STR + r'|null)'
    r'(?:,"py_site":(?:' + _STR + r'|null))?(?:,"py_func":(?:' + _STR + r'|null))?)(?:,"device_ns":(\d+))?\}\s*$'
).encode())
FAST_MATCH = _LEAN.match   # on a raw line (bytes) without a backslash, after the header: the lean match


def full_fields(raw):
    """The full tuple of a line that FAST_MATCH took."""
    return _FULL.match(raw.decode("utf-8", errors="replace")).groups()


def _lit(value):
    return "null" if value is None else json.dumps(value)


def lean_of(full):
    """The lean tuple of a full one (a line that took the json.loads path)."""
    f = full
    what = '"src_kind":%s,"dst_kind":%s,"host_kind":%s,"async":%s,"stream":%s,"device":%s,"action":%s' % (
        _lit(f[F["src_kind"]]), _lit(f[F["dst_kind"]]), _lit(f[F["host_kind"]]), f[F["async"]],
        _lit(f[F["stream"]]), f[F["device"]] or "null", _lit(f[F["action"]]))
    where = '"site":%s,"func":%s' % (_lit(f[F["site"]]), _lit(f[F["func"]]))
    if f[F["py_site"]] is not None:
        where += ',"py_site":%s' % _lit(f[F["py_site"]])
    if f[F["py_func"]] is not None:
        where += ',"py_func":%s' % _lit(f[F["py_func"]])
    device_ns = f[F["device_ns"]]
    return (f[F["t_ns"]].encode(), f[F["host_ns"]].encode(), f[F["dir"]].encode("utf-8", "surrogatepass"),
            f[F["bytes"]].encode(), what.encode(), where.encode(), None if device_ns is None else device_ns.encode())


def py_label(py_site, py_func):
    """A Python site as the report shows it: "file:line in function" (py_site alone when the log
    has no py_func; None when it has no py_site)."""
    if not isinstance(py_site, str):
        return None
    return "%s in %s" % (py_site, py_func) if isinstance(py_func, str) else py_site


def what_where(what, where):
    """The fields in a lean tuple's WHAT and WHERE: src_kind, dst_kind, host_kind, async (bool),
    stream, device (text or None), action, site, func, py_site (py_label's text)."""
    r = json.loads("{%s,%s}" % (what.decode("utf-8", errors="replace"), where.decode("utf-8", errors="replace")))
    device = r.get("device")
    return {"src_kind": r["src_kind"], "dst_kind": r["dst_kind"], "host_kind": r["host_kind"],
            "async": r["async"] is True, "stream": r["stream"], "device": None if device is None else str(device),
            "action": r["action"], "site": r.get("site"), "func": r.get("func"),
            "py_site": py_label(r.get("py_site"), r.get("py_func"))}


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
    for name in ("dir", "host_kind", "stream", "site", "func", "py_site", "py_func"):
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


def other_record(path, number, raw, text, seen_header, warn):
    """(type, payload) of a line that FAST_MATCH did not take, or None for a line to skip: blank,
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
