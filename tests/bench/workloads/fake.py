"""fake.py: a stand-in workload for testing the harness without a GPU (run.py --fake; see
tests/bats/workloads.bats). It tells which side it runs on from its real environment (the shim in
LD_PRELOAD, PINSHIM_GUARD=warn with PINSHIM_GUARD_PAGES=first), not from the harness's labels, and
prints values that follow from the side and BENCH_WL_PAIR, so the table's medians, spreads,
ratios and checks can be compared with exact numbers. With the shim it also prints a summary line on
stderr as the shim does (PINSHIM_SUMMARY=json).
The turn modes take three turns (wl.turn, run.py's lockstep) of 50 ms each and note when each began
and ended: turns as they should go; turncrash: the shim side exits with status 3 in its second turn;
turnhang: the shim side sleeps 60 s in its second turn.
usage: fake.py faster|same|ns|missing|mismatch|crash|shimskip|hang|noisy|drift|turns|turncrash|turnhang"""
import json
import os
import sys
import time

import wl

MODE = sys.argv[1]
NAME = "fake_" + MODE
shim = "libpinshim" in os.environ.get("LD_PRELOAD", "")
guard = shim and os.environ.get("PINSHIM_GUARD") == "warn" and os.environ.get("PINSHIM_GUARD_PAGES") == "first"
side = "guard" if guard else "shim" if shim else "noshim"
pair = int(os.environ.get("BENCH_WL_PAIR", "0"))

if MODE == "missing":
    wl.skip(NAME, "fakeframework not importable (No module named 'fakeframework')")
if MODE == "shimskip" and shim:
    wl.skip(NAME, "fakeframework sees no GPU")
if MODE == "crash" and shim and pair == 2:
    sys.stderr.write("Traceback (most recent call last):\nRuntimeError: CUDA error: invalid argument\n")
    sys.exit(3)
if MODE == "hang" and shim:
    if os.environ.get("FAKE_HANG_PIDFILE"):  # lets a test see that the harness ended this process
        with open(os.environ["FAKE_HANG_PIDFILE"], "w") as f:
            f.write("%d\n" % os.getpid())
    time.sleep(60)

rep = wl.Report(NAME)
rep.notes["side"] = side
if MODE.startswith("turn"):
    rep.notes["turns"] = []
    for k in range(3):
        wl.turn()
        began = time.time()
        if k == 1 and shim and MODE == "turncrash":
            sys.exit(3)
        time.sleep(60 if k == 1 and shim and MODE == "turnhang" else 0.05)
        rep.notes["turns"].append([began, time.time()])
if MODE == "noisy":
    # the host's speed flips between runs: odd pairs no shim 100, shim 125; even pairs 120 and 101
    rep.metric("t", "fake time", (100, 125, 101)[("noshim", "shim", "guard").index(side)] if pair % 2 else
               (120, 101, 121)[("noshim", "shim", "guard").index(side)], "ms", "same")
elif MODE == "drift":
    # every pair's shim run 3 % slower than its no-shim run (100 + 10p, 103 + 10.3p), but in pair 4
    # the host is slow for the no-shim run (300) and fast for the shim's (105): the medians, taken
    # over runs of different pairs, read the shim faster; the pairs' own median does not
    slow = {"noshim": 300, "shim": 105, "guard": 300} if pair == 4 else \
        {"noshim": 100 + 10 * pair, "shim": 103 + 10.3 * pair, "guard": 100 + 10 * pair}
    rep.metric("t", "fake time", slow[side], "ms", "same")
elif MODE == "ns":
    value = {"noshim": 7000, "shim": 7050, "guard": 7200}[side] + 10 * pair
    rep.metric("loop", "fake 4-byte loop", value, "ns", "ns")
else:
    # faster: no shim 10+p, shim 5+p, guard 6+p; same: 100+p, 102+p, 99+p
    offsets = {"faster": (10, 5, 6), "same": (100, 102, 99)}.get(MODE, (20, 10, 10))
    value = offsets[("noshim", "shim", "guard").index(side)] + pair
    rep.metric("t", "fake time", value, "ms", "same" if MODE in ("same", "turns") else "faster")
    if MODE == "same":
        rep.metric("ref", "ref: fake pinned ceiling", 50 + pair, "ms", "same", True)
rep.part("result", 42)
if MODE == "mismatch" and guard:
    rep.part("stale bytes")
if shim:
    summary = {"pid": os.getpid(), "transfers": [], "staging": {"staged_copies": 3}}
    if guard:
        summary["guard"] = {"guarded": 4, "races": 1 if MODE == "same" else 0}
    sys.stderr.write(json.dumps(summary) + "\n")
rep.emit()
