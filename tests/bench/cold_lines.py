"""cold_lines.py: how many cache lines one small operation touches with the shim and without it
(issue #12). In a framework's hot loop the work between two driver calls evicts the shim's code
and data, so a call pays for each line it touches again; observe_ab.c with eviction times that
model, this counts what it is made of, exactly and on any x86-64 machine: valgrind's lackey traces
every instruction fetch and data access of tests/bench/cold_lines_loop.c, which marks the start of
each operation, and the distinct 64-byte lines between two marks are counted, for the operations
of the last pass over the loop's 1000 buffers (the earlier passes see each page first), and over
that whole pass (what a cache that kept the pass would hold: a table the shim reads one line of
per copy can still spread over many). The shim's instruction lines are told apart by its mapping;
--functions names the function of each.
The driver is the null driver (tests/bench/nullcuda.c), built here like the loop with $CC, unless
--driver-dir names a folder holding another libcuda.so.1. Never asserts a count.
Usage: python3 tests/bench/cold_lines.py [--shim build/libpinshim.so] [--ops pageable,pinned,item]
                                         [--passes 3] [--functions] [--driver-dir DIR]
Needs valgrind and nm (Debian packages valgrind, binutils); without valgrind it says so, exit 0."""
import argparse
import bisect
import collections
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ("pageable", "pinned", "item")
LINE = 6  # log2 of a cache line's bytes


def build(tmp, cc, cuda_home):
    """The loop (not position-independent: its mark's address is the one in the trace) and the null
    driver, in tmp."""
    loop = os.path.join(tmp, "cold_lines_loop")
    subprocess.run([cc, "-std=gnu11", "-O2", "-no-pie", "-I" + os.path.join(cuda_home, "include"),
                    os.path.join(HERE, "cold_lines_loop.c"), "-o", loop, "-ldl"], check=True)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", os.path.join(HERE, "nullcuda.c"), "-o",
                    os.path.join(tmp, "libcuda.so.1")], check=True)
    return loop


def symbol_address(binary, name):
    for line in subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise SystemExit("cold_lines: %s has no symbol %s" % (binary, name))


def mappings(stderr):
    """The shim's executable mappings the loop printed: [(start, end, file offset)]."""
    out = []
    for line in stderr.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1] == "r-xp" and "-" in parts[0]:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi, int(parts[2], 16)))
    return out


def trace(loop, op, passes, env):
    """Runs the loop under lackey; returns ({operation index: (code lines, data lines)} for the last
    pass, the loop's stderr)."""
    mark = symbol_address(loop, "cold_lines_mark")
    first = (passes - 1) * 1000
    read_fd, write_fd = os.pipe()
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-fd=%d" % write_fd, loop, op,
                             str(passes)], env=env, pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=err)
    os.close(write_fd)
    ops, index, code, data = {}, -1, {}, set()  # code: line -> the first address executed in it
    with os.fdopen(read_fd, errors="replace") as lines:
        for line in lines:
            kind = line[:2].strip()
            if kind not in ("I", "L", "S", "M"):
                continue
            address = int(line[2:].split(",", 1)[0], 16)
            if kind != "I":
                data.add(address >> LINE)
            elif address == mark:
                if index >= first:
                    ops[index] = (code, data)
                index, code, data = index + 1, {}, set()
            else:
                code.setdefault(address >> LINE, address)
    if proc.wait() != 0:
        err.seek(0)
        raise SystemExit("cold_lines: the loop failed under valgrind (%s, exit status %d):\n%s" %
                         (op, proc.returncode, err.read()[-2000:]))
    err.seek(0)
    return ops, err.read()


