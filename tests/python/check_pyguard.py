"""check_pyguard.py STDERR PROGRAM: the guard's report of each of pyguard.py's races starts with
"read at: PROGRAM:LINE in FUNC" for its "# read:NAME" line and "copy from: PROGRAM:LINE in FUNC via"
for its "# copy:NAME" line. Prints what it checked; exits 1 naming the first race not reported so."""
import re
import sys

err, program = open(sys.argv[1]).read(), sys.argv[2]
FUNCS = {"held": "held", "released": "released", "thread": "worker"}
marks = {}
for number, text in enumerate(open(program), 1):
    for kind, name in re.findall(r"# (copy|read):(\w+)", text):
        marks[(kind, name)] = number
reports = re.findall(r"^==\d+==   read at:     (.*)\n==\d+==   copy from:   (.*)$", err, re.M)
for name, func in FUNCS.items():
    read = "%s:%d in %s" % (program, marks[("read", name)], func)
    copy = "%s:%d in %s via " % (program, marks[("copy", name)], func)
    if not any(r == read and c.startswith(copy) for r, c in reports):
        sys.exit("no report with read at %r and copy from %r...; reports: %r" % (read, copy, reports))
print("guard reports name the lines of %d races" % len(FUNCS))
