"""inprocess.py: the suite's second table (run.py --inprocess N): what observing costs the small
operations, measured inside one process, where fresh processes cannot show it.

The same small operations read 10-30 % apart from one fresh process to the next (the host's CPU
speed, placement), a hundred times the 1 % bound; inside one process the shim's benchmark switch
(pinshim_bench_observe) flips its wrappers between observing and forwarding every call untouched,
block by block, and paired blocks give the difference (tests/bench/inprocess_ab.py for PyTorch's
.item(), 4 KB copies and events, and for jax.device_put; tests/bench/observe_ab.c for the C loop).
Each of N fresh processes runs both; a row pools them: the mean of the processes' median
differences, with two standard errors (the larger of the pooled within-process error of each median,
from its quartiles, and the spread between the processes' medians). Medians, not means: a block now
and then takes milliseconds longer (the host's own work), and one such block moves a process's mean
by more than the bound (seen on an H100 instance: +243 +- 488 ns against a median of +99).

What forwarding itself costs (the wrapper's call and one branch, the allocation hooks' comparison
and tail call) is in neither side of those rows. A Python process cannot reach the driver past the
wrappers the CUDA runtime was handed, but a C one can: observe_ab also times a third side, direct
(the driver's own functions, the C library's allocator and a C++ runtime's new and delete over it,
no shim in the timed calls), so the same processes give what forwarding costs a driver call (the C
loop's forward - direct, over its 2 calls), a malloc or free (observe_ab's malloc iteration, over
its 2 calls) and a C++ new or delete (its new iteration, likewise: the shim's operator new goes to
the allocator in one step where a runtime's takes two, so this call is priced apart). Each PyTorch
row counts its driver calls per operation (the shim's own count while observing) and, in one more
process per process run under tests/bench/alloc_count.c instead of the shim, its allocator calls
per operation and how many of them are C++'s new and delete (PyTorch's mostly are). The third table
adds them up: the whole preload's cost per operation = observe - forward + driver calls x
forwarding a call + C allocator calls x a malloc's hooks + C++ ones x a new's, judged against the
same bounds. (Folders kept from before 2026-12-07's 51st stop priced every allocator call alike, at
observe_ab's alloc iteration over its 4 calls, whose direct side called the C library for new and
delete: that priced C++'s calls too high; they are read as they were.)

With run.py --inprocess-direct, inprocess_ab.py --direct also times each PyTorch row with the shim
out of the runtime's calls (pinshim_bench_direct: the wrapper pointers the runtime keeps rewritten to
the driver's functions), so a fourth table gives the whole preload measured in the row's own process:
observe - direct (pooled as observe - forward is) plus the allocator calls' hooks priced as above,
its share of the direct side's time, the same bounds, and the calls per operation that still
reached a wrapper while direct (0 where the switch found every stored pointer). Its control row's
observe - direct should read 0 as well.

Bounds: the share of the operation (difference / forwarding time) at most 1 % (0.99x, as in the
first table); the C loop at most +100 ns. A share row whose two standard errors alone exceed 1 % of
the operation reads WIDE, not PASS or MISS: it needs more groups or processes to show its bound. The
control row (pure Python timed in the same blocks) should read zero within its error: it shows the
pairing is fair. Standard library only."""
import json
import os
import re
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)

# The rows, in the order inprocess_ab.py prints them, then the C loop: (key, label, bound).
ROWS = [
    ("item", "torch: x.item() of a 1-element CUDA tensor", "share"),
    ("4KB pageable", "torch: 4 KB pageable tensor .to(cuda)", "share"),
    ("4KB pageable nb", "torch: 4 KB pageable tensor .to(cuda, non_blocking)", "share"),
    ("4KB pinned nb", "torch: 4 KB pinned tensor .to(cuda, non_blocking)", "share"),
    ("event record+query", "torch: cuda.Event record + query", "share"),
    ("1MB fresh pageable", "torch: a fresh 1 MiB CPU tensor made and .to(cuda)", "share"),
    ("MLP step", "torch: MLP training step (torch_train.py's), fresh pageable batch", "share"),
    ("graph-replayed step", "torch: the same step replayed from a CUDA graph (torch_train.py --graph's)", "share"),
    ("DataLoader pinned", "torch: DataLoader batch, 6 workers, pin_memory=True (torch_dataloader.py's)", "share"),
    ("4MiB pinned nb", "torch: a 4 MiB pinned tensor .to(cuda, non_blocking) (torch_fresh.py's reference)", "share"),
    ("jax device_put", "jax: jax.device_put of a fresh 128 MiB numpy array (jax_copy.py's)", "share"),
    ("control (no CUDA)", "control: pure Python in the same blocks (should read 0)", "zero"),
    ("C loop", "C: 4-byte cuMemcpyDtoHAsync into pinned + cuStreamSynchronize", "ns"),
]
SHARE_MAX, NS_MAX = 1.0, 100.0  # percent of the operation; ns per C-loop iteration
PY_GROUPS, C_GROUPS, C_ITERS = 200, 400, 100
OBSERVE_AB_LINE = re.compile(r"^median: observe (\d+) ns, forward (\d+) ns, observe - forward ([+-]\d+) ns per "
                             r"iteration \(quartiles ([+-][0-9.]+) to ([+-][0-9.]+), .*, (\d+) groups of")
