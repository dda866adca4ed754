"""symbols.py: call sites' native frames (module + offset) as function names and file:line.

The shim logs, once per module, a "module" record: its basename (the name call sites use), full
path, GNU build-id and the link-time address its mapping starts at (base_vaddr). This module finds
the file on this machine, checks that its build-id is the one the log recorded, and asks binutils'
addr2line (-f -C -i: function names from the symbol tables, dynamic ones included, C++
demangled, file:line and inlined frames from the debug information) for all of a module's
addresses in one call. Anything missing gives a note and leaves the site as module+offset.

Contract: symbolize(modules, wanted, tool=None) -> (frames, notes).
  modules: {name: {(path, build_id or None, base_vaddr)}} from the logs' module records;
  wanted:  {name: {offset}} the offsets to name;
  frames:  {(name, offset): Frame}, only for the offsets that could be named;
  notes:   lines saying what could not be done and why (one per module and cause).
Standard library only; never raises for a missing or odd file or tool."""
import os
import re
import shutil
import struct
import subprocess

ADDR2LINE = "addr2line"
TOOL_TIMEOUT_S = 120
NT_GNU_BUILD_ID = 3
PT_NOTE = 4
SHT_NOTE = 7


class Frame:
    """A named frame: function (None when the symbol tables have nothing there), file_line (None
    without debug information), and the frames it was inlined into, innermost first after it:
    [(function, file_line)]."""

    def __init__(self, function, file_line, inlined_into=()):
        self.function, self.file_line, self.inlined_into = function, file_line, list(inlined_into)

    def text(self):
        """'function at file:line', then ', inlined into caller at file:line' for each inlining."""
        parts = []
        for function, file_line in [(self.function, self.file_line)] + self.inlined_into:
            piece = function or "?"
            if file_line:
                piece += " at " + file_line
            parts.append(piece)
        return ", inlined into ".join(parts)


