"""merge.py: several runs of the suite as one (run.py --merge DIR...).

A command on the GPU machine may run 10 minutes, about two pairs of the whole suite; five pairs or
more take several commands, each writing its --out folder. This reads those folders (runs.jsonl, or
runs.jsonl.gz in a kept one: every run; summary.json: the header and the in-process samples) and
gives run.py what one run of all their pairs would have had: the runs, their pairs numbered on from
folder to folder, and the in-process samples pooled (each process counts once, whichever folder it
came from).

Folders are merged only when they measured the same thing: the same library (its build commit and
size, or builds of two commits between which this checkout's `git diff A B -- shim policy include
Makefile`, LIBRARY_PATHS, is empty: a stop that changed only documents or tests merges with the one
before it, a note naming the folder, its commit and size), the same GPU model, the same sides, the
same shim settings from the environment, as many CPUs (all of the machine's, or as many as every run
was bound to, as the header says: folders of runs bound to one CPU each, CPU 4 in one and CPU 8 in
another, merge, the header naming both) and lockstep alike (on or off; a folder of an older run.py:
off); the instances may differ (each pair ran its sides on one machine; groups run side by side on
other CPUs of one machine are one instance). Anything else, or a folder that cannot be read, is a
MergeError naming the folder and what was expected; so is a run found in two folders (one folder
given twice, or a merged folder with one it was merged from: its pairs would count twice). A merged
folder merges again: its summary lists the instances its runs came from.
Standard library only."""
import gzip
import json
import os
import re
import subprocess
import zlib

import inprocess

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
# What the library is built from (scripts/build-commit.sh marks a build -dirty against the same).
LIBRARY_PATHS = ["shim", "policy", "include", "Makefile"]


class MergeError(Exception):
    pass


def header_field(header, prefix):
    """The rest of the header line that starts with prefix, or ""."""
    for line in header:
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return ""


def identity(header):
    """What must agree between merged folders: {what: value}, from a run's header lines."""
    shim = header_field(header, "# shim:")
    machine = header_field(header, "# machine:")
    sides = header_field(header, "# sides:")
    size = re.search(r"\((\d+) bytes", shim)
    return {
        "library": "%s, %s bytes" % (re.sub(r"^.*, (built from |build commit unknown)", r"\1", shim),
                                     size.group(1) if size else "?"),
        "GPU": re.sub(r"^GPU \d+: | \((UUID: [^)]*|\d+ instances)\)", "", machine.split(";")[0]),
        "sides": sides.split(";")[0],
        "shim settings from the environment": sides.split("shim settings from the environment:")[-1].strip(),
        "number of CPUs a run was bound to": bound_count(machine),
        "lockstep": (header_field(header, "# lockstep:") or "off").split()[0],
    }


BOUND = r", runs on CPUs ([0-9,| -]+)$"  # the end of a machine line whose runs were bound to CPUs


def bound_cpus(machine):
    """The CPU lists of a header's machine line, ", runs on CPUs 4" (run.py) or, merged from
    folders bound to different ones, ", runs on CPUs 4 | 8" (merge()); [] when not bound."""
    found = re.search(BOUND, machine)
    return found.group(1).split(" | ") if found else []


def bound_count(machine):
    """How many CPUs every run of a header's machine line was bound to: "all", or a number."""
    from run import cpu_list  # run.py imports this module: imported when first needed
    lists = bound_cpus(machine)
    return "%d" % len(cpu_list(lists[0]) or ()) if lists else "all"


def machine_instance(machine):
    """A header's machine line less the CPUs its runs were bound to: runs of one machine bound to
    other CPUs (groups run side by side) came from one instance."""
    return re.sub(BOUND, "", machine)


def instances(summary, folder):
    """The machine instances a folder's runs came from: its summary's list (run.py writes one, a merge
    the union of its folders'), else, from an older run.py, its header's machine line, or for a
    merged folder's "(N instances)" N names of its own (the instances' ids are not kept there)."""
    listed = summary.get("instances")
    if isinstance(listed, list) and listed and all(isinstance(m, str) for m in listed):
        return [machine_instance(m) for m in listed]
    machine = header_field(summary["header"], "# machine:")
    n = re.search(r"\((\d+) instances\)", machine)
    if n:
        return ["%s: instance %d of %s" % (folder, k, n.group(1)) for k in range(1, int(n.group(1)) + 1)]
    return [machine_instance(machine)]


def library_commit(library):
    """The commit of an identity's library ("built from abc1234, 2000272 bytes"), or None for a build
    of unknown or dirty sources (those merge only with the very same)."""
    found = re.match(r"built from ([0-9a-f]{7,40}), ", library)
    return found.group(1) if found else None