DIRECT_LINE = re.compile(r"^median: forward (\d+) ns, direct (\d+) ns, forward - direct ([+-][0-9.]+) ns per iteration "
                         r"\(quartiles ([+-][0-9.]+) to ([+-][0-9.]+), .*; (\d+) driver and (\d+) allocator calls per")
# The preload's per-call pieces (observe_ab's forward - direct over the calls its iteration makes of
# the kind it prices): (sample key, label, the observe_ab iteration that prices it).
PER_CALL = [("driver call", "C: the wrappers forwarding one driver call (the C loop's forward - direct, / 2)", "item"),
            ("malloc call", "C: the allocation hooks forwarding one malloc or free (observe_ab malloc, / 2)", "malloc"),
            ("new call", "C: the allocation hooks forwarding one C++ new or delete (observe_ab new, / 2)", "new")]
# The one price every allocator call had in folders kept from before the split: read, no longer measured.
OLD_ALLOC_CALL = ("allocator call", "C: the allocation hooks forwarding one allocator call (malloc/free/new/delete, / 4)")
ALLOC_GROUPS, ALLOC_ITERS, ALLOC_BLOCKS = 200, 500, 20  # observe_ab malloc, new; inprocess_ab.py under alloc_count
DIRECT_PREFIX = "direct "  # a row's observe - direct samples (inprocess_ab.py --direct), under this key + row's


def run_process(argv, env, timeout):
    """(stdout, None) or (None, what went wrong)."""
    try:
        r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %g s" % timeout
    except OSError as e:
        return None, "cannot start %s: %s" % (argv[0], e)
    out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    if "cannot dlopen libcuda.so.1" in err:  # tests/progs/testutil.h: no driver here, as run.py's C loop
        return "", None
    if r.returncode:
        lines = [l for l in err.splitlines() if l.strip()]
        return None, "exit status %d%s" % (r.returncode, (": " + lines[-1][:200]) if lines else "")
    return out, None


def python_samples(out):
    """inprocess_ab.py --json: {key: sample} and {what: why not measured}, what being a row's key
    (that row was not measured, as the graph-replayed step where the capture fails) or "py" (the
    process measured nothing)."""
    samples, skipped = {}, {}
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("skipped"):
            skipped[str(d.get("row") or "py")] = str(d["skipped"])
        elif d.get("inprocess"):
            samples[d["inprocess"]] = sample(d["forward_ns"], d["median_ns"], d["q1_ns"], d["q3_ns"], d["groups"])
            if "driver_calls_per_op" in d:
                samples[d["inprocess"]]["driver_calls"] = sum(d["driver_calls_per_op"].values())
            if "observe_direct_q1_ns" in d:  # --direct: observe - direct, against the direct side's time
                samples[DIRECT_PREFIX + d["inprocess"]] = dict(
                    sample(d["direct_ns"], d["observe_direct_median_ns"], d["observe_direct_q1_ns"],
                           d["observe_direct_q3_ns"], d["groups"]), leaked_calls=d.get("leaked_calls_per_op", 0.0),
                    by_order=d.get("observe_direct_by_order_ns") or {})
    return samples, skipped


def c_sample(out):
    """observe_ab's closing line as a sample, or None (it measured nothing: the reason is its output)."""
    for line in out.splitlines():
        m = OBSERVE_AB_LINE.match(line)
        if m:
            return sample(float(m.group(2)), float(m.group(3)), float(m.group(4)), float(m.group(5)), int(m.group(6)))
    return None


