"""stream.py: runs every log file through scan.scan_file, on several cores when there are
several files, and merges the results as they come.

Contract:
- scan(files, options, sink_specs, jobs, progress) -> Result: processes (in rank order), the merged
  Aggregate, the warnings (in file order; also written to stderr in that order as soon as every
  earlier file is done), and errors (one message per unusable file; outputs must then not be written).
- Files are independent: up to `jobs` worker processes (fork) read one file each; a single file is
  read by one core. Memory: the workers' aggregates of the files being read, plus the merged
  aggregate, plus the processes' timeline lanes, which are halved in resolution whenever they pass
  LANE_BUDGET_BYTES in all.
- progress: "auto" writes a progress line on stderr once reading has taken PROGRESS_AFTER_S seconds
  (rewritten in place on a terminal, one line every PROGRESS_EVERY_S otherwise), "always" from the
  start, "never" not at all."""
import concurrent.futures
import multiprocessing
import os
import sys
import time

from . import aggregate, scan as scanner
from .logs import InputError

LANE_BUDGET_BYTES = 48 << 20
PROGRESS_AFTER_S = 2.0
PROGRESS_EVERY_S = 10.0

_counter = None             # a worker's shared byte counter (set by _init_worker)


def warn(message):
    sys.stderr.write("pinshim-report: %s\n" % message)


class Result:
    def __init__(self):
        self.processes = []
        self.agg = aggregate.Aggregate()
        self.warnings = []
        self.errors = []


def _init_worker(counter):
    global _counter
    _counter = counter


def _count_bytes(n):
    with _counter.get_lock():
        _counter.value += n


def make_sinks(sink_specs, index, options):
    """The part writers a worker feeds: ("sqlite", folder) and ("trace", folder) specs."""
    sinks = []
    for kind, folder in sink_specs:
        if kind == "sqlite":
            from . import sqlite_export
            sinks.append(sqlite_export.PartWriter(folder, index))
        elif kind == "trace":
            from . import trace
            sinks.append(trace.PartWriter(folder, index, options.base_wall_ns))
    return sinks


def run_file(index, path, options, sink_specs, on_bytes):
    """One file: (index, processes, aggregate, warnings, error)."""
    warnings = []
    sinks = make_sinks(sink_specs, index, options)
    try:
        processes, agg = scanner.scan_file(path, options, sinks, warnings.append, on_bytes)
    except InputError as e:
        for sink in sinks:
            sink.abort()
        return index, [], None, warnings, str(e)
    for p in processes:
        p.file_index = index
    return index, processes, agg, warnings, None


def _run_in_worker(index, path, options, sink_specs):
    return run_file(index, path, options, sink_specs, _count_bytes)


class Progress:
    def __init__(self, total_bytes, files, mode):
        self.total, self.files, self.mode = total_bytes, files, mode
        self.start = time.monotonic()
        self.last = None
        self.tty = sys.stderr.isatty()
        self.shown = False

    def update(self, done_bytes, done_files, final=False):
        if self.mode == "never":
            return
        now = time.monotonic()
        elapsed = now - self.start
        if self.mode == "auto" and elapsed < PROGRESS_AFTER_S:
            return
        if not final and not self.tty and self.last is not None and now - self.last < PROGRESS_EVERY_S:
            return
        if final and not self.shown:
            return
        self.last = now
        percent = 100.0 * done_bytes / self.total if self.total else 100.0
        rate = done_bytes / elapsed / 1e6 if elapsed > 0 else 0.0
        line = ("pinshim-report: read %.1f of %.1f MB (%.0f %%), %d of %d files, %.1f s, %.0f MB/s"
                % (done_bytes / 1e6, self.total / 1e6, percent, done_files, self.files, elapsed, rate))
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if final else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.shown = True


def _shrink_lanes(processes, used):
    while used > LANE_BUDGET_BYTES:
        used = 0
        for p in processes:
            for lane in p.lanes.values():
                if lane.nbins > 16:
                    lane.shrink()
                used += lane.memory()
        if all(lane.nbins <= 16 for p in processes for lane in p.lanes.values()):
            break
    return used


def scan(files, options, sink_specs=(), jobs=1, progress="auto"):
    result = Result()
    sizes = []
    for path in files:
        try:
            sizes.append(os.path.getsize(path))
        except OSError:
            sizes.append(0)
    meter = Progress(sum(sizes), len(files), progress)
    pending_warnings = {}
    next_to_report = 0
    lane_memory = 0
    done_bytes = 0
    done_files = 0

    def take(outcome):
        nonlocal next_to_report, lane_memory, done_files
        index, processes, agg, warnings, error = outcome
        done_files += 1
        pending_warnings[index] = warnings
        if error:
            result.errors.append((index, error))
        else:
            result.agg.merge(agg)
            result.processes.extend(processes)
            lane_memory += sum(lane.memory() for p in processes for lane in p.lanes.values())
            if lane_memory > LANE_BUDGET_BYTES:
                lane_memory = _shrink_lanes(result.processes, lane_memory)
        while next_to_report in pending_warnings:
            for w in pending_warnings.pop(next_to_report):
                warn(w)
                result.warnings.append(w)
            next_to_report += 1

    jobs = max(1, min(jobs, len(files)))
    if jobs == 1:
        def on_bytes(n):
            nonlocal done_bytes
            done_bytes += n
            meter.update(done_bytes, done_files)
        for index, path in enumerate(files):
            take(run_file(index, path, options, sink_specs, on_bytes))
    else:
        context = multiprocessing.get_context("fork")
        counter = context.Value("q", 0)
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                                                    initializer=_init_worker, initargs=(counter,)) as pool:
            waiting = {pool.submit(_run_in_worker, i, path, options, sink_specs) for i, path in enumerate(files)}
            while waiting:
                done, waiting = concurrent.futures.wait(waiting, timeout=0.5,
                                                        return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    take(future.result())
                done_bytes = counter.value
                meter.update(done_bytes, done_files)
        done_bytes = counter.value
    meter.update(done_bytes, done_files, final=True)
    result.errors = [message for _, message in sorted(result.errors)]
    result.processes.sort(key=lambda p: p.order())
    return result
