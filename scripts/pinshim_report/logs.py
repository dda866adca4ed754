"""logs.py: what a pinshim log is (format 1) and how to read its lines.

Contract:
- expand(arguments) -> the log files named by files, folders (their *.jsonl) and glob patterns,
  each once; InputError when an argument names nothing.
- first_header(path) -> the file's first record, checked to be a format-1 pinshim header (read
  before the long pass, so an unusable file stops the report at once); InputError otherwise.
- open_log(path), then row_chunks(f, with_line) -> (rows, chunk, unterminated, nbytes) per chunk of
  whole lines: one row (a tuple, indices LINE to OTHER) per line of the bytes `chunk`, in one call
  of the regular expression engine for the whole chunk. A line that may be a transfer in the
  shim's own layout gives its fields' text (several times as fast as json.loads): T_NS, HOST_NS,
  BYTES, KEY (its text from "dir" to its end: copies with the same KEY differ only in seq, times
  and entry), LINE (the whole line when with_line, else b""); any other line, blank or not, gives
  b"" in all of those and its text, without the newline, in OTHER. unterminated: the chunk is the
  file's last line and has no newline; nbytes: the bytes of the file the chunk covers.
- split_key(key) -> (key without device_ns, device_ns or None); key_parts(key) -> (dir, bytes,
  what, where) of the KEY (see lean_of), or None when the line is not in the shim's layout after
  all (then it takes the json.loads path, other_record, as any other line).
- other_record(...) for a line that is not a transfer in the shim's layout: (type, payload) with
  a transfer's full tuple or another record's dict, or None for a blank or bad line (reported
  through warn as "FILE:LINE: what is wrong; line skipped"); a header of another format raises
  InputError.
- full_fields(line), lean_of(full), what_where(what, where): the conversions between layouts.
Both paths give the same fields for the same record (a test checks it, with JSON_ONLY_ENV set:
then every line takes the json.loads path)."""
import glob
import json
import os
import re

FORMAT = 1


class InputError(Exception):
    """Input the report cannot use at all (the caller exits with status 2)."""


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


# A transfer record, in three layouts:
# - full (FIELDS, the shim's field order): a tuple of each field's text (integers as decimal text,
#   async as "true"/"false", None for null or absent); what the SQLite and trace exports write.
# - a row (row_chunks): the text of the fields the aggregation needs, taken straight out of the
#   line as bytes, for its hot path, where every string costs time.
# - lean (lean_of): a row's fields for a line that took the json.loads path.
FIELDS = ("seq", "t_ns", "host_ns", "entry", "dir", "bytes", "src_kind", "dst_kind", "host_kind", "async",
          "stream", "device", "action", "tid", "site", "func", "py_site", "py_func", "device_ns")
F = {name: i for i, name in enumerate(FIELDS)}

# The shim's transfer line (shim/observe/log_records.c, log_record_transfer): fixed field order,
# strings without escapes or control characters (a line with a backslash in a string takes the
# json.loads path), integers as JSON writes them (no leading zeros, which json.loads refuses).
# py_site and py_func (the Python line, in a CPython process) are accepted before device_ns; any
# other layout takes the json.loads path too. The row pattern checks the fields up to "entry" and
# takes the rest as KEY with any character (the regular expression engine's fastest loop):
# key_parts checks a KEY against the layout, once per distinct KEY.
_S = r'"[^"\\\x00-\x1f]*"'
_FULL = re.compile(
    r'\{"type":"transfer","seq":(\d+),"t_ns":(\d+),"host_ns":(\d+),"entry":"([^"\x00-\x1f]*)","dir":'
    r'"([^"\x00-\x1f]*)","bytes":(\d+),"src_kind":"([^"\x00-\x1f]*)","dst_kind":"([^"\x00-\x1f]*)",'
    r'"host_kind":"([^"\x00-\x1f]*)","async":(true|false),"stream":"([^"\x00-\x1f]*)",'
    r'"device":(?:(-?\d+)|null),"action":"([^"\x00-\x1f]*)","tid":(?:(-?\d+)|null),'
    r'"site":(?:"([^"\x00-\x1f]*)"|null),"func":(?:"([^"\x00-\x1f]*)"|null)'
    r'(?:,"py_site":(?:"([^"\x00-\x1f]*)"|null))?(?:,"py_func":(?:"([^"\x00-\x1f]*)"|null))?'
    r'(?:,"device_ns":(\d+))?\}\s*$')