def direct_sample(out, groups):
    """observe_ab's forward - direct line as a sample per call of the kind its iteration prices
    (its driver calls, else its allocator calls), or None. groups: what observe_ab was asked for;
    the groups it ran (whole cycles of its orders) are read from its first closing line."""
    ran = c_sample(out)
    groups = ran["groups"] if ran else groups
    for line in out.splitlines():
        m = DIRECT_LINE.match(line)
        if m:
            calls = int(m.group(6)) or int(m.group(7))
            per = [float(m.group(i)) / calls for i in (3, 4, 5)]
            return sample(float(m.group(2)), per[0], per[1], per[2], groups)
    return None


def alloc_counts(out):
    """inprocess_ab.py --json under alloc_count: {row key: {"per_op": allocator calls per operation,
    "cxx_per_op": those of them that were C++'s new and delete (absent from older output)}}."""
    got = {}
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("allocs"):
                got[d["allocs"]] = {"per_op": float(d["per_op"])}
                if "cxx_per_op" in d:
                    got[d["allocs"]]["cxx_per_op"] = float(d["cxx_per_op"])
    return got


def sample(forward_ns, median_ns, q1_ns, q3_ns, groups):
    """One process's figures for one row; the standard error of its median from the quartiles
    (the interquartile range / 1.349 estimates the spread, and a median's error is 1.2533 times
    the spread over the root of the count)."""
    se = 1.2533 * (q3_ns - q1_ns) / 1.349 / groups ** 0.5 if groups > 0 else 0.0
    return {"forward_ns": forward_ns, "median_ns": median_ns, "se_ns": se, "groups": groups}


def share_figure(cost_ns, se2_ns, forward_ns):
    """A cost with its two standard errors, against the operation's time: its share in percent."""
    return {"cost_ns": cost_ns, "se2_ns": se2_ns, "forward_ns": forward_ns,
            "share_pct": 100.0 * cost_ns / forward_ns if forward_ns > 0 else None}


def pool(samples):
    """One row's figures from its processes' samples."""
    n = len(samples)
    medians = [s["median_ns"] for s in samples]
    within = sum(s["se_ns"] ** 2 for s in samples) ** 0.5 / n
    between = statistics.stdev(medians) / n ** 0.5 if n > 1 else 0.0
    forward = statistics.fmean(s["forward_ns"] for s in samples)
    cost = statistics.fmean(medians)
    return dict(share_figure(cost, 2 * max(within, between), forward), processes=n, per_process_ns=medians)


def by_order(samples):
    """{group order: the mean over the processes of observe - direct's median in that order's
    groups} (inprocess_ab.py --direct): their spread is what the positions in a group add, which
    pooling every order cancels. {} for samples from before it was printed."""
    orders = {}
    for s in samples:
        for order, ns in (s.get("by_order") or {}).items():
            orders.setdefault(order, []).append(float(ns))
    return {order: statistics.fmean(v) for order, v in orders.items()}


def verdict(bound, row):
    if bound == "ns":
        return "PASS" if row["cost_ns"] <= NS_MAX else "MISS"
    if bound == "zero":
        return "fair" if abs(row["cost_ns"]) <= row["se2_ns"] else "UNFAIR"
    if row["share_pct"] is None:
        return "MISS"
    if row["forward_ns"] > 0 and 100.0 * row["se2_ns"] / row["forward_ns"] > SHARE_MAX:
        return "WIDE"  # its error alone is larger than the bound: these blocks cannot show it
    return "PASS" if row["share_pct"] <= SHARE_MAX else "MISS"


def bound_text(bound):
    return {"ns": "<=+%dns" % NS_MAX, "zero": "0 +- 2se"}.get(bound, "<=%g%%" % SHARE_MAX)


