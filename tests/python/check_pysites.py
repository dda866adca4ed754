"""check_pysites.py LOG PROGRAM: every transfer record of pysites.py's copies names the line of
PROGRAM marked "# site:NAME" for its size (py_site "PROGRAM:LINE", py_func), and the summary's
sites carry the same lines. Prints what it checked; exits 1 naming the first mismatch."""
import json
import re
import sys

log, program = sys.argv[1], sys.argv[2]
SIZES = {"main": 4096, "method": 4160, "thread": 4224, "nested": 4288, "multiline": 4352, "library": 4416}
FUNCS = {"main": {"copy_main"}, "method": {"step", "Loader.step"}, "thread": {"worker"},
         "nested": {"inner", "nested.<locals>.inner"}, "multiline": {"<module>"}, "library": {"<module>"}}
lines = {}
for number, text in enumerate(open(program), 1):
    m = re.search(r"# site:(\w+)", text)
    if m:
        lines[m.group(1)] = number
by_size = {size: name for name, size in SIZES.items()}
records = [json.loads(l) for l in open(log) if l.startswith("{")]
seen = {}
for r in records:
    if r["type"] != "transfer" or r["bytes"] not in by_size:
        continue
    name = by_size[r["bytes"]]
    want = "%s:%d" % (program, lines[name])
    if r.get("py_site") != want or r.get("py_func") not in FUNCS[name]:
        sys.exit("copy %s (seq %d, %s): py_site %r py_func %r, expected %r in one of %s"
                 % (name, r["seq"], r["entry"], r.get("py_site"), r.get("py_func"), want, sorted(FUNCS[name])))
    seen[name] = seen.get(name, 0) + 1
missing = set(SIZES) - set(seen)
if missing:
    sys.exit("no transfer record for %s" % sorted(missing))
summary = records[-1]
site_lines = {s.get("py_site") for s in summary["sites"]}
for name in SIZES:
    if "%s:%d" % (program, lines[name]) not in site_lines:
        sys.exit("summary sites lack %s (%s)" % (name, sorted(map(str, site_lines))))
print("python sites ok:", ", ".join("%s=%d" % (n, seen[n]) for n in SIZES))
