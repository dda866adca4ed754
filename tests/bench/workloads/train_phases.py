"""train_phases.py: where the time of torch_train.py's step goes, one process (a diagnostic, not a
row of the suite). Runs the same plain MLP step (wl.torch_mlp_step) 100 times, then 400 timed, each
phase timed apart (batch made on the CPU, copy to the device, forward, backward, optimizer, item),
and after every step a fixed pure-Python loop (control): this host's CPU speed moves between levels
from process to process and within one (the step and the control move together), so the step over
its control compares processes met at different levels better than the step alone.
Prints one JSON line as the suite's scripts do (wl.py): metrics in us (medians over the timed steps),
step_per_control (the median of each step over its own control), faults_per_step (minor page
faults), threads (the process's, at the end), and the CPU time, over the timed steps, of the
process's threads other than the main one: the shim's (named pinshim-*) and the rest (PyTorch's
OpenMP team, the driver's), in ms. Under tests/bench/alloc_count.c (a preload run instead of the
shim) also the allocator calls a step makes, those of 1 MiB or more (what the shim tracks), and the
calls of each function the shim's allocation hooks interpose (calls_malloc, calls_free, ...,
calls_munmap), and in its notes, allocator_calls_by_object: each object's calls a step, function by
function (the object the call came from; C++'s new and delete counted as their caller's), and
cxx_calls_by_form: the calls a step of each form of new and delete the program used.
Every 10 steps it ends a turn (wl.turn), so that under compare_builds.py --lockstep the variants
take turns on one CPU between steps (never inside a timed one). Run it under several variants:
  tests/bench/workloads/compare_builds.py --lockstep --cpus 3 --rounds 8 tests/bench/workloads/train_phases.py -- \\
      none=none empty=empty shim=build/libpinshim.so off=build/libpinshim.so,PINSHIM_INTERCEPT=off \\
      count=tests/bench/alloc_count.c
Without PyTorch or a GPU it prints a skipped line and exits 0. Never judges the numbers."""
import time

import wl

NAME, WARMUP, TIMED, TURN_STEPS = "train_phases", 100, 400, 10
PHASES = ("batch", "copy", "forward", "backward", "optimizer", "item")


def minor_faults():
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


torch, dev, sync = wl.torch_or_skip(NAME)
marks = []
counters, by_object, by_form = wl.alloc_counts_reader(), wl.alloc_counts_by_object_reader(), wl.alloc_counts_cxx_reader()
step, _model = wl.torch_mlp_step(torch, dev, False, mark=lambda phase: marks.append(time.perf_counter_ns()))
times = {k: [] for k in PHASES + ("step", "control", "step_per_control")}
for n in range(WARMUP + TIMED):
    if n % TURN_STEPS == 0:
        wl.turn()  # between steps, never inside one: under --lockstep the others run now
    if n == WARMUP:
        faults0, threads0 = minor_faults(), wl.thread_cpu_ns()
        allocs0 = counters() if counters else None
        objects0 = by_object() if by_object else None
        forms0 = by_form() if by_form else None
    del marks[:]
    t0 = time.perf_counter_ns()
    step()
    if n < WARMUP:
        continue
    ends = [t0] + marks
    for k, a, b in zip(PHASES, ends, ends[1:]):
        times[k].append((b - a) / 1e3)
    total = (ends[-1] - t0) / 1e3
    control = wl.control_us()
    times["step"].append(total)
    times["control"].append(control)
    times["step_per_control"].append(total / control)
faults = (minor_faults() - faults0) / TIMED
allocs1 = counters() if counters else None
objects1 = by_object() if by_object else None
forms1 = by_form() if by_form else None
threads1 = wl.thread_cpu_ns()
others = wl.threads_cpu_split(threads0, threads1)

rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))
for key in ("step",) + PHASES + ("control",):
    rep.metric(key, "%s, median of %d steps" % (key, TIMED), wl.median(times[key]), "us", "same")
rep.metric("step_per_control", "each step over the control loop after it, median", wl.median(times["step_per_control"]),
           "x", "same")
rep.metric("faults_per_step", "minor page faults per timed step", faults, "faults", "same")
rep.metric("threads", "the process's threads at the end", len(threads1), "threads", "same")
rep.metric("shim_threads_cpu", "CPU time of the shim's threads over the timed steps", others["shim"] / 1e6, "ms",
           "same")
rep.metric("other_threads_cpu", "CPU time of the other non-main threads over the timed steps", others["other"] / 1e6,
           "ms", "same")
if allocs1:
    per_step = {key: (allocs1[key] - allocs0[key]) / TIMED for key in allocs1}
    rep.metric("allocator_calls", "allocator calls per timed step (alloc_count.c)", per_step.pop("calls"), "calls",
               "same")
    rep.metric("allocator_calls_1mib", "of those, calls for 1 MiB or more", per_step.pop("large"), "calls", "same")
    for fn, n in per_step.items():
        rep.metric("calls_" + fn, "%s calls per timed step (alloc_count.c)" % fn, n, "calls", "same")
if objects1:
    per_object = {}
    for (obj, fn), calls in sorted(objects1.items()):
        step_calls = round((calls - objects0.get((obj, fn), 0)) / TIMED, 2)
        if step_calls:
            per_object.setdefault(obj, {})[fn] = step_calls
    rep.notes["allocator_calls_by_object"] = per_object
if forms1:
    per_form = {form: round((calls - forms0[form]) / TIMED, 2) for form, calls in forms1.items()}
    rep.notes["cxx_calls_by_form"] = {form: n for form, n in per_form.items() if n}
rep.emit()