def measure(processes, groups, shim, python, env, observe_ab, timeout, say, alloc_count=(None, "not built"),
            only=None, direct=False):
    """Runs inprocess_ab.py and observe_ab (built by the caller: (path, None) or (None, why not)) in
    `processes` fresh processes each, under the shim, with `groups` groups of blocks (None: PY_GROUPS
    and C_GROUPS), observe_ab's malloc and new iterations, and inprocess_ab.py once more under alloc_count (the
    library built from tests/bench/alloc_count.c, likewise) instead of the shim; with `only`, the
    PyTorch rows whose name holds it (inprocess_ab.py --only), the others skipped as not asked; with
    `direct`, inprocess_ab.py --direct (a third side, the shim out of the runtime's calls: a fourth
    table then gives each row's measured observe - direct).
    Returns the rows (rows_from), the problems met and each row's samples (for run.py --merge to pool
    with another run's)."""
    chosen = ["--only", only] if only else []
    plain = dict(env, PYTHONDONTWRITEBYTECODE="1")
    env = dict(env, LD_PRELOAD=shim, PINSHIM_SUMMARY="none", PINSHIM_GUARD="off", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PINSHIM_LOG", None)
    exe, why_not = observe_ab
    counter, counter_why_not = alloc_count
    got = {key: [] for key, _, _ in ROWS}
    skipped = {}
    problems = []
    for k in range(1, processes + 1):
        out, err = run_process([python, os.path.join(BENCH, "inprocess_ab.py"), "--json", "--groups",
                                str(groups or PY_GROUPS)] + chosen + (["--direct"] if direct else []), env, timeout)
        if err:
            problems.append("inprocess_ab.py, process %d: %s" % (k, err))
        else:
            samples, why = python_samples(out)
            for key, s in samples.items():
                got.setdefault(key, []).append(s)
            skipped.update(why)
        if exe:
            out, err = run_process([exe, str(groups or C_GROUPS), str(C_ITERS)], env, timeout)
            s = c_sample(out) if out is not None else None
            if err:
                problems.append("observe_ab, process %d: %s" % (k, err))
            elif s:
                got["C loop"].append(s)
                per_call = direct_sample(out, groups or C_GROUPS)
                if per_call:
                    got.setdefault("driver call", []).append(per_call)
                for key, _, iteration in PER_CALL[1:]:
                    out, err = run_process([exe, str(groups or ALLOC_GROUPS), str(ALLOC_ITERS), "0", iteration],
                                           env, timeout)
                    per_call = direct_sample(out, groups or ALLOC_GROUPS) if out is not None else None
                    if err:
                        problems.append("observe_ab %s, process %d: %s" % (iteration, k, err))
                    elif per_call:
                        got.setdefault(key, []).append(per_call)
            else:
                skipped["c"] = (out.strip().splitlines() or ["no CUDA driver: libcuda.so.1 cannot be loaded"])[-1][:200]
        if counter:
            out, err = run_process([python, os.path.join(BENCH, "inprocess_ab.py"), "--json", "--groups",
                                    str(ALLOC_BLOCKS)] + chosen, dict(plain, LD_PRELOAD=counter), timeout)
            if err:
                problems.append("inprocess_ab.py under alloc_count, process %d: %s" % (k, err))
            for key, counts in alloc_counts(out or "").items():
                got.setdefault("allocs " + key, []).append(counts)
        say("[inprocess %d/%d] %s" % (k, processes, ", ".join("%s %d" % (key, len(v)) for key, v in got.items() if v)
                                      or "nothing measured"))
    for key, _, _ in ROWS if only else ():
        if key != "C loop" and not key.startswith("control") and only.lower() not in key.lower():
            skipped.setdefault(key, "not asked (--inprocess-only %s)" % only)
    if not exe:
        skipped["c"] = "cannot build observe_ab.c: " + why_not
    if not counter:
        say("[inprocess] no whole-preload table: cannot build alloc_count.c: " + counter_why_not)
    return rows_from(got, skipped), problems, {key: v for key, v in got.items() if v}


def rows_from(samples, skipped=None):
    """The rows (dicts, in ROWS order) with their verdicts, from each row's processes' samples
    ({key: [sample, ...]}); a row without samples is skipped, for the reason in skipped (under its
    key, else "py" or "c"), else because no process measured it."""
    skipped = skipped or {}
    rows = []
    per_call = {key: per_call_row(key, label, samples.get(key), skipped) for key, label, _ in PER_CALL}
    if samples.get(OLD_ALLOC_CALL[0]):  # a kept folder's: its one allocator price instead of the two
        per_call = {k: r for k, r in per_call.items() if not r.get("skipped") or k == PER_CALL[0][0]}
        per_call[OLD_ALLOC_CALL[0]] = per_call_row(*OLD_ALLOC_CALL, samples[OLD_ALLOC_CALL[0]], skipped)
    for key, label, bound in ROWS:
        row = {"key": key, "label": label, "bound": bound_text(bound)}
        if samples.get(key):
            row.update(pool(samples[key]))
            row["check"] = verdict(bound, row)
            if bound != "zero":
                row.update(whole_preload(bound, row, samples[key], samples.get("allocs " + key), per_call,
                                         samples.get(DIRECT_PREFIX + key)))
            elif samples.get(DIRECT_PREFIX + key):  # the control row: observe - direct should read 0 too
                measured = pool(samples[DIRECT_PREFIX + key])
                row["measured"] = dict(measured, check=verdict(bound, measured),
                                       by_order=by_order(samples[DIRECT_PREFIX + key]))
        else:
            row["skipped"] = skipped.get(key) or skipped.get("c" if key == "C loop" else "py", "no process measured it")
        rows.append(row)
    return rows + list(per_call.values())


def per_call_row(key, label, got, skipped):
    """A per-call piece of the preload (PER_CALL) pooled from observe_ab's forward - direct samples."""
    row = {"key": key, "label": label, "bound": "", "per_call": True}
    if got:
        row.update(pool(got))
    else:
        row["skipped"] = skipped.get("c", "no process measured it")
    return row


def whole_preload(bound, row, got, allocs, per_call, direct=None):
    """What the whole preload costs the row's operation: observing (the row's own figure) plus its
    driver calls a call's forwarding, its C allocator calls a malloc's hooks and its C++ ones a
    new's (in a kept folder without that split, every allocator call at the one price it measured),
    the counts averaged over the processes that counted them; {} where a piece is missing (a folder
    from before the counts, no C driver, no alloc_count). With `direct` (the row's observe - direct
    samples, inprocess_ab.py --direct), also "measured": observe - direct, the wrappers' whole cost
    in the row's own process, plus the allocator calls' hooks as above, against the direct side's
    time."""
    driver = [s["driver_calls"] for s in got if "driver_calls" in s]
    if row["key"] == "C loop":  # observe_ab's item iteration (its closing line says so): kept folders'
        driver = [2.0]          # C-loop samples predate the line's counts, so they are not read from it
    allocs = [{"per_op": 0.0, "cxx_per_op": 0.0}] if row["key"] == "C loop" else allocs or []
    calls = statistics.fmean(a["per_op"] for a in allocs) if allocs else None
    split = all("cxx_per_op" in a for a in allocs) and "cost_ns" in per_call.get("new call", {})
    cxx = statistics.fmean(a["cxx_per_op"] for a in allocs) if allocs and split else 0.0
    counts = {"driver": statistics.fmean(driver) if driver else None,
              "c_alloc": None if calls is None else calls - cxx, "cxx_alloc": cxx}
    c_alloc = "malloc call" if split or OLD_ALLOC_CALL[0] not in per_call else OLD_ALLOC_CALL[0]
    pieces = {"driver": per_call["driver call"], "c_alloc": per_call.get(c_alloc, {}),
              "cxx_alloc": per_call.get("new call", {})}
    if any(n is None or (n and "cost_ns" not in pieces[k]) for k, n in counts.items()):
        return {}
    added = {k: counts[k] * pieces[k]["cost_ns"] if counts[k] else 0.0 for k in counts}
    cost = row["cost_ns"] + sum(added.values())
    se2 = (row["se2_ns"] ** 2 + sum((counts[k] * pieces[k]["se2_ns"]) ** 2 for k in counts if counts[k])) ** 0.5
    whole = share_figure(cost, se2, row["forward_ns"])
    out = {"whole": dict(whole, check=verdict(bound, whole), driver_calls=counts["driver"],
                         allocator_calls=calls, cxx_calls=cxx if split else None, driver_ns=added["driver"],
                         allocator_ns=added["c_alloc"] + added["cxx_alloc"])}
    if direct:
        d = pool(direct)
        hooks = [k for k in ("c_alloc", "cxx_alloc") if counts[k]]
        cost = d["cost_ns"] + sum(added[k] for k in hooks)
        se2 = (d["se2_ns"] ** 2 + sum((counts[k] * pieces[k]["se2_ns"]) ** 2 for k in hooks)) ** 0.5
        measured = share_figure(cost, se2, d["forward_ns"])
        out["measured"] = dict(measured, check=verdict(bound, measured), direct_ns=d["cost_ns"],
                               processes=d["processes"], by_order=by_order(direct),
                               leaked_calls=statistics.fmean(x.get("leaked_calls", 0.0) for x in direct))
    return out


def _orders(measured):
    return ", ".join("%s %+.1f" % kv for kv in sorted(measured.get("by_order", {}).items())) or "-"


def _num(v, fmt):
    return "-" if v is None else fmt % v


def table_rows(rows, markdown):
    head = ["in one process", "forward", "observe - forward", "share", "bound", "check", "processes"]
    out = [head]
    for r in rows:
        if r.get("per_call"):
            continue
        name = r["label"] if markdown else r["key"]
        if r.get("skipped"):
            out.append([name, "", "", "", r["bound"], "", "skipped: " + r["skipped"]])
            continue
        out.append([name, "%.0f ns" % r["forward_ns"], "%+.1f +- %.1f ns" % (r["cost_ns"], r["se2_ns"]),
                    _num(r["share_pct"], "%.2f%%"), r["bound"], r["check"],
                    "%d (%s)" % (r["processes"], ", ".join("%+.0f" % m for m in r["per_process_ns"]))])
    return out


def whole_table_rows(rows, markdown):
    """The third table: per operation, observing plus the preload's forwarding (driver calls x a
    call's cost) and hooks (allocator calls x a call's cost), against the row's bound; then the
    per-call figures. [] when no row has its pieces."""
    if not any(r.get("whole") for r in rows):
        return []
    out = [["whole preload, in one process", "observe - forward", "driver calls x forwarding",
            "allocator calls x hooks", "whole preload", "share", "bound", "check"]]
    for r in rows:
        w = r.get("whole")
        if not w:
            continue
        out.append([r["label"] if markdown else r["key"], "%+.1f ns" % r["cost_ns"],
                    "%.2f x = %+.1f ns" % (w["driver_calls"], w["driver_ns"]),
                    "%.1f x = %+.1f ns" % (w["allocator_calls"], w["allocator_ns"]) if w.get("cxx_calls") is None
                    else "%.1f x (%.1f C++) = %+.1f ns" % (w["allocator_calls"], w["cxx_calls"], w["allocator_ns"]),
                    "%+.1f +- %.1f ns" % (w["cost_ns"], w["se2_ns"]), _num(w["share_pct"], "%.2f%%"), r["bound"],
                    w["check"]])
    for r in rows:
        if r.get("per_call"):
            out.append([r["label"] if markdown else r["key"], "", "", "",
                        "skipped: " + r["skipped"] if r.get("skipped") else
                        "%+.2f +- %.2f ns a call" % (r["cost_ns"], r["se2_ns"]), "", "",
                        "%d (%s)" % (r["processes"], ", ".join("%+.2f" % m for m in r["per_process_ns"]))
                        if not r.get("skipped") else ""])
    return out


def measured_table_rows(rows, markdown):
    """The fourth table (inprocess_ab.py --direct): per operation, what the shim's wrappers cost
    measured in the row's own process (observe - direct) plus the allocator calls' hooks, against
    the direct side's time and the row's bound; the control row's observe - direct should read 0.
    [] when no row has it."""
    if not any(r.get("measured") for r in rows):
        return []
    out = [["whole preload, measured in one process", "direct", "observe - direct", "allocator calls x hooks",
            "whole preload", "share", "bound", "check", "calls past the switch", "observe - direct by group order"]]
    for r in rows:
        m = r.get("measured")
        if not m:
            continue
        name = r["label"] if markdown else r["key"]
        if r["bound"] == bound_text("zero"):
            out.append([name, "%.0f ns" % m["forward_ns"], "%+.1f +- %.1f ns" % (m["cost_ns"], m["se2_ns"]), "", "",
                        "", r["bound"], m["check"], "", _orders(m)])
            continue
        w = r.get("whole", {})
        out.append([name, "%.0f ns" % m["forward_ns"], "%+.1f ns" % m["direct_ns"],
                    "%+.1f ns" % w.get("allocator_ns", 0.0), "%+.1f +- %.1f ns" % (m["cost_ns"], m["se2_ns"]),
                    _num(m["share_pct"], "%.2f%%"), r["bound"], m["check"], "%.2f/op" % m["leaked_calls"],
                    _orders(m)])
    return out