def functions(shim):
    """The shim's function symbols, sorted: ([addresses], [names])."""
    syms = []
    for line in subprocess.run(["nm", "-n", "--defined-only", shim], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            syms.append((int(parts[0], 16), parts[2]))
    return [a for a, _ in syms], [n for _, n in syms]


def count(ops, maps):
    """Means per operation: code lines, the shim's code lines, data lines."""
    n = len(ops)
    in_shim = lambda line: any(lo <= line << LINE < hi for lo, hi, _ in maps)
    code = sum(len(c) for c, _ in ops.values()) / n
    shim = sum(sum(1 for line in c if in_shim(line)) for c, _ in ops.values()) / n
    data = sum(len(d) for _, d in ops.values()) / n
    return code, shim, data


def working_set(ops):
    """Distinct code and data lines over all the operations: what a cache warm from the pass holds."""
    code, data = set(), set()
    for c, d in ops.values():
        code.update(c)
        data.update(d)
    return len(code), len(data)


def by_function(ops, maps, syms):
    """The shim's code lines per operation by the function of the first instruction run in each."""
    addrs, names = syms
    per = collections.Counter()
    for c, _ in ops.values():
        for first in c.values():
            for lo, hi, off in maps:
                if lo <= first < hi:
                    i = bisect.bisect_right(addrs, first - lo + off) - 1
                    per[names[i] if i >= 0 else "?"] += 1
    return [(name, k / len(ops)) for name, k in per.most_common()]


def main(argv):
    ap = argparse.ArgumentParser(prog="cold_lines.py", description=__doc__.split("\n")[0])
    ap.add_argument("--shim", default=os.path.join(HERE, "..", "..", "build", "libpinshim.so"))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--functions", action="store_true")
    ap.add_argument("--driver-dir")
    a = ap.parse_args(argv)
    ops = [o for o in a.ops.split(",") if o]
    bad = [o for o in ops if o not in OPS]
    if bad or not ops:
        ap.error("--ops: %s: expected a comma-separated list of %s" % (",".join(bad) or "nothing", ", ".join(OPS)))
    if a.passes < 2:
        ap.error("--passes %d: expected 2 or more (the first pass sees each page first)" % a.passes)
    if not os.path.isfile(a.shim):
        ap.error("--shim %s: no such file (make build/libpinshim.so first)" % a.shim)
    if not shutil.which("valgrind"):
        print("cold_lines: valgrind not found (Debian package valgrind): nothing measured")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        loop = build(tmp, os.environ.get("CC", "cc"), os.environ.get("CUDA_HOME", "/usr/local/cuda"))
        driver = a.driver_dir or tmp
        syms = functions(a.shim)
        print("cold_lines: distinct 64-byte lines per operation, the last of %d passes of 1000 (valgrind lackey; "
              "driver: %s)" % (a.passes, a.driver_dir or "null"))
        print("%-9s %13s %13s %10s %13s %10s %15s %15s" % ("operation", "code without", "data without", "code with",
                                                           "of it shim's", "data with", "shim adds code",
                                                           "shim adds data"))
        details, sets = [], []
        for op in ops:
            row = {}
            for side in ("without", "with"):
                env = dict(os.environ, LD_LIBRARY_PATH=driver, PINSHIM_SUMMARY="none")
                env.pop("LD_PRELOAD", None)
                if side == "with":
                    env["LD_PRELOAD"] = os.path.abspath(a.shim)
                traced, err = trace(loop, op, a.passes, env)
                maps = mappings(err) if side == "with" else []
                if side == "with" and not maps:
                    raise SystemExit("cold_lines: the shim's mapping was not found in the loop's output:\n" + err)
                row[side] = count(traced, maps)
                sets.append(working_set(traced))
                if side == "with" and a.functions:
                    details.append((op, by_function(traced, maps, syms)))
            (c0, _, d0), (c1, s1, d1) = row["without"], row["with"]
            print("%-9s %13.1f %13.1f %10.1f %13.1f %10.1f %15.1f %15.1f" % (op, c0, d0, c1, s1, d1, c1 - c0, d1 - d0))
        print("\nover the whole last pass (its 1000 operations): distinct lines")
        print("%-9s %13s %10s %13s %10s" % ("operation", "code without", "code with", "data without", "data with"))
        for op, (without, with_) in zip(ops, zip(sets[0::2], sets[1::2])):
            print("%-9s %13d %10d %13d %10d" % (op, without[0], with_[0], without[1], with_[1]))
        for op, rows in details:
            print("\n%s: the shim's code lines per operation by function" % op)
            for name, k in rows:
                print("  %5.1f  %s" % (k, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