_N = r'(?:0|[1-9][0-9]*)'                  # a JSON number that is a non-negative integer
_WHAT = (r'"src_kind":' + _S + r',"dst_kind":' + _S + r',"host_kind":' + _S + r',"async":(?:true|false),"stream":'
         + _S + r',"device":(?:-?' + _N + r'|null),"action":' + _S)
_WHERE = (r'"site":(?:' + _S + r'|null),"func":(?:' + _S + r'|null)(?:,"py_site":(?:' + _S + r'|null))?'
          r'(?:,"py_func":(?:' + _S + r'|null))?')
_TRANSFER = (r'\{"type":"transfer","seq":' + _N + r',"t_ns":(' + _N + r'),"host_ns":(' + _N + r'),"entry":' + _S
             + r',("dir":' + _S + r',"bytes":(' + _N + r'),.*)\}[ \t\r\f\v]*')
# One row per line: the transfer's groups, or the whole line in OTHER.
(LINE, T_NS, HOST_NS, KEY, BYTES, OTHER) = range(6)
_ROWS = re.compile(('(?m)^(?:()' + _TRANSFER + '|(.*))$').encode())
_ROWS_WITH_LINE = re.compile(('(?m)^(?:(' + _TRANSFER + ')|(.*))$').encode())
_OTHER_ROWS = re.compile(rb'(?m)^()()()()()(.*)$')
_KEY = re.compile(('"dir":"([^"\\\\\x00-\x1f]*)","bytes":(' + _N + '),(' + _WHAT + r'),"tid":(?:-?' + _N + r'|null),('
                   + _WHERE + r')').encode())
DEVICE_NS_FIELD = b',"device_ns":'
JSON_ONLY_ENV = "PINSHIM_REPORT_JSON_ONLY"  # set to 1: every line takes the json.loads path (for tests)
CHUNK_BYTES = 4 << 20


def row_chunks(f, with_line=False):
    """The rows of a log file opened with open_log, a chunk at a time (see the module's contract)."""
    if os.environ.get(JSON_ONLY_ENV) == "1":
        pattern = _OTHER_ROWS
    else:
        pattern = _ROWS_WITH_LINE if with_line else _ROWS
    rest = b""
    while True:
        data = f.read(CHUNK_BYTES)
        if not data:
            if rest:
                yield pattern.findall(rest), rest, True, len(rest)
            return
        if rest:
            data = rest + data
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        chunk, rest = data[:cut], data[cut + 1:]
        # One row per line: no part of the patterns matches a newline, and (.*) matches any line.
        yield pattern.findall(chunk), chunk, False, cut + 1


def split_key(key):
    """(the KEY without its device_ns field, device_ns's text or None)."""
    cut = key.rfind(DEVICE_NS_FIELD)
    if cut >= 0:
        value = key[cut + len(DEVICE_NS_FIELD):]
        if value.isdigit() and (value[:1] != b"0" or value == b"0"):      # as _N
            return key[:cut], value
    return key, None


def key_parts(key):
    """(dir, bytes, what, where) of a KEY without its device_ns (split_key), as bytes; None when
    it is not in the shim's layout (the line then takes the json.loads path)."""
    m = _KEY.fullmatch(key)
    return None if m is None else m.groups()


def full_fields(raw):
    """The full tuple of a line the row pattern took."""
    return _FULL.match(raw.decode("utf-8", errors="replace")).groups()


def _lit(value):
    return "null" if value is None else json.dumps(value)


def lean_of(full):
    """(t_ns, host_ns, dir, bytes, what, where, device_ns) of a full tuple (a line that took the
    json.loads path), as bytes (device_ns None when absent); what is the text of the fields
    src_kind to action ("src_kind":"pageable",...,"action":"pass") and where that of site, func
    and py_site, in the shim's layout: the aggregation groups copies by them and decodes them
    (what_where) once per group."""
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