def same_library_sources(a, b):
    """Whether two identities' libraries were built from the same sources: both from known commits of
    this checkout between which `git diff -- LIBRARY_PATHS` is empty. Any doubt (no git, a commit
    this checkout lacks) is no."""
    ca, cb = library_commit(a), library_commit(b)
    if not ca or not cb:
        return False
    try:
        r = subprocess.run(["git", "-C", REPO, "diff", "--quiet", ca, cb, "--"] + LIBRARY_PATHS,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def run_identity(run):
    """What tells a run apart from every other: its start time and the run.py that ran it (run.py
    records both; an older run.py the time only), or, in a folder of an older one still, the whole
    record less its pair and folder (timings to the microsecond)."""
    if isinstance(run.get("started"), (int, float)):
        return "started %r by %r" % (run["started"], run.get("runner"))
    return json.dumps({k: v for k, v in run.items() if k not in ("pair", "folder")}, sort_keys=True)


def runs_path(folder):
    """A folder's runs: runs.jsonl as run.py writes it, or runs.jsonl.gz as a kept folder holds it
    (results/); None when it has neither."""
    for name in ("runs.jsonl", "runs.jsonl.gz"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


def open_runs(path):
    """The runs file for reading as text, gzip'd or not (runs_path)."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", errors="replace")
    return open(path, errors="replace")


class UnreadableRuns(Exception):
    """A records file that could not be read: str() the reason (the OS's words where it gave some),
    __cause__ the error itself."""


def read_lines(path):
    """The lines of a records file, gzip'd or not (open_runs). UnreadableRuns when the file cannot be
    read or its gzip stream is bad (a bad header, cut short or corrupt)."""
    try:
        with open_runs(path) as f:
            return f.readlines()
    except (OSError, EOFError, zlib.error) as e:
        raise UnreadableRuns(getattr(e, "strerror", None) or e) from e


def load_folder(folder):
    """(summary, runs) of one --out folder: the summary's header and in-process part as run.py wrote
    them, its instances (instances()) under "instances"."""
    summary_path, runs_file = os.path.join(folder, "summary.json"), runs_path(folder)
    if not os.path.isfile(summary_path):
        raise MergeError("%s: no summary.json (expected an --out folder of run.py)" % folder)
    if not runs_file:
        raise MergeError("%s: no runs.jsonl or runs.jsonl.gz (expected an --out folder of run.py)" % folder)
    try:
        with open(summary_path) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        raise MergeError("%s: not readable as JSON (%s)" % (summary_path, e))
    if not isinstance(summary, dict) or not isinstance(summary.get("header"), list):
        raise MergeError("%s: no header list (expected run.py's summary.json)" % summary_path)
    runs = []
    try:
        lines = read_lines(runs_file)
    except UnreadableRuns as e:
        raise MergeError("%s: not readable (%s)" % (runs_file, e.__cause__))
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            run = json.loads(line)
        except ValueError as e:
            raise MergeError("%s line %d: not a JSON run record (%s)" % (runs_file, n, e))
        if not isinstance(run, dict) or not isinstance(run.get("pair"), int) or "workload" not in run \
                or run.get("side") not in ("noshim", "shim", "guard"):
            raise MergeError("%s line %d: not a run record (expected workload, side and pair)" % (runs_file, n))
        runs.append(run)
    if not runs:
        raise MergeError("%s: no runs" % runs_file)
    return dict(summary, instances=instances(summary, folder)), runs


def merge(folders):
    """{"header": the first folder's header lines (with the number of instances when they differ),
    "runs": every run with pairs numbered on, "inprocess": pooled rows, problems and samples (None
    when no folder measured them), "notes": what the reader should know, "folders": [(folder, pairs)],
    "instances": the machine instances of every folder (a merged folder's own, so that merging it
    again counts them right)}."""
    merged = {"runs": [], "notes": [], "folders": [], "inprocess": None}
    first_id = None
    samples, problems, pooled_from = {}, [], 0
    machines, cpus = set(), []
    seen = {}  # each run's identity -> the folder it came from
    for folder in folders:
        summary, runs = load_folder(folder)
        header, inproc = summary["header"], summary.get("inprocess")
        ident = identity(header)
        if first_id is None:
            first_id, merged["header"] = ident, header
        for what, value in ident.items():
            if what == "library" and value != first_id[what] and same_library_sources(first_id[what], value):
                merged["notes"].append("%s: library %s, the same sources as %s's (git diff -- %s empty)"
                                       % (folder, value, folders[0], " ".join(LIBRARY_PATHS)))
                continue
            if value != first_id[what]:
                raise MergeError("%s: %s %s, where %s had %s: merge only runs of one build, GPU model, sides, "
                                 "settings, CPUs and lockstep" % (folder, what, value or "(none)", folders[0],
                                                           first_id[what] or "(none)"))
        machines.update(summary["instances"])
        cpus += [c for c in bound_cpus(header_field(header, "# machine:")) if c not in cpus]
        offset = max([r["pair"] for r in merged["runs"]] or [0])
        for r in runs:
            key = run_identity(r)
            if key in seen:
                raise MergeError("%s: its %s run of %s (pair %d) is also in %s: a folder given twice, or a merged "
                                 "folder with one it was merged from" % (folder, r["side"], r["workload"], r["pair"],
                                                                          seen[key]))
            seen[key] = folder
            merged["runs"].append(dict(r, pair=r["pair"] + offset, folder=folder))
        merged["folders"].append((folder, max(r["pair"] for r in runs)))
        if inproc:
            problems += ["%s: %s" % (folder, p) for p in inproc.get("problems") or []]
            if inproc.get("samples"):
                pooled_from += 1
                for key, got in inproc["samples"].items():
                    samples.setdefault(key, []).extend(got)
            elif inproc.get("rows"):
                merged["notes"].append("%s: in-process rows without their samples (an older run.py): not pooled"
                                       % folder)
    merged["instances"] = sorted(machines)
    if len(machines) > 1:  # instances of one model: the header names how many, not the first one's id
        merged["header"] = [re.sub(r" \((UUID: [^)]*|\d+ instances)\)", " (%d instances)" % len(machines), h)
                            if h.startswith("# machine:") else h for h in merged["header"]]
    if len(cpus) > 1:  # as many CPUs in every folder, not the same ones: the header names each
        merged["header"] = [re.sub(BOUND, ", runs on CPUs %s" % " | ".join(cpus), h)
                            if h.startswith("# machine:") else h for h in merged["header"]]
    if samples or problems:
        merged["inprocess"] = {"rows": inprocess.rows_from(samples), "problems": problems, "samples": samples}
        if pooled_from < len(folders):
            merged["notes"].append("in-process samples from %d of %d folders" % (pooled_from, len(folders)))
    return merged