def build_id(path):
    """The hex GNU build-id of an ELF file, '' when it has none, None when it is not a readable ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
                return None
            wide = head[4] == 2
            end = "<" if head[5] == 1 else ">"
            if wide:
                phoff, shoff = struct.unpack_from(end + "QQ", head, 32)
                phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", head, 54)
            else:
                phoff, shoff = struct.unpack_from(end + "II", head, 28)
                phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", head, 42)
            areas = []
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                ph = f.read(phentsize)
                if wide and len(ph) >= 56:
                    p_type, _flags, offset, _va, _pa, size, _mem, align = struct.unpack_from(end + "IIQQQQQQ", ph)
                elif not wide and len(ph) >= 32:
                    p_type, offset, _va, _pa, size, _mem, _flags, align = struct.unpack_from(end + "IIIIIIII", ph)
                else:
                    continue
                if p_type == PT_NOTE:
                    areas.append((offset, size, align))
            if not areas:
                for i in range(shnum):
                    f.seek(shoff + i * shentsize)
                    sh = f.read(shentsize)
                    if wide and len(sh) >= 64:
                        _name, sh_type, _fl, _addr, offset, size, _link, _info, align, _es = struct.unpack_from(
                            end + "IIQQQQIIQQ", sh)
                    elif not wide and len(sh) >= 40:
                        _name, sh_type, _fl, _addr, offset, size, _link, _info, align, _es = struct.unpack_from(
                            end + "IIIIIIIIII", sh)
                    else:
                        continue
                    if sh_type == SHT_NOTE:
                        areas.append((offset, size, align))
            for offset, size, align in areas:
                f.seek(offset)
                found = _build_id_in(f.read(min(size, 1 << 20)), 8 if align == 8 else 4, end)
                if found is not None:
                    return found
            return ""
    except (OSError, struct.error):
        return None


def _build_id_in(notes, align, end):
    at = 0
    while at + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from(end + "III", notes, at)
        name_at = at + 12
        desc_at = name_at + (-(-namesz // align) * align)
        nxt = desc_at + (-(-descsz // align) * align)
        if nxt > len(notes) or nxt <= at:
            return None
        if kind == NT_GNU_BUILD_ID and notes[name_at:name_at + namesz] == b"GNU\x00":
            return notes[desc_at:desc_at + descsz].hex()
        at = nxt
    return None


_DISCRIMINATOR = re.compile(r"\s*\(discriminator \d+\)\s*$")


def _file_line(text):
    text = _DISCRIMINATOR.sub("", text.strip())
    return None if text.startswith("??") else text


def _function(text):
    text = text.strip()
    return None if text in ("", "??") else text


def parse_addr2line(output):
    """{address: Frame} from `addr2line -a -f -C -i` output: each address's line ("0x..."), then
    pairs of lines (function, file:line), the first pair the frame itself, the next ones the
    functions it was inlined into."""
    frames, address, pairs = {}, None, []
    lines = output.splitlines()

    def finish():
        if address is not None and pairs:
            (function, file_line), rest = pairs[0], pairs[1:]
            if function or file_line:
                frames[address] = Frame(function, file_line, rest)

    i = 0
    while i < len(lines):
        line = lines[i]
        if re.fullmatch(r"0x[0-9a-fA-F]+", line.strip()):
            finish()
            address, pairs = int(line.strip(), 16), []
            i += 1
            continue
        if i + 1 < len(lines):
            pairs.append((_function(line), _file_line(lines[i + 1])))
        i += 2
    finish()
    return frames


def symbolize(modules, wanted, tool=None):
    """See the module's contract."""
    frames, notes = {}, []
    tool = tool or os.environ.get("PINSHIM_ADDR2LINE") or ADDR2LINE
    executable = shutil.which(tool)
    for name in sorted(wanted):
        offsets = sorted(wanted[name])
        known = modules.get(name)
        if not known:
            notes.append("%s: the logs have no module record for it (a log of an older shim): its %d call "
                         "site(s) are shown as module+offset" % (name, len(offsets)))
            continue
        if len(known) > 1:
            notes.append("%s: the logs name %d different files by this name (%s): its call sites are shown as "
                         "module+offset" % (name, len(known), ", ".join(sorted(p for p, _b, _v in known))))
            continue
        path, logged_id, base_vaddr = next(iter(known))
        if not os.path.isfile(path):
            notes.append("%s: %s is not on this machine: its call sites are shown as module+offset" % (name, path))
            continue
        on_disk = build_id(path)
        if on_disk is None:
            notes.append("%s: %s is not a readable ELF file: its call sites are shown as module+offset" % (name, path))
            continue
        if logged_id and on_disk != logged_id:
            notes.append("%s: module changed since the run (%s has build-id %s, the run's had %s): its call sites "
                         "are shown as module+offset" % (name, path, on_disk or "none", logged_id))
            continue
        if executable is None:
            notes.append("%s not found (Debian package binutils): call sites are shown as module+offset" % tool)
            break
        request = "".join("%#x\n" % (off + base_vaddr) for off in offsets)
        try:
            done = subprocess.run([executable, "-a", "-f", "-C", "-i", "-e", path], input=request,
                                  capture_output=True, text=True, errors="replace", timeout=TOOL_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as e:
            notes.append("%s: %s failed on %s (%s): its call sites are shown as module+offset" % (name, tool, path, e))
            continue
        if done.returncode != 0:
            notes.append("%s: %s failed on %s (%s): its call sites are shown as module+offset"
                         % (name, tool, path, (done.stderr.strip().splitlines() or ["exit status %d" % done.returncode])[0]))
            continue
        named = parse_addr2line(done.stdout)
        for off in offsets:
            frame = named.get(off + base_vaddr)
            if frame is not None:
                frames[(name, off)] = frame
        if not logged_id:
            notes.append("%s: the run's module had no build-id, so %s could not be checked against it" % (name, path))
    return frames, notes


_SITE = re.compile(r"^(.*)\+0x([0-9a-fA-F]+)$")


def split_site(site):
    """('module', offset) of a site 'module+0xoffset', or None."""
    m = _SITE.match(site or "")
    return (m.group(1), int(m.group(2), 16)) if m else None
